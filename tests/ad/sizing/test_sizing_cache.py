"""The sizing cache (dispatch counts through every kind of write) and the detection of a
loop-bound array changed between a forward launch and its reverse."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd


@qd.kernel
def compute(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(a.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * v * 0.5 + 0.5
        y[0] += v


@qd.kernel
def fill(a: qd.Array[qd.int32, 1], value: qd.int32):
    for i in range(a.shape[0]):
        a[i] = value + i % 2


@qd.kernel
def rounds(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], m: qd.Array[qd.int64, 1],
           y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            for j in range(m.shape[0]):
                for _ in range(m[j]):
                    v = qd.math.sin(v) + 0.5
        y[i] = v


@qd.kernel
def indirect(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], p: qd.Array[qd.int64, 1],
             y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[p[i]]):
            v = v * v * 0.5 + 0.5
        y[i] = v


@dataclass(frozen=True)
class Bounded:
    x: qd.Array
    n: qd.Array


@qd.kernel
def in_struct(p: Bounded, y: qd.Array[qd.float64, 1]):
    for i in range(p.x.shape[0]):
        v = p.x[i]
        for _ in range(p.n[i]):
            v = qd.math.cos(v)
        y[i] = v


def operands(a_values, n=None):
    a_np = np.asarray(a_values, np.int32)
    n = a_np.size if n is None else n
    x = qd.asarray(np.full(n, 0.5, np.float32), requires_grad=True)
    a = qd.asarray(a_np.copy())
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    y.grad[...] = 1.0
    return x, a, y


class Counter:
    """Differences of qd.ad.stats() since the last call."""

    def __init__(self) -> None:
        self.last = qd.ad.stats()

    def __call__(self, key: str = "max_reducer_dispatches") -> int:
        now = qd.ad.stats()
        diff = now[key] - self.last[key]
        self.last = now
        return diff


def round_trip(x, a, y, backend):
    if backend == "interp":
        compute.interpret(x, a, y)
        compute.grad.interpret(x, a, y)
    else:
        compute(x, a, y)
        compute.grad(x, a, y)


def test_stats_and_reset():
    qd.ad.reset_stats()
    got = qd.ad.stats()
    assert set(got) == {"max_reducer_dispatches", "counting_passes", "cache_hits",
                        "fresh_sizings", "adstack_bytes", "adstack_index_bytes",
                        "checkpoint_stride", "adstack_position_bits", "reorderings",
                        "reordered_tasks", "group_efficiency", "group_efficiency_reordered",
                        "tape_operations", "tape_kernel_launches", "tape_bytes_held",
                        "tape_snapshot_bytes"}
    assert all(v == 0 for k, v in got.items() if k != "tape_bytes_held")
    x, a, y = operands([1, 2, 3])
    compute(x, a, y)
    compute.grad(x, a, y)
    compute.grad(x, a, y)
    got = qd.ad.stats()
    assert got["max_reducer_dispatches"] == 1 and got["fresh_sizings"] == 1
    assert got["cache_hits"] == 1 and got["counting_passes"] == 0


def test_one_dispatch_then_none_while_bounds_are_unchanged(backend):
    x, a, y = operands([3, 0, 7, 2, 5])
    count = Counter()
    round_trip(x, a, y, backend)
    assert count() == 1
    for _ in range(3):
        round_trip(x, a, y, backend)
    assert count() == 0
    x[0] = 0.25                                  # float inputs do not bound loops
    round_trip(x, a, y, backend)
    assert count() == 0
    other = qd.asarray(np.full(5, 0.75, np.float32), requires_grad=True)
    round_trip(other, a, y, backend)             # x only gives the shape
    assert count() == 0


@pytest.mark.parametrize("write", ["host", "kernel", "view", "slice view", "in-place op",
                                   "dlpack", "__array__", "bufferview"])
def test_every_write_to_a_bound_array_dispatches_again(backend, write):
    x, a, y = operands([3, 0, 7, 2, 5])
    round_trip(x, a, y, backend)
    count = Counter()
    round_trip(x, a, y, backend)
    assert count() == 0
    if write == "host":
        a[3] = 40
        expect = 40
    elif write == "kernel":
        fill(a, 9)
        expect = 10
    elif write == "view":
        v = a[1:4]
        v[0] = 33
        expect = 33
    elif write == "slice view":
        qd.reshape(a, (5, 1))[4, 0] = 21
        expect = 21
    elif write == "in-place op":
        a += 1
        expect = 8
    elif write == "dlpack":
        np.from_dlpack(a)[2] = 50                 # written through the zero-copy export
        expect = 50
    elif write == "__array__":
        np.asarray(a)[0] = 60
        expect = 60
    else:
        qd.BufferView(a, offset=2, size=3)[1] = 45
        expect = 45
    round_trip(x, a, y, backend)
    assert count() == 1
    target = "interp" if backend == "interp" else "numba_cpu"
    (launcher,) = [r for r in qd.ad.launch._CACHE[compute].values() if r.target.name == target]
    caps, _ = launcher.sizer.size([x, a, y], (x, a, y))
    assert caps == [1 + expect]
    assert count() == 0


def test_a_new_array_with_the_same_values_is_sized_again():
    x, a, y = operands([2, 4])
    round_trip(x, a, y, "cpu")
    count = Counter()
    round_trip(x, qd.asarray(np.array([2, 4], np.int32)), y, "cpu")
    assert count() == 1


def test_programs_that_alternate_between_inputs_keep_each_ones_sizing():
    # Two datasets (or an eager program beside its qd.jit twin) launching one kernel in turn:
    # each keeps its sizing, so neither dispatches the max-reducer again.
    first, second = operands([2, 4, 1]), operands([5, 0, 3])
    want = []
    for x, a, y in (first, second):
        round_trip(x, a, y, "cpu")
        want.append(host(x.grad).copy())
    count = Counter()
    for _ in range(3):
        for k, (x, a, y) in enumerate((first, second)):
            x.grad[...] = 0.0
            round_trip(x, a, y, "cpu")
            np.testing.assert_array_equal(host(x.grad), want[k])
    assert count() == 0 and count("fresh_sizings") == 0
    fill(first[1], 6)                            # a write still sizes that input again
    round_trip(*first, "cpu")
    assert count() == 1


def test_numpy_bound_arrays_are_sized_at_every_launch():
    x, _, y = operands([2, 4])
    a = np.array([2, 4], np.int32)
    compute(x, a, y)
    count = Counter()
    compute.grad(x, a, y)
    compute.grad(x, a, y)
    assert count() == 2


def test_only_the_maxima_whose_arrays_changed_run_again(backend):
    x = qd.asarray(np.full(3, 0.4), requires_grad=True)
    a = qd.asarray(np.array([1, 3, 2], np.int32))
    m = qd.asarray(np.array([2, 5]))
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    fwd = rounds.interpret if backend == "interp" else rounds
    rev = rounds.grad.interpret if backend == "interp" else rounds.grad
    fwd(x, a, m, y)
    rev(x, a, m, y)
    count = Counter()
    a[0] = 4                                      # the outer maximum reads a: it runs again
    fwd(x, a, m, y)
    rev(x, a, m, y)
    assert count() == 1
    m[1] = 6                                      # both read m
    fwd(x, a, m, y)
    rev(x, a, m, y)
    assert count() == 2


def test_counting_passes_are_cached_too(backend):
    x = qd.asarray(np.full(4, 0.3), requires_grad=True)
    a = qd.asarray(np.array([1, 4, 2, 6], np.int32))
    p = qd.asarray(np.array([3, 0, 2, 1]))
    y = qd.zeros(4, dtype=qd.float64, requires_grad=True)
    fwd = indirect.interpret if backend == "interp" else indirect
    rev = indirect.grad.interpret if backend == "interp" else indirect.grad
    fwd(x, a, p, y)
    count = Counter()
    rev(x, a, p, y)
    assert count("counting_passes") == 1
    rev(x, a, p, y)
    x[1] = 0.9                                    # x does not steer the loops
    fwd(x, a, p, y)
    rev(x, a, p, y)
    assert count("counting_passes") == 0
    p[0] = 1
    fwd(x, a, p, y)
    rev(x, a, p, y)
    assert count("counting_passes") == 1


def test_gradients_stay_right_across_cached_and_fresh_sizing(backend):
    """The design's example: x.grad[i] == 0.95 ** a[i], launch after launch."""
    @qd.kernel
    def decay(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
        for i in range(a.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v * 0.95 + 0.01
            y[0] += v

    a = qd.asarray(np.array([0, 3, 9, 1], np.int32))
    for step in range(3):
        x = qd.ones(4, dtype=qd.float32, requires_grad=True)
        y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
        with qd.ad.Tape(loss=y):
            (decay.interpret if backend == "interp" else decay)(x, a, y)
        np.testing.assert_allclose(host(x.grad), 0.95 ** host(a), rtol=1e-5)
        a[step] = 12 + step


# -- a bound array changed between the forward launch and its reverse ----------------------


def test_a_host_write_between_forward_and_grad_raises(backend):
    x, a, y = operands([3, 0, 7, 2, 5])
    fwd = compute.interpret if backend == "interp" else compute
    rev = compute.grad.interpret if backend == "interp" else compute.grad
    fwd(x, a, y)
    a[3] = 40
    with pytest.raises(qd.ad.AdStackSizingError) as info:
        rev(x, a, y)
    msg = str(info.value)
    assert "'a'" in msg and "'compute'" in msg and "Run compute(...) again" in msg
    assert isinstance(info.value, RuntimeError)
    assert np.all(host(x.grad) == 0)                # nothing ran
    fwd(x, a, y)                                    # a new forward launch: fine again
    rev(x, a, y)
    assert np.all(host(x.grad) != 0)


def test_a_kernel_write_between_forward_and_grad_raises():
    x, a, y = operands([3, 0, 7])
    compute(x, a, y)
    fill(a, 2)
    with pytest.raises(qd.ad.AdStackSizingError, match="'a'"):
        compute.grad(x, a, y)


def test_a_write_through_a_view_of_a_bound_view_raises():
    @qd.kernel
    def windowed(x: qd.Array[qd.float64, 1], n: qd.BufferView[qd.int32],
                 y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(n[i]):
                v = qd.math.sin(v)
            y[i] = v

    data = qd.asarray(np.array([9, 1, 2, 3, 9], np.int32))
    x = qd.asarray(np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    view = qd.BufferView(data, offset=1, size=3)
    windowed(x, view, y)
    data[2:4][0] = 8
    with pytest.raises(qd.ad.AdStackSizingError, match="'n'.*'windowed'"):
        windowed.grad(x, view, y)


def test_dataclass_fields_are_named():
    x = qd.asarray(np.full(2, 0.5), requires_grad=True)
    n = qd.asarray(np.array([2, 3], np.int32))
    y = qd.zeros(2, dtype=qd.float64, requires_grad=True)
    in_struct(Bounded(x, n), y)
    n[1] = 1
    with pytest.raises(qd.ad.AdStackSizingError, match="'p.n'"):
        in_struct.grad(Bounded(x, n), y)


def test_grad_without_a_recorded_forward_does_not_raise():
    x, a, y = operands([3, 1])
    compute.grad(x, a, y)                           # no forward launch of these arrays
    a[0] = 5
    compute.grad(x, a, y)
    assert np.all(np.isfinite(host(x.grad)))


def test_inside_a_tape_a_write_it_cannot_see_is_caught_too():
    x, a, y = operands([3, 1, 2])
    with pytest.raises(qd.ad.AdStackSizingError, match="'a'"), qd.ad.Tape(loss=y):
        compute(x, a, y)
        np.asarray(a)[1] = 30            # through an export (a recorded a[1] = 30 is undone)
