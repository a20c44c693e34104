"""Sorting functions of the standard: argsort and sort, stable by default, either direction."""

from __future__ import annotations

from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._axis import normalize_axis
from ._dispatch import require_array
from ._dtypes import int64
from ._indexing import take_along_axis


def _check(x: Array, axis: int, func: str) -> int:
    x = require_array(x, func)
    if x._data.ndim == 0:
        raise ValueError(
            f"{func} needs an array of at least 1 dimension; got a 0-D array. Use "
            "qd.reshape(x, (1,)) first."
        )
    return normalize_axis(axis, x.ndim, func)


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Array:
    """Indices that sort `x` along `axis`, as int64.

    Args:
        x: the input array (complex values sort lexicographically, NaNs last, as in NumPy).
        axis: the axis to sort along (default the last).
        descending: sort from largest to smallest; equal elements keep their order when
            `stable` is True.
        stable: keep equal elements in their original relative order.

    Example::

        qd.argsort(qd.asarray([3, 1, 2]))   # [1, 2, 0]
    """
    axis = _check(x, axis, "argsort")
    device = x._device
    xp = device.backend.xp
    result = xp.argsort(x._data, axis=axis, descending=descending, stable=stable)
    native = device.backend.normalize(result)
    if native.dtype != int64._np:
        native = xp.astype(native, int64._np)
    return Array._new(native, device)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> Array:
    """A sorted copy of `x` along `axis` (see `argsort` for the arguments).

    Example::

        qd.sort(qd.asarray([3, 1, 2]), descending=True)   # [3, 2, 1]
    """
    axis = _check(x, axis, "sort")
    device = x._device
    xp = device.backend.xp
    if descending and stable and x._dtype.kind in "fc":
        # Note: reversing an ascending sort would reverse equal but distinguishable values
        # (-0.0 and 0.0, NaN payloads); reversing the stable ascending sort of the reversed
        # input keeps them in input order (NaNs come first, as in the descending argsort).
        flipped = xp.sort(xp.flip(x._data, axis=axis), axis=axis, stable=True)
        result = xp.flip(flipped, axis=axis)
    else:
        result = xp.sort(x._data, axis=axis, descending=descending, stable=stable)
    out = Array._new(device.backend.normalize(result), device)
    if TAPES:
        return record("sort", out, (x,), {"axis": axis, "descending": descending})  # type: ignore[no-any-return]
    return out


def _sort_rule(g: Array, x: Array, axis: int, descending: bool) -> Array:
    # Each sorted position takes its element's gradient back: the stable order of the
    # forward sort, inverted (equal values get theirs in that order, as in JAX).
    order = argsort(x, axis=axis, descending=descending, stable=True)
    return take_along_axis(g, argsort(order, axis=axis), axis=axis)


defvjp("sort", x=_sort_rule)
