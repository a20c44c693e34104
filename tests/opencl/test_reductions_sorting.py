"""Reductions, scans, sorting, searching and matmul on the OpenCL device against the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_namespace import REAL, _call, arrays, host, on, same

import qdarray as qd


def _axis(data: st.DataObject, ndim: int) -> object:
    if ndim == 0:
        return None
    return data.draw(st.none() | st.integers(-ndim, ndim - 1) | st.lists(
        st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all",
                                  "any", "count_nonzero"])
@settings(max_examples=10)
@given(data=st.data())
def test_reductions(device, name, data):
    x = data.draw(arrays(REAL, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                max_side=6)))
    axis = _axis(data, x.ndim)
    keepdims = data.draw(st.booleans())
    if name in ("mean", "var", "std"):
        # The CPU warns about empty means (NumPy's RuntimeWarning); the device does not.
        assume(x.size > 1 and (axis is None or min(
            x.shape[a] for a in (axis if isinstance(axis, tuple) else (axis,))) > 1))
        if x.dtype.kind != "b":  # finite values of moderate size: within float tolerance
            with np.errstate(all="ignore"):
                x = np.where(np.isfinite(x), np.abs(x) % 100, 0).astype(x.dtype)
    want = _call_kw(name, qd.asarray(x), axis=axis, keepdims=keepdims)
    got = _call_kw(name, on(device, x), axis=axis, keepdims=keepdims)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        exact = name in ("max", "min", "all", "any", "count_nonzero") or x.dtype.kind != "f"
        same(got[1], want[1], rtol=0 if exact and name not in ("mean", "var", "std")
             else 1e-5)


def _call_kw(name: str, *args: object, **kwargs: object) -> object:
    try:
        return ("ok", getattr(qd, name)(*args, **kwargs))
    except (TypeError, ValueError, OverflowError) as exc:
        return ("raise", type(exc))


def test_large_float_sum_is_accurate(device):
    x = np.random.default_rng(1).random(1_000_003).astype(np.float32)
    got = float(qd.sum(on(device, x)))
    assert abs(got - x.astype(np.float64).sum()) < 1e-6 * x.size


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.uint64])
def test_argmax_argmin_first_occurrence(device, name, dtype):
    x = np.array([[3, 7, 7, 1], [0, 0, 5, 5], [2, 2, 2, 2]]).astype(dtype)
    if dtype == np.float32:
        x[1, 3] = np.nan
        x[1, 2] = np.nan
    for axis in (None, 0, 1):
        same(getattr(qd, name)(on(device, x), axis=axis),
             getattr(qd, name)(qd.asarray(x), axis=axis))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@settings(max_examples=10)
@given(x=arrays([np.int32, np.uint8, np.float64, np.bool_],
                hnp.array_shapes(min_dims=1, max_dims=2, max_side=700)),
       include=st.booleans(), data=st.data())
def test_scans(device, name, x, include, data):
    axis = data.draw(st.integers(0, x.ndim - 1))
    if name == "cumulative_prod" and x.dtype.kind == "f":
        x = np.clip(x, -1.5, 1.5)
    want = getattr(qd, name)(qd.asarray(x), axis=axis, include_initial=include)
    got = getattr(qd, name)(on(device, x), axis=axis, include_initial=include)
    same(got, want, rtol=1e-9 if x.dtype.kind == "f" else 0)


@settings(max_examples=10)
@given(x=arrays([np.float32, np.int64, np.uint8, np.bool_, np.float64],
                hnp.array_shapes(min_dims=1, max_dims=3, max_side=9)),
       descending=st.booleans(), data=st.data())
def test_sort_and_argsort_are_stable(device, x, descending, data):
    x = x % 4 if x.dtype.kind in "iu" else x  # many ties
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    kw = {"axis": axis, "descending": descending, "stable": True}
    same(qd.sort(on(device, x), **kw), qd.sort(qd.asarray(x), **kw))
    same(qd.argsort(on(device, x), **kw), qd.argsort(qd.asarray(x), **kw))


def test_searchsorted(device):
    s = np.array([0.0, 1.0, 1.0, 2.5, np.nan])
    v = np.array([[-1.0, 1.0], [2.5, 9.0], [np.nan, 1.5]])
    for side in ("left", "right"):
        same(qd.searchsorted(on(device, s), on(device, v), side=side),
             qd.searchsorted(qd.asarray(s), qd.asarray(v), side=side))
    order = np.array([2, 0, 1])
    u = np.array([5, 1, 3])
    same(qd.searchsorted(on(device, u), on(device, v[0].astype(np.int64)),
                         sorter=on(device, order)),
         qd.searchsorted(qd.asarray(u), qd.asarray(v[0].astype(np.int64)),
                         sorter=qd.asarray(order)))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 3), (3,)),
                                    ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((0, 3), (3, 2)),
                                    ((2, 0), (0, 3))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_matmul(device, shapes, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shapes[0]) * 4).astype(dtype)
    b = (rng.standard_normal(shapes[1]) * 4).astype(dtype)
    same(on(device, a) @ on(device, b), qd.asarray(a) @ qd.asarray(b), rtol=1e-5)
    same(on(device, b.T) @ on(device, a.T) if a.ndim == b.ndim == 2 else
         on(device, a) @ on(device, b), qd.asarray(b.T) @ qd.asarray(a.T) if
         a.ndim == b.ndim == 2 else qd.asarray(a) @ qd.asarray(b), rtol=1e-5)


def test_vecdot_and_tensordot(device):
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(4.0)
    same(qd.vecdot(on(device, a), on(device, b)), qd.vecdot(qd.asarray(a), qd.asarray(b)))
    same(qd.tensordot(on(device, a), on(device, a.T), axes=1),
         qd.tensordot(qd.asarray(a), qd.asarray(a.T), axes=1))


def test_linalg_and_fft_compute_on_the_host_and_return_device_arrays(device):
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    got = qd.linalg.inv(on(device, a))
    assert got.device == qd.Device(device)
    same(got, qd.linalg.inv(qd.asarray(a)), rtol=1e-12)
    w = qd.linalg.eigh(on(device, a))
    np.testing.assert_allclose(host(w.eigenvalues), np.linalg.eigvalsh(a))
    x = np.arange(8.0)
    same(qd.fft.rfft(on(device, x)), qd.fft.rfft(qd.asarray(x)), rtol=1e-12)
    info = qd.__array_namespace_info__()
    assert "fft.*" in qd.Device(device).backend.capabilities(qd.Device(device))[
        "host functions"]
    assert info.devices()[1:] and qd.Device(device) in info.devices()


def test_unique_and_nonzero(device):
    x = np.array([[3, 1, 3], [0, 1, 2]])
    same(qd.unique_values(on(device, x)), qd.unique_values(qd.asarray(x)))
    for g, w in zip(qd.nonzero(on(device, x)), qd.nonzero(qd.asarray(x)), strict=True):
        same(g, w)


def test_numpy_unique_flags_run_on_host_copies(device):
    """np.unique's return_* flags have no one namespace function: NumPy runs on a host copy
    and the results come back on the device (docs/numpy.md, the host-export rule)."""
    data = np.array([5, 1, 5, 3, 1, 1])
    x = on(device, data)
    for flags in ({"return_counts": True}, {"return_inverse": True},
                  {"return_index": True, "return_counts": True}):
        got, want = np.unique(x, **flags), np.unique(data, **flags)
        for g, w in zip(got, want, strict=True):
            assert g.device == qd.Device(device)
            assert host(g).tolist() == w.tolist()
    counts = qd.unique_counts(x)  # the namespace function, on the device
    assert host(counts.values).tolist() == [1, 3, 5] and host(counts.counts).tolist() == [3, 1, 2]


def test_empty_inputs(device):
    e = np.zeros((0, 3), np.float32)
    same(qd.sum(on(device, e), axis=0), qd.sum(qd.asarray(e), axis=0))
    same(qd.prod(on(device, e)), qd.prod(qd.asarray(e)))
    with pytest.raises(ValueError, match="empty"):
        qd.max(on(device, e))
    assert _call("sort", on(device, e))[0] == "ok"
