"""The array namespace over a backend's native device arrays, built from IR kernels.

qdarray's namespace modules call `device.backend.xp.<name>(native arrays...)`. A backend
whose device runs kernels of the kernel compiler gets its `xp` here: `KernelNamespace`
implements the standard's functions with kernels built as IR by `qdarray.kernels.library`
(elementwise maps, reductions, scans, gathers and scatters, sorting, matmul, copies, casts,
creation), compiled once per signature through the device's kernel target, and launched on
the arrays' memory, views included. Nothing here knows a device kind: a backend supplies its
native array class (mixing in `array.StridedArray`) and its devices (`device.KernelDevice`).

What has no device kernel computes on the host (`host.HostNamespace`) and is listed in
`HOST_FUNCTIONS`, which backends report in their capabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._devices import Device
from ...kernels.library import elementwise as bodies
from . import copy as _copy
from . import elementwise, indexing, linalg, manipulation, reductions, sorting
from .device import KernelDevice
from .host import CPU_XP, HostNamespace
from .layout import broadcast_to as _broadcast_to

# Functions of the namespace (and of the linalg / fft extensions) that compute on the host.
HOST_FUNCTIONS: tuple[str, ...] = (
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "isin", "tensordot",
    "linalg.* (except matmul, matrix_transpose, vecdot)", "fft.*",
    "complex transcendental functions (exp, expm1, log, log1p, log2, log10, sqrt, pow, "
    "sin, cos, tan, their inverses and hyperbolic versions)",
    "sort, argsort, searchsorted, max, min, argmax, argmin, var and std of complex arrays",
    "indexing with a Python bool or a 0-d boolean array",
)


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return tuple(a % max(ndim, 1) for a in (axis if isinstance(axis, tuple) else (axis,)))


def _real(x: Any) -> bool:
    return bool(x.dtype.kind in "biuf")


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in shape)


def _count(x: Any, axes: tuple[int, ...] | None) -> int:
    n = 1
    for a in range(x.ndim) if axes is None else axes:
        n *= x.shape[a]
    return n


class KernelNamespace:
    """`BACKEND.xp` of a backend with a kernel target (see the module docstring).

    Args:
        resolve: the `KernelDevice` of a qdarray Device of this backend.
    """

    def __init__(self, resolve: Callable[[Device], KernelDevice]) -> None:
        self._resolve = resolve
        self._host = HostNamespace(CPU_XP, resolve)
        self.linalg = HostNamespace(CPU_XP.linalg, resolve, "linalg.")
        self.fft = HostNamespace(CPU_XP.fft, resolve, "fft.")

    def __getattr__(self, name: str) -> Any:
        host = getattr(self._host, name)
        if name in bodies.NAMES:
            def call(*args: Any, out: Any = None) -> Any:
                result = elementwise.elementwise(name, *args, out=out)
                if result is not None:
                    return result
                value = host(*args)
                if out is not None:
                    _copy.assign(out, value)
                    return out
                return value

            call.__name__ = name
            setattr(self, name, call)
            return call
        return host

    def _dev(self, device: Any) -> KernelDevice:
        return self._resolve(device)

    # -- creation ----------------------------------------------------------------------------

    def asarray(self, x: Any, dtype: Any = None, copy: bool | None = None,
                device: Any = None) -> Any:
        if hasattr(x, "qd_device"):
            if dtype is not None and np.dtype(dtype) != x.dtype:
                return _copy.astype(x, np.dtype(dtype))
            return _copy.contiguous(x, force=True) if copy else x
        return self._dev(device).from_host(np.asarray(x, dtype=dtype))

    def empty(self, shape: Any, dtype: Any = None, device: Any = None) -> Any:
        return self._dev(device).empty(_shape(shape), np.dtype(dtype or np.float64))

    def zeros(self, shape: Any, dtype: Any = None, device: Any = None) -> Any:
        return _copy.full(self._dev(device), _shape(shape), 0, np.dtype(dtype or np.float64))

    def ones(self, shape: Any, dtype: Any = None, device: Any = None) -> Any:
        return _copy.full(self._dev(device), _shape(shape), 1, np.dtype(dtype or np.float64))

    def full(self, shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Any:
        dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
        dev = fill_value.qd_device if hasattr(fill_value, "qd_device") else self._dev(device)
        return _copy.full(dev, _shape(shape), fill_value, dt)

    def zeros_like(self, x: Any, dtype: Any = None) -> Any:
        return _copy.full(x.qd_device, tuple(x.shape), 0, np.dtype(dtype or x.dtype))

    def ones_like(self, x: Any, dtype: Any = None) -> Any:
        return _copy.full(x.qd_device, tuple(x.shape), 1, np.dtype(dtype or x.dtype))

    def empty_like(self, x: Any, dtype: Any = None) -> Any:
        return x.qd_device.empty(tuple(x.shape), np.dtype(dtype or x.dtype))

    def full_like(self, x: Any, fill_value: Any, dtype: Any = None) -> Any:
        return _copy.full(x.qd_device, tuple(x.shape), fill_value, np.dtype(dtype or x.dtype))

    def arange(self, start: Any, stop: Any, step: Any = 1, dtype: Any = None,
               device: Any = None) -> Any:
        return _copy.arange(self._dev(device), start, stop, step, np.dtype(dtype))

    def linspace(self, start: Any, stop: Any, num: int, dtype: Any = None,
                 endpoint: bool = True, device: Any = None) -> Any:
        dt = np.dtype(dtype or np.float64)
        return _copy.linspace(self._dev(device), start, stop, num, dt, endpoint)

    def eye(self, n_rows: int, n_cols: int | None = None, k: int = 0, dtype: Any = None,
            device: Any = None) -> Any:
        cols = n_rows if n_cols is None else n_cols
        return _copy.eye(self._dev(device), n_rows, cols, k, np.dtype(dtype or np.float64))

    def tril(self, x: Any, k: int = 0) -> Any:
        return _copy.triangle(x, k, upper=False)

    def triu(self, x: Any, k: int = 0) -> Any:
        return _copy.triangle(x, k, upper=True)

    def meshgrid(self, *arrays: Any, indexing: str = "xy") -> list[Any]:
        return manipulation.meshgrid(*arrays, indexing=indexing)

    def astype(self, x: Any, dtype: Any, copy: bool = True) -> Any:
        dt = np.dtype(dtype)
        if dt == x.dtype and not copy:
            return x
        return _copy.astype(x, dt)

    # -- elementwise functions with extra arguments -----------------------------------------

    def where(self, condition: Any, x1: Any, x2: Any) -> Any:
        return elementwise.where(condition, x1, x2)

    def clip(self, x: Any, lo: Any = None, hi: Any = None) -> Any:
        result = elementwise.clip(x, lo, hi)
        return result if result is not None else self._host.clip(x, lo, hi)

    # -- manipulation ------------------------------------------------------------------------

    def reshape(self, x: Any, shape: Any, copy: bool | None = None) -> Any:
        return manipulation.reshape(x, _shape(shape), copy)

    def broadcast_to(self, x: Any, shape: Any) -> Any:
        view = _broadcast_to(x, _shape(shape))
        if view is not x:
            view.qd_readonly = True
        return view

    def broadcast_arrays(self, *arrays: Any) -> list[Any]:
        views = manipulation.broadcast_arrays(*arrays)
        for v, a in zip(views, arrays, strict=True):
            if v is not a:
                v.qd_readonly = True
        return views

    def concat(self, arrays: Any, axis: int | None = 0) -> Any:
        return manipulation.concat(arrays, axis)

    def stack(self, arrays: Any, axis: int = 0) -> Any:
        return manipulation.stack(arrays, axis)

    def expand_dims(self, x: Any, axis: Any = 0) -> Any:
        return manipulation.expand_dims(x, axis)

    def squeeze(self, x: Any, axis: Any) -> Any:
        return manipulation.squeeze(x, axis)

    def permute_dims(self, x: Any, axes: Any) -> Any:
        return x.permute(tuple(int(a) % max(x.ndim, 1) for a in axes))

    def matrix_transpose(self, x: Any) -> Any:
        return x.swapaxes(-1, -2)

    def moveaxis(self, x: Any, source: Any, destination: Any) -> Any:
        return manipulation.moveaxis(x, source, destination)

    def flip(self, x: Any, axis: Any = None) -> Any:
        return manipulation.flip(x, axis)

    def roll(self, x: Any, shift: Any, axis: Any = None) -> Any:
        return manipulation.roll(x, shift, axis)

    def tile(self, x: Any, repetitions: Any) -> Any:
        return manipulation.tile(x, tuple(repetitions))

    def repeat(self, x: Any, repeats: Any, axis: int | None = None) -> Any:
        if isinstance(repeats, (int, np.integer)):
            return manipulation.repeat_scalar(x, int(repeats), axis)
        return _repeat_array(x, repeats, axis)

    # -- indexing, searching, sorting --------------------------------------------------------

    def take(self, x: Any, indices: Any, axis: int | None = None) -> Any:
        return indexing.take(x, indices, axis)

    def take_along_axis(self, x: Any, indices: Any, axis: int = -1) -> Any:
        return indexing.take_along_axis(x, indices, axis)

    def nonzero(self, x: Any) -> tuple[Any, ...]:
        return indexing.nonzero(x)

    def sort(self, x: Any, axis: int = -1, descending: bool = False,
             stable: bool = True) -> Any:
        if not _real(x):
            return self._host.sort(x, axis=axis, descending=descending, stable=stable)
        return sorting.sort(x, axis, descending)

    def argsort(self, x: Any, axis: int = -1, descending: bool = False,
                stable: bool = True) -> Any:
        if not _real(x):
            return self._host.argsort(x, axis=axis, descending=descending, stable=stable)
        return sorting.argsort(x, axis, descending)

    def searchsorted(self, x1: Any, x2: Any, side: str = "left", sorter: Any = None) -> Any:
        if not (_real(x1) and hasattr(x2, "qd_device") and _real(x2)):
            return self._host.searchsorted(x1, x2, side=side, sorter=sorter)
        if sorter is not None:
            x1 = indexing.take(x1, sorter, 0)
        return sorting.searchsorted(x1, x2, side)

    def argmax(self, x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.argmax(x, axis=axis, keepdims=keepdims)
        return reductions.argreduce("argmax", x, axis, keepdims)

    def argmin(self, x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.argmin(x, axis=axis, keepdims=keepdims)
        return reductions.argreduce("argmin", x, axis, keepdims)

    def count_nonzero(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return reductions.reduce("count_nonzero", x, _axes(axis, x.ndim), keepdims)

    # -- reductions and scans ----------------------------------------------------------------

    def sum(self, x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        return reductions.reduce("sum", x, _axes(axis, x.ndim), keepdims, dtype)

    def prod(self, x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        return reductions.reduce("prod", x, _axes(axis, x.ndim), keepdims, dtype)

    def max(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.max(x, axis=axis, keepdims=keepdims)
        return reductions.reduce("max", x, _axes(axis, x.ndim), keepdims)

    def min(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.min(x, axis=axis, keepdims=keepdims)
        return reductions.reduce("min", x, _axes(axis, x.ndim), keepdims)

    def all(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return reductions.reduce("all", x, _axes(axis, x.ndim), keepdims)

    def any(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return reductions.reduce("any", x, _axes(axis, x.ndim), keepdims)

    def mean(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        axes = _axes(axis, x.ndim)
        count = _count(x, axes)
        if x.dtype.kind not in "fc":
            x = _copy.astype(x, np.dtype(np.float64))
        total = reductions.reduce("sum", x, axes, keepdims)
        return self.divide(total, float(count))

    def var(self, x: Any, axis: Any = None, keepdims: bool = False,
            correction: float = 0.0) -> Any:
        if not _real(x):
            return self._host.var(x, axis=axis, keepdims=keepdims, correction=correction)
        axes = _axes(axis, x.ndim)
        count = _count(x, axes)
        if x.dtype.kind != "f":
            x = _copy.astype(x, np.dtype(np.float64))
        dev = self.subtract(x, self.mean(x, axis=axes, keepdims=True))
        total = reductions.reduce("sum", self.multiply(dev, dev), axes, keepdims)
        return self.divide(total, float(max(count - correction, 0)))

    def std(self, x: Any, axis: Any = None, keepdims: bool = False,
            correction: float = 0.0) -> Any:
        if not _real(x):
            return self._host.std(x, axis=axis, keepdims=keepdims, correction=correction)
        return self.sqrt(self.var(x, axis=axis, keepdims=keepdims, correction=correction))

    def cumulative_sum(self, x: Any, axis: int = 0, dtype: Any = None,
                       include_initial: bool = False) -> Any:
        return reductions.scan("cumulative_sum", x, axis, dtype, include_initial)

    def cumulative_prod(self, x: Any, axis: int = 0, dtype: Any = None,
                        include_initial: bool = False) -> Any:
        return reductions.scan("cumulative_prod", x, axis, dtype, include_initial)

    def diff(self, x: Any, n: int = 1, axis: int = -1, **extra: Any) -> Any:
        parts = [extra.get("prepend"), x, extra.get("append")]
        if parts[0] is not None or parts[2] is not None:
            axis %= x.ndim
            x = manipulation.concat([self._along(p, x, axis) for p in parts if p is not None],
                                    axis)
        axis %= x.ndim
        for _ in range(n):
            hi: list[Any] = [slice(None)] * x.ndim
            lo: list[Any] = [slice(None)] * x.ndim
            hi[axis], lo[axis] = slice(1, None), slice(None, -1)
            op = "not_equal" if x.dtype == np.bool_ else "subtract"
            x = getattr(self, op)(x.basic_view(tuple(hi)), x.basic_view(tuple(lo)))
        return x

    def _along(self, part: Any, x: Any, axis: int) -> Any:
        """diff's prepend / append: a scalar becomes a length-1 slab along `axis`."""
        if hasattr(part, "qd_device"):
            return part
        shape = tuple(1 if a == axis else n for a, n in enumerate(x.shape))
        return _copy.full(x.qd_device, shape, part, np.result_type(x.dtype, part))

    # -- linear algebra ----------------------------------------------------------------------

    def matmul(self, x1: Any, x2: Any) -> Any:
        return linalg.matmul(x1, x2)

    def vecdot(self, x1: Any, x2: Any, axis: int = -1) -> Any:
        if x1.dtype.kind == "c":
            x1 = self.conj(x1)
        prod = self.multiply(x1, x2)
        return self.sum(prod, axis=(axis % prod.ndim,), dtype=prod.dtype)



def _repeat_array(x: Any, repeats: Any, axis: int | None) -> Any:
    """repeat with per-element counts: positions from a scan of the counts and a search."""
    from .layout import broadcast_shapes

    if axis is None:
        x = manipulation.reshape(x, (-1,))
        axis = 0
    axis %= x.ndim
    n = x.shape[axis]
    counts = _broadcast_to(repeats, broadcast_shapes(tuple(repeats.shape), (n,)))
    ends = reductions.scan("cumulative_sum", counts, 0, np.int64, False)
    total = int(ends[n - 1:].to_host()[0]) if n else 0
    dev = x.qd_device
    steps = _copy.arange(dev, 0, total, 1, np.dtype(np.int64))
    where = sorting.searchsorted(ends, steps, "right")
    return indexing.take(x, where, axis)


__all__ = ["KernelNamespace", "HOST_FUNCTIONS", "KernelDevice"]
