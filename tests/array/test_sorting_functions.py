"""sort and argsort against NumPy, including stable descending order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd

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
