"""Utility functions of the standard: `all`, `any` and `diff`."""

from __future__ import annotations

import operator
from typing import Any

from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._axis import normalize_axes, normalize_axis
from ._creation_functions import zeros
from ._dispatch import PY_SCALARS, require_array, same_device, wrap
from ._manipulation_functions import concat


def _truth(func: str, x: Array, axis: Any, keepdims: bool) -> Array:
    x = require_array(x, func)
    axes = None if axis is None else normalize_axes(axis, x.ndim, func)
    device = x._device
    return wrap(getattr(device.backend.xp, func)(x._data, axis=axes, keepdims=keepdims), device)


def all(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """Whether every element over `axis` is true (non-zero, non-NaN counts as true).

    Args:
        x: input array of any dtype.
        axis: an axis or tuple of axes to reduce; None reduces all.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        a bool array; True for an empty reduction.
    """
    return _truth("all", x, axis, keepdims)


def any(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """Whether any element over `axis` is true (non-zero; NaN counts as true).

    Args:
        x: input array of any dtype.
        axis: an axis or tuple of axes to reduce; None reduces all.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        a bool array; False for an empty reduction.
    """
    return _truth("any", x, axis, keepdims)


def diff(x: Array, /, n: int = 1, axis: int = -1, *, prepend: Any = None,
         append: Any = None) -> Array:
    """The n-th forward difference along `axis`: x[i + 1] - x[i], applied `n` times.

    `n` and `axis` may be given positionally, as in NumPy (`qd.diff(x, 2)`), or by keyword as
    the standard writes them.

    Args:
        x: input array with at least one dimension.
        n: how many times to difference; 0 returns a copy of `x`.
        axis: the axis to difference along.
        prepend: values put before `x` along `axis` first: an array whose shape matches `x`
            except along `axis`, or a Python scalar (repeated across the other axes).
        append: values put after `x` along `axis`, likewise.

    Returns:
        an array whose `axis` is n shorter than `x`'s (plus the prepended and appended
        lengths). Booleans differ by `!=`, as in NumPy.

    Example::

        qd.diff(qd.asarray([1, 4, 9, 16]))      # [3, 5, 7]
        qd.diff(qd.asarray([1, 4, 9, 16]), 2)   # [2, 2]
    """
    x = require_array(x, "diff")
    if x.ndim == 0:
        raise ValueError(
            "diff needs an array with at least one dimension; got a 0-d array. "
            "Use qd.reshape(x, (1,)) first."
        )
    if type(n) is bool:
        raise TypeError(f"diff expects a non-negative integer n; got bool {n!r}.")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(
            f"diff expects a non-negative integer n; got {type(n).__name__} {n!r}."
        ) from None
    if n < 0:
        raise ValueError(f"diff expects a non-negative integer n; got {n}.")
    ax = normalize_axis(axis, x.ndim, "diff")
    extra = {}
    for name, value in (("prepend", prepend), ("append", append)):
        if value is None:
            continue
        if type(value) is Array:
            same_device(x, value, "diff")
            extra[name] = value._data
        elif type(value) in PY_SCALARS:
            extra[name] = value
        else:
            raise TypeError(
                f"diff expects an Array or a Python scalar for {name}; got "
                f"{type(value).__name__}. Use qd.asarray(...) to convert it."
            )
    device = x._device
    out = wrap(device.backend.xp.diff(x._data, n=n, axis=ax, **extra), device)
    if TAPES:
        return record("diff", out, (x, prepend, append), {"n": n, "axis": ax})  # type: ignore[no-any-return]
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------


def _diff_back(g: Array, n: int, axis: int) -> Array:
    """The cotangent of diff's (prepended and appended) input: diff's transpose, n times."""
    for _ in range(n):
        shape = list(g.shape)
        shape[axis] = 1
        zero = zeros(tuple(shape), dtype=g.dtype, device=g.device)
        g = concat([zero, g], axis=axis) - concat([g, zero], axis=axis)
    return g


def _part(g: Array, n: int, axis: int, start: int, stop: int | None) -> Array:
    return _diff_back(g, n, axis)[(slice(None),) * axis + (slice(start, stop),)]


def _length(value: Any, axis: int) -> int:
    return 1 if type(value) is not Array or value.ndim == 0 else value.shape[axis]


def _diff_x(g: Array, n: int, axis: int, prepend: Any, append: Any, shape: tuple[int, ...]
            ) -> Array:
    start = 0 if prepend is None else _length(prepend, axis)
    return _part(g, n, axis, start, start + shape[axis])


def _diff_prepend(g: Array, n: int, axis: int, prepend: Any) -> Array:
    return _part(g, n, axis, 0, _length(prepend, axis))


def _diff_append(g: Array, n: int, axis: int, append: Any) -> Array:
    return _part(g, n, axis, -_length(append, axis), None)


defvjp("diff", x=_diff_x, prepend=_diff_prepend, append=_diff_append)
