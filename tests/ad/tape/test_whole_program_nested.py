"""Gradients of gradients: `qd.ad.grad(qd.ad.grad(f))` and tapes nested in tapes, where the
enclosing tape records the inner tape's operations and its reverse, as JAX nests its
transformations.

Every program of the whole-program table (tests/ad/wholeprog.py) is differentiated twice, as
a Hessian-vector product, against `jax.grad` of `jax.grad` and against central differences of
qdarray's own first gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import wholeprog
from wholeprog import SPECS, Spec

import qdarray as qd

jax = pytest.importorskip("jax", reason="JAX is a test extra: the oracle for the VJP rules")
jnp = pytest.importorskip("jax.numpy", reason="JAX is a test extra")
jax.config.update("jax_enable_x64", True)

# A cross-section of the table (its every program passes; the whole of it takes minutes on
# two cores): elementwise, complex, reductions, scans, products, linalg, fft, indexing,
# views and the manipulation rules. Programs that write in place are left out: writes are not
# supported inside a gradient that is differentiated again (NotImplementedError, below).
NESTED = {"operators", "complex", "prod", "max_min", "var_std", "cumulative_prod",
          "matmul_batched", "solve", "eigh", "rfft", "getitem", "take",
          "views_of_read_only_results", "broadcast_roll_tile_repeat", "tril_triu_diff_meshgrid"}
CASES = [s for s in SPECS if s.name in NESTED]


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def _hvp_qd(spec: Spec, inputs: tuple[np.ndarray, ...], dirs: list[np.ndarray]) -> list:
    f = wholeprog.program(spec, "cpu")
    n = len(inputs)
    d = [qd.asarray(v) for v in dirs]

    def inner(*args):
        grads = qd.ad.grad(f, argnums=tuple(range(n)))(*args)
        return sum(qd.sum(g * v) for g, v in zip(grads, d, strict=True))

    hv = qd.ad.grad(inner, argnums=tuple(range(n)))(*[qd.asarray(a) for a in inputs])
    return [host(h) for h in hv]


def _hvp_jax(spec: Spec, inputs: tuple[np.ndarray, ...], dirs: list[np.ndarray]) -> list:
    f = spec.fj or spec.f
    n = len(inputs)
    argnums = tuple(range(n))

    def inner(*args):
        grads = jax.grad(lambda *a: f(jnp, np.asarray, *a), argnums=argnums)(*args)
        return sum(jnp.sum(g * v) for g, v in zip(grads, dirs, strict=True))

    return [np.asarray(h) for h in jax.grad(inner, argnums=argnums)(*map(jnp.asarray, inputs))]


def test_the_cross_section_names_programs_of_the_table() -> None:
    assert {s.name for s in CASES} == NESTED


@pytest.mark.parametrize("spec", CASES, ids=[s.name for s in CASES])
def test_hessian_vector_products_against_jax(spec: Spec) -> None:
    rng = np.random.default_rng(1)
    inputs = spec.gen(rng)
    dirs = [rng.normal(size=a.shape) for a in inputs]
    got = _hvp_qd(spec, inputs, dirs)
    want = _hvp_jax(spec, inputs, dirs)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{spec.name}: input {i} against jax")


def test_third_derivatives_and_closures_against_jax() -> None:
    x0 = np.array([0.5, 1.0, 2.0])
    w0 = np.array([0.3, -0.7, 1.1])

    def third(xp, grad):
        return grad(lambda x: xp.sum(grad(lambda y: xp.sum(grad(
            lambda z: xp.sum(z ** 4 * xp.sin(z)) + xp.sum(xp.exp(z[1:]) * z[:2]))(y) ** 2))(x)))

    np.testing.assert_allclose(host(third(qd, qd.ad.grad)(qd.asarray(x0))),
                               np.asarray(third(jnp, jax.grad)(jnp.asarray(x0))), rtol=1e-12)

    def closure(xp, grad, asarray):       # the inner gradient depends on the outer argument
        return grad(lambda w: xp.sum(grad(lambda a: xp.sum(xp.tanh(a * w) * w))(
            asarray(x0)) ** 2))

    np.testing.assert_allclose(host(closure(qd, qd.ad.grad, qd.asarray)(qd.asarray(w0))),
                               np.asarray(closure(jnp, jax.grad, jnp.asarray)(jnp.asarray(w0))),
                               rtol=1e-12)


def test_tapes_nested_in_tapes_differentiate_the_inner_reverse() -> None:
    """The enclosing tape records what runs inside an inner tape, its reverse included: a
    loss computed from an inner gradient is differentiated through it."""
    x0 = np.array([0.5, 1.0, 2.0])
    x = qd.asarray(x0, requires_grad=True)
    with qd.ad.Tape() as outer:
        y = qd.sin(x) * x                           # recorded on the outer tape
        with qd.ad.Tape() as inner:
            z = qd.sum(y ** 3)                      # on both tapes
        g = qd.ad.grad(lambda y: qd.sum(y ** 3))(y)     # 3 y^2, a function of x
        loss = qd.sum(g * y) + z
    outer.backward(loss)
    want = jax.grad(lambda x: jnp.sum(3 * (jnp.sin(x) * x) ** 3) + jnp.sum((jnp.sin(x) * x) ** 3))
    np.testing.assert_allclose(host(x.grad), np.asarray(want(jnp.asarray(x0))), rtol=1e-12)
    assert inner.recording is False


def test_writes_and_kernels_inside_a_differentiated_gradient_raise() -> None:
    @qd.kernel
    def double(a: qd.Array[qd.float64, 1], b: qd.Array[qd.float64, 1]):
        for i in range(a.shape[0]):
            b[i] = 2.0 * a[i]

    def writes(x):
        y = x * 1.0
        y[0] = 2.0
        return qd.sum(y * y)

    def launches(x):
        y = qd.zeros(3)
        double(x * 1.0, y)
        return qd.sum(y)

    x = qd.asarray([0.5, 1.0, 2.0])
    with pytest.raises(NotImplementedError, match="x\\[key\\] = value inside a nested "
                                                  "qd.ad.Tape .* not in-place writes"):
        qd.ad.grad(lambda x: qd.sum(qd.ad.grad(writes)(x)))(x)
    with pytest.raises(NotImplementedError, match="kernel 'double' inside a nested"):
        qd.ad.grad(lambda x: qd.sum(qd.ad.grad(launches)(x)))(x)
    # The same gradients, not differentiated again, are fine.
    np.testing.assert_allclose(host(qd.ad.grad(writes)(x)), [0.0, 2.0, 4.0])
