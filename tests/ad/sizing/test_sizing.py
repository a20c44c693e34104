"""Stack capacities: the symbolic bounds of every expression form, the max-reducer kernels that
evaluate them, and the counting pass for what they cannot express."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.ad.launch import prepare_reverse
from qdarray.ad.sizing import at_launch as sizer_mod
from qdarray.ad.sizing.bounds import MaxOverRange
from qdarray.ad.sizing.max_reducer import Unsized
from qdarray.kernels.interp import INTERP

CPU_TARGET = qd.Device("cpu").backend.target
TARGETS = [INTERP, CPU_TARGET]


@pytest.fixture(params=TARGETS, ids=[t.name for t in TARGETS])
def target(request: pytest.FixtureRequest):
    return request.param


def sized(target, kern, *args):
    """(launcher, capacities, thread counts) of a fresh reverse launcher for `args`."""
    launcher = prepare_reverse(kern, args, target, False)
    caps, threads = launcher.sizer.size(list(args), args)
    return launcher, caps, threads


def exact(launcher, *args):
    """The counting pass's capacities (the exact largest depths)."""
    return launcher.sizer._counted(args)


def dispatches():
    return qd.ad.stats()["max_reducer_dispatches"]


def grads(n):
    return qd.ones(n, dtype=qd.float64, requires_grad=True), qd.zeros(n, requires_grad=True)


@qd.kernel
def logistic(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v * v


@qd.kernel
def any_int(x: qd.Array[qd.float64, 1], a, y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):                 # a: any integer dtype (typed from the call)
            v = qd.math.sin(v) * 1.5
        y[i] = v


@qd.kernel
def triangle(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for _ in range(j):               # inner range depends on the outer variable
                v = qd.math.sin(v) * 1.01
        y[i] = v


@qd.kernel
def ragged(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], b: qd.Array[qd.int32, 1],
           y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for _ in range(b[j]):            # inner bound read at the outer loop's variable
                v = qd.math.cos(v) + 0.5
        y[i] = v


@qd.kernel
def grid(x: qd.Array[qd.float64, 2], a: qd.Array[qd.int16, 2], y: qd.Array[qd.float64, 2]):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):   # two parallel axes
        v = x[i, j]
        for _ in range(a[i, j]):
            v = v * v * 0.5 + 0.25
        y[i, j] = v


@qd.kernel
def rounds(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], m: qd.Array[qd.int64, 1],
           y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            for j in range(m.shape[0]):
                for _ in range(m[j]):        # max over j does not depend on i: a round first
                    v = qd.math.sin(v) + 0.5
        y[i] = v


@qd.kernel
def table(x: qd.Array[qd.float64, 1], c: qd.Array[qd.uint8, 2], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(c.shape[0]):
            for k in range(c.shape[1]):
                for _ in range(c[j, k]):     # a serial pair of axes: their cross product
                    v = v * v * 0.25 + 0.5
        y[i] = v


@qd.kernel
def static_bounds(x: qd.Array[qd.float64, 1], m: qd.Array[qd.int32, 2], n: qd.Array[qd.int32, 1],
                  k: int, y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(3):
            v = v * v * 0.5 + 0.1
        for _ in range(m.shape[1]):
            v = v * v * 0.5 + 0.2
        for _ in range(n[1]):
            v = v * v * 0.5 + 0.3
        for _ in range(k):
            v = v * v * 0.5 + 0.4
        y[i] = v


@qd.kernel
def windowed(x: qd.Array[qd.float64, 1], a: qd.BufferView[qd.int32], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = qd.math.sin(v) + 1.0
        y[i] = v


@qd.kernel
def indirect(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], p: qd.Array[qd.int64, 1],
             y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[p[i]]):             # a[b[i]]: not an expression; counted
            v = v * v * 0.5 + 0.5
        y[i] = v


@qd.kernel
def guarded(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        if i + 1 < a.shape[0]:
            for _ in range(a[i + 1]):        # reads a[i + 1] only where it exists
                v = v * v * 0.5 + 0.5
        y[i] = v


@qd.kernel
def guarded_ragged(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                   b: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            if j < b.shape[0]:
                for _ in range(b[j]):        # b[j] past the end is never read
                    v = qd.math.cos(v) + 0.5
        y[i] = v


@qd.kernel
def collatz(x: qd.Array[qd.float64, 1], start: qd.Array[qd.int64, 1],
            y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        m = start[i]
        while m != 1:                        # a while loop: counted
            m = m // 2 if m % 2 == 0 else 3 * m + 1
            v = qd.math.sin(v) + 1.0
        y[i] = v


def collatz_steps(s: int) -> int:
    n = 0
    while s != 1:
        s = s // 2 if s % 2 == 0 else 3 * s + 1
        n += 1
    return n


# -- the expressions ----------------------------------------------------------------------


def test_expression_of_the_loop_carried_local():
    x, y = grads(4)
    a = qd.asarray(np.array([1, 2, 3, 4], np.int32))
    launcher = prepare_reverse(logistic, (x, a, y), INTERP, False)
    (s,) = launcher.rev.stacks
    assert s.desc.name == "v" and s.desc.dtype is qd.float64
    (e,) = launcher.exprs
    assert isinstance(e, MaxOverRange)
    assert re.fullmatch(r"MaxOverRange\((i\d+), 0, x\.shape\[0\], \(1 \+ max\(a\[\1\], 0\)\)\)",
                        str(e)), str(e)
    assert launcher.sizer.size([x, a, y], (x, a, y)) == ([5], [4])


def test_single_axis(target):
    rng = np.random.default_rng(0)
    a_np = rng.integers(0, 50, 37).astype(np.int32)
    x, y = grads(37)
    before = dispatches()
    launcher, caps, threads = sized(target, logistic, x, qd.asarray(a_np), y)
    assert caps == [1 + a_np.max()] and threads == [37]
    assert dispatches() == before + 1


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
def test_bounds_of_every_integer_dtype(target, dtype):
    top = min(np.iinfo(dtype).max, 300)
    a_np = np.array([3, 0, top, 7, 1], dtype)
    x, y = grads(5)
    _, caps, _ = sized(target, any_int, x, qd.asarray(a_np), y)
    assert caps == [1 + int(top)]


def test_negative_bounds_count_as_zero(target):
    x, y = grads(3)
    _, caps, _ = sized(target, any_int, x, qd.asarray(np.array([-5, -9, -1], np.int8)), y)
    assert caps == [1]


def test_nested_dependent_loops_take_the_product_of_maxima(target):
    a_np = np.array([0, 3, 5, 2], np.int32)
    x, y = grads(4)
    a = qd.asarray(a_np)
    launcher, caps, threads = sized(target, triangle, x, a, y)
    assert caps == [1 + 5 * 4]                        # a[i] * max over j < a[i] of j
    assert exact(launcher, x, a, y)[0] == [1 + sum(range(5))]
    assert threads == [4]


def test_ragged_inner_bounds(target):
    rng = np.random.default_rng(1)
    a_np = rng.integers(0, 6, 7).astype(np.int32)
    b_np = rng.integers(0, 9, 6).astype(np.int32)
    x, y = grads(7)
    a, b = qd.asarray(a_np), qd.asarray(b_np)
    launcher, caps, _ = sized(target, ragged, x, a, b, y)
    assert caps == [max(1 + n * (b_np[:n].max() if n else 0) for n in a_np)]
    assert exact(launcher, x, a, b, y)[0][0] <= caps[0]


def test_two_parallel_axes_reduce_over_their_cross_product(target):
    a_np = np.array([[1, 4, 0], [2, 9, 3]], np.int16)
    x = qd.asarray(np.full((2, 3), 0.3), requires_grad=True)
    y = qd.zeros((2, 3), dtype=qd.float64, requires_grad=True)
    before = dispatches()
    launcher, caps, threads = sized(target, grid, x, qd.asarray(a_np), y)
    chain = next(iter(launcher.sizer.nodes.values())).chain
    assert len(chain.axes) == 2 and not chain.inner
    assert caps == [1 + 9] and threads == [6]
    assert dispatches() == before + 1


def test_serial_axes_reduce_over_their_cross_product(target):
    c_np = np.array([[1, 7, 2], [5, 0, 3]], np.uint8)
    x, y = grads(3)
    launcher, caps, _ = sized(target, table, x, qd.asarray(c_np), y)
    (node,) = launcher.sizer.nodes.values()
    assert len(node.chain.axes) == 2
    assert caps == [1 + 2 * 3 * 7]                    # trips of j and k times max c[j, k]


def test_dependent_maxima_run_in_rounds_innermost_first(target, monkeypatch):
    a_np = np.array([2, 0, 5, 1], np.int32)
    m_np = np.array([4, 11, 6], np.int64)
    x, y = grads(4)
    order = []
    real_run = sizer_mod.Reducer.run

    def spy(self, values, slots, begins, extents):
        order.append((len(self.chain.inner), list(slots)))
        return real_run(self, values, slots, begins, extents)

    monkeypatch.setattr(sizer_mod.Reducer, "run", spy)
    launcher, caps, _ = sized(target, rounds, x, qd.asarray(a_np), qd.asarray(m_np), y)
    assert caps == [1 + 5 * 3 * 11]
    assert order == [(0, []), (1, [11])]              # max of m first, passed to the outer one


def test_constants_shapes_scalars_and_constant_indices_need_no_kernel(target):
    x, y = grads(2)
    m = qd.zeros((2, 7), dtype=qd.int32)
    n = qd.asarray(np.array([9, 4], np.int32))
    before = dispatches()
    _, caps, threads = sized(target, static_bounds, x, m, n, 5, y)
    assert caps == [1 + 3, 1 + 7, 1 + 4, 1 + 5] and threads == [2]   # a stack per loop
    assert dispatches() == before


def test_views_are_read_at_their_offset(target):
    data = qd.asarray(np.array([50, 1, 2, 3, 4, 60], np.int32))
    x, y = grads(4)
    _, caps, _ = sized(target, windowed, x, qd.BufferView(data, offset=1, size=4), y)
    assert caps == [1 + 4]
    _, caps, _ = sized(target, windowed, x, data[2:6], y)
    assert caps == [1 + 60]


def test_empty_launches_size_to_nothing(target):
    x, y = grads(0)
    before = dispatches()
    _, caps, threads = sized(target, logistic, x, qd.zeros(0, dtype=qd.int32), y)
    assert caps == [0] and threads == [0] and dispatches() == before


# -- the counting pass --------------------------------------------------------------------


@pytest.mark.parametrize("case", ["indirect", "guarded", "collatz"])
def test_counting_pass_sizes_what_expressions_cannot(grad, case):
    n = 6
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0.1, 0.9, n)
    if case == "indirect":
        kern = indirect
        a_np = rng.integers(0, 9, 4).astype(np.int32)
        p_np = rng.integers(0, 4, n)
        extra = [qd.asarray(a_np), qd.asarray(p_np)]
        expect = 1 + a_np[p_np].max()
    elif case == "guarded":
        kern = guarded
        a_np = rng.integers(0, 9, n).astype(np.int32)
        extra = [qd.asarray(a_np)]
        expect = 1 + a_np[1:].max()
    else:
        kern = collatz
        starts = np.array([1, 2, 3, 6, 7, 27])
        extra = [qd.asarray(starts)]
        expect = 1 + max(collatz_steps(int(s)) for s in starts)
    before = qd.ad.stats()["counting_passes"]
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(n, requires_grad=True)
    target = INTERP if grad.backend == "interp" else CPU_TARGET
    _, caps, threads = sized(target, kern, x, *extra, y)
    assert caps == [expect] and threads == [n]
    assert qd.ad.stats()["counting_passes"] == before + 1
    grad.forward(kern, x, *extra, y)
    y.grad[...] = qd.asarray(np.ones(n))
    grad.reverse(kern, x, *extra, y)
    h = 1e-6                                  # finite differences of the whole kernel
    for k in range(n):
        up, down = x0.copy(), x0.copy()
        up[k] += h
        down[k] -= h
        yu, yd = qd.zeros(n), qd.zeros(n)
        grad.forward(kern, qd.asarray(up), *extra, yu)
        grad.forward(kern, qd.asarray(down), *extra, yd)
        numeric = (host(yu).sum() - host(yd).sum()) / (2 * h)
        np.testing.assert_allclose(host(x.grad)[k], numeric, rtol=1e-5, atol=1e-8)


def test_a_read_outside_the_array_falls_back_to_counting(target):
    a_np = np.array([3, 1, 4, 1, 5], np.int32)
    x, y = grads(5)
    a = qd.asarray(a_np)
    launcher = prepare_reverse(guarded, (x, a, y), target, False)
    assert launcher.exprs[0] is not None and launcher.sizer.symbolic
    with pytest.raises(Unsized):
        launcher.sizer._symbolic([x, a, y])          # a[5] is outside
    assert launcher.sizer.size([x, a, y], (x, a, y)) == ([1 + 5], [5])


def test_a_read_checked_in_the_kernel_falls_back_to_counting(target):
    a_np = np.array([2, 3, 1], np.int32)
    b_np = np.array([4, 5], np.int32)                 # b[2] would be read for a[1] = 3
    x, y = grads(3)
    a, b = qd.asarray(a_np), qd.asarray(b_np)
    launcher = prepare_reverse(guarded_ragged, (x, a, b, y), target, False)
    with pytest.raises(Unsized):
        launcher.sizer._symbolic([x, a, b, y])
    before = qd.ad.stats()["counting_passes"]
    caps, _ = launcher.sizer.size([x, a, b, y], (x, a, b, y))
    assert qd.ad.stats()["counting_passes"] == before + 1
    assert caps == [1 + 4 + 5]


def test_no_stack_for_linear_updates():
    @qd.kernel
    def linear(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v * 0.5 + x[i]          # the reverse needs no past value of v
            y[i] = v

    x, y = grads(3)
    launcher = prepare_reverse(linear, (x, qd.asarray(np.array([1, 2, 3], np.int32)), y),
                               INTERP, False)
    assert launcher.rev.stacks == []


@pytest.mark.parametrize("kern", [grid, rounds, table], ids=["grid", "rounds", "table"])
def test_gradients_through_every_sized_form(grad, kern):
    rng = np.random.default_rng(3)
    if kern is grid:
        make = lambda: {"x": rng.uniform(0.1, 0.9, (2, 3)),  # noqa: E731
                        "a": np.array([[1, 4, 0], [2, 3, 3]], np.int16), "y": np.zeros((2, 3))}
    elif kern is rounds:
        make = lambda: {"x": rng.uniform(0.1, 0.9, 3), "a": np.array([2, 0, 1], np.int32),  # noqa: E731
                        "m": np.array([2, 3]), "y": np.zeros(3)}
    else:
        make = lambda: {"x": rng.uniform(0.1, 0.9, 2),  # noqa: E731
                        "c": np.array([[1, 2], [0, 3]], np.uint8), "y": np.zeros(2)}
    grad.check(kern, make, ("x",), ("y",))


def test_capacities_are_exact_for_the_first_launch(grad):
    """No stack is sized by a guess: the first launch with large trip counts just works."""
    a_np = np.array([0, 5000, 12000, 3], np.int32)
    x = qd.asarray(np.full(4, 0.5), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    grad.tape(logistic, y, x, qd.asarray(a_np), y)
    assert np.all(np.isfinite(host(x.grad)))
