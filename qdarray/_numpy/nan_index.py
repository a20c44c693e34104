"""NumPy's NaN-ignoring reductions, flat-index arithmetic and partitions, through the namespace
(adapters of the table in `_numpy_functions`, with NumPy's own signatures).

- `nansum`, `nanprod`, `nanmin`, `nanmax`, `nanargmin`, `nanargmax`, `nanmean`, `nanvar`,
  `nanstd`: NaNs replaced by the reduction's identity (or left out of the count), as NumPy's;
  a slice of NaNs only is NaN for min / max / mean / var / std (without NumPy's warning) and
  a ValueError for the arg-reductions, as NumPy's.
- `unravel_index`, `ravel_multi_index`: integer arithmetic on index arrays, bounds checked as
  NumPy checks them (Dask's arg-reductions call both on each chunk's result).
- `nan_to_num`: NaN and infinities replaced, as NumPy's (real dtypes).
- `partition`, `argpartition`: a sorted array is a partition for every `kth` (Dask's `topk`).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import _creation_functions as cf
from .. import _dtypes
from .. import _elementwise_functions as ew
from .. import _searching_functions as sf
from .. import _sorting_functions as so
from .. import _statistical_functions as st
from .. import _utility_functions as ut
from .._array import Array
from .operands import (
    NO_VALUE,
    NotInNamespace,
    array_operand,
    cast,
    device_of,
    flag,
    mask,
    one_array,
    refuse,
)


def _floating(x: Array) -> bool:
    return x.dtype.kind in "fc"


def _without_nan(x: Array, fill: float) -> Array:
    return sf.where(ew.isnan(x), fill, x) if _floating(x) else x


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: Any = NO_VALUE, initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("nansum", out=out, initial=initial, where=mask(where))
    x = _without_nan(one_array(a, "nansum"), 0.0)
    return st.sum(x, axis=axis, dtype=_dtypes.normalize_dtype(dtype), keepdims=flag(keepdims))


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: Any = NO_VALUE, initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("nanprod", out=out, initial=initial, where=mask(where))
    x = _without_nan(one_array(a, "nanprod"), 1.0)
    return st.prod(x, axis=axis, dtype=_dtypes.normalize_dtype(dtype), keepdims=flag(keepdims))


def _extreme(a: Any, axis: Any, keepdims: Any, func: str) -> Array:
    x = one_array(a, func)
    largest = func == "nanmax"
    reduce = st.max if largest else st.min
    if x.dtype.kind == "c":  # NumPy orders complex numbers; the namespace does not
        raise NotInNamespace(f"numpy.{func} of complex numbers has no namespace equivalent")
    if not _floating(x):
        return reduce(x, axis=axis, keepdims=flag(keepdims))
    value = reduce(_without_nan(x, -math.inf if largest else math.inf), axis=axis,
                   keepdims=flag(keepdims))
    only_nan = ut.all(ew.isnan(x), axis=axis, keepdims=flag(keepdims))
    result: Array = sf.where(only_nan, math.nan, value)
    return result


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
           initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("nanmin", out=out, initial=initial, where=mask(where))
    return _extreme(a, axis, keepdims, "nanmin")


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
           initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("nanmax", out=out, initial=initial, where=mask(where))
    return _extreme(a, axis, keepdims, "nanmax")


def _arg_extreme(a: Any, axis: Any, keepdims: Any, func: str) -> Array:
    x = one_array(a, func)
    largest = func == "nanargmax"
    find = sf.argmax if largest else sf.argmin
    if x.dtype.kind == "c":
        raise NotInNamespace(f"numpy.{func} of complex numbers has no namespace equivalent")
    if x.dtype.kind == "f":
        if builtins.bool(ut.any(ut.all(ew.isnan(x), axis=axis))):
            raise ValueError("All-NaN slice encountered")
        x = _without_nan(x, -math.inf if largest else math.inf)
    return find(x, axis=axis, keepdims=flag(keepdims))


def nanargmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = NO_VALUE) -> Array:
    refuse("nanargmin", out=out)
    return _arg_extreme(a, axis, keepdims, "nanargmin")


def nanargmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = NO_VALUE) -> Array:
    refuse("nanargmax", out=out)
    return _arg_extreme(a, axis, keepdims, "nanargmax")


def _inexact(x: Array, dtype: Any) -> Array:
    x = cast(x, dtype)
    return x if _floating(x) else cast(x, _dtypes.float64)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: Any = NO_VALUE, *, where: Any = NO_VALUE) -> Array:
    refuse("nanmean", out=out, where=mask(where))
    x = _inexact(one_array(a, "nanmean"), dtype)
    present = ew.logical_not(ew.isnan(x))
    total = st.sum(sf.where(present, x, 0.0), axis=axis, keepdims=flag(keepdims))
    count = st.sum(cast(present, total.dtype), axis=axis, keepdims=flag(keepdims))
    return ew.divide(total, count)


def _nan_moment(a: Any, axis: Any, dtype: Any, out: Any, ddof: Any, keepdims: Any,
                where: Any, mean: Any, correction: Any, func: str) -> Array:
    refuse(func, out=out, where=mask(where), mean=mean)
    if correction is not NO_VALUE:
        if ddof != 0:
            raise ValueError(f"numpy.{func}: ddof and correction can't be provided "
                             "simultaneously.")
        ddof = correction
    x = _inexact(one_array(a, func), dtype)
    present = ew.logical_not(ew.isnan(x))
    real = _dtypes.float32 if x.dtype in (_dtypes.float32, _dtypes.complex64) else (
        _dtypes.float64)
    centre = ew.divide(st.sum(sf.where(present, x, 0.0), axis=axis, keepdims=True),
                       st.sum(cast(present, real), axis=axis, keepdims=True))
    deviation = ew.abs(ew.subtract(x, centre))
    squares = sf.where(present, ew.multiply(deviation, deviation), 0.0)
    total = st.sum(squares, axis=axis, keepdims=flag(keepdims))
    dof = ew.subtract(st.sum(cast(present, real), axis=axis, keepdims=flag(keepdims)), ddof)
    # NumPy's: NaN where no degree of freedom is left (all NaN, or ddof >= the count)
    result = sf.where(dof <= 0, math.nan, ew.divide(total, ew.maximum(dof, 1)))
    return ew.sqrt(result) if func == "nanstd" else result


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
           keepdims: Any = NO_VALUE, *, where: Any = NO_VALUE, mean: Any = NO_VALUE,
           correction: Any = NO_VALUE) -> Array:
    return _nan_moment(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "nanvar")


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
           keepdims: Any = NO_VALUE, *, where: Any = NO_VALUE, mean: Any = NO_VALUE,
           correction: Any = NO_VALUE) -> Array:
    return _nan_moment(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "nanstd")


def nan_to_num(x: Any, copy: Any = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Array:
    a = one_array(x, "nan_to_num")
    if a.dtype.kind == "c":
        raise NotInNamespace("numpy.nan_to_num of complex numbers has no namespace equivalent")
    if a.dtype.kind != "f":
        return cf.asarray(a, copy=True) if copy else a
    big = float(np.finfo(a.dtype._np).max)
    result = sf.where(ew.isnan(a), nan, a)
    result = sf.where(result == math.inf, big if posinf is None else posinf, result)
    result = sf.where(result == -math.inf, -big if neginf is None else neginf, result)
    if copy:
        return result  # type: ignore[no-any-return]
    a[...] = result
    return a


# -- flat indices -------------------------------------------------------------------------------


def _order(order: Any, func: str) -> bool:
    """Whether `order` is "F" (axes last to first); ValueError for other than "C" / "F"."""
    if order not in ("C", "F"):
        raise ValueError(f"numpy.{func}: only 'C' or 'F' order is permitted; got {order!r}.")
    return builtins.bool(order == "F")


def _int_index(x: Array, func: str) -> Array:
    if x.dtype.kind not in "iu":
        raise TypeError(f"numpy.{func}: only int indices permitted; got {x.dtype}.")
    return x


def unravel_index(indices: Any, shape: Any, order: Any = "C") -> tuple[Array, ...]:
    device = device_of([indices])
    assert device is not None  # __array_function__ came from a qdarray argument
    flat = _int_index(array_operand(indices, device, "unravel_index"), "unravel_index")
    dims = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    size = 1
    for d in dims:
        size *= d
    if flat.size:
        low, high = int(st.min(flat)), int(st.max(flat))
        if low < 0 or high >= size:
            bad = high if high >= size else low
            raise ValueError(f"index {bad} is out of bounds for array with size {size}")
    out: list[Array] = []
    rest = flat
    for d in (dims if _order(order, "unravel_index") else dims[::-1]):
        out.append(ew.remainder(rest, d))
        rest = ew.floor_divide(rest, d)
    return tuple(out if order == "F" else out[::-1])


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise",
                      order: Any = "C") -> Array:
    device = device_of([multi_index])
    assert device is not None
    shape = tuple(int(d) for d in dims)
    index = [_int_index(array_operand(i, device, "ravel_multi_index"), "ravel_multi_index")
             for i in multi_index]
    if len(index) != len(shape):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(shape)}")
    modes = (mode,) * len(shape) if isinstance(mode, str) else tuple(mode)
    fortran = _order(order, "ravel_multi_index")
    flat: Any = 0
    stride = 1
    axes = range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)
    for ax in axes:
        i, d = index[ax], shape[ax]
        if modes[ax] == "wrap":
            i = ew.remainder(i, d)
        elif modes[ax] == "clip":
            i = ew.clip(i, 0, d - 1)
        elif modes[ax] != "raise":
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap'; "
                             f"got {modes[ax]!r}.")
        elif i.size and builtins.bool(ut.any(ew.logical_or(i < 0, i >= d))):
            raise ValueError("invalid entry in coordinates array")
        flat = ew.add(ew.multiply(cast(i, _dtypes.int64), stride), flat)
        stride *= d
    return flat  # type: ignore[no-any-return]


# -- partitions ---------------------------------------------------------------------------------


def _check_kth(x: Array, kth: Any, axis: Any) -> int:
    """`axis` as an int, after NumPy's check that every `kth` indexes that axis."""
    ax = int(axis)
    n = int(x.shape[ax])
    for k in (kth if isinstance(kth, list | tuple) else [kth]):
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")
    return ax


def partition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
              order: Any = None) -> Array:
    refuse("partition", order=order)
    x = one_array(a, "partition")
    if axis is None:
        x, axis = x.reshape(-1), -1
    return so.sort(x, axis=_check_kth(x, kth, axis))


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
                 order: Any = None) -> Array:
    refuse("argpartition", order=order)
    x = one_array(a, "argpartition")
    if axis is None:
        x, axis = x.reshape(-1), -1
    return so.argsort(x, axis=_check_kth(x, kth, axis))
