"""Atomics into one element privatized per chunk of threads (codegen/numba/privatize.py): which
updates qualify, and that the results stay right (float sums to rounding, integer sums, minima
and maxima exactly, -0.0, NaN and debug mode included), serial launches in the interpreter's
order, parallel ones the same for any number of threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.cpu import target as cpu_kernels

BIG = cpu_kernels.PARALLEL_MIN * 3 + 7  # runs the parallel entry, in uneven chunks


@qd.kernel
def total(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i]


@qd.kernel
def two_sums(x: qd.Array[qd.float64, 1], j: qd.int64, y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[j] += x[i]
        y[1] += x[i] * x[i]


@qd.kernel
def int_total(x: qd.Array[qd.int32, 1], y: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i]


@qd.kernel
def reads_target(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i] + y[1]


@qd.kernel
def histogram(x: qd.Array[qd.int32, 1], bins: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        bins[x[i] % bins.shape[0]] += 1


@qd.kernel
def uses_old(x: qd.Array[qd.int64, 1], y: qd.Array[qd.int64, 1], out: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        out[i] = qd.atomic_add(y, 0, x[i])


@qd.kernel
def extremes(x: qd.Array[qd.float32, 1], hi: qd.Array[qd.float32, 1],
             lo: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        qd.atomic_max(hi, 0, x[i])
        qd.atomic_min(lo, 0, qd.cast(x[i] * 1000.0, qd.int64))


def _private(kernel, *args) -> bool:
    return "_acc0_0" in kernel.generated_source(*args)


def test_which_updates_are_privatized():
    f32, i32 = np.zeros(4, np.float32), np.zeros(4, np.int32)
    assert _private(total, f32, f32)
    assert _private(two_sums, np.zeros(4), 0, np.zeros(2))
    assert _private(int_total, i32, i32)
    assert _private(extremes, f32, f32, np.zeros(1, np.int64))
    assert not _private(reads_target, f32, f32)  # y is also read: stays atomic
    assert not _private(histogram, i32, np.zeros(4, np.int64))  # the element varies
    i64 = np.zeros(4, np.int64)
    assert not _private(uses_old, i64, i64, i64)  # the old value is used


@pytest.mark.parametrize("n", [0, 5, BIG])
def test_float_sum(n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    y = np.full(1, 0.5, np.float32)
    total(x, y)
    np.testing.assert_allclose(y[0], 0.5 + x.astype(np.float64).sum(), rtol=1e-5)


def test_two_sums_into_one_array_at_a_scalar_index():
    x = np.random.default_rng(1).standard_normal(BIG)
    y = np.zeros(3)
    two_sums(x, 2, y)
    np.testing.assert_allclose(y, [0.0, (x * x).sum(), x.sum()], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("n", [7, BIG])
def test_integer_sums_wrap_exactly(n):
    x = np.full(n, 2**30 + 3, np.int32)
    y = np.array([-5], np.int32)
    int_total(x, y)
    want = (np.int64(-5) + np.int64(n) * (2**30 + 3) + 2**31) % 2**32 - 2**31
    assert y[0] == want


@pytest.mark.parametrize("n", [0, 3, BIG])
def test_negative_zero_survives(n):
    x = np.full(n, -0.0, np.float32)
    y = np.array([-0.0], np.float32)
    total(x, y)
    assert y[0] == 0 and np.signbit(y[0])


def test_serial_launches_add_in_the_interpreters_order():
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32) * 1e3
    y1 = np.array([1e4], np.float32)
    y2 = y1.copy()
    total(x, y1)
    total.interpret(x, y2)
    assert y1[0] == y2[0]


def test_parallel_sums_do_not_depend_on_the_thread_count():
    x = np.random.default_rng(3).standard_normal(BIG).astype(np.float32)
    results = []
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            y = np.zeros(1, np.float32)
            total(x, y)
            results.append(y[0])
    finally:
        numba.set_num_threads(before)
    assert len(set(results)) == 1
    np.testing.assert_allclose(results[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)


def test_unprivatized_updates_still_add_up():
    x = np.arange(BIG, dtype=np.int32)
    bins = np.zeros(8, np.int64)
    histogram(x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x % 8, minlength=8))
    y = np.array([0.0, 2.0], np.float32)
    reads_target(np.ones(BIG, np.float32), y)
    np.testing.assert_allclose(y[0], 3.0 * BIG, rtol=1e-5)


def test_debug_mode_sums_the_threads_that_passed_their_checks():
    x = np.ones(BIG, np.float32)
    y = np.zeros(1, np.float32)
    qd.set_debug(True)
    try:
        total(x, y)
        assert y[0] == BIG
        with pytest.raises(qd.KernelIndexError):
            total(x, np.zeros(0, np.float32))
    finally:
        qd.set_debug(False)


@pytest.mark.parametrize("n", [0, 9, BIG])
def test_minima_and_maxima(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    hi = np.array([-5.0], np.float32)
    lo = np.array([7], np.int64)
    extremes(x, hi, lo)
    assert hi[0] == max(-5.0, x.max(initial=-np.inf))
    assert lo[0] == min(7, (x * np.float32(1000.0)).astype(np.int64).min(initial=7))


def test_a_nan_never_wins_a_maximum():
    x = np.full(BIG, np.nan, np.float32)
    x[123] = 2.5
    hi = np.array([1.0], np.float32)
    extremes(x, hi, np.zeros(1, np.int64))
    assert hi[0] == 2.5
