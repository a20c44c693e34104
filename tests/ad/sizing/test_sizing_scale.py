"""Sizing at scale: launches beyond 2**24 threads, int64 bounds above 2**31, and the memory
guard's figures (nothing that large is allocated)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.ad import heaps
from qdarray.ad.launch import prepare_reverse
from qdarray.backends.cpu.target import TARGET
from qdarray.kernels.interp import INTERP


@qd.kernel
def square_steps(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int8, 1],
                 y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * v * 0.5 + 0.25
        y[i] = v


@qd.kernel
def long_loops(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int64, 1],
               y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = qd.math.sin(v)
        y[i] = v


@pytest.mark.slow
def test_more_than_2_24_threads_get_right_gradients():
    n = (1 << 24) + 5
    rng = np.random.default_rng(0)
    a_np = rng.integers(0, 3, n).astype(np.int8)
    a_np[-1] = 2
    x_np = rng.uniform(0.0, 1.0, n).astype(np.float32)
    x = qd.asarray(x_np, requires_grad=True)
    a = qd.asarray(a_np)
    y = qd.zeros(n, dtype=qd.float32, requires_grad=True)
    before = qd.ad.stats()
    square_steps(x, a, y)
    y.grad[...] = 1.0
    square_steps.grad(x, a, y)
    after = qd.ad.stats()
    assert after["max_reducer_dispatches"] == before["max_reducer_dispatches"] + 1
    assert after["counting_passes"] == before["counting_passes"]
    v = x_np.astype(np.float64)
    d = np.ones(n)
    for k in range(2):                     # d/dx of v -> v*v/2 + 1/4, a[i] times
        step = a_np > k
        d = np.where(step, d * v, d)
        v = np.where(step, v * v * 0.5 + 0.25, v)
    np.testing.assert_allclose(host(x.grad), d, rtol=1e-5, atol=1e-6)


def test_int64_bounds_above_2_31_are_sized_exactly():
    big = (1 << 31) + 5
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    a = qd.asarray(np.array([3, big, 7]))
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    for target in (INTERP, qd.Device("cpu").backend.target):
        launcher = prepare_reverse(long_loops, (x, a, y), target, False)
        assert launcher.sizer.size([x, a, y], (x, a, y)) == ([1 + big], [3])
    huge = qd.asarray(np.array([1 << 40, 1 << 62, 5]))
    launcher = prepare_reverse(long_loops, (x, huge, y), None, False)
    assert launcher.sizer.size([x, huge, y], (x, huge, y)) == ([1 + (1 << 62)], [3])


@qd.kernel
def long_branch(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int64, 1],
                y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 0.0:
            # in a branch: not checkpointed (tests/ad/transform/test_checkpoint.py)
            for _ in range(a[i]):
                v = qd.math.sin(v)
        y[i] = v


def test_the_memory_guard_gives_the_figures(monkeypatch):
    """A launch the device cannot hold and checkpointing cannot shrink (a loop in a branch)
    raises a MemoryError with the figures (a loop it can checkpoint is checkpointed:
    tests/ad/transform/test_checkpoint.py)."""
    big = (1 << 31) + 5
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    a = qd.asarray(np.array([3, big, 7]))
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    monkeypatch.setattr(heaps.POOL, "available", lambda: 1 << 30)
    before = dict(heaps.POOL.buffers)
    long_branch(x, qd.asarray(np.array([3, 1, 7])), y)
    with pytest.raises(MemoryError) as info:
        long_branch.grad(x, a, y)
    msg = str(info.value)
    # scratch (the CPU's layout): each worker's region holds (up to 3) lanes x the capacity
    workers, lanes = TARGET.adstack.regions(), min(TARGET.adstack.group, 3)
    entries = workers * lanes * (big + 1)
    assert (f"need {entries * 8} bytes of float64 storage: {entries} entries ({workers} "
            f"workers' scratch, each the capacity of {lanes} lanes, at most {big + 1}) x 8 "
            "bytes over 1 stacks") in msg
    assert "the device can give about" in msg and "Try" in msg
    for dtype, buf in heaps.POOL.buffers.items():      # nothing that size was allocated
        assert buf.nbytes < entries * 8 and (dtype not in before or buf is before[dtype])
    assert np.all(host(x.grad) == 0)
