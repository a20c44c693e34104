"""Adstacks: op semantics, overflow detection, the heap pool and allocation failures."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.ad import heaps
from qdarray.ad.heaps import HeapPool
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.cpu.target import TARGET
from qdarray.kernels.ir import Op
from qdarray.kernels.ops import OPS
from qdarray.kernels.ops.adstack import AdStack


@qd.kernel
def logistic(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v * v


LINE = logistic.fn.__code__.co_firstlineno + 3  # the line assigning v


def test_push_top_pop_semantics():
    """A contiguous slice [4, 7): table row [4, 7], lim 0, tail 4, end 7."""
    stack = AdStack(1, "v", qd.float64)
    heap = np.zeros(8)
    overflow = np.zeros(2, np.int64)
    push = OPS[Op.ADSTACK_PUSH].impl
    top = OPS[Op.ADSTACK_TOP].impl
    pop = OPS[Op.ADSTACK_POP].impl
    i64 = np.int64
    table = np.array([4, 7], np.int64)
    where = (table, i64(0), i64(0), i64(0), i64(4), i64(7), i64(0), i64(0), i64(0))
    d = i64(0)
    for v in (1.5, 2.5, 3.5):
        d = push(None, (stack,), heap, *where, overflow, d, np.float64(v))
    assert d == 3 and list(heap[4:7]) == [1.5, 2.5, 3.5]
    assert top(None, (stack,), heap, *where, d) == 3.5
    d = push(None, (stack,), heap, *where, overflow, d, np.float64(9.0))
    d = push(None, (stack,), heap, *where, overflow, d, np.float64(9.0))
    assert d == 5 and heap[7] == 0.0 and list(overflow) == [0, 5]   # nothing written past
    assert top(None, (stack,), heap, *where, d) == 0.0             # heap[0], not past
    assert pop(None, (stack,), d) == 4


def test_push_semantics_in_a_group_row():
    """Two threads of capacities 3 and 1 in one group: row [M=1, T(0)=0, S_0=2, end=4],
    lim 1. Depth 0 holds both threads' entries side by side (0, 1): the run of full depths
    (run 1, width 2, bases 0 and 1); the first-ranked thread keeps depths 1 and 2 at 2, 3;
    the other's depth 1 is an overflow."""
    stack = AdStack(0, "v", qd.float64)
    heap = np.zeros(4)
    overflow = np.zeros(1, np.int64)
    push = OPS[Op.ADSTACK_PUSH].impl
    i64 = np.int64
    table = np.array([1, 0, 2, 4], np.int64)
    first = (table, i64(1), i64(1), i64(0), i64(2 - 1), i64(4), i64(1), i64(0), i64(2))
    second = (table, i64(1), i64(1), i64(1), i64(4 - 1), i64(4), i64(1), i64(1), i64(2))
    d0 = d1 = i64(0)
    for v in (1.0, 2.0, 3.0):
        d0 = push(None, (stack,), heap, *first, overflow, d0, np.float64(v))
    d1 = push(None, (stack,), heap, *second, overflow, d1, np.float64(10.0))
    assert list(heap) == [1.0, 10.0, 2.0, 3.0] and not overflow.any()
    push(None, (stack,), heap, *second, overflow, d1, np.float64(11.0))
    assert list(heap) == [1.0, 10.0, 2.0, 3.0] and list(overflow) == [2]


def test_overflow_is_reported_after_the_launch(grad):
    sizer._TEST_CAPACITY_OVERRIDE = 4
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    a = qd.asarray(np.array([1, 9, 2], np.int32))
    grad.forward(logistic, x, a, y)
    y.grad[...] = 1.0
    with pytest.raises(qd.ad.AdStackOverflowError) as info:
        grad.reverse(logistic, x, a, y)
    msg = str(info.value)
    assert "'v'" in msg and "logistic" in msg and f":{LINE})" in msg
    assert "capacity 4" in msg and "depth reached 10" in msg   # 1 + 9 pushes
    assert isinstance(info.value, RuntimeError)
    assert qd.ad.AdStackOverflowError is qd.AdStackOverflowError


def test_no_overflow_with_computed_capacities(grad):
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    a = qd.asarray(np.array([1, 9, 2], np.int32))
    grad.tape(logistic, y, x, a, y)
    assert np.all(host(x.grad) != 0)


def test_heap_pool_reuses_and_doubles():
    pool = HeapPool()
    first = pool.get(qd.float32, 100, None)
    assert first.size == 100 and first.dtype == np.float32
    assert pool.get(qd.float32, 60, None) is first            # reused
    grown = pool.get(qd.float32, 150, None)
    assert grown.size == 200                                    # doubled
    assert pool.get(qd.float32, 401, None).size == 401          # more than double: exact


def test_heap_pool_falls_back_to_the_exact_size(monkeypatch):
    pool = HeapPool()
    pool.get(qd.float64, 1000, None)
    real_empty = np.empty

    def fake_empty(n, dtype):
        if n > 1500:
            raise MemoryError
        return real_empty(n, dtype)

    monkeypatch.setattr(heaps.np, "empty", fake_empty)
    assert pool.get(qd.float64, 1200, None).size == 1200       # 2000 failed, 1200 did not
    with pytest.raises(MemoryError, match="too big"):
        pool.get(qd.float64, 1600, lambda dtype, size, avail: f"{size} {dtype.name} is too big")


def test_heap_pool_guard_refuses_what_the_host_cannot_give():
    pool = HeapPool()
    pool.available = lambda: 8000
    assert pool.get(qd.float64, 600, None).size == 600
    # doubling would need 1200 x 8 bytes > 8000 (+ the 4800 freed): the exact size instead
    assert pool.get(qd.float64, 700, None).size == 1200
    pool.available = lambda: 3000
    assert pool.get(qd.float64, 1500, None).size == 1500        # with the 9600 bytes freed
    with pytest.raises(MemoryError, match=r"16008 > 15000"):
        pool.get(qd.float64, 2001, lambda d, n, avail: f"{n * d.itemsize} > {avail}")


def test_memory_error_gives_the_formula(grad, monkeypatch):
    def refuse(dtype, size, describe):
        raise MemoryError(describe(dtype, size, None))

    monkeypatch.setattr(heaps.POOL, "get", refuse)
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    a = qd.asarray(np.array([1, 9, 2], np.int32))
    grad.forward(logistic, x, a, y)
    with pytest.raises(MemoryError) as info:
        grad.reverse(logistic, x, a, y)
    msg = str(info.value)
    if grad.backend == "interp":
        # packed: each thread its own capacity, 1 + a[i] entries (2 + 10 + 3)
        assert re.search(r"need 120 bytes of float64 storage: 15 entries \(the capacities of "
                         r"3 threads, each at most 10\) x 8 bytes over 1 stacks", msg), msg
    else:
        # scratch (CPU): each worker a region of (up to 3) lanes x the capacity 10
        workers, lanes = TARGET.adstack.regions(), min(TARGET.adstack.group, 3)
        n = workers * lanes * 10
        assert re.search(rf"need {8 * n} bytes of float64 storage: {n} entries "
                         rf"\({workers} workers' scratch, each the capacity of {lanes} "
                         r"lanes, at most 10\) x 8 bytes over 1 stacks", msg), msg
    assert "Try" in msg
