"""NumPy's NaN-ignoring reductions, flat indices, partitions and nan_to_num through the
namespace; ufuncs with dtype=; NumPy index arrays; NumPy's dtype attributes of DType. Against
NumPy on the CPU and, where present, on an OpenCL device (where no NumPy fallback exists)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import qdarray as qd

DEVICES = ["cpu"] + [str(d) for d in qd.__array_namespace_info__().devices()
                     if d.kind == "opencl"][:1]

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((5, 6)).astype(np.float32)
DATA[1, 2] = DATA[3, 0] = np.nan
DATA[4, :] = np.nan  # a row of NaNs only


def on(device: str, a: np.ndarray) -> qd.Array:
    return qd.asarray(a, device=device)


def check(result: Any, expected: Any, device: str, rtol: float = 1e-5) -> None:
    expected = np.asarray(expected)
    assert type(result) is qd.Array
    assert str(result.device) == device
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(result.to_device("cpu")), expected, rtol=rtol,
                               atol=1e-6, equal_nan=True)


def numpy_quietly(func: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "All-NaN slice" warnings
        return func(*args, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("func", [np.nansum, np.nanprod, np.nanmin, np.nanmax, np.nanmean,
                                  np.nanvar, np.nanstd], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions_match_numpy(device: str, func: Any, axis: Any) -> None:
    x = on(device, DATA)
    check(func(x, axis=axis), numpy_quietly(func, DATA, axis=axis), device)
    check(func(x, axis=axis, keepdims=True),
          numpy_quietly(func, DATA, axis=axis, keepdims=True), device)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_moments_take_ddof_and_integers(device: str) -> None:
    x = on(device, DATA)
    check(np.nanvar(x, axis=0, ddof=1), numpy_quietly(np.nanvar, DATA, axis=0, ddof=1), device)
    check(np.nanstd(x, axis=1, correction=1),
          numpy_quietly(np.nanstd, DATA, axis=1, correction=1), device)
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(np.nanmean(on(device, ints), axis=1), np.nanmean(ints, axis=1), device)
    check(np.nansum(on(device, ints)), np.nansum(ints), device)
    with pytest.raises(ValueError, match="ddof and correction"):
        np.nanvar(x, ddof=1, correction=1)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_arg_reductions(device: str) -> None:
    rows = DATA[:4]
    x = on(device, rows)
    check(np.nanargmin(x, axis=1), np.nanargmin(rows, axis=1), device)
    check(np.nanargmax(x, axis=0), np.nanargmax(rows, axis=0), device)
    check(np.nanargmax(x), np.nanargmax(rows), device)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        np.nanargmin(on(device, DATA), axis=1)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_to_num(device: str) -> None:
    a = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], dtype=np.float32)
    check(np.nan_to_num(on(device, a)), np.nan_to_num(a), device)
    check(np.nan_to_num(on(device, a), nan=-1.0, posinf=9.0, neginf=-9.0),
          np.nan_to_num(a, nan=-1.0, posinf=9.0, neginf=-9.0), device)
    x = on(device, a)
    assert np.nan_to_num(x, copy=False) is x
    check(x, np.nan_to_num(a), device)


@pytest.mark.parametrize("device", DEVICES)
def test_unravel_and_ravel_multi_index(device: str) -> None:
    flat = np.array([0, 5, 17, 29], dtype=np.int64)
    for order in ("C", "F"):
        ours = np.unravel_index(on(device, flat), (5, 6), order=order)
        theirs = np.unravel_index(flat, (5, 6), order=order)
        assert len(ours) == 2
        for o, t in zip(ours, theirs, strict=True):
            check(o, t, device)
        index = (on(device, theirs[0]), on(device, theirs[1]))
        check(np.ravel_multi_index(index, (5, 6), order=order),
              np.ravel_multi_index(theirs, (5, 6), order=order), device)
    check(np.unravel_index(on(device, np.array(7)), (2, 4))[1], np.unravel_index(7, (2, 4))[1],
          device)
    out_of_range = (on(device, np.array([0, 7])), on(device, np.array([1, 1])))
    for mode in ("wrap", "clip"):
        check(np.ravel_multi_index(out_of_range, (5, 6), mode=mode),
              np.ravel_multi_index((np.array([0, 7]), np.array([1, 1])), (5, 6), mode=mode),
              device)
    with pytest.raises(ValueError, match="index 30 is out of bounds for array with size 30"):
        np.unravel_index(on(device, np.array([3, 30])), (5, 6))
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        np.ravel_multi_index(out_of_range, (5, 6))
    with pytest.raises(TypeError, match="only int indices"):
        np.unravel_index(on(device, np.array([1.0])), (5, 6))


@pytest.mark.parametrize("device", DEVICES)
def test_partition_is_a_valid_partition(device: str) -> None:
    a = RNG.standard_normal((4, 9)).astype(np.float32)
    x = on(device, a)
    for kth in (0, 4, -1):
        part = np.asarray(np.partition(x, kth, axis=1).to_device("cpu"))
        np.testing.assert_array_equal(part[:, kth], np.partition(a, kth, axis=1)[:, kth])
        k = kth % 9
        assert (part[:, :k] <= part[:, k:k + 1]).all()
        assert (part[:, k + 1:] >= part[:, k:k + 1]).all()
        idx = np.asarray(np.argpartition(x, kth, axis=1).to_device("cpu"))
        np.testing.assert_array_equal(np.take_along_axis(a, idx, axis=1), part)
    with pytest.raises(ValueError, match=r"kth\(=9\) out of bounds \(9\)"):
        np.partition(x, 9, axis=1)


@pytest.mark.parametrize("device", DEVICES)
def test_ufunc_dtype_argument_resolves_as_numpy(device: str) -> None:
    a = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    x = on(device, a)
    check(np.add(x, x, dtype=np.float64), np.add(a, a, dtype=np.float64), device)
    check(np.multiply(x, 2, dtype="float64"), np.multiply(a, 2, dtype="float64"), device)
    check(np.less(x, 2.0, dtype=bool), np.less(a, 2.0, dtype=bool), device)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' input 0"):
        np.add(x, x, dtype=np.int32)


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_index_arrays_index_as_lists(device: str) -> None:
    a = np.arange(12.0).reshape(3, 4)
    x = on(device, a)
    rows = np.array([2, 0])
    check(x[rows], a[rows], device)
    check(x[np.ogrid[0:3, 0:1][0], np.array([[1]])], a[np.ogrid[0:3, 0:1][0], np.array([[1]])],
          device)
    check(x[a > 5], a[a > 5], device)
    with pytest.raises(IndexError, match="Only integers, slices"):
        x[np.array([1.0])]


def test_dtype_has_numpy_dtype_attributes() -> None:
    for dtype in (qd.float32, qd.int64, qd.bool, qd.complex128):
        theirs = np.dtype(dtype.name)
        assert dtype.type is theirs.type
        assert (dtype.char, dtype.str, dtype.kind, dtype.itemsize) == (
            theirs.char, theirs.str, theirs.kind, theirs.itemsize)
        assert dtype.hasobject is False and dtype.fields is None and dtype.names is None
    assert np.issubdtype(qd.float32, np.floating) and not np.issubdtype(qd.int8, np.floating)
