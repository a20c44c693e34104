"""qd.jit on whole programs: kernel launches inside, donation, gradients through and of
jitted functions (against the eager tape and float64 central differences), other devices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import qdarray as qd
from qdarray.jit.fusion import Fused


@qd.kernel
def scale_into(x: qd.Array[qd.float32, 1], out: qd.Array[qd.float32, 1], k: float):
    for i in range(x.shape[0]):
        out[i] = x[i] * k + qd.math.sin(x[i])


def _f32(values):
    return qd.asarray(np.asarray(values, dtype=np.float32))


def test_a_kernel_launch_inside_a_jitted_function():
    @qd.jit
    def f(x):
        out = qd.empty_like(x)
        scale_into(x * 2.0 + 1.0, out, 3.0)
        return out * out - 1.0

    x = _f32([0.5, 1.0, 2.0])
    f(x)
    x2 = _f32([1.5, -1.0, 0.25])
    got = f(x2)
    out = qd.empty_like(x2)
    scale_into(x2 * 2.0 + 1.0, out, 3.0)
    assert f.traces == 1 and np.array_equal(np.asarray(got), np.asarray(out * out - 1.0))


def test_a_kernel_writing_an_argument_in_place():
    @qd.jit
    def f(x, out):
        scale_into(x, out, 2.0)
        out += 1.0

    x, out = _f32([1.0, 2.0]), qd.zeros(2, dtype=qd.float32)
    f(x, out)
    f(x, out)
    expect = np.float32(2.0) * np.asarray(x) + np.sin(np.asarray(x)) + np.float32(1.0)
    np.testing.assert_allclose(np.asarray(out), expect, rtol=1e-6)


def test_donated_arrays_lend_their_memory_and_cannot_be_used_after():
    @qd.jit(donate_argnums=0)
    def f(x, y):
        return x * 2.0 + y

    def fresh():
        return qd.asarray(np.arange(1e5, dtype=np.float64)), qd.ones(100000)

    f(*fresh())
    x, y = fresh()
    memory = np.asarray(x).__array_interface__["data"][0]
    r = f(x, y)
    assert np.asarray(r).__array_interface__["data"][0] == memory
    assert np.array_equal(np.asarray(r), np.arange(1e5) * 2.0 + 1.0)
    with pytest.raises(qd.jit.DonatedArrayError, match="donated"):
        qd.sum(x)
    with pytest.raises(qd.DonatedArrayError):
        x + 1.0
    assert np.array_equal(np.asarray(y), np.ones(100000))  # not donated


def test_a_donated_array_still_read_later_keeps_its_memory():
    @qd.jit(donate_argnums=0)
    def f(x):
        y = x * 2.0 + 1.0
        return y, qd.sum(x)

    x = qd.asarray(np.arange(10.0))
    f(x)
    x = qd.asarray(np.arange(10.0))
    y, s = f(x)
    assert np.array_equal(np.asarray(y), np.arange(10.0) * 2.0 + 1.0) and float(s) == 45.0


def loss(w, x):
    h = qd.tanh(x @ w * 0.5 + 0.1)
    return qd.sum((h * h - 0.25) * 2.0 + h)


def _data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((4, 3)), rng.standard_normal((5, 4))


def _central(w, x, eps=1e-6):
    g = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        hi = float(loss(qd.asarray(w + d), qd.asarray(x)))
        lo = float(loss(qd.asarray(w - d), qd.asarray(x)))
        g[i] = (hi - lo) / (2 * eps)
    return g


def test_grad_of_jit_is_the_eager_gradient():
    w, x = _data()
    jl = qd.jit(loss)
    jl(qd.asarray(w), qd.asarray(x))  # traced outside a tape: the program has a fused run
    (program,) = jl.programs.values()
    assert any(type(s) is Fused for s in program.steps)
    got = qd.ad.grad(jl)(qd.asarray(w), qd.asarray(x))
    want = qd.ad.grad(loss)(qd.asarray(w), qd.asarray(x))
    assert np.array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_allclose(np.asarray(got), _central(w, x), rtol=1e-6, atol=1e-8)
    value, g2 = qd.ad.value_and_grad(jl)(qd.asarray(w), qd.asarray(x))
    assert np.array_equal(np.asarray(g2), np.asarray(want)) and jl.traces == 1
    assert float(value) == float(loss(qd.asarray(w), qd.asarray(x)))


def test_jit_of_grad_compiles_the_function_it_differentiates():
    from qdarray.ad.tape.functional import GRADIENTS

    w, x = _data()
    jg = qd.jit(qd.ad.grad(loss))
    jg(qd.asarray(w), qd.asarray(x))
    w2 = w + 0.5
    got = jg(qd.asarray(w2), qd.asarray(x))
    want = qd.ad.grad(loss)(qd.asarray(w2), qd.asarray(x))
    assert jg.traces == 1
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-14)
    inner = GRADIENTS[jg.f][0]  # qd.ad.grad(qd.jit(loss)): fused runs, fused reverses
    assert isinstance(inner, qd.jit.JitFunction) and inner.traces == 1
    (program,) = inner.programs.values()
    assert any(type(s) is Fused for s in program.steps)
    vg = qd.jit(qd.ad.value_and_grad(loss, argnums=(0, 1)))
    value, (gw, gx) = vg(qd.asarray(w2), qd.asarray(x))
    np.testing.assert_allclose(np.asarray(gw), np.asarray(want), rtol=1e-12, atol=1e-14)
    assert gx.shape == x.shape and float(value) == float(loss(qd.asarray(w2), qd.asarray(x)))


def test_a_tape_inside_a_jitted_function():
    @qd.jit
    def step(w, x):
        w = qd.asarray(w, copy=True, requires_grad=True)
        with qd.ad.Tape(loss=None) as tape:
            y = loss(w, x)
        tape.backward(y)
        return y, w.grad

    w, x = _data()
    step(qd.asarray(w), qd.asarray(x))
    y, g = step(qd.asarray(w + 0.25), qd.asarray(x))
    want = qd.ad.grad(loss)(qd.asarray(w + 0.25), qd.asarray(x))
    assert step.traces == 1 and np.allclose(np.asarray(g), np.asarray(want), rtol=1e-12)


def _other_devices():
    # the first device of each other kind (opencl:0, vulkan:0, cuda:0 where present)
    first = {}
    for d in qd.__array_namespace_info__().devices():
        first.setdefault(str(d).split(":")[0], d)
    return [d for kind, d in first.items() if kind != "cpu"]


@pytest.mark.parametrize("device", _other_devices() or [pytest.param(
    None, marks=pytest.mark.skip(reason="no device other than the CPU here"))])
def test_other_devices_replay_the_calls(device):
    def f(x, y):
        return qd.sqrt(x * x + y) * 0.5 - x

    jf = qd.jit(f)
    x = qd.asarray(np.linspace(0, 1, 64, dtype=np.float32), device=device)
    y = qd.asarray(np.linspace(1, 2, 64, dtype=np.float32), device=device)
    jf(x, y)
    got = jf(y, x)
    assert got.device == device
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")),
                                  np.asarray(f(y, x).to_device("cpu")))


@dataclass(frozen=True)
class Particles:
    pos: qd.Array[qd.float32, 1]
    vel: qd.Array[qd.float32, 1]


@qd.kernel
def advance(p: Particles, dt: float):
    for i in range(p.pos.shape[0]):
        p.pos[i] = p.pos[i] + p.vel[i] * dt


def test_a_kernel_taking_a_dataclass_of_traced_arrays():
    @qd.jit
    def f(pos, vel):
        pos = pos * 1.0 + 0.0  # a traced copy
        advance(Particles(pos, vel * 2.0 - 1.0), 0.5)
        return pos

    pos, vel = _f32([0.0, 1.0, 2.0]), _f32([1.0, 2.0, 3.0])
    f(pos, vel)
    pos2, vel2 = _f32([5.0, 6.0, 7.0]), _f32([0.5, 0.25, 1.0])
    got = f(pos2, vel2)
    want = np.float32([5.0, 6.0, 7.0]) + (np.float32([0.5, 0.25, 1.0]) * 2 - 1) * np.float32(0.5)
    assert f.traces == 1 and np.array_equal(np.asarray(got), want)


def _taped(fn, *arrays):
    """fn's value and the gradients of its arguments on a tape, and the tape's records."""
    leaves = [qd.asarray(a, copy=True, requires_grad=True) for a in arrays]
    with qd.ad.Tape() as tape:
        y = fn(*leaves)
    names = [n.op for n in tape.records]
    tape.backward(y)
    return float(y), [np.asarray(x.grad) for x in leaves], names


def mixed_loss(x, w, b):
    z = (x - qd.mean(x)) * w[0] + b            # a 0-d array and a row vector, broadcast
    u = qd.where(z > 0.0, z, z * 0.1) / (qd.abs(b) + 1.0)
    v = qd.sqrt(u * u + 1.0) - qd.maximum(u, 0.25)
    return qd.sum(v * v + u)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fused_run_records_one_operation_whose_reverse_is_a_kernel(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4)).astype(dtype)
    w = np.array([0.7, -0.2], dtype)
    b = rng.standard_normal(4).astype(dtype)
    jl = qd.jit(mixed_loss)
    jl(qd.asarray(x), qd.asarray(w), qd.asarray(b))
    value, grads, names = _taped(jl, x, w, b)
    want_value, want, eager_names = _taped(mixed_loss, x, w, b)
    assert "jit.fused" in names and len(names) < len(eager_names)
    assert np.isclose(value, want_value, rtol=1e-6 if dtype == np.float32 else 1e-14)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, e in zip(grads, want, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
    if dtype == np.float64:  # and float64 central differences
        eps = 1e-6
        for k, arg in enumerate((x, w, b)):
            for i in np.ndindex(arg.shape):
                args = [a.copy() for a in (x, w, b)]
                args[k][i] += eps
                hi = float(mixed_loss(*(qd.asarray(a) for a in args)))
                args[k][i] -= 2 * eps
                lo = float(mixed_loss(*(qd.asarray(a) for a in args)))
                assert abs((hi - lo) / (2 * eps) - grads[k][i]) < 1e-6


def test_nested_tapes_get_the_calls_one_by_one():
    def f(x):
        return qd.sum((x * x + 1.0) * x)

    x = qd.asarray(np.linspace(-1.0, 1.0, 5))
    jf = qd.jit(f)
    jf(x)
    hess_diag = qd.ad.grad(lambda v: qd.sum(qd.ad.grad(jf)(v)))(x)
    np.testing.assert_allclose(np.asarray(hess_diag), 6.0 * np.linspace(-1.0, 1.0, 5),
                               atol=1e-12)
