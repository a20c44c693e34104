"""Stack sizing at the limits (issue 18): a symbolic bound far above what fits is sized
exactly by the counting pass; bounds near 2**63 never wrap into small capacities; the memory
guard adds up every dtype's heap.

Oracles: closed-form gradients of the iterations that ran, and the guard's arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad import heaps
from qdarray.ad.launch import prepare_reverse

INT64_MAX = (1 << 63) - 1


@qd.kernel
def converge(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1], max_iter: int):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(max_iter):
            v = v * (1.0 - v)
            if v < 0.2:
                break
        y[i] += v


@qd.kernel
def converge_bounds(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int64, 1],
                    y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * (1.0 - v)
            if v < 0.2:
                break
        y[i] += v


@qd.kernel
def converge_nested(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1], n: int):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(n):
            for _ in range(n):
                v = v * (1.0 - v)
                if v < 0.2:
                    break
            if v < 0.2:
                break
        y[i] += v


def _reference(x0: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y and dy/dx of v -> v (1 - v) until v < 0.2 or the bound is reached."""
    ys, gs = [], []
    for v, n in zip(x0, bounds, strict=True):
        d = 1.0
        for _ in range(min(int(n), 100)):
            d *= 1.0 - 2.0 * v
            v = v * (1.0 - v)
            if v < 0.2:
                break
        ys.append(v)
        gs.append(d)
    return np.array(ys), np.array(gs)


def _grads(kern, x0: np.ndarray, bound, *, bound_first: bool = False):
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(x0.size, dtype=qd.float64, requires_grad=True)
    args = (x, bound, y) if bound_first else (x, y, bound)
    kern(*args)
    y.grad[...] = 1.0
    kern.grad(*args)
    return np.asarray(y), np.asarray(x.grad)


def test_a_huge_iteration_cap_with_an_early_break_is_sized_by_counting():
    n = 100_000
    x0 = np.linspace(0.3, 0.6, n)
    before = qd.ad.stats()["counting_passes"]
    y, g = _grads(converge, x0, 1_000_000)  # symbolically 1e5 x 1e6 x 9 bytes: no
    assert qd.ad.stats()["counting_passes"] == before + 1
    ry, rg = _reference(x0, np.full(n, 1_000_000))
    np.testing.assert_allclose(y, ry, rtol=1e-13)
    # the reverse factors its adjoint products (reassociation: last bits)
    np.testing.assert_allclose(g, rg, rtol=1e-10)


@pytest.mark.parametrize("case", ["scalar", "array", "nested"])
def test_bounds_near_two_to_the_63_give_the_gradients_of_the_iterations_that_ran(case):
    x0 = np.array([0.45, 0.3, 0.55, 0.4])
    if case == "scalar":
        y, g = _grads(converge, x0, INT64_MAX)
        bounds = np.full(4, INT64_MAX)
    elif case == "array":
        bounds = np.array([1, 2, INT64_MAX, 3], np.int64)
        y, g = _grads(converge_bounds, x0, qd.asarray(bounds), bound_first=True)
    else:
        y, g = _grads(converge_nested, x0, 1 << 40)  # n * n is above 2**63
        bounds = np.full(4, INT64_MAX)
    ry, rg = _reference(x0, bounds)
    np.testing.assert_allclose(y, ry, rtol=1e-13)
    np.testing.assert_allclose(g, rg, rtol=1e-10)


def test_the_reducer_does_not_wrap_a_bound_of_int64_max():
    a = qd.asarray(np.array([1, 2, INT64_MAX, 3], np.int64))
    x = qd.asarray(np.full(4, 0.45), requires_grad=True)
    y = qd.zeros(4, dtype=qd.float64, requires_grad=True)
    launcher = prepare_reverse(converge_bounds, (x, a, y), None, False)
    # 1 + (2**63 - 1) would wrap to -2**63 in int64
    assert any("1 + max(a[" in str(e) for e in launcher.plan.exprs)
    before = qd.ad.stats()["counting_passes"]
    launcher.size((x, a, y))
    assert qd.ad.stats()["counting_passes"] == before + 1  # not a wrapped small capacity


@qd.kernel
def two_stacks(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = 1
        if v > 0.0:
            for _ in range(a[i]):  # in a branch: not checkpointed, so the guard raises
                v = v * (1.0 - v) * qd.float64(k)
                k = k * 3 % 7
        y[i] += v


def test_the_memory_guard_adds_up_the_heaps_of_every_dtype(monkeypatch):
    n, depth = 1000, 50
    x = qd.asarray(np.full(n, 0.3), requires_grad=True)
    a = qd.asarray(np.full(n, depth, np.int32))
    y = qd.zeros(n, dtype=qd.float64, requires_grad=True)
    launcher = prepare_reverse(two_stacks, (x, a, y), None, False)
    dtypes = {s.desc.dtype for s in launcher.plan.stacks}
    assert len(dtypes) == 2, "the kernel should stack a float64 and an integer local"
    # the heaps this launch takes (on the CPU: per-worker scratch; on a GPU: the packed tape)
    _, packed, _ = launcher.prepare((x, a, y), (x, a, y), None)
    per_dtype = {d: n_ * d.itemsize for d, n_ in packed.sizes.items() if n_}
    total = sum(per_dtype.values())
    available = max(per_dtype.values()) + 1  # each heap fits alone, both do not
    assert available < total
    monkeypatch.setattr(heaps.POOL, "buffers", {})
    monkeypatch.setattr(heaps.POOL, "available", lambda: available)
    two_stacks(x, a, y)
    y.grad[...] = 1.0
    with pytest.raises(MemoryError, match=f"need {total} bytes in all"):
        two_stacks.grad(x, a, y)
