"""Creation, casts, indexing, views and manipulation on the OpenCL device against the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_namespace import REAL, arrays, host, on, same

import qdarray as qd


def test_creation(device):
    same(qd.zeros((2, 3), dtype=qd.int16, device=device), qd.zeros((2, 3), dtype=qd.int16))
    same(qd.ones(4, device=device), qd.ones(4))
    same(qd.full((2, 2), 7, device=device), qd.full((2, 2), 7))
    same(qd.full(3, True, device=device), qd.full(3, True))
    for args in ((10,), (2, 11, 3), (5, -3, -2)):
        same(qd.arange(*args, device=device), qd.arange(*args))
    same(qd.arange(0.0, 1.0, 0.1, device=device), qd.arange(0.0, 1.0, 0.1))
    same(qd.arange(1, 7, 2, dtype=qd.uint8, device=device), qd.arange(1, 7, 2, dtype=qd.uint8))
    same(qd.linspace(0, 1, 7, device=device), qd.linspace(0, 1, 7), rtol=1e-15)
    same(qd.linspace(-3, 5, 9, dtype=qd.int32, endpoint=False, device=device),
         qd.linspace(-3, 5, 9, dtype=qd.int32, endpoint=False))
    same(qd.eye(3, 5, k=-1, device=device), qd.eye(3, 5, k=-1))
    x = np.arange(24.0).reshape(2, 3, 4)
    same(qd.tril(on(device, x), k=1), qd.tril(qd.asarray(x), k=1))
    same(qd.triu(on(device, x)), qd.triu(qd.asarray(x)))
    g = qd.meshgrid(on(device, np.arange(3)), on(device, np.arange(2.0)))
    w = qd.meshgrid(qd.asarray(np.arange(3)), qd.asarray(np.arange(2.0)))
    for a, b in zip(g, w, strict=True):
        same(a, b)


@settings(max_examples=10)
@given(x=arrays(REAL), target=st.sampled_from(REAL))
def test_astype(device, x, target):
    with np.errstate(all="ignore"):
        finite = x if x.dtype.kind != "f" else np.where(np.isfinite(x), x, 0).astype(x.dtype)
        if np.dtype(target).kind in "iu" and finite.dtype.kind == "f":
            finite = np.clip(finite, 0, 100).astype(x.dtype)  # C leaves overflow undefined
    same(qd.astype(on(device, finite), target), qd.astype(qd.asarray(finite), target))


KEYS = [(1,), (slice(None, None, -1),), (Ellipsis, 0), (slice(1, None, 2), None),
        (-1, slice(None, 2)), (None, Ellipsis, slice(None, None, -2)), (0, 1, 2)]


@pytest.mark.parametrize("key", KEYS)
def test_basic_indexing_views_and_writes(device, key):
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    d, c = on(device, x), qd.asarray(x)
    same(d[key], c[key])
    d[key] = -1
    c[key] = -1
    same(d, c)
    view = d[key]
    if view.ndim:
        view[...] = on(device, np.full(view.shape, 9, np.int32))
        c[key] = 9
        same(d, c)


def test_advanced_indexing(device):
    x = np.arange(24.0).reshape(4, 6)
    d, c = on(device, x), qd.asarray(x)
    i = np.array([3, 0, -1, 0])
    same(d[on(device, i)], c[qd.asarray(i)])
    same(d[:, on(device, i)], c[:, qd.asarray(i)])
    m = x > 10
    same(d[on(device, m)], c[qd.asarray(m)])
    same(d[on(device, m[:, 0])], c[qd.asarray(m[:, 0])])
    same(d[on(device, i), on(device, i)], c[qd.asarray(i), qd.asarray(i)])
    same(d[[True, False, True, True]], c[[True, False, True, True]])
    d[on(device, m)] = 0.0
    c[qd.asarray(m)] = 0.0
    same(d, c)
    with pytest.raises(IndexError, match="out of bounds"):
        d[on(device, np.array([4]))]


def test_take_and_take_along_axis(device):
    x = np.arange(24).reshape(2, 3, 4)
    idx = np.array([2, 0, 2])
    same(qd.take(on(device, x), on(device, idx), axis=1),
         qd.take(qd.asarray(x), qd.asarray(idx), axis=1))
    order = np.argsort(-x, axis=2)
    same(qd.take_along_axis(on(device, x), on(device, order), axis=2),
         qd.take_along_axis(qd.asarray(x), qd.asarray(order), axis=2))


@settings(max_examples=10)
@given(x=arrays([np.float32, np.int64, np.bool_],
                hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)), data=st.data())
def test_views_and_copies(device, x, data):
    d, c = on(device, x), qd.asarray(x)
    perm = tuple(data.draw(st.permutations(range(x.ndim))))
    same(qd.permute_dims(d, perm), qd.permute_dims(c, perm))
    same(qd.reshape(qd.permute_dims(d, perm), (-1,)), qd.reshape(qd.permute_dims(c, perm),
                                                                  (-1,)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    same(qd.flip(d, axis=axis), qd.flip(c, axis=axis))
    same(qd.roll(d, 3, axis=axis), qd.roll(c, 3, axis=axis))
    same(qd.roll(d, -2), qd.roll(c, -2))
    same(qd.expand_dims(d, axis=0), qd.expand_dims(c, axis=0))
    same(qd.concat([d, d[..., ::-1]], axis=axis), qd.concat([c, c[..., ::-1]], axis=axis))
    same(qd.stack([d, d], axis=-1), qd.stack([c, c], axis=-1))
    same(qd.tile(d, (2, 1)), qd.tile(c, (2, 1)))
    same(qd.repeat(d, 2, axis=axis), qd.repeat(c, 2, axis=axis))
    same(qd.broadcast_to(d, (2,) + x.shape), qd.broadcast_to(c, (2,) + x.shape))
    same(qd.moveaxis(d, 0, -1), qd.moveaxis(c, 0, -1))
    if x.dtype.kind != "b":
        same(qd.diff(d, axis=axis), qd.diff(c, axis=axis))


def test_broadcast_views_are_read_only(device):
    b = qd.broadcast_to(on(device, np.arange(3.0)), (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 1.0


def test_reshape_copy_false_of_a_strided_view_raises(device):
    d = on(device, np.arange(12.0).reshape(3, 4)).T
    with pytest.raises(ValueError):
        qd.reshape(d, (12,), copy=False)
    same(qd.reshape(d, (12,)), qd.reshape(qd.asarray(np.arange(12.0).reshape(3, 4)).T, (12,)))


def test_complex_arrays_compute_on_the_host(device):
    z = np.array([1 + 2j, -3j, 0.5], np.complex128)
    d, c = on(device, z), qd.asarray(z)
    same(d * 2 + d, c * 2 + c)
    same(qd.abs(d), qd.abs(c))
    same(qd.sum(d), qd.sum(c))
    same(qd.real(d), qd.real(c))
    assert qd.exp(d).device == qd.Device(device)


def test_transfers_round_trip(device):
    x = np.arange(10.0)
    d = qd.asarray(x, device=device)
    assert d.device == qd.Device(device)
    np.testing.assert_array_equal(np.asarray(d.to_device("cpu")), x)
    np.testing.assert_array_equal(host(d[::-3]), x[::-3])
    assert f"device='{device}" in repr(d)
    assert float(qd.sum(d)) == 45.0 and int(d[3]) == 3 and bool(d[1])
    with pytest.raises(ValueError, match="two devices"):
        d + qd.asarray(x)


@given(x=arrays([np.float32], hnp.array_shapes(min_dims=2, max_dims=3, max_side=4)),
       data=st.data())
def test_reshape_is_a_view_where_numpys_is(device, x, data):
    # NumPy views a reshape of a strided array whenever the merged axes are contiguous; code
    # that writes through one (SciPy's tanhsinh does) needs the same on every device.
    perm = tuple(data.draw(st.permutations(range(x.ndim))))
    a = np.transpose(x, perm)[::-1]
    shape = data.draw(st.sampled_from([(-1,), (a.shape[0], -1), (*a.shape, 1), a.shape[::-1]]))
    try:
        expected = a.reshape(shape, copy=False)
    except ValueError:
        expected = None
    d = qd.permute_dims(on(device, x), perm)[::-1]
    got = qd.reshape(d, shape)
    same(got, qd.asarray(a.reshape(shape)))
    assert (got._buffer is d._buffer) == (expected is not None)
    if expected is not None and got.size:
        got[(0,) * got.ndim] = -5.0
        assert float(d[(0,) * d.ndim]) == -5.0
