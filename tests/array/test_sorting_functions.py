"""sort and argsort against NumPy, including stable descending order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray.backends.cpu import sort as cpu_sort

NONEMPTY = npst.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6)
DTYPES = st.sampled_from(["bool", "int8", "uint16", "int64", "float32", "float64"])


def _stable_descending_argsort(a: np.ndarray, axis: int) -> np.ndarray:
    """Oracle: a stable ascending argsort of the negated dense ranks keeps equal elements in
    their original order."""
    dense = np.unique(a, return_inverse=True)[1].reshape(a.shape)
    return np.argsort(-dense, axis=axis, kind="stable")


@given(st.data())
def test_sort_and_argsort_match_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    dtype = data.draw(DTYPES)
    a = data.draw(npst.arrays("int8", shape, elements=st.integers(0, 3))).astype(dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = qd.asarray(a)
    order = qd.argsort(x, axis=axis)
    assert order.dtype == qd.int64
    np.testing.assert_array_equal(np.asarray(order), np.argsort(a, axis=axis, kind="stable"))
    s = qd.sort(x, axis=axis)
    assert s.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(s), np.sort(a, axis=axis))
    desc = qd.argsort(x, axis=axis, descending=True)
    np.testing.assert_array_equal(np.asarray(desc), _stable_descending_argsort(a, axis))
    np.testing.assert_array_equal(np.asarray(qd.sort(x, axis=axis, descending=True)),
                                  np.flip(np.sort(a, axis=axis), axis=axis))
    if not data.draw(st.booleans()):
        # Unstable sorts still sort.
        np.testing.assert_array_equal(np.asarray(qd.sort(x, axis=axis, stable=False)),
                                      np.sort(a, axis=axis))
        u = np.asarray(qd.argsort(x, axis=axis, stable=False))
        np.testing.assert_array_equal(np.take_along_axis(a, u, axis=axis),
                                      np.sort(a, axis=axis))


def test_stable_descending_sort_keeps_signed_zeros_in_order() -> None:
    x = qd.asarray([0.0, -0.0, 1.0, -0.0, 0.0])
    got = np.asarray(qd.sort(x, descending=True))
    assert got.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert np.signbit(got).tolist() == [False, False, True, True, False]
    assert np.asarray(qd.argsort(x, descending=True)).tolist() == [2, 0, 1, 3, 4]


def test_nans_sort_last_ascending_and_first_descending() -> None:
    x = qd.asarray([2.0, float("nan"), 1.0])
    assert np.asarray(qd.argsort(x)).tolist() == [2, 0, 1]
    assert np.asarray(qd.argsort(x, descending=True)).tolist() == [1, 0, 2]


def test_sorting_errors() -> None:
    with pytest.raises(ValueError, match="at least 1 dimension; got a 0-D array"):
        qd.sort(qd.asarray(1.0))
    with pytest.raises(IndexError, match="axis=1 is out of range for argsort"):
        qd.argsort(qd.zeros(3), axis=1)
    with pytest.raises(TypeError, match="Use qd.asarray"):
        qd.sort([3, 1])


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


# Equal but distinguishable floats: both zeros, and NaNs of both signs and two payloads.
_NAN_B = np.frombuffer(np.array([0x7FF8000000000123], np.uint64).tobytes(), np.float64)[0]
SPECIAL = [0.0, -0.0, np.nan, -np.nan, _NAN_B, 1.5, -2.0, np.inf]


@given(st.data())
def test_sort_is_bitwise_a_stable_sort(data: st.DataObject) -> None:
    """The default (fast) values sort gives exactly a stable sort's result: zeros of both
    signs and NaNs of several bit patterns stay in input order, ascending and descending."""
    shape = data.draw(npst.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=9))
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    with np.errstate(invalid="ignore"):
        a = data.draw(npst.arrays("float64", shape, elements=st.sampled_from(SPECIAL))
                      ).astype(dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = qd.asarray(a)
    small = cpu_sort._SMALL
    try:
        # The repair path (default sort, then equal values put back in order) runs above
        # cpu_sort._SMALL elements: test both paths on these small arrays.
        for cpu_sort._SMALL in (small, 0):
            np.testing.assert_array_equal(_bits(np.asarray(qd.sort(x, axis=axis))),
                                          _bits(np.sort(a, axis=axis, kind="stable")))
            order = _stable_descending_argsort(a, axis)
            got = np.asarray(qd.sort(x, axis=axis, descending=True))
            np.testing.assert_array_equal(_bits(got),
                                          _bits(np.take_along_axis(a, order, axis=axis)))
    finally:
        cpu_sort._SMALL = small


def test_sort_of_a_long_array_with_mixed_zeros_and_nans() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal(100_000)
    a[rng.integers(0, a.size, 500)] = -0.0
    a[rng.integers(0, a.size, 500)] = 0.0
    a[rng.integers(0, a.size, 50)] = np.nan
    a[rng.integers(0, a.size, 50)] = -np.nan
    for values in (a, a.astype(np.float32), a.reshape(100, 1000)):
        np.testing.assert_array_equal(_bits(np.asarray(qd.sort(qd.asarray(values)))),
                                      _bits(np.sort(values, kind="stable")))
    b = np.arange(10.0)[::-1].copy()  # no zeros twice, no NaN: nothing to restore
    np.testing.assert_array_equal(np.asarray(qd.sort(qd.asarray(b))), np.arange(10.0))
