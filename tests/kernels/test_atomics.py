"""Atomics under contention: exact integer sums, tickets, histograms, min/max, old values."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.cpu.target import PARALLEL_MIN


@pytest.fixture
def n(backend: str) -> int:
    # the CPU runs 100k threads (the parallel path); the interpreter a smaller launch
    return 100_000 if backend == "cpu" else 3_000


@qd.kernel
def contend(x: qd.Array, total: qd.Array):
    for i in range(x.shape[0]):
        total[0] += x[i]
        total[1] -= x[i]
        qd.atomic_add(total, 2, x[i] * 2)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint32, np.float64, np.float32])
def test_one_element_under_contention(launch, n, dtype):
    assert n < PARALLEL_MIN or n >= 3 * PARALLEL_MIN
    x = (np.arange(n) % 7).astype(dtype)
    total = np.zeros(3, dtype)
    launch(contend, x, total)
    s = int(x.astype(np.int64).sum())
    with np.errstate(over="ignore"):
        want = np.array([s, -s, 2 * s]).astype(np.int64).astype(dtype)
    np.testing.assert_array_equal(total, want)


@qd.kernel
def tickets(counter: qd.Array[qd.int64, 1], slots: qd.Array[qd.int64, 1]):
    for i in range(slots.shape[0]):
        t = qd.atomic_add(counter[0], 1)
        slots[t] = i


def test_atomic_add_returns_distinct_old_values(launch, n):
    counter = np.zeros(1, np.int64)
    slots = np.full(n, -1, np.int64)
    launch(tickets, counter, slots)
    assert counter[0] == n
    np.testing.assert_array_equal(np.sort(slots), np.arange(n))


@qd.kernel
def histogram(x: qd.Array[qd.int32, 1], bins: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        bins[x[i] % bins.shape[0]] += 1


def test_histogram(launch, n):
    x = np.random.default_rng(3).integers(0, 1000, n).astype(np.int32)
    bins = np.zeros(17, np.int64)
    launch(histogram, x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x % 17, minlength=17))


@qd.kernel
def extremes(x: qd.Array, lo: qd.Array, hi: qd.Array, olds: qd.Array):
    for i in range(x.shape[0]):
        qd.atomic_min(lo[0], x[i])
        olds[i] = qd.atomic_max(hi, 0, x[i])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint64])
def test_min_max(launch, n, dtype):
    rng = np.random.default_rng(5)
    x = (rng.permutation(n) + 5).astype(dtype)
    lo = np.array([np.iinfo(dtype).max if np.dtype(dtype).kind in "iu" else np.inf], dtype)
    hi = np.zeros(1, dtype)
    olds = np.zeros(n, dtype)
    launch(extremes, x, lo, hi, olds)
    assert lo[0] == x.min() and hi[0] == x.max()
    assert (olds <= x.max()).all() and (olds[x == x.max()] < x.max()).all()


@qd.kernel
def raise_and_lower(x: qd.Array, hi: qd.Array, lo: qd.Array, up: qd.Array, down: qd.Array):
    for i in range(x.shape[0]):
        up[i] = qd.atomic_max(hi[0], x[i])
        down[i] = qd.atomic_min(lo[0], x[i])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_min_max_return_the_value_they_replaced(launch, n, dtype):
    """Under contention on one element, the stores of atomic_max form a rising chain from
    the initial value to the maximum; each storing thread must be told the value it
    replaced, so the old values of the storing threads are the initial value and every
    stored value but the last, each once (a value read before a retry would repeat one).
    The same for atomic_min, falling."""
    x = (np.random.default_rng(11).permutation(n) + 5).astype(dtype)
    hi, lo = np.array([2], dtype), np.array([n + 9], dtype)
    up, down = np.zeros(n, dtype), np.zeros(n, dtype)
    launch(raise_and_lower, x, hi, lo, up, down)
    assert hi[0] == x.max() and lo[0] == x.min()
    for told, initial, final, stored in ((up, 2, hi[0], up < x), (down, n + 9, lo[0], down > x)):
        chain = np.sort(np.concatenate([[initial], x[stored]]).astype(dtype))
        chain = chain[:-1] if initial < final else chain[1:]
        np.testing.assert_array_equal(np.sort(told[stored]), chain)
        assert final in x[stored]
    assert (up[up >= x] >= x[up >= x]).all() and (down[down <= x] <= x[down <= x]).all()


def test_nan_never_wins_min_max(launch):
    x = np.array([3.0, np.nan, 7.0, np.nan, -1.0])
    lo = np.array([5.0])
    hi = np.array([np.nan])
    olds = np.zeros(5)
    launch(extremes, x, lo, hi, olds)
    assert lo[0] == -1.0
    assert np.isnan(hi[0])  # a NaN element is never replaced (nothing compares greater)


@qd.kernel
def grid_sum(a: qd.Array[qd.float64, 2], rows: qd.Array[qd.float64, 1],
             total: qd.Array[qd.float64, 0]):
    for i, j in qd.ndrange(a.shape[0], a.shape[1]):
        rows[i] += a[i, j]
        total[()] += a[i, j]


def test_multidimensional_atomics(launch, backend):
    a = np.arange(300 * (400 if backend == "cpu" else 7), dtype=np.float64).reshape(300, -1)
    rows = np.zeros(300)
    total = np.zeros(())
    launch(grid_sum, a, rows, total)
    np.testing.assert_array_equal(rows, a.sum(axis=1))
    assert total[()] == a.sum()
