"""Normalization of `axis=` arguments shared by the namespace's functions."""

from __future__ import annotations

import operator
from typing import Any

from ._errors import AxisError


def normalize_axis(axis: Any, ndim: int, func: str, name: str = "axis") -> int:
    """`axis` as a non-negative int below `ndim`; an AxisError naming both otherwise."""
    if type(axis) is int:  # the common case, without operator.index's call
        ax = axis
    else:
        try:
            ax = operator.index(axis)
        except TypeError:
            raise TypeError(
                f"{func} expects an integer {name}; got {type(axis).__name__} {axis!r}."
            ) from None
        if type(axis) is bool:
            raise TypeError(f"{func} expects an integer {name}; got bool {axis!r}.")
    if not -ndim <= ax < ndim:
        raise AxisError(
            f"{name}={ax} is out of range for {func} on an array of {ndim} dimension"
            f"{'' if ndim == 1 else 's'}; use an axis in [{-ndim}, {ndim})."
        )
    return ax + ndim if ax < 0 else ax


def normalize_axes(axes: Any, ndim: int, func: str, name: str = "axis") -> tuple[int, ...]:
    """An int or a tuple of ints as a tuple of unique non-negative axes below `ndim`."""
    if isinstance(axes, (tuple, list)):
        result = tuple(normalize_axis(a, ndim, func, name) for a in axes)
    else:
        result = (normalize_axis(axes, ndim, func, name),)
    if len(set(result)) != len(result):
        raise AxisError(
            f"{func} got repeated axes in {name}={tuple(axes)} (normalized {result}); "
            "use each axis once."
        )
    return result
