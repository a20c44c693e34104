"""Arrays on a Vulkan device: storage, views, transfers to and from every device, DLPack,
dtypes the device lacks, and the namespace (its kernels on the device)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _instance
from qdarray.backends.vulkan._array import device_of


@pytest.fixture
def no_fp64(device: str) -> Iterator[str]:
    """The test device, pretending to report no float64 and no 64-bit integers (the
    namespace's kernels compiled before or during the pretence are dropped)."""
    launchers = device_of(_instance.state(0)).launchers
    launchers.clear()
    _instance.set_override(0, float64=False, int64=False)
    yield device
    _instance.set_override(0, float64=None, int64=None)
    launchers.clear()


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def test_round_trip_of_every_dtype(device):
    for dt in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
               "uint64", "float32", "float64", "complex64", "complex128"):
        values = np.arange(-3, 9).reshape(3, 4).astype(dt)
        x = qd.asarray(values, device=device)
        assert x.device == qd.Device(device) and x.dtype == getattr(qd, dt)
        np.testing.assert_array_equal(host(x), values)


def test_basic_indexing_gives_views_that_write_through(device):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = qd.asarray(base, device=device)
    v = x[1:, ::-2]
    np.testing.assert_array_equal(host(v), base[1:, ::-2])
    v[...] = -1.0
    base[1:, ::-2] = -1.0
    np.testing.assert_array_equal(host(x), base)
    t = x.T
    t[0, 3] = 99.0  # x[3, 0]
    base[3, 0] = 99.0
    np.testing.assert_array_equal(host(x), base)
    x[x > 20] = 0.0  # boolean mask: through a host copy, still in place
    base[base > 20] = 0.0
    np.testing.assert_array_equal(host(x), base)
    np.testing.assert_array_equal(host(x[qd.asarray([2, 0], device=device)]), base[[2, 0]])


def test_inplace_operators_and_reshape_keep_the_buffer(device):
    x = qd.asarray(np.arange(12, dtype=np.int32), device=device)
    r = qd.reshape(x, (3, 4))
    r += 1  # a contiguous reshape is a view: x sees it
    np.testing.assert_array_equal(host(x), np.arange(12) + 1)
    with pytest.raises(ValueError, match=r"reshape an array of size 12 .* into shape \(5, -1\)"):
        qd.reshape(x, (5, -1))


def test_namespace_functions_compute_on_vulkan_arrays(device):
    a = np.linspace(-2, 2, 50, dtype=np.float32)
    x = qd.asarray(a, device=device)
    y = qd.sin(x) * 2 + x
    assert y.device == x.device
    np.testing.assert_allclose(host(y), np.sin(a) * 2 + a, rtol=1e-6)
    assert float(qd.sum(x)) == pytest.approx(float(a.sum()), abs=1e-4)
    np.testing.assert_array_equal(host(qd.argsort(x)), np.argsort(a, kind="stable"))
    z = qd.linspace(0, 1, 5, dtype=qd.float32, device=device)
    assert z.device == x.device
    np.testing.assert_array_equal(host(z), np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_allclose(host(qd.linalg.inv(qd.eye(3, device=device) * 2)),
                               np.eye(3) / 2)


def test_the_standards_special_cases(device):
    # The host namespace computes with the CPU backend's functions, so NumPy's values are
    # corrected where the standard's differ (backends/special_cases.py), as on the CPU.
    inf = np.inf
    x1 = np.array([inf, inf, -inf, 1.0, -1.0, 1.0, 7.0])
    x2 = np.array([2.0, -2.0, 2.0, -inf, inf, 0.1, -2.0])
    want = np.array([inf, -inf, -inf, -0.0, -0.0, 9.0, -4.0])
    a, b = qd.asarray(x1, device=device), qd.asarray(x2, device=device)
    for got in (a // b, qd.floor_divide(a, b)):
        np.testing.assert_array_equal(host(got), want)
        np.testing.assert_array_equal(np.signbit(host(got)), np.signbit(want))
    a //= b
    np.testing.assert_array_equal(host(a), want)
    z = np.array([complex(inf, 0.0), complex(-inf, 1.0), complex(-0.0, 0.0)])
    got = host(qd.expm1(qd.asarray(z, device=device)))
    np.testing.assert_array_equal(got, [complex(inf, 0.0), complex(-1.0, 0.0), 0j])
    assert not np.signbit(got.imag).any() and not np.signbit(got.real[2])
    got = host(qd.tanh(qd.asarray([complex(inf, 2.0), complex(-inf, -3.0)], device=device)))
    np.testing.assert_array_equal(got.real, [1.0, -1.0])
    np.testing.assert_array_equal(np.signbit(got.imag), [False, True])  # NumPy: [True, False]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_signed_zeros_and_powers_at_special_values(device, dtype):
    # the SPIR-V renderer's sin / tan keep -0 and its pow follows C's special cases (-inf to
    # a non-integer power is |x| ** y; a NaN exponent gives NaN unless x is 1), as NumPy
    zeros = np.array([-0.0, 0.0, 1.0], dtype)
    for fn in ("sin", "tan"):
        got = host(getattr(qd, fn)(qd.asarray(zeros, device=device)))
        assert list(np.signbit(got[:2])) == [True, False], (fn, got)
    inf, nan = np.inf, np.nan
    a = np.array([2.0, 0.0, -0.0, -inf, -inf, -inf, -inf, nan, 1.0, -2.0, -inf], dtype)
    b = np.array([nan, nan, nan, nan, 0.5, -0.5, 3.0, 0.0, nan, 0.5, -3.0], dtype)
    with np.errstate(all="ignore"):
        want = a ** b
    got = host(qd.asarray(a, device=device) ** qd.asarray(b, device=device))
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)  # a NaN's sign is not part of its value
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def test_transfers_to_and_from_every_device(device):
    values = np.arange(10, dtype=np.float32)
    x = qd.asarray(values, device=device)
    for other in qd.__array_namespace_info__().devices():
        if other.kind == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            continue  # the simulator has no device memory to copy into (a GPU run has)
        y = x.to_device(other)
        assert y.device == other
        back = y.to_device(device)
        assert back.device == x.device
        np.testing.assert_array_equal(host(back), values)
    with pytest.raises(ValueError, match="vulkan:0 and cpu"):
        x + qd.asarray(values)


def test_dlpack_exports_host_copies_and_refuses_zero_copy(device):
    x = qd.asarray(np.arange(6, dtype=np.int32), device=device)
    assert x.__dlpack_device__() == (7, 0)  # kDLVulkan
    with pytest.raises(BufferError, match="without a copy"):
        np.from_dlpack(x)
    np.testing.assert_array_equal(np.from_dlpack(x.to_device("cpu")), np.arange(6))
    capsule = x.__dlpack__(dl_device=(1, 0), copy=True)
    assert capsule is not None
    np.testing.assert_array_equal(host(qd.from_dlpack(x, device="cpu")), np.arange(6))
    # importing onto the device: a copy, which copy=False refuses
    y = qd.from_dlpack(np.arange(4.0, dtype=np.float32), device=device)
    assert y.device == qd.Device(device)
    np.testing.assert_array_equal(host(y), np.arange(4.0))
    with pytest.raises(BufferError, match="copy=False"):
        qd.from_dlpack(np.arange(4.0), device=device, copy=False)


def test_dtypes_the_device_lacks_are_refused(no_fp64):
    with pytest.raises(TypeError, match=r"vulkan:0 does not support dtype qdarray.float64"):
        qd.zeros(3, dtype=qd.float64, device=no_fp64)
    with pytest.raises(TypeError, match="int64"):
        qd.asarray(np.arange(3, dtype=np.int64), device=no_fp64)
    info = qd.__array_namespace_info__()
    assert "float64" not in info.dtypes(device=qd.Device(no_fp64))
    y = qd.asarray(np.ones(4, np.float32), device=no_fp64)
    # the namespace's kernels index in 64 bits, as user kernels do
    with pytest.raises(TypeError, match=r"vulkan:0 .* need 64-bit integers \(shaderInt64\)"):
        y * 3.0
    _instance.set_override(0, int64=None)
    np.testing.assert_array_equal(host(y * 2.0), 2.0)  # float32 without float64


def test_capabilities_and_memory_figures(device):
    dev = qd.Device(device)
    caps = dev.backend.capabilities(dev)
    assert caps["device name"] and caps["device type"] in ("CPU", "discrete GPU",
                                                           "integrated GPU", "virtual GPU",
                                                           "other")
    assert caps["host functions"] and isinstance(caps["float64"], bool)
    free = dev.backend.available_bytes(dev)
    assert free is not None and free > 0
    st = _instance.state(0)
    assert free <= max(st.heap_sizes)


def test_a_device_filter_that_matches_nothing_says_so(device):
    import subprocess
    import sys

    env = dict(os.environ, QDARRAY_VULKAN_DEVICE="no-such-gpu")
    code = ("import qdarray as qd\n"
            "try:\n    qd.zeros(2, device='vulkan:0')\n"
            "except ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120).stdout
    assert "There is no Vulkan device vulkan:0; present: none." in out
    assert "does not contain QDARRAY_VULKAN_DEVICE='no-such-gpu'" in out
