"""Devices: `Device("cpu")`, `Device("cuda:N")`, `Device("opencl:N")`, `Device("vulkan:N")`.

A Device is an interned value (one object per kind and index, so comparison is `is`). It knows
its backend, which owns storage, copies, kernel launches and the device's capabilities; the
backends package tells this module how to find it (`register_backends`), so that this module,
below every other, imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends.base import Backend

KNOWN_KINDS = ("cpu", "cuda", "opencl", "vulkan")

# `find(device)` loads a device's backend; set when qdarray.backends is imported (the package
# root imports it), before any device is used.
_FIND_BACKEND: list[Callable[[Device], Backend]] = []


def register_backends(find: Callable[[Device], Backend]) -> None:
    """Tell `Device.backend` how to load a device's backend (qdarray.backends does)."""
    _FIND_BACKEND[:] = [find]


class Device:
    """A device that holds arrays and runs kernels.

    Example::

        qd.Device("cpu"), qd.Device("cuda:0"), x.device == qd.Device("cpu")
    """

    __slots__ = ("kind", "index", "_backend")
    kind: str
    index: int
    _backend: Backend | None
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
        self._backend = None
        cls._interned[(kind, index)] = self
        return self

    @property
    def backend(self) -> Backend:
        """The backend serving this device (loaded on first use)."""
        backend = self._backend
        if backend is None:
            backend = _FIND_BACKEND[0](self)
            self._backend = backend
        return backend

    def __repr__(self) -> str:
        return f"Device('{self}')"

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


def as_device(device: Any) -> Device:
    """Normalize `device=` arguments: None means the default device (cpu)."""
    if device is None:
        return CPU
    if isinstance(device, Device):
        return device
    return Device(device)
