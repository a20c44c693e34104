"""Reordering threads by capacity (ad/transform/reorder.py): where the groups of a packed layout
waste lanes, the reverse runs logical thread order[t] on hardware thread t, with its stacks packed
in that order. Its gradients equal the unreordered reverse's bit for bit (per-thread gradients),
for skewed and uniform workloads, zero-trip threads, thread counts that are not a multiple of
the group, 2-D launches, two dynamic loops and the counting pass; overflows are still
reported; the threshold decides both ways; the order is computed once per sizing and reused
from the sizing cache. Here the launches run on the interpreter and numba with packed layouts
in groups of 32 (the CPU's own targets keep per-worker scratch and never reorder); the OpenCL,
simulated CUDA and Vulkan test sets run the same tests on their devices (`where` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.launch import launch_reverse
from qdarray.ad.sizing import thread_caps
from qdarray.ad.sizing.packed_layout import Packer
from qdarray.ad.transform import reorder
from qdarray.backends.cpu.target import CpuKernels
from qdarray.kernels.interp import InterpTarget
from qdarray.kernels.target import StackLayout, target_of


class Where:
    """Where a test's launches run: a target with grouped packed stacks (`target`) on CPU
    arrays, or a device (`device`) with its own target."""

    def __init__(self, target: Any = None, device: str | None = None) -> None:
        self.target = target
        self.device = device

    def array(self, x: Any, **kw: Any) -> Any:
        return qd.asarray(x, device=self.device, **kw) if self.device else qd.asarray(x, **kw)

    def zeros(self, n: int, dtype: Any) -> Any:
        return self.array(np.zeros(n, dtype), requires_grad=True)

    def reverse(self, kern: Any, *args: Any) -> None:
        if self.device:
            kern.grad(*args)
        else:
            launch_reverse(kern, args, self.target)


def _grouped(base: type) -> Any:
    target = type(f"{base.__name__}Reorder32", (base,), {})()
    target.adstack = StackLayout(group=32)
    return target


@pytest.fixture(scope="module", params=["interp", "cpu"])
def where(request: pytest.FixtureRequest) -> Where:
    return Where(_grouped(InterpTarget if request.param == "interp" else CpuKernels))


@pytest.fixture
def threshold(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Sets reorder.THRESHOLD for one test."""
    yield lambda value: monkeypatch.setattr(reorder, "THRESHOLD", value)


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


@qd.kernel
def halving(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = a[i]
        while k > 0:  # no symbolic bound: per-thread counts from the counting pass
            v = v - 0.1 * v * v + 0.01
            k = k - 1
        y[0] += v


@qd.kernel
def two_loops(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], b: qd.Array[qd.int64, 1],
              y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        w = v * 0.5
        for _ in range(b[i]):
            w = w * 0.9 + 0.05 * v
        y[i] = v + w


@qd.kernel
def grid(x: qd.Array[qd.float32, 2], a: qd.Array[qd.int64, 2], y: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        v = x[i, j]
        for _ in range(a[i, j]):
            v = v - 0.1 * v * v + 0.01
        y[i, j] = v * v


def workload(kind: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 64, n)
    if kind == "skewed":  # 3% of threads loop long, the rest 0..10
        a = rng.integers(0, 11, n)
        a[rng.random(n) < 0.03] = 200
        return a
    assert kind == "zero trips"  # most threads never loop
    a = rng.integers(0, 40, n)
    a[rng.random(n) < 0.7] = 0
    return a


def derivative(xs: np.ndarray, trips: np.ndarray) -> np.ndarray:
    """d v_out / d x of `v = v - 0.1 v^2 + 0.01` run trips[i] times, in float64."""
    out = np.ones(len(xs))
    for i, (v, k) in enumerate(zip(xs.astype(np.float64), trips, strict=True)):
        for _ in range(int(k)):
            out[i] *= 1 - 0.2 * v
            v = v - 0.1 * v * v + 0.01
    return out


def run(where: Where, kern: Any, xs: np.ndarray, trips: list[np.ndarray], out: tuple[int, ...]
        ) -> tuple[np.ndarray, dict[str, Any]]:
    """x.grad of one forward and reverse (y's gradient all ones), and the stats."""
    x = where.array(xs, requires_grad=True)
    bounds = [where.array(t.astype(np.int64)) for t in trips]
    y = where.array(np.zeros(out, np.float32), requires_grad=True)
    kern(x, *bounds, y)
    y.grad[...] = 1.0
    qd.ad.reset_stats()
    where.reverse(kern, x, *bounds, y)
    return np.asarray(x.grad.to_device("cpu")), dict(qd.ad.stats())


def both(where: Where, threshold: Any, kern: Any, xs: np.ndarray, trips: list[np.ndarray],
         out: tuple[int, ...]) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """The gradient reordered (checked equal, bit for bit, to the unreordered one), and both
    runs' stats."""
    threshold(1e18)
    plain, off = run(where, kern, xs, trips, out)
    threshold(1.25)
    got, on = run(where, kern, xs, trips, out)
    assert off["reordered_tasks"] == 0
    assert off["group_efficiency_reordered"] == off["group_efficiency"]
    assert np.array_equal(got, plain)
    return got, on, off


@pytest.mark.parametrize("kind", ["uniform", "skewed", "zero trips"])
@pytest.mark.parametrize("kern", [logistic, halving], ids=["expressions", "counted"])
def test_reordered_gradients_equal_the_unreordered_ones(where, threshold, kind, kern):
    n = 203  # not a multiple of the group
    xs = np.random.default_rng(1).uniform(0.1, 0.9, n).astype(np.float32)
    trips = workload(kind, n)
    got, on, off = both(where, threshold, kern, xs, [trips], (1,))
    assert on["reordered_tasks"] == 1 and on["reorderings"] == 1
    assert on["group_efficiency"] == off["group_efficiency"] < 0.8
    assert on["group_efficiency_reordered"] > on["group_efficiency"]
    assert on["adstack_bytes"] == off["adstack_bytes"] <= 4 * (trips.sum() + n)  # packed
    np.testing.assert_allclose(got, derivative(xs, trips), rtol=2e-4, atol=1e-6)


def test_group_efficiency_of_a_sorted_uniform_workload(where, threshold):
    """Trip counts uniform in [0, 64): a group runs about 62 iterations where its threads
    need 31.5 (efficiency ~0.5); sorted, each group's threads loop about as long (~0.97)."""
    n = 2048
    xs = np.full(n, 0.5, np.float32)
    trips = workload("uniform", n, seed=3)
    _, on, _ = both(where, threshold, logistic, xs, [trips], (1,))
    assert 0.45 < on["group_efficiency"] < 0.6
    assert on["group_efficiency_reordered"] > 0.95


def test_two_dynamic_loops_keyed_by_total_entries(where, threshold):
    n = 150
    rng = np.random.default_rng(4)
    xs = rng.uniform(0.1, 0.9, n).astype(np.float32)
    a, b = rng.integers(0, 30, n), rng.integers(0, 30, n)
    b[::7] = 0
    _, on, _ = both(where, threshold, two_loops, xs, [a, b], (n,))
    assert on["reordered_tasks"] == 1
    assert on["adstack_bytes"] <= 4 * (a.sum() + b.sum() + 2 * n)


def test_a_2d_launch(where, threshold):
    shape = (9, 23)
    rng = np.random.default_rng(5)
    xs = rng.uniform(0.1, 0.9, shape).astype(np.float32)
    trips = rng.integers(0, 40, shape)
    got, on, _ = both(where, threshold, grid, xs, [trips], shape)
    assert on["reordered_tasks"] == 1
    v = xs.astype(np.float64)
    want = 2 * np.ones(shape)
    for i in np.ndindex(*shape):  # d (v_out^2) / d x
        u = v[i]
        for _ in range(int(trips[i])):
            want[i] *= 1 - 0.2 * u
            u = u - 0.1 * u * u + 0.01
        want[i] *= u
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


def test_equal_capacities_and_a_high_threshold_never_reorder(where, threshold):
    n = 100
    xs = np.full(n, 0.5, np.float32)
    threshold(1.0)  # reorder at any waste: equal capacities waste none
    _, stats = run(where, logistic, xs, [np.full(n, 9)], (1,))
    assert stats["reordered_tasks"] == 0 and stats["group_efficiency"] == 1.0
    threshold(3.0)  # a uniform workload wastes half: below this threshold
    _, stats = run(where, logistic, xs, [workload("uniform", n)], (1,))
    assert stats["reordered_tasks"] == 0 and 0.4 < stats["group_efficiency"] < 0.8


def test_the_order_is_reused_from_the_sizing_cache(where, threshold):
    n = 120
    xs = np.random.default_rng(6).uniform(0.1, 0.9, n).astype(np.float32)
    x = where.array(xs, requires_grad=True)
    a = where.array(workload("skewed", n, seed=6).astype(np.int64))
    y = where.array(np.zeros(1, np.float32), requires_grad=True)
    logistic(x, a, y)
    y.grad[...] = 1.0
    qd.ad.reset_stats()
    where.reverse(logistic, x, a, y)
    first = np.asarray(x.grad.to_device("cpu")).copy()
    x.grad[...] = 0.0
    where.reverse(logistic, x, a, y)
    stats = qd.ad.stats()
    assert stats["reorderings"] == 1 and stats["cache_hits"] == 1   # not computed again
    assert stats["reordered_tasks"] == 1
    assert np.array_equal(np.asarray(x.grad.to_device("cpu")), first)
    b = where.array(workload("uniform", n, seed=7).astype(np.int64))  # new bounds: new order
    logistic(x, b, y)
    x.grad[...] = 0.0
    where.reverse(logistic, x, b, y)
    assert qd.ad.stats()["reorderings"] == 2
    np.testing.assert_allclose(np.asarray(x.grad.to_device("cpu")),
                               derivative(xs, workload("uniform", n, seed=7)),
                               rtol=2e-4, atol=1e-6)


@pytest.mark.parametrize("victim", [0, 1], ids=["deepest", "shallow"])
def test_overflow_is_still_detected(where, threshold, monkeypatch, victim):
    """One thread's capacity one short, in a reordered launch: the overflow is reported."""
    n = 64
    trips = np.arange(n) % 13
    trips[5] = 40
    who = [5, 7][victim]
    real = thread_caps.ThreadCaps.source

    def short_caps(self: Any, flat: Any, args: Any, threads: Any, uniform: bool) -> Any:
        per_thread = real(self, flat, args, threads, uniform)

        def get(k: int, m: int) -> Any:
            arr, at = per_thread(k, m)
            caps = np.array(self.buffers.to_host(arr)[at:at + m])
            caps[who] -= 1
            return self.buffers.upload(caps), 0
        return get
    monkeypatch.setattr(thread_caps.ThreadCaps, "source", short_caps)
    threshold(1.25)
    with pytest.raises(qd.ad.AdStackOverflowError, match="depth reached"):
        run(where, logistic, np.full(n, 0.5, np.float32), [trips], (1,))
    assert qd.ad.stats()["reordered_tasks"] == 1


# -- the counting sort ------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [63, 255, 100_000])
def test_the_order_is_a_stable_sort_largest_first(where, largest):
    n = 3000
    rng = np.random.default_rng(largest)
    keys = rng.integers(0, largest + 1, n)
    keys[::5] = 0
    if where.target is not None:
        packer = Packer(where.target, None)
    else:
        device = where.array(np.zeros(1)).device
        packer = Packer(target_of(device), device)
    order = packer.buffers.to_host(reorder.sort(packer, packer.buffers.upload(
        keys.astype(np.int64)), n, largest))[:n]
    assert sorted(order.tolist()) == list(range(n))           # a permutation
    shift = max(largest.bit_length() - 8, 0)                 # exact below 256, else buckets
    w = reorder.WINDOW
    for lo in range(0, n, w):                                 # each window in its place
        part = order[lo:lo + w]
        assert sorted(part.tolist()) == list(range(lo, min(lo + w, n)))
        bins = keys[part] >> shift
        assert np.all(np.diff(bins) <= 0)                     # largest first
        for b in np.unique(bins):                             # stable within a bin
            assert np.all(np.diff(part[bins == b]) > 0)


def test_the_cpu_target_does_not_reorder():
    """Per-worker scratch on the CPU: no groups, nothing reordered."""
    n = 100
    xs = np.full(n, 0.5, np.float32)
    got, stats = run(Where(None), logistic, xs, [workload("skewed", n)], (1,))
    assert stats["reordered_tasks"] == 0 and stats["reorderings"] == 0
    np.testing.assert_allclose(got, derivative(xs, workload("skewed", n)), rtol=2e-4)
