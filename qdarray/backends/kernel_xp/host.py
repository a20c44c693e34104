"""Host fallback: run the CPU namespace's function on host copies of device arrays.

Used for the functions (and dtype combinations, such as complex transcendental functions)
that have no device kernel. Arguments that are native device arrays (also inside lists and
tuples) are copied to the host, the CPU backend's function runs, and array results (also
inside tuples and named tuples) are copied back to the device of the first array argument
(or `device=`). The namespace lists what computes this way (`HOST_FUNCTIONS`), and the
backend reports it in its capabilities.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._devices import Device
from ..cpu.backend import CpuBackend
from ..quiet import QuietNamespace
from .device import KernelDevice

# The CPU backend's namespace: NumPy's functions with the standard's special cases.
CPU_XP = CpuBackend.xp


def _native(x: Any) -> bool:
    return hasattr(x, "qd_device")


def _to_host(x: Any, found: list[KernelDevice]) -> Any:
    if _native(x):
        found.append(x.qd_device)
        return x.to_host()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to_host(v, found) for v in x)
    return x


def _to_device(x: Any, dev: KernelDevice) -> Any:
    if isinstance(x, (np.ndarray, np.generic)):
        return dev.from_host(np.asarray(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_to_device(v, dev) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, dev) for v in x)
    return x


def on_host(fn: Any, name: str, resolve: Callable[[Device], KernelDevice]) -> Any:
    """`fn` (a CPU namespace function) made to take and return device arrays."""

    def call(*args: Any, **kwargs: Any) -> Any:
        found: list[KernelDevice] = []
        device = kwargs.pop("device", None)
        hargs = [_to_host(a, found) for a in args]
        hkwargs = {k: _to_host(v, found) for k, v in kwargs.items()}
        if found:
            dev = found[0]
        elif device is not None:
            dev = resolve(device)
        else:
            raise TypeError(f"{name} got no device array and no device.")
        return _to_device(fn(*hargs, **hkwargs), dev)

    call.__name__ = name
    call.__qualname__ = name
    return call


class HostNamespace:
    """Every function of a CPU namespace (module), computing on the host (module docstring)."""

    def __init__(self, module: Any, resolve: Callable[[Device], KernelDevice],
                 prefix: str = "") -> None:
        self._module = module
        self._resolve = resolve
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if isinstance(value, (types.ModuleType, QuietNamespace)):
            wrapped: Any = HostNamespace(value, self._resolve, f"{self._prefix}{name}.")
        elif callable(value) and not isinstance(value, type):
            wrapped = on_host(value, self._prefix + name, self._resolve)
        else:
            wrapped = value
        setattr(self, name, wrapped)
        return wrapped
