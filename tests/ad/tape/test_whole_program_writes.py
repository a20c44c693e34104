"""Whole-program reverse mode: writes and views the tape cannot follow, repeated indices, and
what an inner tape may do with an enclosing tape's arrays.

A gradient is either right (checked against jax.grad or a closed form) or the tape raises; the
cases here are those where a quiet wrong gradient would be easy.
"""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

jax = pytest.importorskip("jax", reason="JAX is a test extra: the oracle for the VJP rules")
jnp = pytest.importorskip("jax.numpy", reason="JAX is a test extra")
jax.config.update("jax_enable_x64", True)

X0 = np.array([0.5, 1.0, 2.0])


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


# -- views taken before a write that makes their memory tracked --------------------------------


def _slice_then_write(x):
    w = qd.zeros(3)
    v = w[0:2]                                      # taken before w holds anything tracked
    w[0] = x[1]
    return qd.sum(v * v)


def _write_through_the_view(x):
    w = qd.zeros(3)
    v = w[0:2]
    v[0] = x[1]                                     # the view is written: w does not know
    return qd.sum(w * w)


def _reshape_then_inplace(x):
    w = qd.zeros(3)
    v = qd.reshape(w, (3, 1))
    w += x
    return qd.sum(v * v)


def _transpose_then_assign(x):
    w = qd.zeros((1, 3))
    v = w.T
    w[...] = x[None]
    return qd.sum(v * v)


def _broadcast_then_write(x):
    w = qd.zeros(3)
    b = qd.broadcast_to(w, (2, 3))
    w[0] = x[1]
    return qd.sum(b * b)


OUTSIDE = qd.zeros(3)                               # memory from outside the tape


def _outside_view_then_write(x, w=OUTSIDE):
    v = w[1:]
    w[1] = x[0]
    return qd.sum(qd.sin(v))


@pytest.mark.parametrize("program", [
    _slice_then_write, _write_through_the_view, _reshape_then_inplace, _transpose_then_assign,
    _broadcast_then_write, _outside_view_then_write])
def test_a_view_taken_before_a_tracked_write_raises(program) -> None:
    """The write gives gradients to the array written; another Array over the same memory,
    taken before, cannot follow it: using it raises instead of losing the write's gradient."""
    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape(), pytest.raises(qd.AutodiffError, match=(
            "shares memory with an array the write x\\[key\\] = value gave values with "
            "gradients .* over its memory \\(a view taken before the write")):
        program(x)


def test_a_view_taken_before_the_write_raises_in_numpy_functions_and_kernels() -> None:
    @qd.kernel
    def double(a: qd.Array[qd.float64, 1], b: qd.Array[qd.float64, 1]):
        for i in range(a.shape[0]):
            b[i] = 2.0 * a[i]

    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape():
        w = qd.zeros(3)
        v = w[0:2]
        w[0] = x[1]
        with pytest.raises(qd.AutodiffError, match="numpy.median is not a qdarray operation"):
            np.median(v)
        with pytest.raises(qd.AutodiffError, match="An input of double shares memory"):
            double(v, qd.zeros(2))


def _jax_grad(f, x0: np.ndarray) -> np.ndarray:
    return np.asarray(jax.grad(f)(jnp.asarray(x0)))


def test_views_that_share_the_gradient_see_the_write() -> None:
    """Views taken after the write, and views of an array created with requires_grad=True
    (before or after), share its gradient: the write's gradient reaches them."""
    w = qd.zeros(3, requires_grad=True)
    early = w[0:2]
    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape() as tape:
        y = qd.zeros(3)
        y[0] = x[1]
        late = y[0:2]
        w[1] = x[2] * 3.0
        loss = qd.sum(late * late) + qd.sum(qd.sin(early)) + qd.sum(x)
    tape.backward(loss)

    def f(x):
        y = jnp.zeros(3).at[0].set(x[1])
        ww = jnp.zeros(3).at[1].set(x[2] * 3.0)
        return jnp.sum(y[0:2] ** 2) + jnp.sum(jnp.sin(ww[0:2])) + jnp.sum(x)

    np.testing.assert_allclose(host(x.grad), _jax_grad(f, X0), rtol=1e-14)


def test_views_of_results_computed_on_the_tape_see_later_writes() -> None:
    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape() as tape:
        y = x * 2.0
        v = y[0:2]                                  # gives y a gradient companion
        y[0] = x[2]
        loss = qd.sum(v * v) + qd.sum(y)
    tape.backward(loss)

    def f(x):
        y = (x * 2.0).at[0].set(x[2])
        return jnp.sum(y[0:2] ** 2) + jnp.sum(y)

    np.testing.assert_allclose(host(x.grad), _jax_grad(f, X0), rtol=1e-14)


# -- repeated indices in writes (the table in wholeprog.py checks them against jax.grad too) --


def test_repeated_indices_give_the_gradient_to_the_last_write() -> None:
    def f(x, v):
        y = x * 1.0
        y[qd.asarray([0, 2, 0, 1])] = v             # y[0] is written by v[0], then by v[2]
        return qd.sum(y * qd.asarray([1.0, 2.0, 3.0, 4.0]))

    x = qd.asarray(np.zeros(4))
    v = qd.asarray([1.0, 2.0, 3.0, 4.0])
    gx, gv = qd.ad.grad(f, argnums=(0, 1))(x, v)
    assert host(gx).tolist() == [0.0, 0.0, 0.0, 4.0]
    assert host(gv).tolist() == [0.0, 3.0, 1.0, 2.0]     # v[0] was overwritten: no effect
    gs = qd.ad.grad(lambda s: f(x, qd.broadcast_to(s, (4,)) * 1.0))(qd.asarray(2.0))
    assert float(gs) == 6.0                                # y[0], y[1], y[2] once each
    g2 = qd.ad.grad(lambda s: qd.sum(_scalar_twice(s)))(qd.asarray(2.0))
    assert float(g2) == 1.0


def _scalar_twice(s):
    y = qd.zeros(3)
    y[qd.asarray([1, 1])] = s                      # one element, written twice with s
    return y


# -- tapes inside tapes (tests/ad/tape/test_whole_program_nested.py: gradients of gradients) -----


def test_an_inner_tape_may_read_but_not_write_the_outer_tapes_results() -> None:
    @qd.kernel
    def double(a: qd.Array[qd.float64, 1], b: qd.Array[qd.float64, 1]):
        for i in range(a.shape[0]):
            b[i] = 2.0 * a[i]

    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape() as outer:
        y = x * x
        with qd.ad.Tape():
            s = qd.sin(y)                           # recorded on both tapes
            v = y[0:2]                              # a view: recorded, read-only
            with pytest.raises(NotImplementedError, match="x\\[key\\] = value inside a nested"):
                y[0] = 1.0
            with pytest.raises(NotImplementedError, match="kernel 'double' inside a nested"):
                double(y, qd.zeros(3))
        loss = qd.sum(s) + qd.sum(v)
    outer.backward(loss)
    np.testing.assert_allclose(host(x.grad), np.cos(X0 ** 2) * 2 * X0 + [2 * X0[0], 2 * X0[1], 0],
                               rtol=1e-14)


def test_independent_nested_gradients_still_work() -> None:
    """Inner tapes and gradients whose results the enclosing loss does not use leave its
    gradient alone."""
    x = qd.asarray(X0, requires_grad=True)
    with qd.ad.Tape() as outer:
        a = x * x
        g = qd.ad.grad(lambda x: qd.sum(qd.sin(x)))(x)
        h = qd.ad.grad(lambda c: qd.sum(c * c))(qd.asarray(X0))
        loss = qd.sum(a)
    outer.backward(loss)
    np.testing.assert_allclose(host(g), np.cos(X0), rtol=1e-14)
    np.testing.assert_allclose(host(h), 2 * X0, rtol=1e-14)
    np.testing.assert_allclose(host(x.grad), 2 * X0, rtol=1e-14)
