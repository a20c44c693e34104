"""The array namespace over OpenCL arrays (`ClArray`), as the CPU backend's `xp` is over NumPy.

qdarray's namespace modules call `device.backend.xp.<name>(native arrays...)`; on OpenCL this
object answers. Functions with a device implementation are the methods below (generated
OpenCL C: elementwise maps, reductions, scans, sorting, searching, gathers, matmul, copies
and views); everything else computes on the host through `HostNamespace` and is listed by
`HOST_FUNCTIONS`, in the backend's capabilities and in docs/opencl.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _copy, _elementwise, _linalg, _manipulation, _reductions, _sorting
from ._clarray import ClArray
from ._host import CPU_XP, HostNamespace, on_host
from ._map import broadcast_to as _broadcast_to
from ._runtime import DeviceState, state

# Functions of the namespace (and of the linalg / fft extensions) that always compute on the
# host today.
HOST_FUNCTIONS: tuple[str, ...] = (
    "nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values", "isin",
    "tensordot", "repeat (with an array of repeats)", "diff (with prepend or append)",
    "linalg.* (except matmul, matrix_transpose, vecdot)", "fft.*",
    "complex dtypes in elementwise functions and reductions",
    "indexing with several index arrays, or writes through index arrays",
)


def _st(device: Any) -> DeviceState:
    return state(device.index)


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return tuple(a % max(ndim, 1) for a in (axis if isinstance(axis, tuple) else (axis,)))


def _real(x: ClArray) -> bool:
    return bool(x.dtype.kind in "biuf")


class OpenCLNamespace:
    """`BACKEND.xp` of the OpenCL backend (see the module docstring)."""

    linalg = HostNamespace(CPU_XP.linalg, "linalg.")
    fft = HostNamespace(CPU_XP.fft, "fft.")

    def __init__(self) -> None:
        self._host = HostNamespace(CPU_XP)

    def __getattr__(self, name: str) -> Any:
        host = getattr(self._host, name)
        if name in _elementwise.NAMES:
            def call(*args: Any, out: ClArray | None = None) -> Any:
                result = _elementwise.elementwise(name, *args, out=out)
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

    # -- creation ----------------------------------------------------------------------------

    def asarray(self, x: Any, dtype: Any = None, copy: bool | None = None,
                device: Any = None) -> ClArray:
        if isinstance(x, ClArray):
            if dtype is not None and np.dtype(dtype) != x.dtype:
                return _copy.astype(x, np.dtype(dtype))
            return _copy.contiguous(x, force=True) if copy else x
        return ClArray.from_host(_st(device), np.asarray(x, dtype=dtype))

    def empty(self, shape: Any, dtype: Any = None, device: Any = None) -> ClArray:
        return ClArray.empty(_st(device), _shape(shape), np.dtype(dtype or np.float64))

    def zeros(self, shape: Any, dtype: Any = None, device: Any = None) -> ClArray:
        return _copy.full(_st(device), _shape(shape), 0, np.dtype(dtype or np.float64))

    def ones(self, shape: Any, dtype: Any = None, device: Any = None) -> ClArray:
        return _copy.full(_st(device), _shape(shape), 1, np.dtype(dtype or np.float64))

    def full(self, shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Any:
        dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
        if isinstance(fill_value, ClArray):
            st = fill_value.qd_state
        else:
            st = _st(device)
        return _copy.full(st, _shape(shape), fill_value, dt)

    def zeros_like(self, x: ClArray, dtype: Any = None) -> ClArray:
        return _copy.full(x.qd_state, x.shape, 0, np.dtype(dtype or x.dtype))

    def ones_like(self, x: ClArray, dtype: Any = None) -> ClArray:
        return _copy.full(x.qd_state, x.shape, 1, np.dtype(dtype or x.dtype))

    def empty_like(self, x: ClArray, dtype: Any = None) -> ClArray:
        return ClArray.empty(x.qd_state, x.shape, np.dtype(dtype or x.dtype))

    def full_like(self, x: ClArray, fill_value: Any, dtype: Any = None) -> ClArray:
        return _copy.full(x.qd_state, x.shape, fill_value, np.dtype(dtype or x.dtype))

    def arange(self, start: Any, stop: Any, step: Any = 1, dtype: Any = None,
               device: Any = None) -> ClArray:
        return _copy.arange(_st(device), start, stop, step, np.dtype(dtype))

    def linspace(self, start: Any, stop: Any, num: int, dtype: Any = None,
                 endpoint: bool = True, device: Any = None) -> Any:
        dt = np.dtype(dtype or np.float64)
        if dt.kind == "c" or isinstance(start, complex) or isinstance(stop, complex):
            return self._host.linspace(start, stop, num, dtype=dt, endpoint=endpoint,
                                       device=device)
        return _copy.linspace(_st(device), start, stop, num, dt, endpoint)

    def eye(self, n_rows: int, n_cols: int | None = None, k: int = 0, dtype: Any = None,
            device: Any = None) -> ClArray:
        cols = n_rows if n_cols is None else n_cols
        return _copy.eye(_st(device), n_rows, cols, k, np.dtype(dtype or np.float64))

    def tril(self, x: ClArray, k: int = 0) -> Any:
        return _copy.triangle(x, k, upper=False) if _real(x) else self._host.tril(x, k=k)

    def triu(self, x: ClArray, k: int = 0) -> Any:
        return _copy.triangle(x, k, upper=True) if _real(x) else self._host.triu(x, k=k)

    def meshgrid(self, *arrays: ClArray, indexing: str = "xy") -> list[ClArray]:
        return _manipulation.meshgrid(*arrays, indexing=indexing)

    def astype(self, x: ClArray, dtype: Any, copy: bool = True) -> ClArray:
        dt = np.dtype(dtype)
        if dt == x.dtype and not copy:
            return x
        return _copy.astype(x, dt)

    # -- elementwise functions with extra arguments -----------------------------------------

    def where(self, condition: ClArray, x1: Any, x2: Any) -> Any:
        result = _elementwise.where(condition, x1, x2)
        return result if result is not None else self._host.where(condition, x1, x2)

    def clip(self, x: ClArray, lo: Any = None, hi: Any = None) -> Any:
        result = _elementwise.clip(x, lo, hi)
        return result if result is not None else self._host.clip(x, lo, hi)

    # -- manipulation ------------------------------------------------------------------------

    def reshape(self, x: ClArray, shape: Any, copy: bool | None = None) -> ClArray:
        return _manipulation.reshape(x, _shape(shape), copy)

    def broadcast_to(self, x: ClArray, shape: Any) -> ClArray:
        view = _broadcast_to(x, _shape(shape))
        if view is not x:
            view.qd_readonly = True
        return view

    def broadcast_arrays(self, *arrays: ClArray) -> list[ClArray]:
        views = _manipulation.broadcast_arrays(*arrays)
        for v, a in zip(views, arrays, strict=True):
            if v is not a:
                v.qd_readonly = True
        return views

    def concat(self, arrays: Any, axis: int | None = 0) -> Any:
        if all(_real(a) for a in arrays):
            return _manipulation.concat(arrays, axis)
        return self._host.concat(arrays, axis=axis)

    def stack(self, arrays: Any, axis: int = 0) -> Any:
        if all(_real(a) for a in arrays):
            return _manipulation.stack(arrays, axis)
        return self._host.stack(arrays, axis=axis)

    def expand_dims(self, x: ClArray, axis: Any = 0) -> ClArray:
        return _manipulation.expand_dims(x, axis)

    def squeeze(self, x: ClArray, axis: Any) -> ClArray:
        return _manipulation.squeeze(x, axis)

    def permute_dims(self, x: ClArray, axes: Any) -> ClArray:
        return x.permute(tuple(int(a) % max(x.ndim, 1) for a in axes))

    def matrix_transpose(self, x: ClArray) -> ClArray:
        return x.swapaxes(-1, -2)

    def moveaxis(self, x: ClArray, source: Any, destination: Any) -> ClArray:
        return _manipulation.moveaxis(x, source, destination)

    def flip(self, x: ClArray, axis: Any = None) -> ClArray:
        return _manipulation.flip(x, axis)

    def roll(self, x: ClArray, shift: Any, axis: Any = None) -> Any:
        return _manipulation.roll(x, shift, axis) if _real(x) else self._host.roll(
            x, shift, axis=axis)

    def tile(self, x: ClArray, repetitions: Any) -> Any:
        return _manipulation.tile(x, tuple(repetitions)) if _real(x) else self._host.tile(
            x, repetitions)

    def repeat(self, x: ClArray, repeats: Any, axis: int | None = None) -> Any:
        if isinstance(repeats, int) and _real(x):
            return _manipulation.repeat_scalar(x, repeats, axis)
        return self._host.repeat(x, repeats, axis=axis)

    # -- indexing, searching, sorting --------------------------------------------------------

    def take(self, x: ClArray, indices: ClArray, axis: int | None = None) -> ClArray:
        return _manipulation.take(x, indices, axis)

    def take_along_axis(self, x: ClArray, indices: ClArray, axis: int = -1) -> ClArray:
        return _manipulation.take_along_axis(x, indices, axis)

    def sort(self, x: ClArray, axis: int = -1, descending: bool = False,
             stable: bool = True) -> Any:
        if not _real(x):
            return self._host.sort(x, axis=axis, descending=descending, stable=stable)
        return _sorting.sort(x, axis, descending)

    def argsort(self, x: ClArray, axis: int = -1, descending: bool = False,
                stable: bool = True) -> Any:
        if not _real(x):
            return self._host.argsort(x, axis=axis, descending=descending, stable=stable)
        return _sorting.argsort(x, axis, descending)

    def searchsorted(self, x1: ClArray, x2: Any, side: str = "left",
                     sorter: ClArray | None = None) -> Any:
        if not (_real(x1) and isinstance(x2, ClArray) and _real(x2)):
            return self._host.searchsorted(x1, x2, side=side, sorter=sorter)
        if sorter is not None:
            x1 = _manipulation.take(x1, sorter, 0)
        return _sorting.searchsorted(x1, x2, side)

    def argmax(self, x: ClArray, axis: int | None = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.argmax(x, axis=axis, keepdims=keepdims)
        return _reductions.argreduce("argmax", x, axis, keepdims)

    def argmin(self, x: ClArray, axis: int | None = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.argmin(x, axis=axis, keepdims=keepdims)
        return _reductions.argreduce("argmin", x, axis, keepdims)

    def count_nonzero(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.count_nonzero(x, axis=axis, keepdims=keepdims)
        return _reductions.reduce("count_nonzero", x, _axes(axis, x.ndim), keepdims)

    # -- reductions and scans ----------------------------------------------------------------

    def _reduce(self, op: str, x: ClArray, axis: Any, keepdims: bool, **kw: Any) -> Any:
        if not _real(x):
            return getattr(self._host, op)(x, axis=axis, keepdims=keepdims, **kw)
        return _reductions.reduce(op, x, _axes(axis, x.ndim), keepdims, **kw)

    def sum(self, x: ClArray, axis: Any = None, keepdims: bool = False,
            dtype: Any = None) -> Any:
        if dtype is not None and np.dtype(dtype).kind == "c":
            return self._host.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)
        return self._reduce("sum", x, axis, keepdims, dtype=dtype)

    def prod(self, x: ClArray, axis: Any = None, keepdims: bool = False,
             dtype: Any = None) -> Any:
        if dtype is not None and np.dtype(dtype).kind == "c":
            return self._host.prod(x, axis=axis, keepdims=keepdims, dtype=dtype)
        return self._reduce("prod", x, axis, keepdims, dtype=dtype)

    def max(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._reduce("max", x, axis, keepdims)

    def min(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._reduce("min", x, axis, keepdims)

    def all(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._reduce("all", x, axis, keepdims)

    def any(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._reduce("any", x, axis, keepdims)

    def mean(self, x: ClArray, axis: Any = None, keepdims: bool = False) -> Any:
        if not _real(x):
            return self._host.mean(x, axis=axis, keepdims=keepdims)
        axes = _axes(axis, x.ndim)
        count = _count(x, axes)
        if x.dtype.kind != "f":
            x = _copy.astype(x, np.dtype(np.float64))
        total = _reductions.reduce("sum", x, axes, keepdims)
        return self.divide(total, float(count))

    def var(self, x: ClArray, axis: Any = None, keepdims: bool = False,
            correction: float = 0.0) -> Any:
        if not _real(x):
            return self._host.var(x, axis=axis, keepdims=keepdims, correction=correction)
        axes = _axes(axis, x.ndim)
        count = _count(x, axes)
        if x.dtype.kind != "f":
            x = _copy.astype(x, np.dtype(np.float64))
        dev = self.subtract(x, self.mean(x, axis=axes, keepdims=True))
        total = _reductions.reduce("sum", self.multiply(dev, dev), axes, keepdims)
        return self.divide(total, float(max(count - correction, 0)))

    def std(self, x: ClArray, axis: Any = None, keepdims: bool = False,
            correction: float = 0.0) -> Any:
        if not _real(x):
            return self._host.std(x, axis=axis, keepdims=keepdims, correction=correction)
        return self.sqrt(self.var(x, axis=axis, keepdims=keepdims, correction=correction))

    def cumulative_sum(self, x: ClArray, axis: int = 0, dtype: Any = None,
                       include_initial: bool = False) -> Any:
        return self._scan("cumulative_sum", x, axis, dtype, include_initial)

    def cumulative_prod(self, x: ClArray, axis: int = 0, dtype: Any = None,
                        include_initial: bool = False) -> Any:
        return self._scan("cumulative_prod", x, axis, dtype, include_initial)

    def _scan(self, op: str, x: ClArray, axis: int, dtype: Any, include_initial: bool) -> Any:
        if not _real(x) or (dtype is not None and np.dtype(dtype).kind == "c"):
            return getattr(self._host, op)(x, axis=axis, dtype=dtype,
                                           include_initial=include_initial)
        return _reductions.scan(op, x, axis, dtype, include_initial)

    def diff(self, x: ClArray, n: int = 1, axis: int = -1, **extra: Any) -> Any:
        if extra or not _real(x):
            return self._host.diff(x, n=n, axis=axis, **extra)
        axis %= x.ndim
        for _ in range(n):
            hi: list[Any] = [slice(None)] * x.ndim
            lo: list[Any] = [slice(None)] * x.ndim
            hi[axis], lo[axis] = slice(1, None), slice(None, -1)
            op = "not_equal" if x.dtype == np.bool_ else "subtract"
            x = getattr(self, op)(x.basic_view(tuple(hi)), x.basic_view(tuple(lo)))
        return x

    # -- linear algebra ----------------------------------------------------------------------

    def matmul(self, x1: ClArray, x2: ClArray) -> Any:
        result = _linalg.matmul(x1, x2)
        return result if result is not None else self._host.matmul(x1, x2)

    def vecdot(self, x1: ClArray, x2: ClArray, axis: int = -1) -> Any:
        if not (_real(x1) and _real(x2)):
            return self._host.vecdot(x1, x2, axis=axis)
        prod = self.multiply(x1, x2)
        return self.sum(prod, axis=(axis % prod.ndim,), dtype=prod.dtype)


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in shape)


def _count(x: ClArray, axes: tuple[int, ...] | None) -> int:
    n = 1
    for a in range(x.ndim) if axes is None else axes:
        n *= x.shape[a]
    return n


__all__ = ["OpenCLNamespace", "ClArray", "HOST_FUNCTIONS", "on_host"]
