"""unique_* and isin against NumPy, with the standard's NaN and signed-zero rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd

SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
DTYPES = st.sampled_from(["bool", "int8", "uint32", "int64", "float32", "float64",
                          "complex64"])


@given(st.data())
def test_unique_family_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    dtype = data.draw(DTYPES)
    a = data.draw(npst.arrays("int8", shape, elements=st.integers(0, 4))).astype(dtype)
    x = qd.asarray(a)
    values, indices, inverse, counts = np.unique(a, return_index=True, return_inverse=True,
                                                 return_counts=True)
    r = qd.unique_all(x)
    assert type(r).__name__ == "UniqueAllResult"
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    np.testing.assert_array_equal(np.asarray(r.values), values)
    assert r.values.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(r.indices), indices)
    assert r.inverse_indices.shape == shape
    np.testing.assert_array_equal(np.asarray(r.inverse_indices), inverse.reshape(shape))
    np.testing.assert_array_equal(np.asarray(r.counts), counts)
    for arr in (r.indices, r.inverse_indices, r.counts):
        assert arr.dtype == qd.int64
    c = qd.unique_counts(x)
    assert c._fields == ("values", "counts")
    np.testing.assert_array_equal(np.asarray(c.values), values)
    np.testing.assert_array_equal(np.asarray(c.counts), counts)
    i = qd.unique_inverse(x)
    assert i._fields == ("values", "inverse_indices")
    np.testing.assert_array_equal(np.asarray(i.values)[np.asarray(i.inverse_indices)], a)
    np.testing.assert_array_equal(np.asarray(qd.unique_values(x)), values)


def test_nans_are_distinct_and_signed_zeros_are_one_value() -> None:
    x = qd.asarray([float("nan"), 0.0, -0.0, float("nan"), 1.0])
    r = qd.unique_counts(x)
    got = np.asarray(r.values)
    assert got.shape == (4,)
    assert np.isnan(got).sum() == 2
    assert np.asarray(r.counts).tolist() == [2, 1, 1, 1]
    assert qd.unique_values(x).shape == (4,)


@given(st.data())
def test_isin_matches_numpy(data: st.DataObject) -> None:
    a1 = data.draw(npst.arrays("int64", SHAPES, elements=st.integers(0, 6)))
    a2 = data.draw(npst.arrays("int32", SHAPES, elements=st.integers(0, 6)))
    invert = data.draw(st.booleans())
    r = qd.isin(qd.asarray(a1), qd.asarray(a2), invert=invert)
    assert r.dtype == qd.bool and r.shape == a1.shape
    np.testing.assert_array_equal(np.asarray(r), np.isin(a1, a2, invert=invert))
    s = data.draw(st.integers(0, 6))
    np.testing.assert_array_equal(np.asarray(qd.isin(s, qd.asarray(a2))), np.isin(s, a2))
    np.testing.assert_array_equal(np.asarray(qd.isin(qd.asarray(a1), s)), np.isin(a1, s))
    assert qd.isin(s, qd.asarray(a2)).shape == ()


def test_set_function_errors() -> None:
    with pytest.raises(TypeError, match="at least one Array argument"):
        qd.isin(1, 2)
    with pytest.raises(TypeError, match="Use qd.asarray"):
        qd.unique_values([1, 2])
    with pytest.raises(TypeError, match="x2"):
        qd.isin(qd.asarray([1]), [1])
