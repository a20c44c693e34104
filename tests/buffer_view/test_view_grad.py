"""Reverse mode through BufferView arguments: a view of an array with requires_grad has the
matching window of its gradient, and `kernel.grad` accumulates there and nowhere else (also
through kernel-side subviews, Array slices and qd.ad.Tape). Closed forms are the oracle."""

from __future__ import annotations

import numpy as np

import qdarray as qd


def make_x(n: int = 16) -> qd.Array:
    x = qd.zeros(n, dtype=qd.float64, requires_grad=True)
    x[...] = qd.arange(n, dtype=qd.float64) + 1.0
    return x


def seeded_out() -> qd.Array:
    out = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    out.grad[...] = 1.0
    return out


@qd.kernel
def square_sum(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1]):
    for i in range(v.size):
        out[0] += v[i] * v[i]


@qd.kernel
def cube_inner(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1], a: int, n: int):
    w = v.subview(a, n)
    u = w[1:]
    for i in range(u.size):
        out[0] += u[i] * u[i] * u[i]


def test_view_argument_gets_the_matching_gradient_window(launch, launch_grad):
    x = make_x()
    xs = np.asarray(x).copy()
    out = seeded_out()
    v = qd.BufferView(x, 4, 8)
    assert v.grad is not None and (v.grad.offset, v.grad.size) == (4, 8)
    launch(square_sum, v, out)
    np.testing.assert_allclose(float(out[0]), (xs[4:12] ** 2).sum())
    launch_grad(square_sum, v, out)
    want = np.zeros(16)
    want[4:12] = 2 * xs[4:12]
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)
    launch_grad(square_sum, x[4:12], out)  # an Array slice carries its grad slice: accumulates
    np.testing.assert_allclose(np.asarray(x.grad), 2 * want, rtol=1e-12)


def test_gradient_through_kernel_side_subviews(launch_grad):
    x = make_x()
    xs = np.asarray(x).copy()
    out = seeded_out()
    launch_grad(cube_inner, qd.BufferView(x, 2, 12), out, 3, 5)  # x[6:10]
    want = np.zeros(16)
    want[6:10] = 3 * xs[6:10] ** 2
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)


def test_tape_over_a_view_of_a_view():
    x = make_x()
    xs = np.asarray(x).copy()
    out = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    v = qd.BufferView(x)[2:14][1:5]  # x[3:7]
    with qd.ad.Tape(loss=out):
        square_sum(v, out)
    want = np.zeros(16)
    want[3:7] = 2 * xs[3:7]
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)


def test_a_view_without_gradient_gets_none(launch_grad):
    x = qd.asarray(np.arange(8.0))
    out = seeded_out()
    assert qd.BufferView(x).grad is None
    launch_grad(square_sum, qd.BufferView(x, 0, 4), out)
    np.testing.assert_array_equal(np.asarray(out.grad), [1.0])  # nothing else to accumulate
