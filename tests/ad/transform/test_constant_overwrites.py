"""A store of a value without a gradient (a constant, a value computed from integers) over an
element of an array with a gradient: the element's old value had no effect after it, so its
gradient is 0 from there back. The reverse skipped such stores (only stores of active values
had an adjoint), so the overwritten values kept receiving gradient, silently, on every device:
`y[i, i] = 0.0` after `y[i, j] = x[i, j] ** 2` gave the diagonal 2 x; a kernel zeroing
entries of an array computed on a tape passed their cotangents on."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import Grad

import qdarray as qd

f64 = qd.float64


@qd.kernel
def zero_diagonal(x: qd.Array[f64, 2], y: qd.Array[f64, 2]):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        y[i, j] = x[i, j] * x[i, j]
        if i == j:
            y[i, j] = 0.0


@qd.kernel
def saturate(x: qd.Array[f64, 1], y: qd.Array[f64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        n = 0
        while v < 3.0:
            v = v * 1.7
            n += 1
        y[i] = v
        if n > 2:
            y[i] = -1.0  # a constant after many steps: no dependence on x[i]


@qd.kernel
def stamp(x: qd.Array[f64, 1], y: qd.Array[f64, 1]):
    for i in range(x.shape[0]):
        k = int(qd.math.floor(x[i] * 2.0 + 10.0)) % y.shape[0]
        y[k] = 1.5  # an index from data, a constant value
    y[0] = 2.0  # serial code


@qd.kernel
def halve_even(v: qd.BufferView[f64]):
    for i in range(v.size):
        if i % 2 == 0:
            v[i] = 0.0


@qd.kernel
def mask(z: qd.Array[f64, 1], m: qd.Array[qd.int32, 1]):
    for i in range(z.shape[0]):
        if m[i] > 0:
            z[i] = 5.0


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_constant_overwrites_match_finite_differences(backend: str) -> None:
    rng = np.random.default_rng(4)
    g = Grad(backend)
    got = g.check(zero_diagonal, lambda: {"x": rng.normal(size=(3, 3)), "y": np.zeros((3, 3))},
                  ("x",), ("y",))
    assert np.all(np.diag(got["x"]) == 0.0)
    g.check(saturate, lambda: {"x": np.array([0.13, 1.61, 0.77, 2.5]), "y": np.zeros(4)},
            ("x",), ("y",))
    got = g.check(stamp, lambda: {"x": np.array([0.13, 1.61, -0.77, 0.33]),
                                  "y": rng.normal(size=4)}, ("y",), ("y",))
    assert got["y"][0] == 0.0
    got = g.check(halve_even, lambda: {"v": rng.normal(size=6)}, ("v",), ("v",))
    assert np.all(got["v"][::2] == 0.0) and np.all(got["v"][1::2] != 0.0)


def test_a_kernel_overwriting_an_array_computed_on_a_tape() -> None:
    x0 = np.array([0.5, 1.0, -2.0, 3.0])
    m = qd.asarray(np.array([1, 0, 1, 0], np.int32))

    def program(x):
        z = x * 2.0
        mask(z, m)  # z[0] = z[2] = 5: x[0] and x[2] no longer matter
        z[1] = z[1] * 3.0
        return qd.sum(z * z)

    assert np.asarray(qd.ad.grad(program)(qd.asarray(x0))).tolist() == [0.0, 72.0, 0.0, 24.0]
    z = qd.asarray(np.ones(4), requires_grad=True)
    mask(z, m)
    z.grad[...] = 1.0
    mask.grad(z, m)
    assert np.asarray(z.grad).tolist() == [0.0, 1.0, 0.0, 1.0]


@qd.kernel
def clamp_below(z: qd.Array[f64, 1], w: qd.Array[f64, 1]):
    for i in range(z.shape[0]):
        qd.atomic_max(z[i], w[0])


def test_an_atomic_max_that_replaces_the_initial_value_takes_its_gradient() -> None:
    x0 = np.array([0.2, 0.9, -1.0, 0.7])

    def program(x, w):
        z = x * 1.0
        clamp_below(z, w)  # z = maximum(x, w[0])
        return qd.sum(z * z)

    gx, gw = qd.ad.grad(program, argnums=(0, 1))(qd.asarray(x0), qd.asarray([0.5]))
    assert np.asarray(gw).tolist() == [2.0]  # 2 * 0.5 from each of the two clamped entries
    assert np.asarray(gx).tolist() == [0.0, 1.8, 0.0, 1.4]
