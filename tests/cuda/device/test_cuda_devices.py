"""CUDA devices: listing, capabilities, transfers between the host and the device, copies
and views, and exchange with other libraries (DLPack, the CUDA Array Interface).

The exchanges with CuPy, PyTorch and JAX need a real GPU and those libraries; each such test
says why it is skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SIMULATED

import qdarray as qd


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def test_devices_listed_and_capabilities(device):
    info = qd.__array_namespace_info__()
    listed = [d for d in info.devices() if d.kind == "cuda"]
    assert listed[0] == qd.Device(device) and str(listed[0]) == "cuda:0"
    caps = qd.Device(device).backend.capabilities(qd.Device(device))
    assert caps["float64"] is True and caps["boolean indexing"] and caps["device name"]
    assert caps["simulated"] is SIMULATED
    assert info.default_dtypes(device=device)["real floating"] == qd.float64
    assert "float64" in info.dtypes(device=device)


def test_an_index_past_the_devices_is_refused(device):
    n = len([d for d in qd.__array_namespace_info__().devices() if d.kind == "cuda"])
    with pytest.raises(ValueError, match=rf"cuda:{n + 3} does not exist: this machine has {n}"):
        qd.zeros(3, device=f"cuda:{n + 3}")


def test_transfers_copy_and_keep_dtype(device):
    for dtype in (np.float32, np.float64, np.int8, np.uint64, np.bool_):
        a = (np.arange(10) % 3).astype(dtype)
        x = qd.asarray(a, device=device)
        assert x.device == qd.Device(device) and x.dtype == qd.asarray(a).dtype
        back = x.to_device("cpu")
        assert back.device == qd.Device("cpu")
        np.testing.assert_array_equal(np.asarray(back), a)
    a = np.arange(5.0)
    x = qd.asarray(a, device=device)
    a[0] = 99.0  # the device array is a copy
    assert host(x)[0] == 0.0
    h = np.asarray(x)  # a copy too (np.asarray of a device array)
    h[1] = 99.0
    assert host(x)[1] == 1.0
    y = qd.asarray(x, device="cpu")
    np.testing.assert_array_equal(np.asarray(y), [0, 1, 2, 3, 4])
    z = qd.asarray(x)  # same device: no copy, writes visible
    z[2] = 7.0
    assert host(x)[2] == 7.0
    assert x.to_device(device) is x


def test_copy_false_refuses_a_transfer(device):
    with pytest.raises(ValueError, match="copy=False"):
        qd.asarray(np.arange(3.0), device=device, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        qd.asarray([1.0, 2.0], device=device, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        qd.asarray(qd.ones(3, device=device), device="cpu", copy=False)
    with pytest.raises(ValueError, match="to_device"):
        np.asarray(qd.ones(3, device=device), copy=False)


def test_repr_names_the_device(device):
    x = qd.asarray([1, 2], dtype=qd.int32, device=device)
    assert repr(x) == f"Array([1, 2], dtype=int32, device='{device}')"
    assert float(qd.sum(x)) == 3.0 and int(x[1]) == 2 and bool(x[0])


def test_cuda_array_interface_views_the_memory(device):
    x = qd.arange(6, dtype=qd.float32, device=device)[1:5]
    face = x.__cuda_array_interface__
    assert face["shape"] == (4,) and face["typestr"] == "<f4" and face["version"] == 3
    gen = x._buffer.generation
    base_ptr = qd.arange(1, dtype=qd.float32, device=device).__cuda_array_interface__
    assert isinstance(base_ptr["data"][0], int)
    assert x._buffer.generation == gen  # another array's export bumps only its own buffer
    _ = x.__cuda_array_interface__
    assert x._buffer.generation == gen + 1  # an export may be written through
    assert not hasattr(qd.ones(3), "__cuda_array_interface__")


def test_dlpack_round_trip_shares_memory(device):
    x = qd.arange(4, dtype=qd.int32, device=device)
    y = qd.from_dlpack(x)
    y[0] = 10
    assert host(x)[0] == 10
    z = qd.from_dlpack(x, device="cpu")
    np.testing.assert_array_equal(np.asarray(z), [10, 1, 2, 3])
    # copy=True copies on x's device (the simulator's DLPack device is the host's)
    c = qd.from_dlpack(x, copy=True)
    assert c.device == x.device
    c[1] = -1
    np.testing.assert_array_equal(host(c), [10, -1, 2, 3])
    np.testing.assert_array_equal(host(x), [10, 1, 2, 3])


def _gpu_library(name: str):
    if SIMULATED:
        pytest.skip(f"exchange with {name} needs a real GPU (the simulator has no device "
                    "memory to share)")
    return pytest.importorskip(name, reason=f"{name} is not installed")


def test_exchange_with_cupy_without_copies(device):
    cp = _gpu_library("cupy")
    x = qd.arange(8, dtype=qd.float32, device=device)
    c = cp.asarray(x)  # through __cuda_array_interface__
    assert c.data.ptr == x.__cuda_array_interface__["data"][0]
    c[0] = 42.0
    assert host(x)[0] == 42.0
    d = cp.from_dlpack(x)
    assert d.data.ptr == c.data.ptr
    back = qd.from_dlpack(cp.arange(3, dtype=cp.int64))
    assert back.device == qd.Device(device)
    np.testing.assert_array_equal(host(back), [0, 1, 2])
    y = qd.asarray(cp.ones(4, dtype=cp.float32))
    assert y.device == qd.Device(device)


def test_exchange_with_torch_without_copies(device):
    torch = _gpu_library("torch")
    x = qd.arange(8, dtype=qd.float32, device=device)
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.data_ptr() == x.__cuda_array_interface__["data"][0]
    t[1] = -1.0
    assert host(x)[1] == -1.0
    u = torch.as_tensor(x, device="cuda")  # __cuda_array_interface__
    assert u.data_ptr() == t.data_ptr()
    back = qd.from_dlpack(torch.arange(5, device="cuda"))
    assert back.device.kind == "cuda"
    np.testing.assert_array_equal(host(back), np.arange(5))


def test_exchange_with_jax_without_copies(device):
    jax = _gpu_library("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU (install jax[cuda13])")
    x = qd.arange(8, dtype=qd.float32, device=device)
    j = jax.numpy.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(j), np.arange(8, dtype=np.float32))
    back = qd.from_dlpack(jax.numpy.arange(4.0, dtype=jax.numpy.float32))
    assert back.device.kind == "cuda"
    np.testing.assert_array_equal(host(back), np.arange(4.0, dtype=np.float32))
