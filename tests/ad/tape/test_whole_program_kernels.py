"""Kernels and namespace operations on one tape: the mixed program of the design (namespace
preprocessing, a kernel with a data-dependent loop, a reduction) against a float64 reference,
kernel outputs that get gradient companions, and Hypothesis-generated compositions of
operations and kernels against finite differences. The device directories run these too
(tests/device_suites.py: WHOLE_PROGRAM_KERNELS)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qdarray as qd

jax = pytest.importorskip("jax", reason="JAX is a test extra: the float64 reference")
jnp = pytest.importorskip("jax.numpy", reason="JAX is a test extra")
jax.config.update("jax_enable_x64", True)


@pytest.fixture
def device() -> str:
    """The CPU here; the device directories bring their own."""
    return "cpu"


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


@qd.kernel
def iterate(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[i] = v


@qd.kernel
def smooth(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.math.sin(x[i]) * x[i] + 0.5 * x[i]


@qd.kernel
def total(x: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        out[0] += x[i] * x[i]


def mixed(raw, w, a, target):
    """Namespace preprocessing, the dynamic-loop kernel, a reduction (qdarray)."""
    z = (raw - qd.mean(raw)) / qd.std(raw)
    x = qd.tanh(z * w[0] + w[1]) * 0.5 + 0.5
    y = qd.zeros_like(x)
    iterate(x, a, y)
    return qd.sum(y * y) + qd.linalg.vector_norm(y - target)


def mixed_reference(raw, w, a, target):
    """The same program in JAX, the loop masked to max(a) steps (float64)."""
    z = (raw - jnp.mean(raw)) / jnp.std(raw)
    v = jnp.tanh(z * w[0] + w[1]) * 0.5 + 0.5

    def step(k, v):
        return jnp.where(k < a, v - 0.1 * v * v + 0.01, v)

    y = jax.lax.fori_loop(0, int(np.max(a)), step, v)
    return jnp.sum(y * y) + jnp.linalg.norm(y - target)


def test_mixed_program_equals_the_float64_reference(device: str) -> None:
    rng = np.random.default_rng(3)
    n = 64
    raw0, w0 = rng.normal(size=n), np.array([0.8, -0.1])
    a0 = rng.integers(0, 30, n).astype(np.int32)
    t0 = rng.uniform(0.2, 0.6, n)
    raw = qd.asarray(raw0, device=device, requires_grad=True)
    w = qd.asarray(w0, device=device, requires_grad=True)
    a, target = qd.asarray(a0, device=device), qd.asarray(t0, device=device)
    with qd.ad.Tape() as tape:
        loss = mixed(raw, w, a, target)
    assert tape.stats()["kernel_launches"] == 1
    tape.backward(loss)
    value = mixed_reference(jnp.asarray(raw0), jnp.asarray(w0), jnp.asarray(a0), t0)
    g_raw, g_w = jax.grad(mixed_reference, argnums=(0, 1))(jnp.asarray(raw0), jnp.asarray(w0),
                                                           jnp.asarray(a0), t0)
    np.testing.assert_allclose(float(loss), float(value), rtol=1e-12)
    np.testing.assert_allclose(host(raw.grad), np.asarray(g_raw), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(w.grad), np.asarray(g_w), rtol=1e-10)
    assert raw.grad.device == qd.Device(device)
    # the functional form gives the same
    g2 = qd.ad.grad(mixed, argnums=(0, 1))(raw, w, a, target)
    np.testing.assert_allclose(host(g2[0]), np.asarray(g_raw), rtol=1e-10, atol=1e-12)


def test_kernel_outputs_get_companions_and_interleave(device: str) -> None:
    x0 = np.linspace(-1.0, 1.0, 7)
    x = qd.asarray(x0, device=device, requires_grad=True)
    with qd.ad.Tape() as tape:
        h = qd.exp(x * 0.5)                         # namespace
        y = qd.zeros(7, dtype=qd.float64, device=device)
        smooth(h, y)                                # kernel: y gets a companion
        assert y.grad is not None and h.grad is not None
        u = qd.flip(y) * h                          # namespace again
        out = qd.zeros(1, dtype=qd.float64, device=device)
        total(u, out)                               # kernel
        loss = out[0] * 3.0 + qd.sum(y)
    tape.backward(loss)

    def reference(x):
        h = jnp.exp(x * 0.5)
        y = jnp.sin(h) * h + 0.5 * h
        u = jnp.flip(y) * h
        return jnp.sum(u * u) * 3.0 + jnp.sum(y)

    np.testing.assert_allclose(host(x.grad), np.asarray(jax.grad(reference)(jnp.asarray(x0))),
                               rtol=1e-12)


def test_the_loss_form_with_namespace_operations_before_the_kernel(device: str) -> None:
    x = qd.asarray(np.array([0.3, 0.7]), device=device, requires_grad=True)
    out = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    with qd.ad.Tape(loss=out):
        total(qd.sin(x) * 2.0, out)
    np.testing.assert_allclose(host(x.grad), 8.0 * np.sin([0.3, 0.7]) * np.cos([0.3, 0.7]),
                               rtol=1e-12)


def test_a_kernel_output_used_through_another_array_raises(device: str) -> None:
    x = qd.asarray(np.array([0.3, 0.7, 0.1, 0.2]), device=device, requires_grad=True)
    base = qd.zeros(8, dtype=qd.float64, device=device)
    with qd.ad.Tape():
        smooth(x, base[0:4])                        # the companion goes to the slice
        with pytest.raises(qd.AutodiffError, match="argument 'y' of kernel 'smooth'"):
            qd.sum(base)


# -- Hypothesis: compositions of operations and kernels -----------------------------------------

N = 8
A_STEPS = np.array([0, 3, 1, 5, 2, 0, 4, 6], dtype=np.int32)


def _apply(op: int, h: qd.Array, w: qd.Array, a: qd.Array) -> qd.Array:
    if op == 0:
        return qd.sin(h) * w
    if op == 1:
        return qd.tanh(h + w)
    if op == 2:
        return h / (w * w + 1.0)
    if op == 3:
        return qd.flip(qd.cumulative_sum(h) * 0.3)
    if op == 4:
        return qd.reshape(qd.reshape(h, (2, N // 2)) * qd.reshape(w, (2, N // 2)), (N,))
    if op == 5:
        y = qd.zeros(N, dtype=qd.float64, device=h.device)
        smooth(h, y)
        return y
    if op == 6:
        y = qd.zeros(N, dtype=qd.float64, device=h.device)
        iterate(qd.tanh(h) * 0.4 + 0.5, a, y)
        return y
    if op == 7:
        g = h * 1.0
        g[1:3] = h[4:6] * w[0]
        return g
    if op == 8:
        return qd.sort(h) + qd.roll(w, 3) * h
    if op == 9:
        return qd.concat([h[N // 2:], h[:N // 2] * 2.0]) + qd.max(h) * 0.1
    return qd.exp(h * 0.2) * qd.mean(w)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 10), min_size=1, max_size=6))
def test_compositions_against_finite_differences(ops: list[int]) -> None:
    rng = np.random.default_rng(len(ops) * 11 + sum(ops))
    x0, w0 = rng.uniform(-1, 1, N), rng.uniform(-1, 1, N)
    weights = rng.normal(size=N)
    a = qd.asarray(A_STEPS)

    def f(x: qd.Array, w: qd.Array) -> qd.Array:
        h = x
        for op in ops:
            h = _apply(op, h, w, a)
        return qd.sum(h * qd.asarray(weights))

    gx, gw = qd.ad.grad(f, argnums=(0, 1))(qd.asarray(x0), qd.asarray(w0))
    dx, dw = rng.normal(size=N), rng.normal(size=N)
    eps = 1e-6

    def at(t: float) -> float:
        return float(f(qd.asarray(x0 + t * dx), qd.asarray(w0 + t * dw)))

    numeric = (at(eps) - at(-eps)) / (2 * eps)
    analytic = float(host(gx) @ dx + host(gw) @ dw)
    assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic)), (ops, numeric, analytic)


def test_gradients_cross_devices(device: str) -> None:
    x0 = np.array([0.25, 0.5, 1.0])
    x = qd.asarray(x0, requires_grad=True)              # on the CPU
    with qd.ad.Tape() as tape:
        d = x.to_device(device)                         # recorded: to_device
        e = qd.asarray(qd.exp(d), device="cpu")         # recorded: asarray across devices
        f = qd.astype(qd.sin(d), qd.float32, device="cpu")
        loss = qd.sum(e * x) + qd.sum(qd.astype(f, qd.float64))
    tape.backward(loss)
    assert x.grad.device == qd.Device("cpu")
    np.testing.assert_allclose(host(x.grad), np.exp(x0) * x0 + np.exp(x0) + np.cos(x0),
                               rtol=1e-6)
