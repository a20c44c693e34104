"""Reverse mode construct by construct: gradients against finite differences and closed forms
on the interpreter and on numba CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd

RNG = np.random.default_rng(7)


def vec(n: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return RNG.uniform(lo, hi, n)


# -- the loop-carried nonlinear case --------------------------------------------------------


@qd.kernel
def logistic(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v * v  # v used after the loop: replaying the loop gets this wrong


def test_overwritten_local_in_dynamic_loop(grad):
    a = np.array([0, 1, 2, 5, 13, 3], np.int32)
    grad.check(logistic, lambda: {"x": vec(6, 0.1, 1.5), "a": a, "y": np.zeros(1)},
               ("x",), ("y",))


def closed_form(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i, (v, n) in enumerate(zip(x, a, strict=True)):
        d = 1.0
        for _ in range(n):
            d *= 1 - 0.2 * v
            v = v - 0.1 * v * v + 0.01
        out[i] = 2 * v * d
    return out


@qd.kernel
def logistic32(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v * v


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_closed_form_float32_and_float64(grad, dtype):
    n = 64
    a = RNG.integers(0, 64, n).astype(np.int32)
    x0 = vec(n, 0.1, 1.0)
    kern = logistic32 if dtype == "float32" else logistic
    x = qd.asarray(x0.astype(dtype), requires_grad=True)
    y = qd.zeros(1, dtype=getattr(qd, dtype), requires_grad=True)
    grad.tape(kern, y, x, qd.asarray(a), y)
    rtol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(host(x.grad), closed_form(x0.astype(dtype).astype(np.float64), a),
                               rtol=rtol)
    assert host(x.grad).dtype == np.dtype(dtype)


@qd.kernel
def decay(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(a.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * 0.95 + 0.01
        y[0] += v


def test_design_example(grad):
    n = 40
    a = RNG.integers(0, 30, n).astype(np.int32)
    x = qd.ones(n, dtype=qd.float32, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    grad.tape(decay, y, x, qd.asarray(a), y)
    np.testing.assert_allclose(host(x.grad), 0.95 ** a.astype(np.float64), rtol=1e-5)


@qd.kernel
def drift(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v + 1e-4 * qd.math.cos(v)
        y[i] = v


def test_long_and_zero_trip_loops(grad):
    a = np.array([0, 30000, 0, 1, 12345], np.int32)
    x0 = np.array([0.3, 0.5, 0.7, 0.9, -1.0])
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(5, requires_grad=True)
    grad.forward(drift, x, qd.asarray(a), y)
    y.grad[...] = qd.asarray(np.ones(5))
    grad.reverse(drift, x, qd.asarray(a), y)
    expect = np.empty(5)
    for i, (v, n) in enumerate(zip(x0, a, strict=True)):
        d = 1.0
        for _ in range(n):
            d *= 1 - 1e-4 * np.sin(v)
            v = v + 1e-4 * np.cos(v)
        expect[i] = d
    np.testing.assert_allclose(host(x.grad), expect, rtol=1e-10)


# -- branches, loops, exits -----------------------------------------------------------------


@qd.kernel
def branches(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        if v < -0.5:
            v = v * v
        elif v < 0.2:
            v = qd.math.sin(v) * 3.0
        else:
            w = v * 2.0
            v = w * v + 1.0
        y[i] = v


def test_if_elif_else(grad):
    grad.check(branches, lambda: {"x": np.array([-0.9, -0.3, 0.1, 0.5, 0.8]), "y": np.zeros(5)},
               ("x",), ("y",))


vec2 = qd.types.vector(2, qd.float64)
GRID = 6


@qd.kernel
def clamp_velocity(vi: qd.Array[vec2, 2], m: qd.Array[qd.float64, 2], vo: qd.Array[vec2, 2]):
    for k in range(GRID * GRID):   # DiffMPM's grid_op: no loop but the parallel one
        i = k // GRID
        j = k % GRID
        v = (1 / (m[i, j] + 0.5)) * vi[i, j]
        v[1] -= 0.25
        if i < 2 and v[0] < 0:
            v[0] = 0
            v[1] = 0
        if j < 3 and v[1] < 0:     # a vector local reassigned in nested branches
            v[0] = 0.5 * v[0]
            n = vec2(0.6, 0.8)
            if qd.math.dot(n, n) > 0.5:
                lin = qd.math.dot(v, n)
                if lin < 0:        # a condition on a reassigned local
                    vit = v - lin * n
                    lit = qd.math.norm(vit) + 1e-10
                    if lit + 0.5 * lin <= 0:
                        v[1] = 0
                    else:
                        v = (1 + 0.5 * lin / lit) * vit
        if j > GRID - 2 and v[1] > 0:
            v[0] = qd.math.sin(v[0])
        vo[i, j] = v


def test_branches_without_loops_need_no_stack(grad):
    """Each statement of a loop-free parallel body runs at most once per thread: the locals
    that its branches reassign are kept in locals, not on adstacks."""
    rng = np.random.default_rng(3)

    def make():
        return {"vi": rng.normal(size=(GRID, GRID, 2)), "m": rng.uniform(0.5, 1.0, (GRID, GRID)),
                "vo": np.zeros((GRID, GRID, 2))}

    got = grad.check(clamp_velocity, make, ("vi", "m"), ("vo",))
    assert np.count_nonzero(got["vi"]) > GRID * GRID  # most branches taken
    from qdarray.ad.launch import prepare_reverse
    from qdarray.kernels.interp import INTERP

    args = [qd.asarray(v, requires_grad=True) for v in make().values()]
    assert prepare_reverse(clamp_velocity, args, INTERP, False).rev.stacks == []


@qd.func
def wrap_down(index):
    new_index = index - 1
    if new_index < 0:
        new_index = GRID - 1
    return new_index


@qd.func
def wrap_up(index):
    new_index = index + 1
    if new_index >= GRID:
        new_index = 0
    return new_index


@qd.kernel
def relax_step(k: qd.int32, div: qd.Array[qd.float64, 2], p: qd.Array[qd.float64, 3]):
    for y in range(GRID):
        for x in range(GRID):  # DiffTaichi smoke's compute_p, with a product and a continue
            a = k + 1
            if (x + 2 * y) % 5 == 0:
                continue
            p[a, y, x] = (div[y, x] + p[k, wrap_down(y), x] + p[k, wrap_up(y), x]
                          + p[k, y, wrap_down(x)] * p[k, y, wrap_up(x)]) / 4.0


def test_integer_locals_of_a_loop_are_replayed(grad):
    """The wrapped indices (assigned in a branch of the inner loop) and the continue flag are
    integer functions of the loop indices: the reverse computes them again, without stacks."""
    rng = np.random.default_rng(4)

    def make():
        return {"k": 1, "div": rng.normal(size=(GRID, GRID)),
                "p": rng.normal(size=(3, GRID, GRID))}

    grad.check(relax_step, make, ("div", "p"), ("p",))
    from qdarray.ad.launch import prepare_reverse
    from qdarray.kernels.interp import INTERP

    args = [qd.asarray(v, requires_grad=True) if isinstance(v, np.ndarray) else v
            for v in make().values()]
    stacks = prepare_reverse(relax_step, args, INTERP, False).rev.stacks
    assert [s.desc.dtype for s in stacks] == [qd.float64]  # the product's factor, only


@qd.kernel
def branchy_loop(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                 y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        s = 0.0
        for k in range(a[i]):
            if v > 0.5:
                v = v * 0.7
            else:
                v = v * v + 0.3
            if k % 2 == 0:
                s += v * k
        y[i] = s + v


def test_branches_inside_dynamic_loops(grad):
    a = np.array([0, 1, 4, 7, 9], np.int32)
    grad.check(branchy_loop, lambda: {"x": vec(5, 0.1, 1.2), "a": a, "y": np.zeros(5)},
               ("x",), ("y",))


@qd.kernel
def triangle(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for k in range(j + 1):        # inner bound depends on the outer variable
                v = qd.math.sin(v) + 0.1 * k
            v = v * 1.01
        y[i] = v


def test_nested_dependent_loops(grad):
    a = np.array([0, 1, 3, 5], np.int32)
    grad.check(triangle, lambda: {"x": vec(4), "a": a, "y": np.zeros(4)}, ("x",), ("y",))


@qd.kernel
def while_loop(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = 0
        while v < 10.0 and k < 50:
            v = v * 1.5 + 0.25
            k += 1
        y[i] = v * qd.math.exp(-0.1 * k)


def test_while_loop(grad):
    grad.check(while_loop, lambda: {"x": np.array([0.3, 2.0, 9.0, 11.0, 0.01]),
                                    "y": np.zeros(5)}, ("x",), ("y",))


@qd.kernel
def exits(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 2.0:
            continue                      # a thread ends early
        for k in range(20):
            if k % 3 == 1:
                continue
            v = v * 1.3 - 0.05 * k
            if v > 4.0:
                break
        while True:
            v = v * 0.9
            if v < 1.0:
                break
        y[i] = v * v


def test_break_and_continue(grad):
    grad.check(exits, lambda: {"x": np.array([0.2, 0.7, 1.1, 2.5, -0.3]), "y": np.zeros(5)},
               ("x",), ("y",))


@qd.kernel
def static_loop(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for k in qd.static(range(4)):
            v = v * x[i] + k
        y[i] = v


def test_static_loop(grad):
    grad.check(static_loop, lambda: {"x": vec(5), "y": np.zeros(5)}, ("x",), ("y",))


@qd.func
def smooth(v, k):
    if v > 1.0:
        return qd.math.sqrt(v) * k
    return v * v * k


@qd.func
def steps(v, n):
    for k in range(n):
        v = smooth(v, 1.0 + 0.1 * k) + 0.05
    return v


@qd.kernel
def funcs(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = steps(x[i], a[i])


def test_func_calls_with_returns(grad):
    a = np.array([0, 1, 2, 4], np.int32)
    grad.check(funcs, lambda: {"x": np.array([0.5, 1.5, 0.9, 0.3]), "a": a, "y": np.zeros(4)},
               ("x",), ("y",))


# -- global memory ----------------------------------------------------------------------------


@qd.kernel
def gather(x: qd.Array[qd.float64, 1], idx: qd.Array[qd.int64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(idx.shape[0]):
        y[i] = x[idx[i]] * x[(i + 1) % x.shape[0]]   # several threads read one element


def test_shared_reads_accumulate_atomically(grad):
    idx = np.array([0, 0, 2, 1, 2, 0])
    grad.check(gather, lambda: {"x": vec(3), "idx": idx, "y": np.zeros(6)}, ("x",), ("y",))


@qd.kernel
def scatter(x: qd.Array[qd.float64, 1], idx: qd.Array[qd.int64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[idx[i]] += qd.math.tanh(x[i])
        qd.atomic_add(y[0], x[i] * x[i])


def test_atomic_add_and_plus_equals(grad):
    idx = np.array([1, 2, 1, 0, 2])
    grad.check(scatter, lambda: {"x": vec(5), "idx": idx, "y": np.zeros(3)}, ("x",), ("y",))


@qd.kernel
def extremes(x: qd.Array[qd.float64, 1], lo: qd.Array[qd.float64, 1],
             hi: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        qd.atomic_min(lo[0], x[i] * 2.0)
        qd.atomic_max(hi[0], qd.math.exp(x[i]))


def test_atomic_min_max_flow_to_the_winner(grad):
    x0 = np.array([0.3, -0.8, 0.9, 0.1])
    x = qd.asarray(x0, requires_grad=True)
    lo = qd.asarray(np.array([10.0]), requires_grad=True)
    hi = qd.asarray(np.array([-10.0]), requires_grad=True)
    grad.forward(extremes, x, lo, hi)
    lo.grad[...] = qd.asarray(np.array([1.0]))
    hi.grad[...] = qd.asarray(np.array([1.0]))
    grad.reverse(extremes, x, lo, hi)
    expect = np.zeros(4)
    expect[1] += 2.0                 # x[1] gave the minimum
    expect[2] += np.exp(0.9)         # x[2] gave the maximum
    np.testing.assert_allclose(host(x.grad), expect)


@qd.kernel
def clamp_extremes(x: qd.Array[qd.float64, 1], z: qd.Array[qd.float64, 1],
                   c: qd.Array[qd.float64, 1], lo: qd.Array[qd.float64, 1],
                   hi: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        qd.atomic_max(z[i], x[0])                   # one thread per element
        qd.atomic_min(c[i], 0.75)                   # a constant replaces some elements
        qd.atomic_min(lo[i % 2], x[i] * 2.0)        # threads contend for lo[0], lo[1]
        qd.atomic_max(hi[0], qd.math.exp(x[i]))


def test_atomic_min_max_move_the_gradient_off_a_replaced_element(grad):
    """The element's value from before the launch keeps its gradient only where no update
    replaced it (lo[1] and hi[0] below keep theirs, z[0], z[2], c[3], c[5] and lo[0] do
    not)."""
    x0 = np.array([0.3, -0.8, 0.9, 0.1, 0.5, -0.2])

    def make():
        return {"x": x0.copy(), "z": np.array([0.1, 0.6, -1.0, 2.0, 0.4, 0.7]),
                "c": np.array([0.1, 0.6, -1.0, 2.0, 0.4, 0.8]),
                "lo": np.array([1.0, -3.0]), "hi": np.array([4.0])}

    got = grad.check(clamp_extremes, make, ("x", "z", "c", "lo", "hi"), ("z", "c", "lo", "hi"))
    assert got["z"][[0, 2]].tolist() == [0.0, 0.0] and np.all(got["z"][[1, 3, 4, 5]] != 0)
    assert got["c"][[3, 5]].tolist() == [0.0, 0.0] and np.all(got["c"][[0, 1, 2, 4]] != 0)
    assert got["lo"][0] == 0.0 and got["lo"][1] != 0.0 and got["hi"][0] != 0.0


@qd.kernel
def tied_max(x: qd.Array[qd.float64, 1], hi: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        qd.atomic_max(hi[0], x[i] * x[i])


def test_atomic_max_ties_give_the_gradient_once(grad):
    """Threads whose values tie for the maximum share one gradient: exactly one of them gets
    it (the finite difference is not defined there; the total is kept)."""
    x = qd.asarray(np.array([1.0, -1.0, 0.5, 1.0, -1.0] * 8), requires_grad=True)
    hi = qd.asarray(np.array([0.25]), requires_grad=True)
    grad.forward(tied_max, x, hi)
    hi.grad[...] = qd.asarray(np.array([3.0]))
    grad.reverse(tied_max, x, hi)
    g = host(x.grad)
    assert sorted(np.abs(g).tolist()) == [0.0] * 39 + [6.0]
    assert host(hi.grad).tolist() == [0.0]


@qd.kernel
def two_loops(x: qd.Array[qd.float64, 1], t: qd.Array[qd.float64, 1],
              y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        t[i] = qd.math.cos(x[i])
    for i in range(x.shape[0]):
        y[i] = t[i] * t[(i + 1) % x.shape[0]] + x[i]


def test_two_parallel_loops_through_an_intermediate(grad):
    grad.check(two_loops, lambda: {"x": vec(4), "t": np.zeros(4), "y": np.zeros(4)},
               ("x",), ("y", "t"))


@qd.kernel
def serial(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    s = 0.0
    for_max = x.shape[0]
    k = 0
    while k < for_max:
        s = s * 0.5 + x[k] * x[k]
        k += 1
    y[0] = s


def test_serial_code_without_parallel_loop(grad):
    grad.check(serial, lambda: {"x": vec(5), "y": np.zeros(1)}, ("x",), ("y",))


@qd.kernel
def shared_local(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    scale = x[0] * 2.0
    scale = scale + 1.0
    for i in range(x.shape[0]):
        y[i] = x[i] * scale       # threads read a local of the serial code
    scale = 0.0                   # reassigned later: the threads saw the old value


def test_serial_local_read_by_threads(grad):
    grad.check(shared_local, lambda: {"x": vec(5), "y": np.zeros(5)}, ("x",), ("y",))


@qd.kernel
def casts(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float32, 1], z: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.float32(x[i] * 3.0)
        z[i] = float(int(x[i] * 10.0)) + qd.float64(y[i]) * x[i]


def test_casts_between_floats_and_through_ints(grad):
    x0 = np.array([0.25, 0.55, -0.35])
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(3, dtype=qd.float32, requires_grad=True)
    z = qd.zeros(3, requires_grad=True)
    grad.forward(casts, x, y, z)
    z.grad[...] = qd.asarray(np.ones(3))
    grad.reverse(casts, x, y, z)
    y32 = (x0 * 3.0).astype(np.float32).astype(np.float64)
    # z = int-cast part (no gradient) + y * x, with y = 3x stored through float32
    np.testing.assert_allclose(host(x.grad), y32 + 3.0 * x0, rtol=1e-6)


@qd.kernel
def grid(x: qd.Array[qd.float64, 2], y: qd.Array[qd.float64, 2]):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        v = x[i, j]
        for _ in range(i + j):
            v = v * 0.9 + 0.1 * x[i, j]
        y[i, j] = v * v


def test_ndrange_nest(grad):
    grad.check(grid, lambda: {"x": RNG.uniform(-1, 1, (3, 4)), "y": np.zeros((3, 4))},
               ("x",), ("y",))


@qd.kernel
def windowed(v: qd.BufferView[qd.float64], y: qd.Array[qd.float64, 1]):
    for i in range(v.size):
        y[i] = qd.math.exp(v[i]) * v[(i + 1) % v.size]


def test_bufferview_gradients_are_windows(grad):
    base = qd.asarray(vec(8), requires_grad=True)
    view = qd.BufferView(base, offset=2, size=4)
    y = qd.zeros(4, requires_grad=True)
    grad.forward(windowed, view, y)
    y.grad[...] = qd.asarray(np.ones(4))
    grad.reverse(windowed, view, y)
    b = host(base)[2:6]
    expect = np.zeros(8)
    expect[2:6] += np.exp(b) * np.roll(b, -1)
    expect[2:6] += np.roll(np.exp(b), 1)
    np.testing.assert_allclose(host(base.grad), expect, rtol=1e-12)


@dataclass(frozen=True)
class Particles:
    pos: qd.Array
    vel: qd.Array


@qd.kernel
def advance(p: Particles, steps: qd.Array[qd.int32, 1], out: qd.Array[qd.float64, 1]):
    for i in range(steps.shape[0]):
        x = p.pos[i]
        u = p.vel[i]
        for _ in range(steps[i]):
            u = u - 0.1 * x
            x = x + 0.1 * u
        out[i] = x


def test_dataclass_arguments(grad):
    pos0, vel0 = vec(4), vec(4)
    steps = qd.asarray(np.array([0, 3, 10, 1], np.int32))
    p = Particles(qd.asarray(pos0, requires_grad=True), qd.asarray(vel0, requires_grad=True))
    out = qd.zeros(4, requires_grad=True)
    grad.forward(advance, p, steps, out)
    out.grad[...] = qd.asarray(np.ones(4))
    grad.reverse(advance, p, steps, out)
    for i, n in enumerate([0, 3, 10, 1]):   # the map is linear: its Jacobian by columns
        m = np.eye(2)
        for _ in range(n):
            m = np.array([[1 - 0.01, 0.1], [-0.1, 1]]) @ m
        np.testing.assert_allclose([host(p.pos.grad)[i], host(p.vel.grad)[i]], m[0],
                                   rtol=1e-12, atol=1e-15)


@qd.kernel
def mixed(x: qd.Array[qd.float32, 1], z: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
          y: qd.Array[qd.float64, 1], t: qd.Array[qd.float64, 1]):
    total = 0.0
    k = 0
    while k < 3:                              # serial code with its own stacks
        total = qd.math.sin(total + z[k])
        k += 1
    for i in range(1, x.shape[0]):            # a parallel loop that starts at 1
        u = qd.float64(x[i])                  # float32 input, float64 local
        w = qd.float32(0.5)
        m = 0
        for j in range(a[i]):
            if u > 0.3:
                u = u * u + qd.float64(w * w)
            else:
                w = w * qd.float32(1.1) + x[i]
            m += j
            u = u + qd.math.sin(z[m % 3])     # an int local carried as an index
        t[i] = u * total
    for i in range(z.shape[0]):               # a second parallel loop with stacks
        v = z[i]
        for _ in range(a[i]):
            v = qd.math.cos(v) * 1.5
        y[i] = v + t[i]


def test_several_tasks_dtypes_and_serial_stacks(grad):
    a = np.array([2, 4, 0, 5], np.int32)

    def make():
        return {"x": vec(4, 0.0, 0.6).astype(np.float32), "z": vec(4), "a": a,
                "y": np.zeros(4), "t": np.zeros(4)}

    got = grad.check(mixed, make, ("z",), ("y", "t"), rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(got["z"]))
    from qdarray.ad.launch import prepare_reverse
    from qdarray.kernels.interp import INTERP

    args = [qd.asarray(v, requires_grad=k in ("x", "z", "y", "t")) if isinstance(v, np.ndarray)
            else v for k, v in make().items()]
    rev = prepare_reverse(mixed, args, INTERP, False).rev
    launcher_kinds = {(s.desc.dtype.name, s.task is None) for s in rev.stacks}
    assert {("float64", True), ("float64", False), ("float32", False),
            ("int64", False), ("bool", False)} <= launcher_kinds


def test_reverse_keeps_only_what_it_needs():
    """One stack (v) for the benchmark kernel: the loop counter, the trip count and the
    input read are recomputed; x[i] belongs to one thread, so its gradient needs no atomic."""
    from qdarray.ad.launch import prepare_reverse
    from qdarray.kernels.interp import INTERP
    from qdarray.kernels.ir import instrs

    x = qd.ones(3, dtype=qd.float32, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    rev = prepare_reverse(logistic32, [x, qd.asarray(np.ones(3, np.int32)), y], INTERP,
                          False).rev
    assert [(s.desc.name, s.desc.dtype) for s in rev.stacks] == [("v", qd.float32)]
    names = {p.value.id: p.name for p in rev.kernel.params}
    atomics = [names.get(i.args[0].id) for i in instrs(rev.kernel.body)
               if i.op.name.startswith("ATOMIC")]
    assert "x@grad" not in atomics
    pushes = [i for i in instrs(rev.kernel.body) if i.op.name == "ADSTACK_PUSH"]
    assert len(pushes) == 2          # the value entering the loop, and one per iteration


@qd.kernel
def moving_bounds(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                  y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        start = 0
        for j in range(a[i]):
            for k in range(start, start + 3):     # the start moves: pushed, not recomputed
                v = qd.math.sin(v + 0.1 * k)
            start = start + j
            m = 0
            while m < j:                          # a nested while: its trip count is pushed
                v = v * qd.math.cos(v) + 0.2
                m += 1
            for k in range(10):                   # a nested loop with break: counted
                v = qd.math.tanh(v) + 0.3
                if v > 0.9 - 0.01 * k:
                    break
        y[i] = v


def test_nested_loops_with_pushed_starts_and_counted_trips(grad):
    a = np.array([0, 1, 2, 4], np.int32)
    grad.check(moving_bounds, lambda: {"x": vec(4), "a": a, "y": np.zeros(4)}, ("x",), ("y",))
    from qdarray.ad.launch import prepare_reverse
    from qdarray.kernels.interp import INTERP

    args = [qd.asarray(vec(4), requires_grad=True), qd.asarray(a), qd.zeros(4, requires_grad=True)]
    names = {s.desc.name for s in prepare_reverse(moving_bounds, args, INTERP, False).rev.stacks}
    assert {"loop start", "loop trip count"} <= names
