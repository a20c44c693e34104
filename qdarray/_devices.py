"""Devices: `Device("cpu")`, `Device("cuda:N")`, `Device("opencl:N")`, `Device("vulkan:N")`.

A Device is an interned value (one object per kind and index, so comparison is `is`). It knows
its backend, which owns storage, copies, kernel launches and the device's capabilities; the
backends package tells this module how to find it (`register_backends`), so that this module,
below every other, imports none of them.

The default device (where creation functions allocate when given no `device=`) is the CPU
unless the `QDARRAY_DEFAULT_DEVICE` environment variable, `set_default_device` (for the
process) or a `with default_device(...)` block (for the current thread) says otherwise.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .backends.base import Backend

KNOWN_KINDS = ("cpu", "cuda", "opencl", "vulkan")

# `find(device)` loads a device's backend, `describe(device)` says what the device is; set when
# qdarray.backends is imported (the package root imports it), before any device is used.
_FIND_BACKEND: list[Callable[[Device], Backend]] = []
_DESCRIBE: list[Callable[[Device], str]] = []


def register_backends(find: Callable[[Device], Backend],
                      describe: Callable[[Device], str]) -> None:
    """Tell `Device.backend` how to load a device's backend, and `Device.description` how to
    describe a device (qdarray.backends does)."""
    _FIND_BACKEND[:] = [find]
    _DESCRIBE[:] = [describe]


class Device:
    """A device that holds arrays and runs kernels.

    Example::

        qd.Device("cpu"), qd.Device("cuda:0"), x.device == qd.Device("cpu")
    """

    # `backend` is a plain slot, read on the namespace's hot path; until the backend is first
    # used it holds a stand-in that loads it (see _UnloadedBackend).
    __slots__ = ("kind", "index", "backend")
    kind: str
    index: int
    backend: Backend
    _interned: dict[tuple[str, int], Device] = {}

    def __new__(cls, spec: str | Device = "cpu") -> Device:
        if isinstance(spec, Device):
            return spec
        kind, index = _parse(spec)
        try:
            return cls._interned[(kind, index)]
        except KeyError:
            pass
        self = object.__new__(cls)
        self.kind = kind
        self.index = index
        self.backend = cast("Backend", _UnloadedBackend(self))
        cls._interned[(kind, index)] = self
        return self

    def __repr__(self) -> str:
        return f"Device('{self}')"

    @property
    def description(self) -> str:
        """What the device is: its platform or driver and its name, e.g. `PoCL 5.0+debian on
        cpu-haswell-AMD EPYC 7B13`, `NVIDIA H200`, `llvmpipe (LLVM 15.0.7, 256 bits)
        (llvmpipe)`, or the CPU's model; `opencl:0` and `opencl:1` from two PoCL builds differ
        here. Read from the device listing (cached across processes: backends/discovery.py),
        so it does not open the device.

        Example::

            for d in qd.__array_namespace_info__().devices():
                print(d, "-", d.description)
        """
        return _DESCRIBE[0](self)

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (str(self),))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                return self is Device(other)
            except ValueError:
                return False
        return self is other

    def __hash__(self) -> int:
        return hash((self.kind, self.index))


class _UnloadedBackend:
    """`Device.backend` until first use: the first attribute read loads the device's backend
    (importing its optional dependency, or raising the error that names it), puts it in
    `device.backend` and answers from it. A property, or a `__getattr__` on Device itself,
    would slow down every read of `device.backend`."""

    __slots__ = ("_device",)

    def __init__(self, device: Device) -> None:
        self._device = device

    def __getattr__(self, name: str) -> Any:
        device = self._device
        backend = _FIND_BACKEND[0](device)
        device.backend = backend
        return getattr(backend, name)

    def __repr__(self) -> str:
        return f"<backend of {self._device}, not loaded yet>"


def _parse(spec: Any) -> tuple[str, int]:
    if not isinstance(spec, str):
        raise ValueError(
            f"Device must be given as a string such as 'cpu' or 'cuda:0'; got {spec!r}."
        )
    kind, sep, idx = spec.strip().lower().partition(":")
    if kind not in KNOWN_KINDS:
        raise ValueError(
            f"Unknown device {spec!r}; use one of 'cpu', 'cuda:N', 'opencl:N', 'vulkan:N'."
        )
    if kind == "cpu":
        if sep and idx not in ("", "0"):
            raise ValueError(f"There is one CPU device, 'cpu'; got {spec!r}.")
        return kind, 0
    if not sep:
        return kind, 0
    if not idx.isdigit():
        raise ValueError(f"Device index in {spec!r} must be a non-negative integer.")
    return kind, int(idx)


CPU = Device("cpu")

ENVIRONMENT_VARIABLE = "QDARRAY_DEFAULT_DEVICE"


class _ThreadDefault(threading.local):
    """The device of the innermost `with default_device(...)` block of a thread (None: none)."""

    device: Device | None = None


_thread = _ThreadDefault()
# `with default_device(...)` blocks open in any thread: while there are none, the default is
# the process's and no thread-local lookup is needed (the common case, on every creation call).
_open_blocks = 0
_blocks_lock = threading.Lock()


def _from_environment() -> Device:
    spec = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not spec:
        return CPU
    try:
        return Device(spec)
    except ValueError as exc:
        raise ValueError(
            f"{ENVIRONMENT_VARIABLE}={spec!r} does not name a device: {exc}"
        ) from None


_process_default = _from_environment()


def get_default_device() -> Device:
    """The device creation functions use when given no `device=`: the innermost
    `with qd.default_device(...)` block's on this thread, else the process's
    (`qd.set_default_device`, initially `QDARRAY_DEFAULT_DEVICE` or the CPU).

    Example::

        qd.get_default_device()                 # Device('cpu')
    """
    return (_thread.device or _process_default) if _open_blocks else _process_default


def _present(device: Device) -> Device:
    """`device` when it is present; the backend's error (naming what is) when it is not."""
    if device is not CPU:
        backend = device.backend  # a RuntimeError naming the missing dependency
        if device not in backend.devices():
            present = ", ".join(str(d) for d in backend.devices()) or "none"
            raise ValueError(
                f"Device {device} is not present (present {device.kind} devices: {present}); "
                f"use one of those, or 'cpu'."
            )
    return device


def set_default_device(device: Any) -> None:
    """Make `device` the default of the whole process (threads inside a
    `with qd.default_device(...)` block keep theirs).

    Args:
        device: a Device or a string such as "cpu", "cuda:0", "opencl:0"; None means the CPU.

    Raises:
        ValueError: an unknown device name, or a device that is not present.
        RuntimeError: the device kind's backend cannot load (its dependency is missing).

    Example::

        qd.set_default_device("opencl:0")
        qd.zeros(3).device                      # Device('opencl:0')
    """
    global _process_default
    _process_default = CPU if device is None else _present(Device(device))


@contextlib.contextmanager
def default_device(device: Any) -> Iterator[Device]:
    """A block in which the current thread's default device is `device` (blocks nest; other
    threads are not affected).

    Example::

        with qd.default_device("opencl:0"):
            x = qd.ones(3)                      # on opencl:0
    """
    global _open_blocks
    target = CPU if device is None else _present(Device(device))
    previous = _thread.device
    _thread.device = target
    with _blocks_lock:
        _open_blocks += 1
    try:
        yield target
    finally:
        _thread.device = previous
        with _blocks_lock:
            _open_blocks -= 1


def as_device(device: Any) -> Device:
    """Normalize `device=` arguments: None means the default device."""
    if device is None:
        return (_thread.device or _process_default) if _open_blocks else _process_default
    if isinstance(device, Device):
        return device
    return Device(device)
