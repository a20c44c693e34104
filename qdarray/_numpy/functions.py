"""The one table from NumPy's functions and ufuncs to the namespace.

`FUNCTIONS` maps a NumPy function (what `__array_function__` receives) to an adapter that takes
the NumPy function's own parameters (same names, order, kinds and defaults:
tests/array/test_numpy_protocols.py checks each against `inspect.signature`) and calls namespace
functions, so the result is a qdarray array on the arguments' device, computed the way
`qd.<name>` computes it (and recorded where namespace operations are recorded). `UFUNCS` maps
ufunc names to namespace functions of the same arguments, `UFUNC_METHODS` the `ufunc.reduce` /
`ufunc.accumulate` pairs, and `LIKE_FUNCTIONS` NumPy's creation functions given `like=` a qdarray
array. The adapters of numpy.linalg and numpy.fft live in `_numpy_linalg_fft`, those of the
creation functions in `_numpy_creation`.

An argument the namespace has no equivalent for (`out=`, `where=`, `order="F"`, a float16
dtype, ...) raises `NotInNamespace` before anything is computed; `_numpy_protocols` then runs
NumPy's own function on CPU data, or raises a TypeError on other devices.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _creation_functions as cf
from .. import _dtypes, fft, linalg
from .. import _elementwise_functions as ew
from .. import _linear_algebra_functions as la
from .. import _manipulation_functions as mf
from .. import _searching_functions as sf
from .. import _set_functions as setf
from .. import _sorting_functions as so
from .. import _statistical_functions as st
from .. import _utility_functions as ut
from .._array import Array
from .._data_type_functions import astype
from .._indexing import take, take_along_axis
from . import creation as nc
from . import linalg_fft as lf
from . import nan_index as ni
from .operands import (
    NO_VALUE,
    NotInNamespace,
    array_operand,
    arrays_of,
    cast,
    device_of,
    dtype_of,
    flag,
    mask,
    one_array,
    operand,
    refuse,
    shape_tuple,
)

# -- reductions --------------------------------------------------------------------------------


def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
         initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("sum", out=out, initial=initial, where=mask(where))
    return st.sum(one_array(a, "sum"), axis=axis, dtype=dtype_of(dtype), keepdims=flag(keepdims))


def _prod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
          initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("prod", out=out, initial=initial, where=mask(where))
    return st.prod(one_array(a, "prod"), axis=axis, dtype=dtype_of(dtype), keepdims=flag(keepdims))


def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
          *, where: Any = NO_VALUE) -> Array:
    refuse("mean", out=out, where=mask(where))
    return st.mean(cast(one_array(a, "mean"), dtype), axis=axis, keepdims=flag(keepdims))


def _correction(ddof: Any, correction: Any, func: str) -> Any:
    if correction is NO_VALUE:
        return ddof
    if ddof != 0:
        raise ValueError(f"numpy.{func}: ddof and correction can't be provided simultaneously.")
    return correction


def _var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
         keepdims: Any = NO_VALUE, *, where: Any = NO_VALUE, mean: Any = NO_VALUE,
         correction: Any = NO_VALUE) -> Array:
    refuse("var", out=out, where=mask(where), mean=mean)
    return st.var(cast(one_array(a, "var"), dtype), axis=axis, keepdims=flag(keepdims),
                  correction=_correction(ddof, correction, "var"))


def _std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
         keepdims: Any = NO_VALUE, *, where: Any = NO_VALUE, mean: Any = NO_VALUE,
         correction: Any = NO_VALUE) -> Array:
    refuse("std", out=out, where=mask(where), mean=mean)
    return st.std(cast(one_array(a, "std"), dtype), axis=axis, keepdims=flag(keepdims),
                  correction=_correction(ddof, correction, "std"))


def _min(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
         initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("min", out=out, initial=initial, where=mask(where))
    return st.min(one_array(a, "min"), axis=axis, keepdims=flag(keepdims))


def _max(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE,
         initial: Any = NO_VALUE, where: Any = NO_VALUE) -> Array:
    refuse("max", out=out, initial=initial, where=mask(where))
    return st.max(one_array(a, "max"), axis=axis, keepdims=flag(keepdims))


def _argmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = NO_VALUE) -> Array:
    refuse("argmin", out=out)
    return sf.argmin(one_array(a, "argmin"), axis=axis, keepdims=flag(keepdims))


def _argmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = NO_VALUE) -> Array:
    refuse("argmax", out=out)
    return sf.argmax(one_array(a, "argmax"), axis=axis, keepdims=flag(keepdims))


def _any(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE, *,
         where: Any = NO_VALUE) -> Array:
    refuse("any", out=out, where=mask(where))
    return ut.any(one_array(a, "any"), axis=axis, keepdims=flag(keepdims))


def _all(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE, *,
         where: Any = NO_VALUE) -> Array:
    refuse("all", out=out, where=mask(where))
    return ut.all(one_array(a, "all"), axis=axis, keepdims=flag(keepdims))


def _scan(scan: Callable[..., Array], func: str) -> Callable[..., Array]:
    """numpy.cumsum / cumprod: the namespace's cumulative function, flattening for axis=None."""

    def adapter(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
        refuse(func, out=out)
        x = one_array(a, func)
        if axis is None:
            x, axis = mf.reshape(x, (-1,)), 0
        return scan(x, axis=axis, dtype=dtype_of(dtype))

    adapter.__name__ = f"_{func}"
    return adapter


def _cumulative(scan: Callable[..., Array], func: str) -> Callable[..., Array]:
    """numpy.cumulative_sum / cumulative_prod (NumPy's spelling of the standard's)."""

    def adapter(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                include_initial: Any = False) -> Array:
        refuse(func, out=out)
        return scan(one_array(x, func), axis=axis, dtype=dtype_of(dtype),
                    include_initial=include_initial)

    adapter.__name__ = f"_{func}"
    return adapter


def _count_nonzero(a: Any, axis: Any = None, *, keepdims: Any = False) -> Array:
    return sf.count_nonzero(one_array(a, "count_nonzero"), axis=axis, keepdims=keepdims)


# -- searching and sorting ---------------------------------------------------------------------


def _nonzero(a: Any) -> tuple[Array, ...]:
    return sf.nonzero(one_array(a, "nonzero"))


def _where(condition: Any, x: Any = None, y: Any = None, /) -> Any:
    device = device_of((condition, x, y))
    if device is None:
        raise NotInNamespace("numpy.where got no qdarray array")
    cond = array_operand(condition, device, "where")
    if cond._dtype is not _dtypes.bool:
        cond = ew.not_equal(cond, 0)
    if x is None and y is None:
        return sf.nonzero(cond)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return sf.where(cond, operand(x, device, "where"), operand(y, device, "where"))


def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
          stable: Any = None) -> Array:
    refuse("sort", order=order)
    x = one_array(a, "sort")
    if axis is None:
        x, axis = mf.reshape(x, (-1,)), -1
    return so.sort(x, axis=axis, stable=True)


def _argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None) -> Array:
    # Note: always stable, which is one of the orders NumPy's default quicksort may give.
    refuse("argsort", order=order)
    x = one_array(a, "argsort")
    if axis is None:
        x, axis = mf.reshape(x, (-1,)), -1
    return so.argsort(x, axis=axis, stable=True)


def _searchsorted(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Array:
    x, values = arrays_of((a, v), "searchsorted")
    order = None if sorter is None else array_operand(sorter, x._device, "searchsorted")
    return sf.searchsorted(x, values, side=side, sorter=order)


def _round(a: Any, decimals: Any = 0, out: Any = None) -> Array:
    refuse("round", out=out)
    x = one_array(a, "round")
    if decimals == 0 or x._dtype.kind in "biu" and decimals > 0:
        return ew.round(x)
    if x._dtype.kind in "biu":
        raise NotInNamespace("numpy.round of integers with decimals < 0 has no namespace "
                             "equivalent")
    # NumPy's own method: scale by a power of ten (a Python float, so float32 stays float32).
    if decimals > 0:
        f = 10.0 ** decimals
        return ew.divide(ew.round(ew.multiply(x, f)), f)
    f = 10.0 ** -decimals
    return ew.multiply(ew.round(ew.divide(x, f)), f)


def _clip(a: Any, a_min: Any = NO_VALUE, a_max: Any = NO_VALUE, out: Any = None, *,
          min: Any = NO_VALUE, max: Any = NO_VALUE, **kwargs: Any) -> Array:
    refuse("clip", out=out, **kwargs)
    if a_min is not NO_VALUE and min is not NO_VALUE or (
            a_max is not NO_VALUE and max is not NO_VALUE):
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                         "are provided is forbidden.")
    lo = min if a_min is NO_VALUE else a_min
    hi = max if a_max is NO_VALUE else a_max
    x = one_array(a, "clip")
    lo = None if lo is NO_VALUE or lo is None else operand(lo, x._device, "clip")
    hi = None if hi is NO_VALUE or hi is None else operand(hi, x._device, "clip")
    return ew.clip(x, lo, hi)


# -- joining, shaping, moving axes ---------------------------------------------------------------


def _concatenate(arrays: Any, /, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: Any = "same_kind") -> Array:
    refuse("concatenate", out=out, dtype=dtype)
    return mf.concat(arrays_of(arrays, "concatenate"), axis=axis)


def _stack(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
           casting: Any = "same_kind") -> Array:
    refuse("stack", out=out, dtype=dtype)
    return mf.stack(arrays_of(arrays, "stack"), axis=axis)


def _vstack(tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Array:
    refuse("vstack", dtype=dtype)
    return mf.concat([_at_least(x, 2) for x in arrays_of(tup, "vstack")], axis=0)


def _hstack(tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Array:
    refuse("hstack", dtype=dtype)
    arrays = [_at_least(x, 1) for x in arrays_of(tup, "hstack")]
    return mf.concat(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


def _at_least(x: Array, ndim: int) -> Array:
    """NumPy's atleast_Nd: 0-d -> (1,)*N, (n,) -> (1, n) or (1, n, 1), (m, n) -> (m, n, 1)."""
    if x.ndim >= ndim:
        return x
    shape = {0: (1,) * ndim, 1: (1, x.size, 1)[:ndim], 2: (*x.shape, 1)}[x.ndim]
    return mf.reshape(x, shape)


def _atleast(ndim: int) -> Callable[..., Any]:
    def adapter(*arys: Any) -> Any:
        out = tuple(_at_least(x, ndim) for x in arrays_of(arys, f"atleast_{ndim}d"))
        return out[0] if len(out) == 1 else out

    adapter.__name__ = f"_atleast_{ndim}d"
    return adapter


def _expand_dims(a: Any, axis: Any) -> Array:
    return mf.expand_dims(one_array(a, "expand_dims"), axis=axis)


def _squeeze(a: Any, axis: Any = None) -> Array:
    x = one_array(a, "squeeze")
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return mf.squeeze(x, axis=axis)


def _reshape(a: Any, /, shape: Any, order: Any = "C", *, copy: Any = None) -> Array:
    if order != "C":
        raise NotInNamespace(f"numpy.reshape with order={order!r} has no namespace equivalent")
    return mf.reshape(one_array(a, "reshape"), shape_tuple(shape), copy=copy)


def _ravel(a: Any, order: Any = "C") -> Array:
    if order != "C":
        raise NotInNamespace(f"numpy.ravel with order={order!r} has no namespace equivalent")
    return mf.reshape(one_array(a, "ravel"), (-1,))


def _transpose(a: Any, axes: Any = None) -> Array:
    x = one_array(a, "transpose")
    return mf.permute_dims(x, tuple(reversed(range(x.ndim))) if axes is None else tuple(axes))


def _matrix_transpose(x: Any, /) -> Array:
    return la.matrix_transpose(one_array(x, "matrix_transpose"))


def _swapaxes(a: Any, axis1: Any, axis2: Any) -> Array:
    x = one_array(a, "swapaxes")
    axes = list(range(x.ndim))
    i, j = axes[axis1], axes[axis2]  # an IndexError for an axis out of range, as in NumPy
    axes[i], axes[j] = j, i
    return mf.permute_dims(x, tuple(axes))


def _moveaxis(a: Any, source: Any, destination: Any) -> Array:
    return mf.moveaxis(one_array(a, "moveaxis"), source, destination)


def _flip(m: Any, axis: Any = None) -> Array:
    return mf.flip(one_array(m, "flip"), axis=axis)


def _roll(a: Any, shift: Any, axis: Any = None) -> Array:
    return mf.roll(one_array(a, "roll"), shift, axis=axis)


def _tile(A: Any, reps: Any) -> Array:
    return mf.tile(one_array(A, "tile"), shape_tuple(reps))


def _repeat(a: Any, repeats: Any, axis: Any = None) -> Array:
    x = one_array(a, "repeat")
    if not isinstance(repeats, int | np.integer):
        repeats = array_operand(repeats, x._device, "repeat")
    return mf.repeat(x, repeats, axis=axis)


def _broadcast_to(array: Any, shape: Any, subok: Any = False) -> Array:
    return mf.broadcast_to(one_array(array, "broadcast_to"), shape_tuple(shape))


def _broadcast_arrays(*args: Any, subok: Any = False) -> tuple[Array, ...]:
    return tuple(mf.broadcast_arrays(*arrays_of(args, "broadcast_arrays")))


def _meshgrid(*xi: Any, copy: Any = True, sparse: Any = False, indexing: Any = "xy") -> Any:
    refuse("meshgrid", sparse=sparse or None)
    return tuple(cf.meshgrid(*arrays_of(xi, "meshgrid"), indexing=indexing))


# -- indexing --------------------------------------------------------------------------------


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: Any = "raise") -> Array:
    refuse("take", out=out, mode=None if mode == "raise" else mode)
    x = one_array(a, "take")
    idx = array_operand(indices, x._device, "take")
    if axis is None:  # NumPy's default: the flattened array
        x, axis = mf.reshape(x, (-1,)), 0
    if idx.ndim == 1:
        return take(x, idx, axis=axis)
    # 0-D and N-D indices: take the flattened indices, then put idx's shape in axis's place
    taken = take(x, mf.reshape(idx, (-1,)), axis=axis)
    k = operator.index(axis) % x.ndim
    return mf.reshape(taken, x.shape[:k] + idx.shape + x.shape[k + 1:])


def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Array:
    x, idx = arrays_of((arr, indices), "take_along_axis")
    if axis is None:
        x, axis = mf.reshape(x, (-1,)), 0
    return take_along_axis(x, idx, axis=axis)


# -- products and linear algebra ---------------------------------------------------------------


def _dot(a: Any, b: Any, out: Any = None) -> Array:
    refuse("dot", out=out)
    x, y = arrays_of((a, b), "dot")
    if x.ndim == 0 or y.ndim == 0:
        return ew.multiply(x, y)
    if y.ndim <= 2 and x.ndim <= 2 or y.ndim == 1:
        return la.matmul(x, y)
    return la.tensordot(x, y, axes=((x.ndim - 1,), (y.ndim - 2,)))


def _vdot(a: Any, b: Any, /) -> Array:
    x, y = arrays_of((a, b), "vdot")
    return la.vecdot(mf.reshape(x, (-1,)), mf.reshape(y, (-1,)))


def _outer(a: Any, b: Any, out: Any = None) -> Array:
    refuse("outer", out=out)
    x, y = arrays_of((a, b), "outer")
    return linalg.outer(mf.reshape(x, (-1,)), mf.reshape(y, (-1,)))


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    x, y = arrays_of((a, b), "tensordot")
    return la.tensordot(x, y, axes=axes)


def _trace(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None,
           out: Any = None) -> Array:
    refuse("trace", out=out)
    x = mf.moveaxis(one_array(a, "trace"), (axis1, axis2), (-2, -1))
    return linalg.trace(x, offset=offset, dtype=dtype_of(dtype))


def _diagonal(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Array:
    x = mf.moveaxis(one_array(a, "diagonal"), (axis1, axis2), (-2, -1))
    return linalg.diagonal(x, offset=offset)


# -- elementwise-like, comparisons, sets ------------------------------------------------------


def _real(val: Any) -> Array:
    return ew.real(one_array(val, "real"))


def _imag(val: Any) -> Array:
    return ew.imag(one_array(val, "imag"))


def _diff(a: Any, n: Any = 1, axis: Any = -1, prepend: Any = NO_VALUE,
          append: Any = NO_VALUE) -> Array:
    x = one_array(a, "diff")
    before = None if prepend is NO_VALUE else operand(prepend, x._device, "diff")
    after = None if append is NO_VALUE else operand(append, x._device, "diff")
    return ut.diff(x, n=n, axis=axis, prepend=before, append=after)


def _isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Array:
    # NumPy's formula: |a - b| <= atol + rtol * |b|, b in at least float64 for integers.
    x, y = arrays_of((a, b), "isclose")
    y = astype(y, _dtypes.result_type(y._dtype, _dtypes.float64)) if y._dtype.kind in "biu" else y
    if x._dtype.kind == "b":
        x = astype(x, y._dtype)
    close = ew.less_equal(ew.abs(ew.subtract(x, y)), ew.add(ew.multiply(ew.abs(y), rtol), atol))
    result = ew.logical_or(ew.logical_and(close, ew.isfinite(y)), ew.equal(x, y))
    if equal_nan:
        result = ew.logical_or(result, ew.logical_and(ew.isnan(x), ew.isnan(y)))
    return result


def _allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
              equal_nan: Any = False) -> builtins.bool:
    return builtins.bool(ut.all(_isclose(a, b, rtol, atol, equal_nan)))


def _array_equal(a1: Any, a2: Any, equal_nan: Any = False) -> builtins.bool:
    x, y = arrays_of((a1, a2), "array_equal")
    if x.shape != y.shape:
        return False
    same = ew.equal(x, y)
    if equal_nan and x._dtype.kind in "fc" and y._dtype.kind in "fc":
        same = ew.logical_or(same, ew.logical_and(ew.isnan(x), ew.isnan(y)))
    return builtins.bool(ut.all(same))


def _unique(ar: Any, return_index: Any = False, return_inverse: Any = False,
            return_counts: Any = False, axis: Any = None, *, equal_nan: Any = True,
            sorted: Any = True) -> Array:
    _unique_flags(return_index, return_inverse, return_counts)
    refuse("unique", axis=axis)
    x = one_array(ar, "unique")
    if x._dtype.kind == "c":
        raise NotInNamespace("numpy.unique of complex values has no namespace equivalent")
    values = so.sort(setf.unique_values(mf.reshape(x, (-1,))))
    if equal_nan and x._dtype.kind == "f":  # NumPy keeps one NaN (sorted last)
        nan = ew.isnan(values)
        if builtins.bool(ut.any(nan)):
            values = values[: values.shape[0] - int(sf.count_nonzero(nan)) + 1]
    return values


def _unique_flags(return_index: Any, return_inverse: Any, return_counts: Any) -> None:
    """np.unique's return_* flags: the namespace functions that give the same results."""
    flags = [name for name, value in (("return_index", return_index),
                                       ("return_inverse", return_inverse),
                                       ("return_counts", return_counts)) if value]
    if not flags:
        return
    if flags == ["return_counts"]:
        use = "qd.unique_counts(x), which gives the sorted unique values and their counts"
    elif flags == ["return_inverse"]:
        use = "qd.unique_inverse(x), which gives the sorted unique values and the inverse indices"
    else:
        use = ("qd.unique_all(x), which gives the sorted unique values, the indices of their "
               "first occurrences, the inverse indices and the counts")
    raise NotInNamespace(f"numpy.unique with {'=True, '.join(flags)}=True: use {use} on "
                         "every device")


def _unique_values(x: Any) -> Array:
    return so.sort(setf.unique_values(mf.reshape(one_array(x, "unique_values"), (-1,))))


def _isin(element: Any, test_elements: Any, assume_unique: Any = False, invert: Any = False, *,
          kind: Any = None) -> Array:
    x, test = arrays_of((element, test_elements), "isin")
    return setf.isin(x, test, invert=invert)


# -- creation from a prototype, dtypes, shapes ---------------------------------------------


def _order(order: Any, func: str) -> None:
    if order not in ("K", "A", "C", None):
        raise NotInNamespace(f"numpy.{func} with order={order!r} has no namespace equivalent")


def _like(make: Callable[..., Array], x: Array, dtype: Any, order: Any, shape: Any,
          device: Any, func: str) -> Array:
    """numpy.zeros_like and its kin: `make(shape, dtype=..., device=...)` after `x`."""
    _order(order, func)
    return make(x.shape if shape is None else shape_tuple(shape), dtype=dtype_of(dtype) or x._dtype,
                device=device or x._device)


def _zeros_like(a: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
                shape: Any = None, *, device: Any = None) -> Array:
    return _like(cf.zeros, one_array(a, "zeros_like"), dtype, order, shape, device, "zeros_like")


def _ones_like(a: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
               shape: Any = None, *, device: Any = None) -> Array:
    return _like(cf.ones, one_array(a, "ones_like"), dtype, order, shape, device, "ones_like")


def _empty_like(prototype: Any, /, dtype: Any = None, order: Any = "K", subok: Any = True,
                shape: Any = None, *, device: Any = None) -> Array:
    return _like(cf.empty, one_array(prototype, "empty_like"), dtype, order, shape, device,
                 "empty_like")


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
               shape: Any = None, *, device: Any = None) -> Array:
    x = one_array(a, "full_like")
    _order(order, "full_like")
    return cf.full(x.shape if shape is None else shape_tuple(shape), fill_value,
                   dtype=dtype_of(dtype) or x._dtype, device=device or x._device)


def _copy(a: Any, order: Any = "K", subok: Any = False) -> Array:
    _order(order, "copy")
    return cf.asarray(one_array(a, "copy"), copy=True)


def _astype(x: Any, dtype: Any, /, *, copy: Any = True, device: Any = None) -> Array:
    target = dtype_of(dtype)
    if target is None:
        raise TypeError("numpy.astype needs a dtype; got None.")
    return astype(one_array(x, "astype"), target, copy=copy, device=device)


def _result_type(*arrays_and_dtypes: Any) -> np.dtype[Any]:
    def native(a: Any) -> Any:
        if isinstance(a, Array) or hasattr(a, "_as_array"):
            return a.dtype._np
        return a._np if isinstance(a, _dtypes.DType) else a

    return np.result_type(*(native(a) for a in arrays_and_dtypes))


def _shape_of(a: Any) -> tuple[int, ...]:
    return one_array(a, "shape").shape


def _ndim(a: Any) -> int:
    return one_array(a, "ndim").ndim


def _size(a: Any, axis: Any = None) -> int:
    x = one_array(a, "size")
    return x.size if axis is None else x.shape[axis]


def _iscomplexobj(x: Any) -> builtins.bool:
    return one_array(x, "iscomplexobj")._dtype.kind == "c"


def _isrealobj(x: Any) -> builtins.bool:
    return one_array(x, "isrealobj")._dtype.kind != "c"


# -- the tables ------------------------------------------------------------------------------

FUNCTIONS: dict[Any, Callable[..., Any]] = {
    # reductions and scans
    np.sum: _sum, np.prod: _prod, np.mean: _mean, np.var: _var, np.std: _std,
    np.min: _min, np.amin: _min, np.max: _max, np.amax: _max,
    np.argmin: _argmin, np.argmax: _argmax, np.any: _any, np.all: _all,
    np.cumsum: _scan(st.cumulative_sum, "cumsum"), np.cumprod: _scan(st.cumulative_prod, "cumprod"),
    np.cumulative_sum: _cumulative(st.cumulative_sum, "cumulative_sum"),
    np.cumulative_prod: _cumulative(st.cumulative_prod, "cumulative_prod"),
    np.count_nonzero: _count_nonzero,
    # searching, sorting, rounding
    np.nonzero: _nonzero, np.where: _where, np.sort: _sort, np.argsort: _argsort,
    np.searchsorted: _searchsorted, np.round: _round, np.around: _round, np.clip: _clip,
    # joining, shaping, moving axes
    np.concatenate: _concatenate, np.stack: _stack, np.vstack: _vstack, np.hstack: _hstack,
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2), np.atleast_3d: _atleast(3),
    np.expand_dims: _expand_dims, np.squeeze: _squeeze, np.reshape: _reshape, np.ravel: _ravel,
    np.transpose: _transpose, np.permute_dims: _transpose, np.matrix_transpose: _matrix_transpose,
    np.swapaxes: _swapaxes, np.moveaxis: _moveaxis, np.flip: _flip, np.roll: _roll,
    np.tile: _tile, np.repeat: _repeat, np.broadcast_to: _broadcast_to,
    np.broadcast_arrays: _broadcast_arrays, np.meshgrid: _meshgrid,
    # indexing
    np.take: _take, np.take_along_axis: _take_along_axis,
    # products
    np.dot: _dot, np.vdot: _vdot, np.outer: _outer, np.tensordot: _tensordot,
    np.trace: _trace, np.diagonal: _diagonal,
    # elementwise-like, comparisons, sets
    np.real: _real, np.imag: _imag, np.diff: _diff, np.isclose: _isclose,
    np.allclose: _allclose, np.array_equal: _array_equal, np.unique: _unique,
    np.unique_values: _unique_values, np.isin: _isin,
    # creation from a prototype, dtypes, shapes
    np.zeros_like: _zeros_like, np.ones_like: _ones_like, np.empty_like: _empty_like,
    np.full_like: _full_like, np.copy: _copy, np.astype: _astype, np.result_type: _result_type,
    np.shape: _shape_of, np.ndim: _ndim, np.size: _size, np.iscomplexobj: _iscomplexobj,
    np.isrealobj: _isrealobj,
    # NaN-ignoring reductions, flat indices, partitions (_numpy/nan_index.py)
    np.nansum: ni.nansum, np.nanprod: ni.nanprod, np.nanmin: ni.nanmin, np.nanmax: ni.nanmax,
    np.nanargmin: ni.nanargmin, np.nanargmax: ni.nanargmax, np.nanmean: ni.nanmean,
    np.nanvar: ni.nanvar, np.nanstd: ni.nanstd, np.unravel_index: ni.unravel_index,
    np.ravel_multi_index: ni.ravel_multi_index, np.partition: ni.partition,
    np.argpartition: ni.argpartition, np.nan_to_num: ni.nan_to_num,
    # numpy.linalg
    np.linalg.norm: lf.norm, np.linalg.inv: lf.one_matrix(linalg.inv, "inv"),
    np.linalg.det: lf.one_matrix(linalg.det, "det"),
    np.linalg.slogdet: lf.one_matrix(linalg.slogdet, "slogdet"),
    np.linalg.svdvals: lf.svdvals,
    np.linalg.solve: lf.solve, np.linalg.cholesky: lf.cholesky, np.linalg.qr: lf.qr,
    np.linalg.svd: lf.svd, np.linalg.eigh: lf.eigh, np.linalg.eigvalsh: lf.eigvalsh,
    np.linalg.pinv: lf.pinv, np.linalg.matrix_rank: lf.matrix_rank,
    np.linalg.matrix_power: lf.matrix_power, np.linalg.vector_norm: lf.vector_norm,
    np.linalg.matrix_norm: lf.matrix_norm, np.linalg.outer: lf.outer,
    np.linalg.cross: lf.cross, np.linalg.matrix_transpose: _matrix_transpose,
    # numpy.fft
    np.fft.fft: lf.fft_1d(fft.fft, "fft", False),
    np.fft.ifft: lf.fft_1d(fft.ifft, "ifft", False),
    np.fft.rfft: lf.fft_1d(fft.rfft, "rfft", True),
    np.fft.irfft: lf.fft_1d(fft.irfft, "irfft", False),
    np.fft.hfft: lf.fft_1d(fft.hfft, "hfft", False),
    np.fft.ihfft: lf.fft_1d(fft.ihfft, "ihfft", True),
    np.fft.fftn: lf.fft_nd(fft.fftn, "fftn", False, None),
    np.fft.ifftn: lf.fft_nd(fft.ifftn, "ifftn", False, None),
    np.fft.rfftn: lf.fft_nd(fft.rfftn, "rfftn", True, None),
    np.fft.irfftn: lf.fft_nd(fft.irfftn, "irfftn", False, None),
    np.fft.fft2: lf.fft_nd(fft.fftn, "fft2", False, (-2, -1)),
    np.fft.ifft2: lf.fft_nd(fft.ifftn, "ifft2", False, (-2, -1)),
    np.fft.rfft2: lf.fft_nd(fft.rfftn, "rfft2", True, (-2, -1)),
    np.fft.irfft2: lf.fft_nd(fft.irfftn, "irfft2", False, (-2, -1)),
    np.fft.fftshift: lf.fftshift, np.fft.ifftshift: lf.ifftshift,
}

# ufunc name -> the namespace function of the same arguments (ufunc(...) with no keywords).
UFUNCS: dict[str, Callable[..., Any]] = {
    "add": ew.add, "subtract": ew.subtract, "multiply": ew.multiply, "divide": ew.divide,
    "floor_divide": ew.floor_divide, "remainder": ew.remainder, "power": ew.pow,
    "negative": ew.negative, "positive": ew.positive, "absolute": ew.abs, "sign": ew.sign,
    "conjugate": ew.conj, "exp": ew.exp, "expm1": ew.expm1, "log": ew.log, "log2": ew.log2,
    "log10": ew.log10, "log1p": ew.log1p, "sqrt": ew.sqrt, "square": ew.square,
    "sin": ew.sin, "cos": ew.cos, "tan": ew.tan, "arcsin": ew.asin, "arccos": ew.acos,
    "arctan": ew.atan, "arctan2": ew.atan2, "hypot": ew.hypot, "sinh": ew.sinh,
    "cosh": ew.cosh, "tanh": ew.tanh, "arcsinh": ew.asinh, "arccosh": ew.acosh,
    "arctanh": ew.atanh, "floor": ew.floor, "ceil": ew.ceil, "trunc": ew.trunc,
    "rint": ew.round, "logaddexp": ew.logaddexp, "maximum": ew.maximum, "minimum": ew.minimum,
    "copysign": ew.copysign, "nextafter": ew.nextafter, "signbit": ew.signbit,
    "isnan": ew.isnan, "isinf": ew.isinf, "isfinite": ew.isfinite, "greater": ew.greater,
    "greater_equal": ew.greater_equal, "less": ew.less, "less_equal": ew.less_equal,
    "equal": ew.equal, "not_equal": ew.not_equal, "logical_and": ew.logical_and,
    "logical_or": ew.logical_or, "logical_xor": ew.logical_xor, "logical_not": ew.logical_not,
    "bitwise_and": ew.bitwise_and, "bitwise_or": ew.bitwise_or, "bitwise_xor": ew.bitwise_xor,
    "invert": ew.bitwise_invert, "left_shift": ew.bitwise_left_shift,
    "right_shift": ew.bitwise_right_shift, "matmul": la.matmul, "vecdot": la.vecdot,
}


def _ufunc_reduction(func: Callable[..., Array], name: str, dtype_arg: bool) -> Callable[..., Any]:
    """`ufunc.reduce` as a namespace reduction (axis=0 by default, as NumPy's)."""

    def adapter(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
                keepdims: Any = False, initial: Any = NO_VALUE, where: Any = True) -> Array:
        refuse(f"{name}.reduce", out=out, initial=initial, where=mask(where),
                dtype=None if dtype_arg else dtype)
        x = one_array(array, f"{name}.reduce")
        if dtype_arg:
            return func(x, axis=axis, dtype=dtype_of(dtype), keepdims=keepdims)
        return func(x, axis=axis, keepdims=keepdims)

    return adapter


def _ufunc_accumulation(func: Callable[..., Array], name: str) -> Callable[..., Any]:
    """`ufunc.accumulate` as a namespace cumulative function (axis=0 by default)."""

    def adapter(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Array:
        refuse(f"{name}.accumulate", out=out)
        return func(one_array(array, f"{name}.accumulate"), axis=axis, dtype=dtype_of(dtype))

    return adapter


# (ufunc name, method) -> adapter taking the method's arguments.
UFUNC_METHODS: dict[tuple[str, str], Callable[..., Any]] = {
    ("add", "reduce"): _ufunc_reduction(st.sum, "add", True),
    ("multiply", "reduce"): _ufunc_reduction(st.prod, "multiply", True),
    ("maximum", "reduce"): _ufunc_reduction(st.max, "maximum", False),
    ("minimum", "reduce"): _ufunc_reduction(st.min, "minimum", False),
    ("logical_and", "reduce"): _ufunc_reduction(ut.all, "logical_and", False),
    ("logical_or", "reduce"): _ufunc_reduction(ut.any, "logical_or", False),
    ("add", "accumulate"): _ufunc_accumulation(st.cumulative_sum, "add"),
    ("multiply", "accumulate"): _ufunc_accumulation(st.cumulative_prod, "multiply"),
}

# NumPy's creation functions given like= a qdarray array: adapter(device of `like`, *args, ...).
LIKE_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.asarray: nc.asarray, np.array: nc.array, np.zeros: nc.zeros, np.ones: nc.ones,
    np.empty: nc.empty, np.full: nc.full, np.arange: nc.arange, np.eye: nc.eye,
    np.identity: nc.identity,
}
