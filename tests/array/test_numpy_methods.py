"""NumPy's methods without a function in the standard (`_numpy/methods.py`): `trace`,
`repeat`, `diagonal`, `compress`, `put`, `partition`, `flat`, `flags` and `base`, against
NumPy on the CPU and on an OpenCL device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qdarray as qd

OPENCL = next((str(d) for d in qd.__array_namespace_info__().devices() if d.kind == "opencl"),
              None)
DEVICES = ["cpu", pytest.param(OPENCL or "opencl:0", marks=pytest.mark.skipif(
    OPENCL is None, reason="no OpenCL device (pip install 'qdarray[pocl]')"))]


def host(x: Any) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(result: Any, expected: Any) -> None:
    expected = np.asarray(expected)
    assert type(result) is qd.Array
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_array_equal(host(result), expected)


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


A = np.arange(24.0).reshape(4, 6)
B = np.arange(60, dtype=np.int64).reshape(3, 4, 5)


def test_trace_diagonal_repeat(device: str) -> None:
    x, y = qd.asarray(A, device=device), qd.asarray(B, device=device)
    for kw in ({}, {"offset": 1}, {"offset": -2}):
        same(x.trace(**kw), A.trace(**kw))
        same(x.diagonal(**kw), A.diagonal(**kw))
    same(y.trace(1, 0, 2), B.trace(1, 0, 2))
    same(y.diagonal(0, 1, 2), B.diagonal(0, 1, 2))
    same(x.repeat(3), A.repeat(3))
    same(x.repeat(2, axis=1), A.repeat(2, axis=1))
    same(x.repeat([1, 0, 2, 3], axis=0), A.repeat([1, 0, 2, 3], axis=0))


def test_compress(device: str) -> None:
    x = qd.asarray(A, device=device)
    same(x.compress([True, False, True]), A.compress([True, False, True]))
    same(x.compress([0, 1, 1, 0, 1], axis=1), A.compress([0, 1, 1, 0, 1], axis=1))
    same(x.compress(qd.asarray([False, True], device=device), axis=0),
         A.compress([False, True], axis=0))
    same(x.compress([False] * 4, axis=0), A.compress([False] * 4, axis=0))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        x.compress([0, 0, 0, 0, 1], axis=0)
    with pytest.raises(ValueError, match="1-d"):
        x.compress([[True]])


def test_put(device: str) -> None:
    for ind, vals, mode in (([0, 5, -1], [100.0, 200.0, 300.0], "raise"),
                            ([1, 7, 3, 7], [9.0, 8.0], "raise"),  # cycled; last of index 7
                            ([30, -30], [1.0], "wrap"), ([30, -30], [1.0, 2.0], "clip"),
                            (np.array([[2, 3]]), 5.0, "raise")):
        x = qd.asarray(A.copy(), device=device)
        a = A.copy()
        assert x.put(ind, vals, mode=mode) is None
        a.put(ind, vals, mode=mode)
        same(x, a)
    t = qd.asarray(A.copy(), device=device).T  # not C-contiguous: through a copy
    at = A.copy().T
    t.put([1, 2], [-1.0, -2.0])
    at.put([1, 2], [-1.0, -2.0])
    same(t, at)
    with pytest.raises(IndexError, match="index 24 is out of bounds"):
        qd.asarray(A.copy(), device=device).put([24], [1.0])


def test_partition(device: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.permutation(40).astype(np.float32).reshape(4, 10)
    for kth, axis in ((3, -1), ([1, 7], -1), (2, 0)):
        x = qd.asarray(a.copy(), device=device)
        assert x.partition(kth, axis=axis) is None
        got = host(x)
        want = np.partition(a, kth, axis=axis)
        np.testing.assert_array_equal(np.sort(got, axis=axis), np.sort(a, axis=axis))
        for k in np.atleast_1d(kth):
            at = np.take(got, [k], axis=axis)
            np.testing.assert_array_equal(at, np.take(want, [k], axis=axis))
            assert np.all(np.take(got, range(k), axis=axis) <= at)
            assert np.all(np.take(got, range(k + 1, a.shape[axis]), axis=axis) >= at)


def test_flat(device: str) -> None:
    x = qd.asarray(A.copy(), device=device)
    assert len(x.flat) == 24 and x.flat.base is x
    same(x.flat[5], A.flat[5])
    same(x.flat[3:9], A.flat[3:9])
    assert [float(v) for v in x[:2, :2].flat] == list(A[:2, :2].flat)
    same(x.flat.copy(), A.flat.copy())
    np.testing.assert_array_equal(np.asarray(qd.asarray(A, device="cpu").flat), A.ravel())
    for key, value in ((3, -1.0), (slice(0, 24, 5), -2.0), ([1, 2, 4], [7.0, 8.0])):
        for order in ("C", "T"):
            y = qd.asarray(A.copy(), device=device)
            a = A.copy()
            if order == "T":
                y, a = y.T, a.T
            y.flat[key] = value
            a.flat[key] = value
            same(y, a)


def test_flags_and_base(device: str) -> None:
    x = qd.asarray(A.copy(), device=device)
    a = A.copy()
    for got, want in ((x, a), (x.T, a.T), (x[:, 1:3], a[:, 1:3]), (x[1:3], a[1:3]),
                      (x[::2], a[::2]), (x[:1], a[:1]), (x + 1, a + 1)):
        for flag in ("c_contiguous", "f_contiguous", "owndata"):
            assert getattr(got.flags, flag) == getattr(want.flags, flag), (flag, want.strides)
            assert got.flags[flag.upper()] == want.flags[flag.upper()]
        assert got.flags.writeable
    assert x.base is None and (x + 1).base is None
    assert x[1:].base is x and x[1:][:, 2:].base is x and x.T.base is x
    assert qd.reshape(x, (-1,)).base is x and x.view().base is x
    assert qd.empty((0, 3), device=device).flags.c_contiguous
    with pytest.raises(KeyError, match="Unknown flag"):
        x.flags["ALIGNED_X"]
