"""Host fallback: run the CPU namespace's function on host copies of OpenCL arrays.

Used for the functions (and dtype combinations, such as complex arithmetic) that have no
device implementation yet. Arguments that are ClArrays (also inside lists and tuples) are
copied to the host, the CPU backend's function runs, and array results (also inside tuples
and named tuples) are copied back to the device of the first array argument. The names that
always compute this way are listed by `HostNamespace.names()` and reported in the backend's
capabilities and in docs/opencl.md.
"""

from __future__ import annotations

import types
from typing import Any

import array_api_compat.numpy as compat_numpy
import numpy as np

from ..quiet import QuietNamespace
from ._clarray import ClArray
from ._runtime import DeviceState, state

CPU_XP = QuietNamespace(compat_numpy)


def _to_host(x: Any, found: list[DeviceState]) -> Any:
    if isinstance(x, ClArray):
        found.append(x.qd_state)
        return x.to_host()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to_host(v, found) for v in x)
    return x


def _to_device(x: Any, st: DeviceState) -> Any:
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return ClArray.from_host(st, np.asarray(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_to_device(v, st) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, st) for v in x)
    return x


def on_host(fn: Any, name: str) -> Any:
    """`fn` (a CPU namespace function) made to take and return OpenCL arrays."""

    def call(*args: Any, **kwargs: Any) -> Any:
        found: list[DeviceState] = []
        device = kwargs.pop("device", None)
        hargs = [_to_host(a, found) for a in args]
        hkwargs = {k: _to_host(v, found) for k, v in kwargs.items()}
        if found:
            st = found[0]
        elif device is not None:
            st = state(device.index)
        else:
            raise TypeError(f"{name} got no OpenCL array and no device.")
        return _to_device(fn(*hargs, **hkwargs), st)

    call.__name__ = name
    call.__qualname__ = name
    return call


class HostNamespace:
    """Every function of a CPU namespace (module), computing on the host (see module doc)."""

    def __init__(self, module: Any, prefix: str = "") -> None:
        self._module = module
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if isinstance(value, (types.ModuleType, QuietNamespace)):
            wrapped: Any = HostNamespace(value, f"{self._prefix}{name}.")
        elif callable(value) and not isinstance(value, type):
            wrapped = on_host(value, self._prefix + name)
        else:
            wrapped = value
        setattr(self, name, wrapped)
        return wrapped
