"""argmax, argmin, count_nonzero, nonzero, searchsorted and where against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

NONEMPTY = npst.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
REAL = st.sampled_from(["int8", "uint8", "int32", "int64", "float32", "float64"])


def _check(result: qd.Array, expected: np.ndarray, dtype: qd.DType | None = None) -> None:
    expected = np.asarray(expected)
    assert result.shape == expected.shape
    if dtype is not None:
        assert result.dtype == dtype
    np.testing.assert_array_equal(np.asarray(result), expected)


def _values(data: st.DataObject, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    # Few distinct values, so ties (first occurrence wins) are common.
    return data.draw(npst.arrays(dtype, shape, elements=st.integers(0, 4).map(float)
                                 if dtype.startswith("float") else st.integers(0, 4)))


@given(st.data())
def test_argmax_argmin_match_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    a = _values(data, shape, data.draw(REAL))
    x = qd.asarray(a)
    keepdims = data.draw(st.booleans())
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    _check(qd.argmax(x, axis=axis, keepdims=keepdims),
           np.argmax(a, axis=axis, keepdims=keepdims), qd.int64)
    _check(qd.argmin(x, axis=axis, keepdims=keepdims),
           np.argmin(a, axis=axis, keepdims=keepdims), qd.int64)


def test_argmax_nan_and_errors() -> None:
    assert int(qd.argmax(qd.asarray([1.0, float("nan"), 3.0]))) == 1
    with pytest.raises(ValueError, match="argmax of an empty selection"):
        qd.argmax(qd.zeros((0, 3)))
    with pytest.raises(ValueError, match="argmin of an empty selection .* axis=0"):
        qd.argmin(qd.zeros((0, 3)), axis=0)
    assert qd.argmin(qd.zeros((0, 3)), axis=1).shape == (0,)
    with pytest.raises(TypeError, match="Only real numeric dtypes are allowed in argmax"):
        qd.argmax(qd.asarray([1j]))
    with pytest.raises(IndexError, match="axis=2 is out of range for argmax"):
        qd.argmax(qd.zeros((2, 2)), axis=2)


@given(st.data())
def test_count_nonzero_and_nonzero(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    a = data.draw(npst.arrays(data.draw(st.sampled_from(["bool", "int16", "float32"])), shape,
                              elements=st.integers(0, 1)))
    x = qd.asarray(a)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)
                     | st.sets(st.integers(0, len(shape) - 1)).map(tuple))
    keepdims = data.draw(st.booleans())
    _check(qd.count_nonzero(x, axis=axis, keepdims=keepdims),
           np.count_nonzero(a, axis=axis, keepdims=keepdims), qd.int64)
    got = qd.nonzero(x)
    assert isinstance(got, tuple) and len(got) == len(shape)
    for g, e in zip(got, np.nonzero(a), strict=True):
        _check(g, e, qd.int64)
    for g, e in zip(qd.where(x != 0) if a.dtype != bool else qd.where(x), np.nonzero(a),
                    strict=True):
        _check(g, e, qd.int64)


def test_nonzero_of_0d_is_an_error() -> None:
    with pytest.raises(ValueError, match="0-D arrays; use qd.reshape"):
        qd.nonzero(qd.asarray(1))


@given(st.data())
def test_searchsorted_matches_numpy(data: st.DataObject) -> None:
    dtype = data.draw(REAL)
    a = np.sort(_values(data, (data.draw(st.integers(0, 8)),), dtype))
    v = _values(data, data.draw(npst.array_shapes(min_dims=0, max_dims=2, max_side=4)), dtype)
    side = data.draw(st.sampled_from(["left", "right"]))
    _check(qd.searchsorted(qd.asarray(a), qd.asarray(v), side=side),
           np.searchsorted(a, v, side=side), qd.int64)
    scalar = data.draw(st.integers(-1, 5))
    _check(qd.searchsorted(qd.asarray(a), scalar, side=side),
           np.searchsorted(a, scalar, side=side), qd.int64)
    unsorted = np.flip(a).copy()
    sorter = np.argsort(unsorted, kind="stable")
    _check(qd.searchsorted(qd.asarray(unsorted), qd.asarray(v), side=side,
                           sorter=qd.asarray(sorter)),
           np.searchsorted(unsorted, v, side=side, sorter=sorter), qd.int64)


def test_searchsorted_errors() -> None:
    x = qd.asarray([1, 2, 3])
    with pytest.raises(ValueError, match=r"1-D x1; got shape \(1, 3\)"):
        qd.searchsorted(qd.reshape(x, (1, 3)), x)
    with pytest.raises(ValueError, match="side must be 'left' or 'right'; got 'middle'"):
        qd.searchsorted(x, x, side="middle")
    with pytest.raises(TypeError, match="got list"):
        qd.searchsorted(x, [1])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        qd.searchsorted(x, x, sorter=qd.asarray([0, 1, 3]))
    with pytest.raises(ValueError, match="sorter as an integer array"):
        qd.searchsorted(x, x, sorter=qd.asarray([0, 1]))


@given(st.data())
def test_where_matches_numpy(data: st.DataObject) -> None:
    shapes = data.draw(npst.mutually_broadcastable_shapes(num_shapes=3, max_dims=3))
    s0, s1, s2 = shapes.input_shapes
    cond = data.draw(npst.arrays(np.bool_, s0))
    d1, d2 = data.draw(REAL), data.draw(REAL)
    a1 = _values(data, s1, d1)
    a2 = _values(data, s2, d2)
    result = qd.where(qd.asarray(cond), qd.asarray(a1), qd.asarray(a2))
    expected = np.where(cond, a1, a2)
    _check(result, expected)
    assert result.dtype == qd.asarray(expected).dtype
    scalar = data.draw(st.integers(0, 3))
    weak = qd.where(qd.asarray(cond), qd.asarray(a1), scalar)
    assert weak.dtype == qd.asarray(a1).dtype
    _check(weak, np.where(cond, a1, scalar))


def test_where_errors_and_scalars() -> None:
    c = qd.asarray([True, False])
    _check(qd.where(c, 1.5, 2), np.asarray([1.5, 2.0]), qd.float64)
    f32 = qd.asarray([1.0, 2.0], dtype=qd.float32)
    assert qd.where(c, f32, 0.5).dtype == qd.float32
    with pytest.raises(TypeError, match="boolean condition; got dtype qdarray.int64"):
        qd.where(qd.asarray([1, 0]), 1, 2)
    with pytest.raises(TypeError, match="either condition alone"):
        qd.where(c, 1)
    other = Array._new(np.zeros(2), Device("cuda:1"))
    with pytest.raises(ValueError, match="condition on cpu and values on cuda:1"):
        qd.where(c, other, 0.0)
