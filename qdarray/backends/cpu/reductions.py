"""The CPU's reductions and scans as direct ufunc calls, without NumPy's Python layers.

`np.sum(a)` on an ndarray is `np.add.reduce(a, ...)` reached through two Python functions
(`sum`, `_wrapreduction`); `np.mean` through four. On small arrays those layers cost more than
the reduction itself, so the CPU namespace calls the ufunc methods directly, with NumPy's exact
semantics (the same accumulation dtypes, the same results bit for bit): `mean` divides the sum
by the count as an `intp`, as NumPy's `_mean` does. Cases with NumPy behaviour beyond the
ufunc call (an empty mean's warning and NaN, a scan's `include_initial`) go to NumPy's own
function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOAT64 = np.dtype(np.float64)
_INTP = np.intp
# Typed Any: NumPy's stubs type these methods by keyword, and they are called by position.
_add_reduce: Any = np.add.reduce
_multiply_reduce: Any = np.multiply.reduce
_maximum_reduce: Any = np.maximum.reduce
_minimum_reduce: Any = np.minimum.reduce
_add_accumulate: Any = np.add.accumulate
_multiply_accumulate: Any = np.multiply.accumulate
_true_divide = np.true_divide


# np.sum, np.prod, np.max and np.min on an ndarray: the ufunc's reduce with the same arguments
# (passed by position, which the ufunc parses fastest).
def sum(x: np.ndarray, /, *, axis: Any = None, dtype: Any = None,  # noqa: A001
        keepdims: bool = False) -> Any:
    """np.sum(x, axis, dtype, keepdims=keepdims)."""
    return _add_reduce(x, axis, dtype, None, keepdims)


def prod(x: np.ndarray, /, *, axis: Any = None, dtype: Any = None,
         keepdims: bool = False) -> Any:
    """np.prod(x, axis, dtype, keepdims=keepdims)."""
    return _multiply_reduce(x, axis, dtype, None, keepdims)


def max(x: np.ndarray, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """np.max(x, axis, keepdims=keepdims)."""
    return _maximum_reduce(x, axis, None, None, keepdims)


def min(x: np.ndarray, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """np.min(x, axis, keepdims=keepdims)."""
    return _minimum_reduce(x, axis, None, None, keepdims)


def mean(x: np.ndarray, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """np.mean(x, axis, keepdims=keepdims): the sum (in float64 for integers and booleans)
    divided by the count."""
    if axis is None:
        count = x.size
    else:
        count = 1
        shape = x.shape
        for a in axis:
            count *= shape[a]
    if count == 0:
        return np.mean(x, axis=axis, keepdims=keepdims)  # NaN, with NumPy's warning
    total: Any = _add_reduce(x, axis, None if x.dtype.kind in "fc" else _FLOAT64, None,
                             keepdims)
    if type(total) is np.ndarray:
        return _true_divide(total, _INTP(count), out=total, casting="unsafe")
    return total.dtype.type(total / _INTP(count))


def cumulative_sum(x: np.ndarray, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> np.ndarray:
    """np.cumulative_sum: add.accumulate along `axis`."""
    if include_initial or axis is None:
        return np.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=include_initial)
    return _add_accumulate(x, axis, dtype)  # type: ignore[no-any-return]


def cumulative_prod(x: np.ndarray, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> np.ndarray:
    """np.cumulative_prod: multiply.accumulate along `axis`."""
    if include_initial or axis is None:
        return np.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial)
    return _multiply_accumulate(x, axis, dtype)  # type: ignore[no-any-return]
