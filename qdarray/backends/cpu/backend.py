"""The CPU backend: NumPy storage, array-api-compat's NumPy namespace, numba kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._devices import CPU, Device
from ...kernels.target import KernelTarget
from .. import base, special_cases
from ..base import Backend
from ..host_memory import host_available_bytes
from ..quiet import QuietNamespace, quiet
from . import reductions as cpu_reductions
from . import sort as cpu_sort


class CpuBackend:
    """NumPy arrays on the host; kernels through the numba CPU code generator."""

    kind = "cpu"
    # Floating-point exceptions give the standard's results without NumPy's RuntimeWarnings,
    # as on every other device (see quiet.py).
    # Typed Any, as in the Backend protocol: QuietNamespace's attributes are the wrapped
    # module's, made when it is loaded, and the functions below are set on it directly.
    xp: Any = QuietNamespace("array_api_compat.numpy")  # imported at first use
    # Reductions and scans as direct ufunc calls (NumPy's results, without its Python layers).
    for _name in ("sum", "prod", "mean", "cumulative_sum", "cumulative_prod"):
        setattr(xp, _name, quiet(getattr(cpu_reductions, _name)))
    # Functions that raise no floating-point exception (comparisons, NaN-propagating extrema,
    # classification) skip the error-state switch.
    xp.max = cpu_reductions.max
    xp.min = cpu_reductions.min
    for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                  "isnan", "isinf", "isfinite", "signbit"):
        setattr(xp, _name, getattr(np, _name))
    # Values sorted by NumPy's default (fastest) algorithm, with a stable sort's result.
    xp.sort = cpu_sort.sort
    # The standard's values where NumPy's differ (floor division by infinities, ...).
    for _name, _func in special_cases.functions(np, check_first=True).items():
        setattr(xp, _name, quiet(_func))
    native_type = np.ndarray

    @property
    def target(self) -> KernelTarget:
        """The numba kernel target (cpu/target.py), imported with the kernel compiler on
        first use: array code alone never loads it."""
        from .target import TARGET

        return TARGET

    def devices(self) -> list[Device]:
        return [CPU]

    def description(self, device: Device) -> str:
        from ..discovery import description

        return description(device)

    def supports_dtype(self, np_dtype: np.dtype, device: Device) -> bool:
        return True

    # An ndarray stays itself and a NumPy scalar becomes a 0-d array; a C function, so the
    # namespace's hot path pays no Python frame for it.
    normalize = staticmethod(np.asarray)

    def placement(self, device: Device) -> dict[str, Any]:
        return {}  # NumPy's functions make host arrays

    @quiet  # a float64 source can overflow a float32 target: inf, as in arithmetic
    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> Any:
        if copy is False:
            return np.asarray(obj, dtype=np_dtype)
        return np.array(obj, dtype=np_dtype, copy=copy)

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Device) -> Any:
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Device) -> np.ndarray:
        return np.empty(shape, np_dtype)

    def to_host(self, native: np.ndarray) -> np.ndarray:
        return native

    def copy_between(self, native: np.ndarray, device: Device) -> np.ndarray:
        return np.array(native, copy=True)

    def available_bytes(self, device: Device) -> int | None:
        return host_available_bytes()

    def from_dlpack(self, obj: Any) -> np.ndarray:
        return np.from_dlpack(obj)

    def cuda_array_interface(self, native: np.ndarray) -> None:
        return None

    def index_add(self, native: np.ndarray, key: tuple[Any, ...], values: Any) -> None:
        np.add.at(native, key, values)

    def byte_layout(self, native: np.ndarray) -> tuple[int, tuple[int, ...]]:
        return native.__array_interface__["data"][0], native.strides

    def window_root(self, native: np.ndarray) -> tuple[np.ndarray, int]:
        """The outermost 1-D contiguous array of the same dtype that `native` (1-D, contiguous)
        is a slice of, and `native`'s element offset in it."""
        root = native
        base = native.base
        while (type(base) is np.ndarray and base.ndim == 1 and base.dtype == native.dtype
               and base.strides[0] == base.itemsize):
            root = base
            base = base.base
        if root is native:
            return native, 0
        start = native.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return root, start // native.itemsize

    def synchronize(self, device: Device) -> None:
        return None

    def capabilities(self, device: Device) -> dict[str, Any]:
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
        }


BACKEND: Backend = CpuBackend()  # checked against the Backend protocol
