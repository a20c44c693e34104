"""arange, eye, linspace, meshgrid, tril, triu (and the constants) against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device


def check(result: qd.Array, expected: np.ndarray, rtol: float = 0) -> None:
    expected = np.asarray(expected)
    assert type(result) is Array
    assert result.device == qd.Device("cpu")
    assert result.shape == expected.shape
    assert result.dtype == getattr(qd, expected.dtype.name)
    if rtol:
        np.testing.assert_allclose(np.asarray(result), expected, rtol=rtol)
    else:
        np.testing.assert_array_equal(np.asarray(result), expected)


# -- arange ---------------------------------------------------------------------------------


@settings(max_examples=60)
@given(start=st.integers(-50, 50), stop=st.none() | st.integers(-50, 50),
       step=st.integers(-7, 7).filter(bool))
def test_arange_of_ints_matches_numpy(start: int, stop: int | None, step: int) -> None:
    if stop is None:
        check(qd.arange(start), np.arange(start))
    else:
        check(qd.arange(start, stop, step), np.arange(start, stop, step))


@settings(max_examples=60)
@given(start=st.floats(-50, 50), stop=st.floats(-50, 50),
       step=st.floats(0.1, 5) | st.floats(-5, -0.1),
       dtype=st.sampled_from([None, "float32", "float64"]))
def test_arange_of_floats_matches_numpy(start: float, stop: float, step: float,
                                        dtype: str | None) -> None:
    expected = np.arange(start, stop, step, dtype=dtype)
    result = qd.arange(start, stop, step, dtype=None if dtype is None else getattr(qd, dtype))
    check(result, expected)
    assert result.shape[0] == max(0, math.ceil((stop - start) / step))


def test_arange_dtypes() -> None:
    assert qd.arange(3).dtype == qd.int64
    assert qd.arange(3.0).dtype == qd.float64
    assert qd.arange(0, 3, 0.5).dtype == qd.float64
    check(qd.arange(5, dtype=qd.uint8), np.arange(5, dtype=np.uint8))
    check(qd.arange(1, 4, dtype=qd.float32), np.arange(1, 4, dtype=np.float32))
    check(qd.arange(np.int32(3)), np.arange(3))
    check(qd.arange(qd.asarray(4)), np.arange(4))
    check(qd.arange(10, 0), np.arange(10, 0))  # empty, not an error


def test_arange_refuses_what_it_would_truncate_or_wrap() -> None:
    with pytest.raises(ValueError, match="arange needs a non-zero step; got step=0"):
        qd.arange(0, 5, 0)
    with pytest.raises(TypeError, match=r"arange with integer dtype qdarray.int32 needs "
                                        r"integer start, stop and step; got step=0.5"):
        qd.arange(0, 5, 0.5, dtype=qd.int32)
    with pytest.raises(OverflowError, match=r"arange\(0, 300, 1\) reaches 299, outside the "
                                            r"range of qdarray.int8 \[-128, 127\]"):
        qd.arange(0, 300, dtype=qd.int8)
    with pytest.raises(OverflowError, match=r"reaches -1, outside the range of qdarray.uint8"):
        qd.arange(-1, 3, dtype=qd.uint8)
    with pytest.raises(TypeError, match="arange produces numbers; got dtype qdarray.bool"):
        qd.arange(3, dtype=qd.bool)
    with pytest.raises(TypeError, match="arange expects an int or float for stop; got complex"):
        qd.arange(0, 1j)
    with pytest.raises(TypeError, match="arange expects an int or float for stop; got bool True"):
        qd.arange(True)


# -- eye ------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(n=st.integers(0, 6), m=st.none() | st.integers(0, 6), k=st.integers(-7, 7),
       dtype=st.sampled_from([None, "int8", "bool", "float32", "complex64"]))
def test_eye_matches_numpy(n: int, m: int | None, k: int, dtype: str | None) -> None:
    result = qd.eye(n, m, k=k, dtype=None if dtype is None else getattr(qd, dtype))
    check(result, np.eye(n, m, k=k, dtype=dtype or "float64"))


def test_eye_errors() -> None:
    with pytest.raises(ValueError, match="eye expects a non-negative integer n_rows; got -1"):
        qd.eye(-1)
    with pytest.raises(TypeError, match="eye expects a non-negative integer n_cols; got float"):
        qd.eye(2, 2.0)
    with pytest.raises(TypeError, match="eye expects an integer k; got str"):
        qd.eye(2, k="1")


# -- linspace -------------------------------------------------------------------------------


@settings(max_examples=60)
@given(start=st.floats(-1e3, 1e3) | st.integers(-100, 100),
       stop=st.floats(-1e3, 1e3) | st.integers(-100, 100), num=st.integers(0, 20),
       endpoint=st.booleans(), dtype=st.sampled_from([None, "float32", "float64"]))
def test_linspace_matches_numpy(start: float, stop: float, num: int, endpoint: bool,
                                dtype: str | None) -> None:
    result = qd.linspace(start, stop, num, endpoint=endpoint,
                         dtype=None if dtype is None else getattr(qd, dtype))
    check(result, np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def test_linspace_closed_forms_and_dtypes() -> None:
    check(qd.linspace(0, 1, 5), np.array([0.0, 0.25, 0.5, 0.75, 1.0]))
    check(qd.linspace(0, 1, 4, endpoint=False), np.array([0.0, 0.25, 0.5, 0.75]))
    check(qd.linspace(0, 1j, 3), np.array([0, 0.5j, 1j]))
    check(qd.linspace(0, 10, 4, dtype=qd.int32), np.array([0, 3, 6, 10], np.int32))
    # float32 results are the float64 values correctly rounded
    x = qd.linspace(0, 1, 7, dtype=qd.float32)
    check(x, np.linspace(0, 1, 7).astype(np.float32))


def test_linspace_errors() -> None:
    with pytest.raises(TypeError, match="complex start or stop needs a complex dtype; got "
                                        "qdarray.float64"):
        qd.linspace(0, 1j, 3, dtype=qd.float64)
    with pytest.raises(ValueError, match="non-negative integer num; got -2"):
        qd.linspace(0, 1, -2)
    with pytest.raises(TypeError, match="non-negative integer num; got float 3.0"):
        qd.linspace(0, 1, 3.0)
    with pytest.raises(TypeError, match="expects a bool for endpoint"):
        qd.linspace(0, 1, 3, endpoint=None)


# -- meshgrid -------------------------------------------------------------------------------


@settings(max_examples=40)
@given(data=st.data())
def test_meshgrid_matches_numpy(data: st.DataObject) -> None:
    count = data.draw(st.integers(0, 3), label="count")
    arrays = [data.draw(npst.arrays(st.sampled_from(["int16", "float32", "bool"]),
                                    st.integers(0, 4)), label=f"a{i}") for i in range(count)]
    indexing = data.draw(st.sampled_from(["xy", "ij"]), label="indexing")
    result = qd.meshgrid(*(qd.asarray(a) for a in arrays), indexing=indexing)
    expected = np.meshgrid(*arrays, indexing=indexing)
    assert type(result) is tuple and len(result) == len(expected)  # a tuple since 2025.12
    for r, e in zip(result, expected, strict=True):
        check(r, e)


def test_meshgrid_outputs_are_new_arrays() -> None:
    xs, ys = qd.meshgrid(qd.arange(3), qd.arange(2))
    assert xs.shape == ys.shape == (2, 3)
    xs[0, 0] = 7  # writable, and not a broadcast view
    np.testing.assert_array_equal(np.asarray(xs)[1], [0, 1, 2])


def test_meshgrid_errors() -> None:
    with pytest.raises(ValueError, match="meshgrid's indexing must be 'xy' or 'ij'; got 'xz'"):
        qd.meshgrid(qd.ones(2), indexing="xz")
    with pytest.raises(TypeError, match=r"meshgrid expects qdarray Arrays; got list for "
                                        r"arrays\[1\]"):
        qd.meshgrid(qd.ones(2), [1, 2])
    with pytest.raises(qd.DeviceMismatchError, match="cpu and cuda:0"):
        qd.meshgrid(qd.ones(2), Array._new(np.ones(2), Device("cuda:0")))


# -- tril, triu -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tril", "triu"])
@settings(max_examples=30)
@given(data=st.data())
def test_triangles_match_numpy(name: str, data: st.DataObject) -> None:
    a = data.draw(npst.arrays(st.sampled_from(["int32", "float64", "bool", "complex64"]),
                              npst.array_shapes(min_dims=2, max_dims=4, min_side=0,
                                                max_side=4)), label="a")
    k = data.draw(st.integers(-5, 5), label="k")
    check(getattr(qd, name)(qd.asarray(a), k=k), getattr(np, name)(a, k=k))


def test_triangle_errors() -> None:
    with pytest.raises(ValueError, match=r"tril needs an array of at least 2 dimensions; got "
                                         r"shape \(3,\)"):
        qd.tril(qd.ones(3))
    with pytest.raises(TypeError, match="triu expects an integer k; got float"):
        qd.triu(qd.ones((2, 2)), k=1.0)


# -- constants ------------------------------------------------------------------------------


def test_constants() -> None:
    assert qd.e == math.e and qd.pi == math.pi and qd.inf == math.inf
    assert math.isnan(qd.nan) and type(qd.nan) is float
    assert qd.newaxis is None
    assert qd.ones((2, 3))[:, qd.newaxis].shape == (2, 1, 3)


def test_full_of_a_numpy_complex_scalar_is_complex() -> None:
    # np.complex64 is no Python complex: its value is not cut to the real part
    x = qd.full(2, np.complex64(-0.5 + 4j))
    assert x.dtype == qd.complex128
    np.testing.assert_array_equal(np.asarray(x), [-0.5 + 4j, -0.5 + 4j])


# -- asarray(copy=False) and fill values: never a hidden copy or a silent conversion ---------

def test_asarray_copy_false_refuses_every_copy() -> None:
    """The standard: copy=False must never copy, and raise ValueError when it would have to
    (NumPy 2's np.asarray(..., copy=False) does too). A dtype change, Python data and
    scalars need a copy; a view of the same memory does not."""
    data = np.arange(4.0)
    x = qd.asarray(data)
    for obj in (x, data, x[::2], data[::-1]):
        with pytest.raises(ValueError, match=r"copy=False.*float32"):
            qd.asarray(obj, dtype=qd.float32, copy=False)
    for obj in ([1.0, 2.0], (1, 2), 3.0, [[True]]):
        with pytest.raises(ValueError, match="copy=False"):
            qd.asarray(obj, copy=False)
    strided = qd.asarray(data[::-2], dtype=qd.float64, copy=False)
    strided[0] = 9.0
    assert data[3] == 9.0  # the same memory, negative strides included
    same = qd.asarray(x, dtype=qd.float64, copy=False)
    same[0] = -1.0
    assert data[0] == -1.0


@pytest.mark.parametrize(("value", "dtype"), [
    (1.5, qd.int32), (float("inf"), qd.int64), (float("nan"), qd.uint8), (2.0, qd.bool),
    (1j, qd.float64), (np.float64(0.5), qd.int16), (np.complex64(1j), qd.float32),
])
def test_full_refuses_a_fill_value_of_another_kind(value, dtype) -> None:
    """np.full(3, 1.5, dtype=np.int32) truncates to 1, inf to INT_MIN, 1j to 0 (a
    ComplexWarning): qdarray raises as x[key] = value does, rather than truncate."""
    with pytest.raises(TypeError, match=r"fill value .* would change the value's kind"):
        qd.full(3, value, dtype=dtype)
    with pytest.raises(TypeError, match=r"fill value .* would change the value's kind"):
        qd.full_like(qd.zeros(2, dtype=dtype), value)


def test_full_takes_values_of_its_kind_and_below() -> None:
    check(qd.full(2, 3, dtype=qd.float32), np.full(2, 3, np.float32))
    check(qd.full(2, True, dtype=qd.int8), np.full(2, True, np.int8))
    check(qd.full(2, 2.5, dtype=qd.complex64), np.full(2, 2.5, np.complex64))
    check(qd.full(2, np.int64(7), dtype=qd.uint8), np.full(2, 7, np.uint8))
    check(qd.full_like(qd.arange(3), 4), np.full(3, 4))
    with pytest.raises(OverflowError, match="300"):
        qd.full(2, 300, dtype=qd.int8)


def test_asarray_of_python_ints_beyond_the_dtype_names_the_way_out() -> None:
    """NumPy's own message was "Python int too large to convert to C long"."""
    with pytest.raises(OverflowError, match=r"does not fit in int64 \(the default integer "
                                            r"dtype\) .*; use dtype=qd.uint64"):
        qd.asarray([1, 2**63])
    with pytest.raises(OverflowError, match="does not fit in qdarray.int8 .*300"):
        qd.asarray([1, 300], dtype=qd.int8)
    check(qd.asarray([2**63], dtype=qd.uint64), np.array([2**63], np.uint64))


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diag_is_numpys(k: int) -> None:
    v = np.array([1.0, -np.inf, 3.0])
    got = qd.diag(qd.asarray(v), k=k)
    np.testing.assert_array_equal(np.asarray(got), np.diag(v, k=k), strict=True)  # no inf * 0
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(qd.diag(qd.asarray(m), k)), np.diag(m, k),
                                  strict=True)
    with pytest.raises(ValueError, match=r"diag takes a 1-D or 2-D array; got shape \(\)"):
        qd.diag(qd.asarray(1.0))
