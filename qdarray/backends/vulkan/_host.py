"""The namespace on Vulkan arrays, computed on the host for now.

Every function of the CPU namespace is offered over `VkArray`s: array arguments (also inside
lists and tuples) are copied to the host, NumPy computes, and array results (also inside
tuples and named tuples) are copied to the device of the first array argument; `out=`
receives the result in place. Views (basic indexing, transposes, contiguous reshapes) stay on
the device without a copy (backends/vulkan/_array.py). Device kernels for the namespace come
from the IR-built namespace operations that every generated-code device shares; until they
run here, `HOST_FUNCTIONS` says "all", in `capabilities()` and in docs/vulkan.md.
"""

from __future__ import annotations

import types
from typing import Any

import array_api_compat.numpy as compat_numpy
import numpy as np

from ..quiet import QuietNamespace
from ._array import VkArray
from ._instance import DeviceState, state

CPU_XP = QuietNamespace(compat_numpy)
HOST_FUNCTIONS: tuple[str, ...] = (
    "all functions of the namespace, linalg and fft (views stay on the device)",
)


def _to_host(x: Any, found: list[DeviceState]) -> Any:
    if isinstance(x, VkArray):
        found.append(x.st)
        return x.to_host()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to_host(v, found) for v in x)
    return x


def _to_device(x: Any, st: DeviceState) -> Any:
    if isinstance(x, (np.ndarray, np.generic)):
        return VkArray.from_host(st, np.asarray(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_to_device(v, st) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, st) for v in x)
    return x


def on_host(fn: Any, name: str) -> Any:
    """`fn` (a CPU namespace function) made to take and return Vulkan arrays."""

    def call(*args: Any, **kwargs: Any) -> Any:
        found: list[DeviceState] = []
        device = kwargs.pop("device", None)
        out = kwargs.pop("out", None)
        hargs = [_to_host(a, found) for a in args]
        hkwargs = {k: _to_host(v, found) for k, v in kwargs.items()}
        if found:
            st = found[0]
        elif device is not None:
            st = state(device.index)
        else:
            raise TypeError(f"{name} got no Vulkan array and no device.")
        result = fn(*hargs, **hkwargs)
        if out is not None:
            out.write_host(result)
            return out
        return _to_device(result, st)

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


class VulkanNamespace(HostNamespace):
    """`BACKEND.xp` of the Vulkan backend: the host namespace, with views kept on the device."""

    def __init__(self) -> None:
        super().__init__(CPU_XP)

    def permute_dims(self, x: VkArray, axes: Any) -> VkArray:
        return x.permute(tuple(int(a) % max(x.ndim, 1) for a in axes))

    def matrix_transpose(self, x: VkArray) -> VkArray:
        return x.swapaxes(-1, -2)

    def reshape(self, x: VkArray, shape: Any, copy: bool | None = None) -> VkArray:
        out = x.reshape(tuple(shape))
        if copy and out.alloc is x.alloc:
            return out.copy()
        return out

    def astype(self, x: VkArray, dtype: Any, copy: bool = True, device: Any = None) -> VkArray:
        if np.dtype(dtype) == x.dtype and not copy:
            return x
        return x.astype(dtype)
