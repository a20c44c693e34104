"""Reductions and scans against NumPy: values, accumulation dtypes, axes, empties, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
REAL = ALL[:11]
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = npst.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


def check(result: qd.Array, expected: np.ndarray, rtol: float = 1e-6) -> None:
    expected = np.asarray(expected)
    assert type(result) is Array
    assert result.shape == expected.shape
    assert result.dtype == getattr(qd, expected.dtype.name)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(np.asarray(result), expected, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(np.asarray(result), expected)


def axis_for(data: st.DataObject, ndim: int) -> int | tuple[int, ...] | None:
    if ndim == 0:
        return None
    axes = st.none() | st.integers(-ndim, ndim - 1) | st.lists(
        st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    return data.draw(axes, label="axis")


def small(dtype: str) -> st.SearchStrategy | None:
    """Elements that keep float sums well conditioned, so rounding order does not matter."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8)
    if kind == "c":
        return st.complex_numbers(max_magnitude=100, width=np.dtype(dtype).itemsize * 8)
    return None


@pytest.mark.parametrize("name", ["sum", "prod"])
@settings(max_examples=40)
@given(data=st.data())
def test_sum_and_prod_match_numpy(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(ALL), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES, elements=small(dtype)), label="a")
    axis = axis_for(data, a.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    acc = data.draw(st.sampled_from([None, "float64", "int64", dtype]), label="dtype=")
    if acc is not None and np.dtype(dtype).kind == "c" and acc != dtype:
        acc = None
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(a, axis=axis, keepdims=keepdims, dtype=acc)
        result = getattr(qd, name)(qd.asarray(a), axis=axis, keepdims=keepdims,
                                   dtype=None if acc is None else getattr(qd, acc))
    check(result, expected, rtol=1e-4)


@pytest.mark.parametrize(("dtype", "expected"), [
    ("bool", "int64"), ("int8", "int64"), ("int32", "int64"), ("uint8", "uint64"),
    ("uint32", "uint64"), ("float32", "float32"), ("complex64", "complex64"),
])
def test_default_accumulation_dtypes(dtype: str, expected: str) -> None:
    x = qd.ones((2, 3), dtype=getattr(qd, dtype))
    for func in (qd.sum, qd.prod):
        assert func(x).dtype == getattr(qd, expected)
    assert qd.cumulative_sum(x, axis=1).dtype == getattr(qd, expected)


@pytest.mark.parametrize("name", ["max", "min"])
@settings(max_examples=40)
@given(data=st.data())
def test_max_and_min_match_numpy(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(REAL), label="dtype")
    a = data.draw(npst.arrays(dtype, NONEMPTY), label="a")
    axis = axis_for(data, a.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    check(getattr(qd, name)(qd.asarray(a), axis=axis, keepdims=keepdims),
          getattr(np, name)(a, axis=axis, keepdims=keepdims))


def test_max_propagates_nan() -> None:
    check(qd.max(qd.asarray([1.0, np.nan, 3.0])), np.array(np.nan))
    check(qd.min(qd.asarray([[1.0, np.nan], [0.0, 2.0]]), axis=1), np.array([np.nan, 0.0]))


def test_max_and_min_of_empty_selections_raise() -> None:
    with pytest.raises(ValueError, match=r"max of an empty selection: the array of shape "
                                         r"\(0,\) has no elements, and max has no identity"):
        qd.max(qd.zeros(0))
    with pytest.raises(ValueError, match=r"min of an empty selection: axis 0 of shape \(0, 3\)"):
        qd.min(qd.zeros((0, 3)), axis=0)
    # reducing a non-empty axis of an empty array is fine (an empty result), as in NumPy
    check(qd.max(qd.zeros((0, 3)), axis=1), np.zeros(0))


@pytest.mark.parametrize("name", ["mean", "var", "std"])
@settings(max_examples=40)
@given(data=st.data())
def test_mean_var_std_match_numpy(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(ALL), label="dtype")
    a = data.draw(npst.arrays(dtype, NONEMPTY, elements=small(dtype)), label="a")
    axis = axis_for(data, a.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    kwargs = {}
    np_kwargs = {}
    if name != "mean":
        correction = data.draw(st.sampled_from([0, 1, 0.5]), label="correction")
        kwargs["correction"] = correction
        np_kwargs["ddof"] = correction
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # N - correction <= 0
        expected = getattr(np, name)(a, axis=axis, keepdims=keepdims, **np_kwargs)
        result = getattr(qd, name)(qd.asarray(a), axis=axis, keepdims=keepdims, **kwargs)
    check(result, expected, rtol=1e-4)


def test_mean_of_integers_and_booleans_is_float64() -> None:
    check(qd.mean(qd.asarray([1, 2], dtype=qd.int8)), np.array(1.5))
    check(qd.mean(qd.asarray([True, False, True, True])), np.array(0.75))
    check(qd.std(qd.asarray([1 + 1j, 1 - 1j], dtype=qd.complex64)), np.array(1.0, np.float32))


def test_sample_variance_closed_form() -> None:
    x = qd.asarray([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert float(qd.var(x)) == 4.0
    assert float(qd.std(x)) == 2.0
    assert float(qd.var(x, correction=1)) == pytest.approx(32.0 / 7.0)


def test_empty_sums_and_means() -> None:
    check(qd.sum(qd.zeros((0, 2))), np.array(0.0))
    check(qd.prod(qd.zeros(0, dtype=qd.int32)), np.array(1))
    with pytest.warns(RuntimeWarning):
        check(qd.mean(qd.zeros(0)), np.array(np.nan))


# -- scans ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@settings(max_examples=40)
@given(data=st.data())
def test_cumulative_functions_match_numpy(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(ALL), label="dtype")
    a = data.draw(npst.arrays(dtype, npst.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                       max_side=4), elements=small(dtype)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis") if a.ndim > 1 else \
        data.draw(st.sampled_from([None, 0, -1]), label="axis")
    include_initial = data.draw(st.booleans(), label="include_initial")
    acc = data.draw(st.sampled_from([None, "float64"] if np.dtype(dtype).kind != "c"
                                    else [None]), label="dtype=")
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(a, axis=axis, include_initial=include_initial, dtype=acc)
        result = getattr(qd, name)(qd.asarray(a), axis=axis, include_initial=include_initial,
                                   dtype=None if acc is None else getattr(qd, acc))
    check(result, expected, rtol=1e-4)


def test_cumulative_sum_examples() -> None:
    check(qd.cumulative_sum(qd.asarray([1, 2, 3])), np.array([1, 3, 6]))
    check(qd.cumulative_sum(qd.asarray([1, 2, 3]), include_initial=True),
          np.array([0, 1, 3, 6]))
    check(qd.cumulative_prod(qd.asarray([[1, 2], [3, 4]]), axis=0, include_initial=True),
          np.array([[1, 1], [1, 2], [3, 8]]))
    check(qd.cumulative_sum(qd.asarray(5)), np.array([5]))  # 0-d scans as 1-d, as in NumPy


def test_cumulative_sum_needs_an_axis_above_one_dimension() -> None:
    with pytest.raises(ValueError, match=r"cumulative_sum of an array of shape \(2, 2\) needs "
                                         r"axis=; use axis=0 ... axis=1"):
        qd.cumulative_sum(qd.ones((2, 2)))
    with pytest.raises(TypeError, match="expects a bool for include_initial; got int"):
        qd.cumulative_prod(qd.ones(2), include_initial=1)


# -- argument errors ------------------------------------------------------------------------


def test_axis_errors() -> None:
    x = qd.ones((2, 3))
    with pytest.raises(qd.AxisError, match=r"axis=2 is out of range for sum on an array of 2 "
                                           r"dimensions; use an axis in \[-2, 2\)"):
        qd.sum(x, axis=2)
    with pytest.raises(IndexError):  # AxisError is an IndexError too
        qd.mean(x, axis=(0, -3))
    with pytest.raises(qd.AxisError, match="repeated axes"):
        qd.max(x, axis=(1, -1))
    with pytest.raises(TypeError, match="expects an integer axis; got float"):
        qd.var(x, axis=1.0)


def test_dtype_category_errors() -> None:
    with pytest.raises(TypeError, match=r"Only real-valued dtypes are allowed in max; got "
                                        r"qdarray.complex64\. Use qd.real"):
        qd.max(qd.ones(2, dtype=qd.complex64))
    with pytest.raises(TypeError, match="var expects a real number for correction"):
        qd.var(qd.ones(2), correction="1")
    with pytest.raises(TypeError, match="sum expects a qdarray Array for x; got list"):
        qd.sum([1, 2])
    with pytest.raises(TypeError, match="dtype 'float16' is not supported"):
        qd.sum(qd.ones(2), dtype="float16")
