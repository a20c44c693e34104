"""float32 special values through the SPIR-V renderer's own math, against NumPy."""

from __future__ import annotations

import numpy as np

import qdarray as qd


def host(x):
    return np.asarray(x.to_device("cpu"))


def test_float32_pow_of_nan_is_nan(device):
    x = np.array([np.nan, np.nan, np.nan, np.nan, 2.0], np.float32)
    y = np.array([2.5, 2.0, -1.0, 1e30, 0.5], np.float32)
    got = host(qd.pow(qd.asarray(x, device=device), qd.asarray(y, device=device)))
    # NaN where NumPy gives NaN (GLSL's pow need not: lavapipe's gave 0 for a NaN base), and
    # the finite value to a few ulp (docs/vulkan.md)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(np.power(x, y)))
    np.testing.assert_allclose(got, np.power(x, y), rtol=1e-6)


def test_float32_log1p_of_large_values(device):
    z = np.array([1e30, 1e37, 1.7e38, 3e38, np.finfo(np.float32).max], np.float32)
    got = host(qd.log1p(qd.asarray(z, device=device)))
    np.testing.assert_allclose(got, np.log1p(z), rtol=2e-7)
