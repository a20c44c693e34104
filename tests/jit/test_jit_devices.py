"""qd.jit on devices other than the CPU: runs of elementwise calls fuse into one generated
kernel compiled by the device's own kernel target (OpenCL C, SPIR-V), with the eager results
bit for bit for exact operations; results stay on the device. tests/cuda/device/test_cuda_jit.py
runs them on CUDA."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.jit.fusion import Fused


def _other_devices():
    # (CUDA: tests/cuda/device/test_cuda_jit.py runs these tests with its own fixture)
    first = {}
    for d in qd.__array_namespace_info__().devices():
        first.setdefault(str(d).split(":")[0], d)
    return [d for kind, d in first.items() if kind not in ("cpu", "cuda")]


RNG = np.random.default_rng(7)


@pytest.fixture(params=_other_devices() or [pytest.param(
    None, marks=pytest.mark.skip(reason="no OpenCL or Vulkan device here"))], ids=str)
def device(request):
    return request.param


def on(device):
    return qd.Device(device) if isinstance(device, str) else device


def host(x):
    return np.asarray(x.to_device("cpu"))


def fused_steps(fn):
    (program,) = fn.programs.values()
    return [s for s in program.steps if type(s) is Fused]


def arrays(device, *shapes, dtype=np.float32):
    return [qd.asarray(RNG.standard_normal(s).astype(dtype), device=device) for s in shapes]


def test_a_chain_is_one_kernel_and_the_eager_result_bit_for_bit(device):
    def f(a, x, b):
        return ((a * x + b) * x - a) * 0.5 + b

    jf = qd.jit(f)
    jf(*arrays(device, 1000, 1000, 1000))
    a, x, b = arrays(device, 1000, 1000, 1000)
    got = jf(a, x, b)
    assert got.device == on(device) and jf.traces == 1
    (fused,) = fused_steps(jf)
    assert len(fused.calls) == 6
    np.testing.assert_array_equal(host(got), host(f(a, x, b)))


def test_transcendental_functions_fuse_with_the_eager_values(device):
    def f(x, y):
        return qd.tanh(x * 0.5 + y) * qd.exp(-x * x) + qd.log1p(y * y) - qd.sin(x)

    jf = qd.jit(f)
    jf(*arrays(device, 500, 500))
    x, y = arrays(device, 500, 500)
    got = jf(x, y)
    (fused,) = fused_steps(jf)
    assert len(fused.calls) == 12
    np.testing.assert_array_equal(host(got), host(f(x, y)))


def test_integer_division_remainder_and_mixed_dtypes_keep_numpy_semantics(device):
    # negative operands, zero divisors (NumPy gives 0), int32 with float64 promotion
    def f(a, b, x):
        q = a // b + a % b
        return q * 3 - (a >> 1), qd.where(a > b, x * 2.0, x - 1.0) + q

    jf = qd.jit(f)
    a = qd.asarray(RNG.integers(-50, 50, 300).astype(np.int32), device=device)
    b = qd.asarray(RNG.integers(-4, 5, 300).astype(np.int32), device=device)
    (x,) = arrays(device, 300)
    jf(a, b, x)
    got = jf(a, b, x)
    want = f(a, b, x)
    assert fused_steps(jf)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(host(g), host(w))
    ha, hb = host(a), host(b)
    with np.errstate(divide="ignore"):
        q = ha // hb + ha % hb
    np.testing.assert_array_equal(host(got[0]), q * 3 - (ha >> 1))


def test_broadcast_inputs_kept_intermediates_and_comparisons(device):
    def f(x, y):
        t = x * 2.0 + y
        return qd.where(t > 1.0, t, -t) * 3.0, t

    jf = qd.jit(f)
    jf(*arrays(device, (4, 5), 5))
    x, y = arrays(device, (4, 5), 5)
    got, kept = jf(x, y)
    want, want_kept = f(x, y)
    assert len(fused_steps(jf)) == 1
    np.testing.assert_array_equal(host(got), host(want))
    np.testing.assert_array_equal(host(kept), host(want_kept))


def test_a_result_kept_by_the_caller_is_not_reused(device):
    jf = qd.jit(lambda x: (x + 1.0) * 2.0)
    (x,) = arrays(device, 64)
    first = jf(x)
    saved = host(first).copy()
    second = jf(x * 3.0)
    np.testing.assert_array_equal(host(first), saved)
    np.testing.assert_array_equal(host(second), (host(x) * 3.0 + 1.0) * 2.0)


def test_runs_split_by_device_and_zero_d_operands_stay_eager(device):
    def f(x, c, s):
        y = (x * 2.0 + 1.0) * c  # c: a 0-d array on the device
        z = (s * 2.0 + 1.0) * 3.0  # s: a CPU array
        return y, z

    jf = qd.jit(f)
    (x,) = arrays(device, 16)
    c = qd.asarray(np.float32(1.5), device=device)
    s = qd.asarray(RNG.standard_normal(16).astype(np.float32))
    jf(x, c, s)
    y, z = jf(x, c, s)
    want_y, want_z = f(x, c, s)
    assert y.device == on(device) and z.device == qd.Device("cpu")
    assert [f.kernels[0].device for f in fused_steps(jf)] == [on(device), qd.Device("cpu")]
    np.testing.assert_array_equal(host(y), host(want_y))
    np.testing.assert_array_equal(host(z), host(want_z))


def test_gradients_through_a_jitted_function_equal_the_eager_tape(device):
    def loss(w, x):
        return qd.sum(((w * x + 1.0) * x - w) * 0.5)

    w, x = arrays(device, 32, 32)
    g = qd.jit(qd.ad.grad(loss))
    g(w, x)
    got = g(w, x)
    want = qd.ad.grad(loss)(w, x)
    np.testing.assert_allclose(host(got), host(want), rtol=1e-6)
    np.testing.assert_allclose(host(got), (host(x) ** 2 - 1) * 0.5, rtol=1e-5, atol=1e-6)


@qd.kernel
def _step(x: qd.Array[qd.vec3, 2], v: qd.Array[qd.vec3, 1], t: int):
    for i in range(x.shape[1]):
        p = x[t, i]
        x[t + 1, i] = p + v[i] * 0.1 - p * 0.05 * qd.math.dot(p, p)


def _simulate(x0, v, steps=6):
    x = qd.zeros((steps + 1, x0.shape[0], 3), dtype=qd.float32, device=x0.device)
    x[0] = x0
    for t in range(steps):
        _step(x, v, t)  # time-indexed state: x[t + 1] from x[t]
    y = x[steps] * 2.0 + 1.0
    y *= 0.5  # an in-place update
    return qd.sum(y * y)


def test_a_time_stepped_vec3_program_replays_and_differentiates(device):
    x0h, vh = (RNG.standard_normal((16, 3)).astype(np.float32) for _ in range(2))
    x0, v = (qd.asarray(h, device=device) for h in (x0h, vh))
    want = float(_simulate(x0, v))
    jf = qd.jit(_simulate)
    assert [float(jf(x0, v)) for _ in range(3)] == [want] * 3
    jg = qd.jit(qd.ad.grad(_simulate, argnums=(0, 1)))
    for _ in range(3):
        got = jg(x0, v)
    for g, e in zip(got, qd.ad.grad(_simulate, argnums=(0, 1))(x0, v), strict=True):
        np.testing.assert_allclose(host(g), host(e), rtol=1e-5, atol=1e-6)

    def loss64(vv):  # the same program in float64 NumPy
        x = x0h.astype(np.float64)
        for _ in range(6):
            x = x + vv * 0.1 - x * 0.05 * (x * x).sum(1, keepdims=True)
        return (((x * 2 + 1) * 0.5) ** 2).sum()

    dv = np.zeros((16, 3))
    dv[3, 1] = 1e-6
    central = (loss64(vh + dv) - loss64(vh - dv)) / 2e-6
    assert abs(host(got[1])[3, 1] - central) <= 1e-3 * max(1.0, abs(central))
