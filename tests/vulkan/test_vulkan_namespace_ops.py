"""The ops the namespace's IR kernels use (complex scalars, FMA, NEXTAFTER) through the SPIR-V
generator and the Vulkan launcher, against NumPy: the map kernels of
`kernels/library` compiled for the Vulkan device as any kernel is (complex values are 2-vectors
of their parts there)."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import run_map

import qdarray as qd
from qdarray import _dtypes as D
from qdarray.backends.kernel_xp.device import target_launcher
from qdarray.backends.vulkan import _instance, _probes
from qdarray.backends.vulkan._array import VkArray, device_of
from qdarray.backends.vulkan._probes import fma_kernel
from qdarray.kernels.library.maps import MapSpec, Operand
from qdarray.kernels.ops.math import fma_value


def test_complex_products_and_quotients(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    b = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    c = D.complex128
    ops = (Operand(True, c, c), Operand(True, c, c))
    got = run_map(MapSpec("multiply", c, c, ops, 1), device, np.zeros(40, complex), a, b)
    f = D.float64  # NumPy's fused loops: fma(ar, br, -(ai bi)), fma(ar, bi, ai br)
    want = [complex(fma_value(f, x.real, y.real, -(x.imag * y.imag)),
                    fma_value(f, x.real, y.imag, x.imag * y.real))
            for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got, want)
    got = run_map(MapSpec("divide", c, c, ops, 1), device, np.zeros(40, complex), a, b)
    np.testing.assert_array_equal(got, a / b)  # Smith's quotient, each operation rounded


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once_whether_or_not_the_driver_fuses(device, dtype):
    # GLSL.std.450's Fma may round the product first (Vulkan allows it; lavapipe does): the
    # renderer then emulates it (spirv/fma.py). Both paths against the exact result.
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(200).astype(dtype) for _ in range(3))
    a[:40] = 1 + rng.integers(1, 2**12, 40) * np.finfo(dtype).eps  # cancelling products
    b[:40] = 1 - rng.integers(1, 2**12, 40) * np.finfo(dtype).eps
    c[:40] = -1
    big, tiny = np.finfo(dtype).max / 4, np.finfo(dtype).tiny * 2**30
    special = [(big, 3.0, -big), (big, 1 / big, 1.0), (tiny, big, -1.0), (big, big, -np.inf),
               (np.inf, 0.0, 1.0), (2.0, 3.0, np.inf), (-0.0, 1.0, 0.0), (np.nan, 1.0, 1.0)]
    for k, (x, y, z) in enumerate(special):
        a[40 + k], b[40 + k], c[40 + k] = x, y, z
    t = D.float32 if dtype == np.float32 else D.float64
    st = _instance.state(qd.Device(device).index)
    for fused in sorted({False, _probes.fused_fma(st)}):
        monkey = dict(st.extra)
        st.extra["fused_fma"] = fused
        try:
            out = [VkArray.from_host(st, v) for v in (np.zeros_like(a), a, b, c)]
            target_launcher(device_of(st), fma_kernel(t))(out)
        finally:
            st.extra.clear()
            st.extra.update(monkey)
        with np.errstate(all="ignore"):
            want = np.array([fma_value(t, x, y, z) for x, y, z in zip(a, b, c, strict=True)],
                            dtype)
        np.testing.assert_array_equal(out[0].to_host(), want, err_msg=f"fused={fused}")


def test_complex_parts_and_nextafter(device):
    z = np.array([1 + 2j, -3j, np.inf + 0j, 0j], np.complex64)
    spec = MapSpec("abs", D.complex64, D.float32, (Operand(True, D.complex64, D.complex64),), 1)
    got = run_map(spec, device, np.zeros(4, np.float32), z)
    np.testing.assert_allclose(got, np.abs(z), rtol=1e-6)
    x, y = np.array([0.0, 1.0, -1.0]), np.array([1.0, 0.0, -np.inf])
    f = D.float64
    spec = MapSpec("nextafter", f, f, (Operand(True, f, f), Operand(True, f, f)), 1)
    np.testing.assert_array_equal(run_map(spec, device, np.zeros(3), x, y), np.nextafter(x, y))
