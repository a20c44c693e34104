"""Stack capacities: the symbolic bounds, their evaluation, and the counting kernel."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import host
from hypothesis import given
from hypothesis import strategies as st

import qdarray as qd
from qdarray.ad import sizing
from qdarray.ad.launch import prepare_reverse
from qdarray.ad.sizing import (
    Arg,
    Bin,
    Const,
    Evaluator,
    LoopVar,
    MaxOverRange,
    Read,
    Shape,
    _range_max,
)


@qd.kernel
def logistic(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v * v


@qd.kernel
def triangle(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for _ in range(j):
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
def collatz(x: qd.Array[qd.float64, 1], start: qd.Array[qd.int64, 1],
            y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        m = start[i]
        while m != 1:                        # a while loop: counted
            m = m // 2 if m % 2 == 0 else 3 * m + 1
            v = qd.math.sin(v) + 1.0
        y[i] = v


def stacks_of(kern, *args):
    launcher = prepare_reverse(kern, args, "interp", False)
    return launcher


def grads(n):
    return qd.ones(n, requires_grad=True), qd.zeros(n, requires_grad=True)


def test_expression_of_the_loop_carried_local():
    x, y = grads(4)
    a = qd.asarray(np.array([1, 2, 3, 4], np.int32))
    launcher = stacks_of(logistic, x, a, y)
    (s,) = launcher.rev.stacks
    assert s.desc.name == "v" and s.desc.dtype is qd.float64
    (e,) = launcher.exprs
    assert isinstance(e, MaxOverRange)
    assert re.fullmatch(r"MaxOverRange\((i\d+), 0, x\.shape\[0\], \(1 \+ max\(a\[\1\], 0\)\)\)",
                        str(e)), str(e)
    args = sizing.host_args(launcher.rev.forward.params, [x, a, y])
    assert sizing.symbolic(launcher.exprs, launcher.threads, args) == ([5], [4])


def test_nested_dependent_loops_take_the_product_of_maxima():
    a_np = np.array([0, 3, 5, 2], np.int32)
    x, y = grads(4)
    a = qd.asarray(a_np)
    launcher = stacks_of(triangle, x, a, y)
    args = sizing.host_args(launcher.rev.forward.params, [x, a, y])
    caps, threads = sizing.symbolic(launcher.exprs, launcher.threads, args)
    exact, _ = launcher.count([x, a, y])
    # entry push + per thread a[i] * max_j j pushes >= the exact sum over j of j
    assert caps == [1 + 5 * 4]
    assert exact == [1 + sum(range(5))]
    assert threads == [4]


def test_ragged_inner_bounds():
    rng = np.random.default_rng(1)
    a_np = rng.integers(0, 6, 7).astype(np.int32)
    b_np = rng.integers(0, 9, 6).astype(np.int32)
    x, y = grads(7)
    a, b = qd.asarray(a_np), qd.asarray(b_np)
    launcher = stacks_of(ragged, x, a, b, y)
    args = sizing.host_args(launcher.rev.forward.params, [x, a, b, y])
    caps, _ = sizing.symbolic(launcher.exprs, launcher.threads, args)
    expect = max(1 + n * (b_np[:n].max() if n else 0) for n in a_np)
    assert caps == [expect]
    exact, _ = launcher.count([x, a, b, y])
    assert exact[0] <= caps[0]


@pytest.mark.parametrize("case", ["indirect", "guarded", "collatz"])
def test_counting_kernel_sizes_what_expressions_cannot(grad, case):
    n = 6
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0.1, 0.9, n)
    if case == "indirect":
        kern = indirect
        extra = [qd.asarray(rng.integers(0, 9, 4).astype(np.int32)),
                 qd.asarray(rng.integers(0, 4, n))]
    elif case == "guarded":
        kern = guarded
        extra = [qd.asarray(rng.integers(0, 9, n).astype(np.int32))]
    else:
        kern = collatz
        extra = [qd.asarray(np.array([1, 2, 3, 6, 7, 27]))]
    before = qd.ad.stats()["counting"]
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(n, requires_grad=True)
    grad.forward(kern, x, *extra, y)
    y.grad[...] = qd.asarray(np.ones(n))
    grad.reverse(kern, x, *extra, y)
    assert qd.ad.stats()["counting"] == before + 1
    # finite differences of the whole kernel
    h = 1e-6
    for k in range(n):
        up, down = x0.copy(), x0.copy()
        up[k] += h
        down[k] -= h
        yu, yd = qd.zeros(n), qd.zeros(n)
        grad.forward(kern, qd.asarray(up), *extra, yu)
        grad.forward(kern, qd.asarray(down), *extra, yd)
        numeric = (host(yu).sum() - host(yd).sum()) / (2 * h)
        np.testing.assert_allclose(host(x.grad)[k], numeric, rtol=1e-5, atol=1e-8)


def test_guarded_read_outside_the_array_falls_back_to_counting():
    a_np = np.array([3, 1, 4, 1, 5], np.int32)
    x, y = grads(5)
    a = qd.asarray(a_np)
    launcher = stacks_of(guarded, x, a, y)
    args = sizing.host_args(launcher.rev.forward.params, [x, a, y])
    assert launcher.exprs[0] is not None
    assert sizing.symbolic(launcher.exprs, launcher.threads, args) is None  # a[5] is outside
    caps, threads = launcher.count([x, a, y])
    assert caps == [1 + 5] and threads == [5]


def test_no_stack_for_linear_updates():
    @qd.kernel
    def linear(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v * 0.5 + x[i]          # the reverse needs no past value of v
            y[i] = v

    x, y = grads(3)
    launcher = stacks_of(linear, x, qd.asarray(np.array([1, 2, 3], np.int32)), y)
    assert launcher.rev.stacks == []


def test_evaluator_arithmetic_and_empty_ranges():
    ev = Evaluator({"n": 5, "a": np.array([3, 0, 7]), "m": np.zeros((2, 9))})
    i = LoopVar(1, "i")
    assert ev.eval(Bin("//", Const(7), Const(0)), {}) == 0          # x // 0 is 0, as in kernels
    assert ev.eval(Bin("//", Const(-7), Const(2)), {}) == -4
    assert ev.eval(Shape("m", 1), {}) == 9 and ev.eval(Arg("n"), {}) == 5
    assert ev.eval(MaxOverRange(i, Const(0), Const(3), Read("a", (i,))), {}) == 7
    assert ev.eval(MaxOverRange(i, Const(2), Const(2), Read("a", (i,))), {}) == 0
    assert ev.eval(MaxOverRange(i, Const(1), Const(3), Bin("min", i, Const(1))), {}) == 1


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=40), st.data())
def test_range_max_matches_brute_force(values, data):
    vals = np.array(values, np.int64)
    m = len(values)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, m), st.integers(0, m)), min_size=1,
                               max_size=20))
    starts = np.array([p[0] for p in pairs])
    ends = np.array([p[1] for p in pairs])
    got = _range_max(vals, 0, starts, ends)
    expect = [vals[s:e].max() if e > s else 0 for s, e in pairs]
    np.testing.assert_array_equal(got, expect)


def test_capacities_are_exact_for_the_first_launch(grad):
    """No stack is sized by a guess: the first launch with large trip counts just works."""
    a_np = np.array([0, 5000, 12000, 3], np.int32)
    x = qd.asarray(np.full(4, 0.5), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    grad.tape(logistic, y, x, qd.asarray(a_np), y)
    assert np.all(np.isfinite(host(x.grad)))
