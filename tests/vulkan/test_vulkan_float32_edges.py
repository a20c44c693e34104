"""float32 special values through the SPIR-V renderer's own math, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


def host(x):
    return np.asarray(x.to_device("cpu"))


@pytest.mark.xfail(strict=True, reason=(
    "spirv_numerics._float_pow takes float32 |x|^y from GLSL's Pow, which lavapipe evaluates "
    "to 0 for a NaN base: pow(nan, 2.5) gives 0.0 instead of nan (float64 is right)"))
def test_float32_pow_of_nan_is_nan(device):
    x = np.array([np.nan, np.nan, np.nan, np.nan, 2.0], np.float32)
    y = np.array([2.5, 2.0, -1.0, 1e30, 0.5], np.float32)
    got = host(qd.pow(qd.asarray(x, device=device), qd.asarray(y, device=device)))
    np.testing.assert_array_equal(got, np.power(x, y))


@pytest.mark.xfail(strict=True, reason=(
    "spirv_expfns._log1p computes log(u) * x / (u - 1): the product overflows float32 for "
    "x past about 3.8e36 (log1p(3e38) gives inf instead of 88.6); log(u) * (x / (u - 1)) "
    "does not"))
def test_float32_log1p_of_large_values(device):
    z = np.array([1e30, 1e37, 1.7e38, 3e38, np.finfo(np.float32).max], np.float32)
    got = host(qd.log1p(qd.asarray(z, device=device)))
    np.testing.assert_allclose(got, np.log1p(z), rtol=2e-7)
