"""The launch path on Vulkan: descriptor sets written once per list of buffers and kept,
bindings not repeated within a batch, the cache emptied when the pool destroys buffers, and
results that stay right through all of it."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _descriptors, _instance, _memory, _stream


@qd.kernel
def axpy(s: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = s * x[i] + y[i]


@qd.kernel
def scale(s: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = s * y[i]


def _arrays(device: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, qd.Array, qd.Array]:
    rng = np.random.default_rng(seed)
    hx, hy = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return hx, hy, qd.asarray(hx, device=device, copy=True), qd.asarray(hy, device=device,
                                                                         copy=True)


def test_a_launch_on_arrays_seen_before_writes_no_descriptor_set(device):
    s = _stream.stream(_instance.state(0))
    hx, hy, x, y = _arrays(device, 100, 0)
    axpy(2.0, x, y)
    scale(0.5, x, y)  # another kernel: a set of its own (its carry and error record too)
    written = s.descriptors.written
    for _ in range(5):
        axpy(2.0, x, y)
        scale(0.5, x, y)
    assert s.descriptors.written == written
    want = hy.copy()
    for _ in range(6):
        want = np.float32(0.5) * (np.float32(2.0) * hx + want)
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)
    _, _, x2, y2 = _arrays(device, 100, 1)
    axpy(2.0, x2, y2)  # other buffers: a set of their own
    assert s.descriptors.written == written + 1


def test_views_of_one_buffer_share_its_set_and_get_their_own_offsets(device):
    s = _stream.stream(_instance.state(0))
    hx, hy, x, y = _arrays(device, 64, 2)
    axpy(1.0, x[:32], y[:32])
    written = s.descriptors.written
    axpy(3.0, x[32:], y[32:])
    axpy(-1.0, x[::2], y[1::2])
    assert s.descriptors.written == written
    want = hy.copy()
    want[:32] += hx[:32]
    want[32:] += np.float32(3.0) * hx[32:]
    want[1::2] += np.float32(-1.0) * hx[::2]
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)


def test_releasing_the_pools_buffers_forgets_their_sets(device):
    st = _instance.state(0)
    s = _stream.stream(st)
    hx, hy, x, y = _arrays(device, 50, 3)
    axpy(1.0, x, y)
    del x, y
    s.finish()
    _memory.pool(st).release_cached()  # destroys kept buffers: no set may name them
    assert not s.descriptors.sets
    hx2, hy2, x2, y2 = _arrays(device, 50, 4)
    axpy(1.0, x2, y2)
    np.testing.assert_allclose(y2.to_device("cpu"), hy2 + hx2, rtol=1e-6)


@pytest.mark.parametrize("queued", [False, True])
def test_a_full_cache_starts_over_and_its_pools_outlive_queued_work(device, monkeypatch,
                                                                    queued):
    st = _instance.state(0)
    s = _stream.stream(st)
    s.finish()
    monkeypatch.setattr(_descriptors, "CAPACITY", 3)
    monkeypatch.setattr(_descriptors, "SETS_PER_POOL", 2)
    pairs = [_arrays(device, 40, 10 + k) for k in range(8)]
    for _, _, x, y in pairs:
        axpy(2.0, x, y)
        if not queued:
            s.finish()
    assert len(s.descriptors.sets) <= 3
    for hx, hy, _, y in pairs:
        np.testing.assert_allclose(y.to_device("cpu"), np.float32(2.0) * hx + hy, rtol=1e-6)
    assert not any(b.pools for b in s.in_flight)  # all destroyed once their work ran


@pytest.mark.parametrize("spin", [0.0, 1.0], ids=["block-at-once", "poll-then-block"])
def test_waits_that_poll_the_fence_first_see_every_result(device, monkeypatch, spin):
    # On a GPU a wait polls the batch's fence for up to SPIN_SECONDS before blocking (on a
    # CPU implementation it blocks at once); the device is taken for a GPU here, so both
    # ways of waiting run, with polls that outlast the work (1 s) and none at all.
    st = _instance.state(qd.Device(device).index)
    monkeypatch.setitem(_instance.TYPE_NAMES, st.type, "discrete GPU")
    monkeypatch.setattr(_stream, "SPIN_SECONDS", spin)
    hx, hy, x, y = _arrays(device, 200_000, 3)
    s = _stream.stream(st)
    s.finish()
    waits, blocked = s.waits, s.blocked
    for _ in range(3):
        axpy(np.float32(2.0), x, y)
        hy = np.float32(2.0) * hx + hy
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), hy)
    assert s.waits >= waits + 3  # one wait per read at least
    # No poll: every wait blocks; a poll that outlasts the work: none does.
    assert s.blocked - blocked == (s.waits - waits if spin == 0.0 else 0)
