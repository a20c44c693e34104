"""all, any and diff against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def check(result: qd.Array, expected: np.ndarray) -> None:
    expected = np.asarray(expected)
    assert type(result) is Array
    assert result.shape == expected.shape
    assert result.dtype == getattr(qd, expected.dtype.name)
    np.testing.assert_array_equal(np.asarray(result), expected)


@pytest.mark.parametrize("name", ["all", "any"])
@settings(max_examples=40)
@given(data=st.data())
def test_all_and_any_match_numpy(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(ALL), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES, elements=st.sampled_from([0, 1])
                              if np.dtype(dtype).kind != "b" else None), label="a")
    axis = None
    if a.ndim:
        axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1) | st.lists(
            st.integers(0, a.ndim - 1), unique=True, max_size=a.ndim).map(tuple), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check(getattr(qd, name)(qd.asarray(a), axis=axis, keepdims=keepdims),
          getattr(np, name)(a, axis=axis, keepdims=keepdims))


def test_nan_is_true() -> None:
    assert bool(qd.all(qd.asarray([np.nan, 1.0])))
    assert bool(qd.any(qd.asarray([0.0, np.nan])))
    assert bool(qd.all(qd.zeros(0))) and not bool(qd.any(qd.zeros(0)))


def _elements(dtype: str) -> st.SearchStrategy | None:
    kind = np.dtype(dtype).kind
    return None if kind == "b" else st.integers(0 if kind == "u" else -20, 20)


@settings(max_examples=60)
@given(data=st.data())
def test_diff_matches_numpy(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(ALL), label="dtype")
    shape = data.draw(npst.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    elements = _elements(dtype)
    a = data.draw(npst.arrays(dtype, shape, elements=elements), label="a")
    n = data.draw(st.integers(0, 3), label="n")
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    extra: dict[str, object] = {}
    np_extra: dict[str, object] = {}
    for name in ("prepend", "append"):
        choice = data.draw(st.sampled_from(["none", "array", "scalar"]), label=name)
        if choice == "array":
            side = list(a.shape)
            side[axis] = data.draw(st.integers(0, 2), label=f"{name} length")
            v = data.draw(npst.arrays(dtype, tuple(side), elements=elements))
            extra[name], np_extra[name] = qd.asarray(v), v
        elif choice == "scalar":
            v = True if dtype == "bool" else 3
            extra[name] = np_extra[name] = v
    with np.errstate(all="ignore"):
        expected = np.diff(a, n, axis, **np_extra)
        by_position = qd.diff(qd.asarray(a), n, axis, **extra)
        by_keyword = qd.diff(qd.asarray(a), axis=axis, n=n, **extra)
    check(by_position, expected)
    check(by_keyword, expected)


def test_diff_examples() -> None:
    x = qd.asarray([1, 4, 9, 16])
    check(qd.diff(x), np.array([3, 5, 7]))
    check(qd.diff(x, 2), np.array([2, 2]))
    check(qd.diff(x, 0), np.array([1, 4, 9, 16]))
    check(qd.diff(qd.asarray([True, False, False])), np.array([True, False]))
    assert qd.diff(x, 0)._buffer is not x._buffer


def test_diff_errors() -> None:
    with pytest.raises(ValueError, match="diff needs an array with at least one dimension"):
        qd.diff(qd.asarray(1.0))
    with pytest.raises(ValueError, match="non-negative integer n; got -1"):
        qd.diff(qd.ones(3), -1)
    with pytest.raises(TypeError, match="non-negative integer n; got float 1.0"):
        qd.diff(qd.ones(3), 1.0)
    with pytest.raises(qd.AxisError, match="axis=1 is out of range for diff"):
        qd.diff(qd.ones(3), axis=1)
    with pytest.raises(TypeError, match="diff expects an Array or a Python scalar for append; "
                                        "got list"):
        qd.diff(qd.ones(3), append=[1.0])
    with pytest.raises(qd.DeviceMismatchError, match="cpu and cuda:0"):
        qd.diff(qd.ones(3), prepend=Array._new(np.ones(1), Device("cuda:0")))
