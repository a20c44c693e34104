"""Searching functions of the standard: argmax, argmin, count_nonzero, nonzero, searchsorted,
where. Index results have the default index dtype, int64."""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._axis import normalize_axes, normalize_axis
from ._devices import Device
from ._dispatch import PY_SCALARS, operands, require_array, same_device
from ._errors import DeviceMismatchError


def _index_result(data: Any, device: Device) -> Array:
    backend = device.backend
    native = backend.normalize(data)
    if native.dtype != _dtypes.int64._np:
        native = backend.xp.astype(native, _dtypes.int64._np)
    return Array._new(native, device)


def _arg_reduce(name: str, x: Array, axis: int | None, keepdims: bool) -> Array:
    x = require_array(x, name)
    _dtypes.check_category(x._dtype, "real numeric", name)
    if axis is not None:
        axis = normalize_axis(axis, x.ndim, name)
    if (x.size == 0 and axis is None) or (axis is not None and x.shape[axis] == 0):
        raise ValueError(
            f"{name} of an empty selection is undefined (shape {x.shape}, axis={axis}); "
            "check the size before reducing."
        )
    xp = x._device.backend.xp
    return _index_result(getattr(xp, name)(x._data, axis=axis, keepdims=keepdims), x._device)


def argmax(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Indices of the maxima along `axis` (of the flattened array when None); the first
    occurrence wins.

    Example::

        qd.argmax(qd.asarray([1, 5, 5, 2]))   # Array(1, dtype=int64)
    """
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Indices of the minima along `axis` (of the flattened array when None); the first
    occurrence wins."""
    return _arg_reduce("argmin", x, axis, keepdims)


def count_nonzero(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: bool = False) -> Array:
    """The number of non-zero (True) elements along `axis`, as int64."""
    x = require_array(x, "count_nonzero")
    axes = None if axis is None else normalize_axes(axis, x.ndim, "count_nonzero")
    xp = x._device.backend.xp
    return _index_result(xp.count_nonzero(x._data, axis=axes, keepdims=keepdims), x._device)


def nonzero(x: Array, /) -> tuple[Array, ...]:
    """Indices of the non-zero (True) elements, one int64 array per axis, in row-major order.

    Raises:
        ValueError: for 0-D input (the standard's rule); use `qd.reshape(x, (1,))` first.
    """
    x = require_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError(
            "nonzero is undefined for 0-D arrays; use qd.reshape(x, (1,)) or "
            "qd.expand_dims(x) first."
        )
    xp = x._device.backend.xp
    return tuple(_index_result(d, x._device) for d in xp.nonzero(x._data))


def searchsorted(x1: Array, x2: Array | int | float, /, *, side: str = "left",
                 sorter: Array | None = None) -> Array:
    """Insertion positions of `x2`'s elements into the sorted 1-D array `x1`.

    Args:
        x1: a 1-D array sorted ascending, or any 1-D array when `sorter` is given.
        x2: the values to look up (an array or, as in 2025.12, a Python scalar).
        side: "left" gives the first suitable position, "right" the last.
        sorter: int indices that sort `x1` (as from `qd.argsort(x1)`).

    Example::

        qd.searchsorted(qd.asarray([1, 3, 5]), qd.asarray([4, 5]))   # [2, 2]
    """
    x1 = require_array(x1, "searchsorted", "x1")
    _dtypes.check_category(x1._dtype, "real numeric", "searchsorted")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted needs a 1-D x1; got shape {x1.shape}.")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted side must be 'left' or 'right'; got {side!r}.")
    if type(x2) is Array:
        same_device(x1, x2, "searchsorted")
        _dtypes.check_category(x2._dtype, "real numeric", "searchsorted")
        values: Any = x2._data
    elif type(x2) in PY_SCALARS and type(x2) is not complex:
        values = x2
    else:
        raise TypeError(
            f"searchsorted expects an Array or a real Python scalar for x2; got "
            f"{type(x2).__name__}. Use qd.asarray(...) to convert it."
        )
    xp = x1._device.backend.xp
    native_sorter = None
    if sorter is not None:
        sorter = require_array(sorter, "searchsorted", "sorter")
        same_device(x1, sorter, "searchsorted")
        if sorter._dtype.kind not in "iu" or sorter.shape != x1.shape:
            raise ValueError(
                f"searchsorted needs sorter as an integer array of x1's shape {x1.shape}; "
                f"got dtype {sorter._dtype} and shape {sorter.shape}."
            )
        from ._indexing import check_index_array

        check_index_array(sorter._data, x1.shape[0], 0, xp)
        native_sorter = sorter._data
    result = xp.searchsorted(x1._data, values, side=side, sorter=native_sorter)
    return _index_result(result, x1._device)


def where(condition: Array, x1: Array | int | float | complex | bool | None = None,
          x2: Array | int | float | complex | bool | None = None, /) -> Any:
    """Elements of `x1` where `condition` is True and of `x2` elsewhere, broadcast together.

    With only `condition`, returns `nonzero(condition)` (as NumPy does; scikit-learn uses
    it). Python scalars for `x1`/`x2` take the other operand's dtype (weak scalars).

    Example::

        qd.where(qd.asarray([True, False]), qd.asarray([1, 2]), 0)   # [1, 0]
    """
    condition = require_array(condition, "where", "condition")
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise TypeError("where takes either condition alone or condition, x1 and x2.")
    if condition._dtype is not _dtypes.bool:
        raise TypeError(
            f"where needs a boolean condition; got dtype {condition._dtype}. Use a "
            "comparison such as x != 0."
        )
    device = condition._device
    if type(x1) in PY_SCALARS and type(x2) in PY_SCALARS:
        d1, d2 = x1, x2
    else:
        d1, d2, device = operands(x1, x2, "where")
        if device is not condition._device:
            raise DeviceMismatchError(
                f"where got condition on {condition._device} and values on {device}; "
                f"move them with x.to_device('{condition._device}') first."
            )
    xp = device.backend.xp
    out = Array._new(device.backend.normalize(xp.where(condition._data, d1, d2)), device)
    if TAPES:
        return record("where", out, (x1, x2), {"condition": condition})
    return out


defvjp("where", x1=lambda g, condition: where(condition, g, 0.0),
       x2=lambda g, condition: where(condition, 0.0, g))
