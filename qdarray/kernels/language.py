"""Names of the kernel language that are not operators: `qd.static`, `qd.ndrange`, `qd.cast`,
`qd.select` and the atomics.

Inside a kernel the frontend compiles calls to these. Outside kernels `static`, `ndrange`,
`cast` and `select` behave the same on Python and NumPy scalars; the atomics only have a
meaning inside kernels.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from .._dtypes import normalize_dtype
from .._errors import KernelSyntaxError


def static(value: Any) -> Any:
    """Evaluate `value` when the kernel compiles: a constant, or an iterable to unroll.

    Example::

        for k in qd.static(range(3)):     # unrolled: k is 0, 1, 2 at compile time
            out[i, k] = x[i] * k
        if qd.static(DEBUG_LEVEL > 1):    # a compile-time if: the other branch is dropped
            ...
    """
    return value


class ndrange:  # noqa: N801 - spelled like range
    """`for i, j in qd.ndrange(n, m)`: a loop over a multi-dimensional index space.

    Each argument is an extent `n` (0..n-1) or a pair `(begin, end)`. As the outermost loop of
    a kernel it is one parallel loop over all index tuples; elsewhere it is nested loops.
    """

    def __init__(self, *extents: Any) -> None:
        self.ranges = [range(*e) if isinstance(e, tuple) else range(e) for e in extents]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter(itertools.product(*self.ranges))


def cast(x: Any, dtype: Any) -> Any:
    """`x` converted to `dtype` (qd.float32, "int32", ...), as `dtype(x)` does in kernels."""
    import numpy as np

    dt = normalize_dtype(dtype)
    return np.asarray(x).astype(dt._np)[()]  # type: ignore[union-attr]


def select(cond: Any, a: Any, b: Any) -> Any:
    """`a if cond else b` with both sides evaluated (branch-free in kernels)."""
    return a if cond else b


def _kernel_only(name: str) -> Any:
    def atomic(*args: Any) -> Any:
        raise KernelSyntaxError(
            f"qd.{name} can only be called inside a @qd.kernel or @qd.func. "
            "Use NumPy-style array operations outside kernels."
        )

    atomic.__name__ = name
    atomic.__qualname__ = name
    atomic.__doc__ = (
        f"`qd.{name}(x[i], v)` (or `qd.{name}(x, i, v)`): atomically update one element of "
        "a global array; returns the element's old value. Kernels only."
    )
    return atomic


atomic_add = _kernel_only("atomic_add")
atomic_min = _kernel_only("atomic_min")
atomic_max = _kernel_only("atomic_max")
