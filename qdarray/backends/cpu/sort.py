"""Sorting values on the CPU at the speed of NumPy's default sort, with a stable sort's result.

The standard's `sort` is stable by default. NumPy's stable sort (radix or timsort) is several
times slower than its default one (introsort with SIMD kernels), and for sorting values alone
stability is visible only where two elements compare equal but differ: `-0.0` and `+0.0`, and
NaNs with different payloads or signs. Every other run of equal values is the same whatever
order the sort left it in. So `sort` sorts with NumPy's default algorithm and then restores,
for those two runs only, the order they had in the input (which is what a stable sort leaves):

- 1-D input: the run of zeros is found by two binary searches and rewritten when it holds
  more than one zero (NumPy's SIMD sorts on some CPUs write every zero of a mixed run with
  one sign, so the sorted run alone does not tell); the NaNs (at the end, as in NumPy) are copied
  back from the input whenever
  there are any, since NumPy's SIMD sort writes every NaN as the one default NaN. Without
  NaNs that costs a few microseconds on top of the sort.
- along an axis of N-D input: one pass over the result finds the zeros and NaNs of every row,
  and the rows' runs are rewritten together by boolean indexing in row order.

Complex values keep NumPy's stable sort: signed zeros in either part make too many
distinguishable equal values to repair cheaply.
"""

from __future__ import annotations

import numpy as np

# Up to this many elements NumPy's stable sort is as fast as its default one, and the repair
# (a few NumPy calls) would cost more than the sort.
_SMALL = 128


def sort(x: np.ndarray, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> np.ndarray:
    """`x` sorted along `axis` (the standard's `sort`, NaNs last when ascending).

    With `stable`, equal elements keep their input order (for `descending` too); the values
    are sorted by NumPy's default algorithm and the order of equal but different values is
    restored afterwards (see the module docstring).
    """
    kind = x.dtype.kind
    if kind == "c":
        result = np.sort(x, axis=axis, kind="stable" if stable else None)
        return np.flip(result, axis=axis) if descending else result
    if descending and stable and kind == "f":
        # A stable ascending sort of the reversed input, reversed: equal values come out in
        # their input order, NaNs first.
        return np.flip(sort(np.flip(x, axis=axis), axis=axis), axis=axis)
    # np.sort(x, axis, kind) is this copy and in-place sort, behind a Python layer.
    result = x.copy(order="K")
    if stable and kind == "f" and x.size <= _SMALL:
        result.sort(axis=axis, kind="stable")
        return result
    result.sort(axis=axis)
    if stable and kind == "f" and result.size > 1:
        if result.ndim == 1:
            _restore_1d(result, x)
        else:
            _restore_rows(np.moveaxis(result, axis, -1), np.moveaxis(x, axis, -1))
    return np.flip(result, axis=axis) if descending else result


def _restore_1d(s: np.ndarray, x: np.ndarray) -> None:
    """Give the zeros and the NaNs of sorted `s` the order they have in `x`."""
    lo = int(s.searchsorted(0.0, side="left"))
    hi = int(s.searchsorted(0.0, side="right"))
    if hi - lo > 1:
        # (rewritten whatever signs the sort left: NumPy's SIMD sorts on some CPUs write
        # every zero of a mixed run with one sign)
        s[lo:hi] = x[x == 0]
    first_nan = int(s.searchsorted(np.nan, side="left"))
    if first_nan < s.size:
        s[first_nan:] = x[np.isnan(x)]


def _restore_rows(s: np.ndarray, x: np.ndarray) -> None:
    """`_restore_1d` for every row (last axis) of sorted `s` and its input `x` at once.

    Boolean indexing walks both arrays in row order, and each row of `s` holds as many zeros
    (NaNs) as the same row of `x`, so the runs go back to their own rows.
    """
    zeros = s == 0
    if zeros.any():
        s[zeros] = x[x == 0]
    nans = np.isnan(s)
    if nans.any():
        s[nans] = x[np.isnan(x)]
