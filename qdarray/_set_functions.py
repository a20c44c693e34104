"""Set functions of the standard: the unique_* family and isin (2025.12).

Results are named tuples of Arrays. Values come out sorted (NumPy's order); NaNs are distinct
from each other, and signed zeros are one value, as the standard asks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, no_vjp
from ._devices import Device
from ._dispatch import PY_SCALARS, require_array, same_device


class UniqueAllResult(NamedTuple):
    """`unique_all`'s result: values, first indices, inverse indices and counts."""

    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    """`unique_counts`'s result: values and their counts."""

    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    """`unique_inverse`'s result: values and the indices that rebuild `x` from them."""

    values: Array
    inverse_indices: Array


def _wrap(data: Any, device: Device, index: bool = False) -> Array:
    backend = device.backend
    native = backend.normalize(data)
    if index and native.dtype != _dtypes.int64._np:
        native = backend.xp.astype(native, _dtypes.int64._np)
    return Array._new(native, device)


def unique_all(x: Array, /) -> UniqueAllResult:
    """Unique values of `x` (flattened), with first-occurrence indices, the inverse indices
    (shaped like `x`) and the counts, all indices as int64.

    Example::

        r = qd.unique_all(qd.asarray([3, 1, 3]))
        r.values, r.indices, r.inverse_indices, r.counts   # [1, 3], [1, 0], [1, 0, 1], [1, 2]
    """
    x = require_array(x, "unique_all")
    if TAPES:
        no_vjp("unique_all", x)
    d = x._device
    r = d.backend.xp.unique_all(x._data)
    return UniqueAllResult(_wrap(r.values, d), _wrap(r.indices, d, True),
                           _wrap(r.inverse_indices, d, True), _wrap(r.counts, d, True))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Unique values of `x` (flattened) and how often each occurs (int64)."""
    x = require_array(x, "unique_counts")
    if TAPES:
        no_vjp("unique_counts", x)
    d = x._device
    r = d.backend.xp.unique_counts(x._data)
    return UniqueCountsResult(_wrap(r.values, d), _wrap(r.counts, d, True))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Unique values of `x` (flattened) and int64 indices into them shaped like `x`, so that
    `values[inverse_indices]` rebuilds `x`."""
    x = require_array(x, "unique_inverse")
    if TAPES:
        no_vjp("unique_inverse", x)
    d = x._device
    r = d.backend.xp.unique_inverse(x._data)
    return UniqueInverseResult(_wrap(r.values, d), _wrap(r.inverse_indices, d, True))


def unique_values(x: Array, /) -> Array:
    """Unique values of `x` (flattened), sorted, as a 1-D array."""
    x = require_array(x, "unique_values")
    if TAPES:
        no_vjp("unique_values", x)
    d = x._device
    return _wrap(d.backend.xp.unique_values(x._data), d)


def isin(x1: Array | int, x2: Array | int, /, *, invert: bool = False) -> Array:
    """Whether each element of `x1` occurs in `x2` (compared by value, `==`).

    Args:
        x1: the elements to test: an array, or a Python scalar for a 0-D result.
        x2: the elements to test against: an array or a Python scalar.
        invert: test "not in" instead.

    Example::

        qd.isin(qd.asarray([1, 2, 3]), qd.asarray([2, 5]))   # [False, True, False]
    """
    if type(x1) is not Array and type(x1) not in PY_SCALARS:
        x1 = require_array(x1, "isin", "x1")
    if type(x2) is not Array and type(x2) not in PY_SCALARS:
        x2 = require_array(x2, "isin", "x2")
    arrays = [a for a in (x1, x2) if type(a) is Array]
    if not arrays:
        raise TypeError(
            f"isin needs at least one Array argument; got {type(x1).__name__} and "
            f"{type(x2).__name__}. Use qd.asarray(...) to convert one."
        )
    if len(arrays) == 2:
        same_device(arrays[0], arrays[1], "isin")
    device = arrays[0]._device
    d1 = x1._data if type(x1) is Array else x1
    d2 = x2._data if type(x2) is Array else x2
    result = device.backend.xp.isin(d1, d2, invert=invert)
    return Array._new(device.backend.normalize(result), device)
