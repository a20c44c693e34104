"""Math on the Vulkan device where GLSL.std.450 or the driver falls short of NumPy, against
float64 (or exact) references: float32 functions near 0 and near 1, sin / cos / tan of large
arguments (Payne and Hanek's reduction), mixed-width integer floor division, sorting bools,
complex scalar parameters."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def _max_rel(got: np.ndarray, want: np.ndarray) -> float:
    ok = np.isfinite(want) & (want != 0)
    return float(np.max(np.abs(got[ok].astype(np.float64) - want[ok]) / np.abs(want[ok])))


SMALL = np.concatenate([np.geomspace(1e-30, 20, 1500), -np.geomspace(1e-30, 20, 500)])


@pytest.mark.parametrize("name", ["expm1", "log1p", "sinh", "tanh", "asinh", "atanh", "acosh",
                                  "log", "log2", "log10", "sin", "cos", "tan"])
def test_float32_functions_near_zero_and_one(device, name):
    x = SMALL.astype(np.float32)
    if name == "acosh":
        x = (1 + np.abs(SMALL[:1500])).astype(np.float32)
    elif name in ("log", "log2", "log10"):
        x = np.concatenate([np.abs(x), (1 + SMALL / 30).astype(np.float32)])
    elif name == "atanh":
        x = x[np.abs(x) < 1]
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64))
    got = host(getattr(qd, name)(qd.asarray(x, device=device)))
    assert got.dtype == np.float32
    assert _max_rel(got, want) < 1e-6, name  # a few float32 ulp


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_of_large_arguments(device, name):
    rng = np.random.default_rng(0)
    # float64 up to the largest double, incl. 2^20 where the large reduction starts
    x = np.concatenate([[2.0 ** 20, 2.0 ** 20 - 1, 47628727809.0, 1e22, 1.7e308, -1e300],
                        10.0 ** rng.uniform(5, 308, 800) * rng.choice([-1, 1], 800)])
    got = host(getattr(qd, name)(qd.asarray(x, device=device)))
    assert _max_rel(got, getattr(np, name)(x)) < 2e-15
    # float32 up to 3.4e38, where drivers' own reduction is garbage past 1e7
    x32 = (10.0 ** rng.uniform(0, 38, 800) * rng.choice([-1, 1], 800)).astype(np.float32)
    x32[:3] = [2.0 ** 16, 1e8, 3.4e38]
    got = host(getattr(qd, name)(qd.asarray(x32, device=device)))
    assert _max_rel(got, getattr(np, name)(x32.astype(np.float64))) < 1e-6


@pytest.mark.parametrize("bdtype", [np.int8, np.int16, np.int32, np.int64])
def test_floor_division_of_int64_by_narrower_signed_integers(device, bdtype):
    # lavapipe mis-compiles (r < 0) != (b < 0) for b sign-extended from 32 bits; the sign
    # test is (r ^ b) < 0
    a0 = np.array([1, -1, 7, -7, 1, 0, 2**62, -(2**62)], np.int64)
    b0 = np.array([-2, 2, -2, 2, -2, -3, -3, 5], bdtype)
    a, b = qd.asarray(a0, device=device), qd.asarray(b0, device=device)
    np.testing.assert_array_equal(host(a // b), a0 // b0)
    np.testing.assert_array_equal(host(a % b), a0 % b0)


def test_bools_sort_in_numpys_order(device):
    # the sorting kernels compare bools with <, as NumPy orders them (False < True)
    x0 = np.array([True, False, True, True, False, False, True])
    x = qd.asarray(x0, device=device)
    np.testing.assert_array_equal(host(qd.sort(x)), np.sort(x0))
    np.testing.assert_array_equal(host(qd.sort(x, descending=True)), np.sort(x0)[::-1])
    np.testing.assert_array_equal(host(qd.argsort(x, stable=True)),
                                  np.argsort(x0, kind="stable"))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_scalars_pass_as_two_parts(device, dtype):
    z0 = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(dtype)
    z = qd.asarray(z0, device=device)
    got = host(z + dtype(1.5 - 2.25j))  # a complex scalar parameter of the map kernel
    np.testing.assert_array_equal(got, z0 + dtype(1.5 - 2.25j))
    got = host(qd.full(3, -0.5 + 4j, dtype=qd.complex64 if dtype == np.complex64
                        else qd.complex128, device=device))
    np.testing.assert_array_equal(got, np.full(3, dtype(-0.5 + 4j)))
