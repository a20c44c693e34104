"""The ops the namespace's IR kernels use (complex scalars, FMA, NEXTAFTER) through the CUDA
generator and launcher, against NumPy and exact references: the map kernels of
`kernels/library` compiled for the CUDA device as any kernel is."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
from device_harness import run_map

from qdarray import _dtypes as D
from qdarray.kernels.library.maps import MapSpec, Operand

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


def test_complex_products_and_quotients(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    b = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    c = D.complex128
    ops = (Operand(True, c, c), Operand(True, c, c))
    got = run_map(MapSpec("multiply", c, c, ops, 1), device, np.zeros(40, complex), a, b)
    for x, y, z in zip(a, b, got, strict=True):  # fused as NumPy's loops fuse them
        re = Fraction(x.real) * Fraction(y.real) - Fraction(float(x.imag * y.imag))
        im = Fraction(x.real) * Fraction(y.imag) + Fraction(float(x.imag * y.real))
        assert (z.real, z.imag) == (float(re), float(im))
    got = run_map(MapSpec("divide", c, c, ops, 1), device, np.zeros(40, complex), a, b)
    if SIMULATED:
        np.testing.assert_array_equal(got, a / b)
    else:  # NVVM contracts a * b + c into one FMA (as nvcc and CuPy do): the last bit may differ
        np.testing.assert_allclose(got, a / b, rtol=4 * np.finfo(np.float64).eps, atol=0)


def test_complex_parts_and_nextafter(device):
    z = np.array([1 + 2j, -3j, np.inf + 0j, 0j], np.complex64)
    spec = MapSpec("abs", D.complex64, D.float32, (Operand(True, D.complex64, D.complex64),), 1)
    got = run_map(spec, device, np.zeros(4, np.float32), z)
    np.testing.assert_allclose(got, np.abs(z), rtol=1e-6)
    x, y = np.array([0.0, 1.0, -1.0]), np.array([1.0, 0.0, -np.inf])
    f = D.float64
    spec = MapSpec("nextafter", f, f, (Operand(True, f, f), Operand(True, f, f)), 1)
    np.testing.assert_array_equal(run_map(spec, device, np.zeros(3), x, y), np.nextafter(x, y))
