"""Checkpointed dynamic loops (ad/transform/checkpoint.py, ad/sizing/checkpoint_stride.py): under a
memory limit (`qd.ad.set_memory_limit`) or the memory guard, a reverse launch keeps every k-th
loop state and recomputes the rest; its gradients equal the stored run's bit for bit, its
adstacks fit the limit, `qd.ad.stats()` reports the stride, and what cannot be
checkpointed raises a MemoryError that says why. The tests taking `grad` run on the
interpreter and numba here, and on OpenCL and CUDA through tests/device_suites.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.ad import heaps


@qd.kernel
def dynamic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


@qd.kernel
def two_states(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
               y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        w = x[i] * 0.5
        for j in range(a[i]):
            v = v - 0.1 * v * v + 0.01
            if v > 0.3:
                w = w * 0.9 + v
            for _ in range(j // 64):  # a nested loop: its stacks hold one block's iterations
                w = w * 0.99 + 0.001 * v
        s = v * w
        for _ in range(a[i] // 2):  # a second checkpointed loop of the same thread
            s = qd.math.sin(s) + 0.5 * w
        y[0] += s + v


@qd.kernel
def later_writes(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                 y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        w = v * 0.5
        for _ in range(a[i]):  # reads w, which the code after the loop assigns
            v = qd.math.sin(v) + 0.3 * w
        w = w * 1.7 + v
        for j in range(a[i] // 3):  # and the next loop too
            w = w * qd.math.cos(v) + 0.01 * j
        y[0] += v + w


@qd.kernel
def halving(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = a[i]
        while k > 0:  # a while loop: its trip count is known only by running it
            v = v - 0.1 * v * v + 0.01
            k = k - 1
        y[0] += v


@pytest.fixture
def limit() -> Iterator[Any]:
    """Sets the memory limit for one test, and removes it after."""
    yield qd.ad.set_memory_limit
    qd.ad.set_memory_limit(None)


def skewed(n: int, long: int, seed: int = 0) -> np.ndarray:
    """A few threads (3%) loop `long` times, the rest 0..3."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    a[rng.random(n) < 0.03] = long
    a[n // 2] = long  # at least one
    return a


def run(grad: Any, kern: Any, xs: np.ndarray, trips: np.ndarray, out: int
        ) -> tuple[np.ndarray, dict[str, int]]:
    """x.grad of one forward and reverse on the tape (y of `out` elements), and the stats."""
    x = qd.asarray(xs, requires_grad=True)
    a = qd.asarray(trips)
    y = qd.zeros(out, dtype=x.dtype, requires_grad=True)
    grad.tape(kern, y, x, a, y)
    return host(x.grad), dict(qd.ad.stats())


def used(stats: dict[str, int]) -> int:
    return stats["adstack_bytes"] + stats["adstack_index_bytes"]


def test_checkpointed_reverse_equals_the_stored_one(grad, limit):
    n = 128
    trips = skewed(n, 1500)
    xs = np.random.default_rng(1).uniform(0.1, 0.9, n).astype(np.float32)
    stored, full = run(grad, dynamic, xs, trips, 1)
    assert full["checkpoint_stride"] == 0
    limit(used(full) // 6)
    got, small = run(grad, dynamic, xs, trips, 1)
    k = small["checkpoint_stride"]
    assert 1 <= k < 1500 and k & (k - 1) == 0                   # a power of two, below the trips
    assert used(small) <= used(full) // 6
    assert np.array_equal(got, stored)                          # bit for bit
    want = np.ones(n)                                           # d y / d x, in float64
    for i in range(n):
        v = float(xs[i])
        for _ in range(int(trips[i])):
            want[i] *= 1 - 0.2 * v
            v = v - 0.1 * v * v + 0.01
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("fraction", [0.8, 0.66])
def test_several_states_nested_and_consecutive_loops(grad, limit, fraction):
    n = 64
    trips = np.random.default_rng(2).integers(0, 4, n).astype(np.int32)
    trips[[3, 40]] = 300
    xs = np.random.default_rng(3).uniform(0.2, 0.8, n)
    stored, full = run(grad, two_states, xs, trips, 1)
    limit(int(used(full) * fraction))
    got, small = run(grad, two_states, xs, trips, 1)
    assert small["checkpoint_stride"] >= 1 and used(small) <= used(full) * fraction
    assert np.array_equal(got, stored)


def test_a_loop_reading_a_local_assigned_after_it(grad, limit):
    # The reverse recomputes a block of the first loop after the code that follows the loop
    # has been reversed: w must be the value the loop read, not the one assigned later.
    n = 64
    trips = np.random.default_rng(6).integers(0, 6, n).astype(np.int32)
    trips[[5, 33]] = 400
    xs = np.random.default_rng(7).uniform(0.2, 0.8, n)
    stored, full = run(grad, later_writes, xs, trips, 1)
    limit(used(full) // 2)
    got, small = run(grad, later_writes, xs, trips, 1)
    assert small["checkpoint_stride"] >= 1 and used(small) <= used(full) // 2
    assert np.array_equal(got, stored)
    h = 1e-6  # and the stored run is right: central differences of the forward
    for i in (0, 5, 33):
        ys = []
        for step in (h, -h):
            xp = xs.copy()
            xp[i] += step
            y = qd.zeros(1, dtype=qd.float64)
            later_writes(qd.asarray(xp), qd.asarray(trips), y)
            ys.append(float(host(y)[0]))
        assert stored[i] == pytest.approx((ys[0] - ys[1]) / (2 * h), rel=1e-6)


def test_the_memory_guard_checkpoints_without_a_limit(monkeypatch):
    """No user limit: the device's free memory (the heap pool's `available`) decides."""
    n = 200
    trips = skewed(n, 2000)
    xs = np.random.default_rng(4).uniform(0.1, 0.9, n).astype(np.float32)
    pool = heaps.POOL
    pool.clear()
    stored, full = run(_Cpu(), dynamic, xs, trips, 1)
    pool.clear()
    monkeypatch.setattr(pool, "available", lambda: used(full) // 4)
    got, small = run(_Cpu(), dynamic, xs, trips, 1)
    assert small["checkpoint_stride"] >= 1 and used(small) <= used(full) // 4
    assert np.array_equal(got, stored)
    pool.clear()


class _Cpu:
    def tape(self, kern: Any, loss: Any, *args: Any) -> None:
        with qd.ad.Tape(loss=loss):
            kern(*args)


def test_repeated_launches_keep_the_stride_and_a_larger_limit_drops_it(limit):
    n = 100
    trips = skewed(n, 1000)
    xs = np.full(n, 0.5, np.float32)
    stored, full = run(_Cpu(), dynamic, xs, trips, 1)
    limit(used(full) // 4)
    first, s1 = run(_Cpu(), dynamic, xs, trips, 1)
    second, s2 = run(_Cpu(), dynamic, xs, trips, 1)
    assert s1["checkpoint_stride"] == s2["checkpoint_stride"] >= 1
    assert np.array_equal(first, stored) and np.array_equal(second, stored)
    limit(used(full) * 2)
    third, s3 = run(_Cpu(), dynamic, xs, trips, 1)
    assert s3["checkpoint_stride"] == 0 and np.array_equal(third, stored)


def test_what_cannot_be_checkpointed_raises_memory_error(limit):
    n = 50
    trips = np.full(n, 400)
    xs = np.full(n, 0.5, np.float32)
    limit(64)
    with pytest.raises(MemoryError, match=r"kernel 'halving' need \d+ bytes, more than the "
                       r"limit of 64 bytes .*no dynamic loop whose states could be"):
        run(_Cpu(), halving, xs, trips, 1)
    with pytest.raises(MemoryError, match=r"kernel 'dynamic' .*keeping every \d+-th loop "
                       r"state, the least it can take, still needs \d+ bytes. Try a larger"):
        run(_Cpu(), dynamic, xs, trips, 1)


def test_set_memory_limit_checks_its_argument(limit):
    with pytest.raises(TypeError, match="an int.*got 1.5"):
        qd.ad.set_memory_limit(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got True"):
        qd.ad.set_memory_limit(True)
    with pytest.raises(ValueError, match="positive number of bytes; got 0"):
        qd.ad.set_memory_limit(0)
    with pytest.raises(TypeError, match="got np.True_"):
        qd.ad.set_memory_limit(np.True_)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive number of bytes; got -8"):
        qd.ad.set_memory_limit(np.int64(-8))  # type: ignore[arg-type]
    qd.ad.set_memory_limit(np.int64(4096))  # type: ignore[arg-type]  # NumPy integers count
    assert qd.ad.memory_limit() == 4096 and type(qd.ad.memory_limit()) is int
    qd.ad.set_memory_limit(1 << 20)
    assert qd.ad.memory_limit() == 1 << 20
    qd.ad.set_memory_limit(None)
    assert qd.ad.memory_limit() is None
