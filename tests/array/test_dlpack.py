"""Interchange with NumPy: __dlpack__ keywords, from_dlpack, np.asarray zero-copy, and
array_api_compat's namespace lookup."""

from __future__ import annotations

import importlib.util
import os

import array_api_compat
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd

DTYPES = st.sampled_from(["bool", "int8", "uint16", "int32", "int64", "float32", "float64",
                          "complex64", "complex128"])
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _host(x: qd.Array) -> np.ndarray:
    return x._data  # the CPU backend's storage, read without bumping the generation


@given(st.data())
def test_numpy_round_trips_keep_values_dtype_and_memory(data: st.DataObject) -> None:
    a = data.draw(npst.arrays(data.draw(DTYPES), SHAPES))
    x = qd.asarray(a.copy())
    for view in (x, x[::-1] if x.ndim else x, qd.permute_dims(x, tuple(range(x.ndim))[::-1])):
        y = np.from_dlpack(view)
        np.testing.assert_array_equal(y, _host(view))
        assert y.dtype == _host(view).dtype
        assert np.shares_memory(y, _host(view)) or view.size == 0
    back = qd.from_dlpack(np.from_dlpack(x))
    np.testing.assert_array_equal(_host(back), a)
    assert back.dtype == x.dtype


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 1)])
@pytest.mark.parametrize("copy", [None, True, False])
def test_dunder_dlpack_keywords(max_version: tuple[int, int] | None, copy: bool | None) -> None:
    x = qd.asarray([[1.0, 2.0], [3.0, 4.0]])
    capsule = x.__dlpack__(max_version=max_version, dl_device=(1, 0), copy=copy)
    versioned = max_version is not None and max_version >= (1, 0)
    assert ("dltensor_versioned" in repr(capsule)) == versioned
    if not versioned and copy is not None:
        return  # consumers only pass copy= with a versioned capsule
    y = np.from_dlpack(x, copy=copy, device="cpu")
    assert np.shares_memory(y, _host(x)) == (copy is not True)
    np.testing.assert_array_equal(y, [[1.0, 2.0], [3.0, 4.0]])


def test_dlpack_device_and_unsupported_targets() -> None:
    x = qd.zeros(3)
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match=r"to DLPack device \(2, 0\)"):
        x.__dlpack__(dl_device=(2, 0))


def test_export_bumps_the_generation_only_when_memory_is_shared() -> None:
    x = qd.zeros(3)
    gen = x._buffer.generation
    y = np.from_dlpack(x)
    assert x._buffer.generation == gen + 1
    y[0] = 5.0  # the consumer writes through the shared memory
    assert float(x[0]) == 5.0
    gen = x._buffer.generation
    x.__dlpack__(max_version=(1, 0), copy=True)
    assert x._buffer.generation == gen


def test_read_only_views_export_read_only() -> None:
    b = qd.broadcast_to(qd.asarray([1.0, 2.0]), (2, 2))
    y = np.from_dlpack(b)
    assert not y.flags.writeable
    np.testing.assert_array_equal(y, [[1.0, 2.0], [1.0, 2.0]])


def test_from_dlpack_copy_semantics() -> None:
    a = np.arange(4.0)
    shared = qd.from_dlpack(a)
    shared[0] = 10.0
    assert a[0] == 10.0
    copied = qd.from_dlpack(a, copy=True)
    copied[1] = -1.0
    assert a[1] == 1.0
    assert np.shares_memory(_host(qd.from_dlpack(a, copy=False)), a)
    assert np.shares_memory(_host(qd.from_dlpack(a, device="cpu")), a)
    x = qd.asarray([1.0, 2.0])
    assert qd.from_dlpack(x)._buffer is x._buffer
    assert qd.from_dlpack(x, device="cpu", copy=False)._buffer is x._buffer
    assert qd.from_dlpack(x, copy=True)._buffer is not x._buffer


def test_from_dlpack_of_read_only_input_copies_unless_told_not_to() -> None:
    a = np.arange(3.0)
    a.flags.writeable = False
    x = qd.from_dlpack(a)
    x[0] = 7.0
    assert a[0] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        qd.from_dlpack(a, copy=False)[0] = 1.0


def test_from_dlpack_errors() -> None:
    with pytest.raises(AttributeError, match="__dlpack__ and __dlpack_device__"):
        qd.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="Use qd.asarray"):
        qd.from_dlpack(3.0)
    if importlib.util.find_spec("cupy") is None and not os.environ.get("NUMBA_ENABLE_CUDASIM"):
        # Without CuPy (and outside numba's simulator) there is no CUDA device to import to.
        with pytest.raises(RuntimeError, match="CUDA backend needs CuPy, which is not installed"):
            qd.from_dlpack(np.zeros(2), device="cuda:0")
    with pytest.raises(BufferError, match=r"device \(2, 3\) to cpu; use copy=None"):
        qd.from_dlpack(_ForeignGpuArray(), device="cpu", copy=False)
    with pytest.raises(BufferError, match=r"device \(1, 0\) to cuda:0"):
        qd.from_dlpack(np.zeros(2), device="cuda:0", copy=False)


class _ForeignGpuArray:
    """A DLPack producer on CUDA device 3 (never asked for data in these tests)."""

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 3)

    def __dlpack__(self, **kwargs: object) -> object:
        raise AssertionError("no data should be requested")


def test_numpy_asarray_is_zero_copy_and_marks_a_write() -> None:
    x = qd.asarray([[1, 2], [3, 4]], dtype=qd.int32)
    gen = x._buffer.generation
    h = np.asarray(x)
    assert h.dtype == np.int32 and np.shares_memory(h, _host(x))
    assert x._buffer.generation == gen + 1
    h[1, 1] = 40
    assert int(x[1, 1]) == 40
    c = np.asarray(x, dtype=np.float64)
    assert not np.shares_memory(c, _host(x))
    assert not np.shares_memory(np.array(x, copy=True), _host(x))
    v = x[:, 1]
    assert np.shares_memory(np.asarray(v), _host(x))


def test_array_namespace_is_qdarray() -> None:
    x = qd.zeros(2)
    assert array_api_compat.array_namespace(x) is qd
    assert array_api_compat.array_namespace(x, qd.ones(3, dtype=qd.int8), 1.0) is qd
    assert x.__array_namespace__(api_version="2024.12") is qd
    with pytest.raises(ValueError, match="Unsupported Array API version '2019.01'"):
        x.__array_namespace__(api_version="2019.01")


DEVICES = [str(d) for d in qd.__array_namespace_info__().devices()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (5,), (2, 0), (2, 3), (1, 1, 1), (2, 1, 3)])
def test_host_exports_keep_every_shape_on_every_device(device: str, shape: tuple[int, ...]) -> None:
    a = np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = qd.asarray(a, device=device)
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), a, strict=True)
    assert np.asarray(x).shape == shape
    if x.ndim >= 2:  # a transposed view comes back transposed
        np.testing.assert_array_equal(np.from_dlpack(x.mT, device="cpu"), np.swapaxes(a, -1, -2),
                                      strict=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_arange_with_a_complex_dtype_is_numpys(device: str, dtype: str) -> None:
    if not qd.__array_namespace_info__().dtypes(device=device).get(dtype):
        pytest.skip(f"{device} has no {dtype}")
    for args in [(3,), (1, 2, 0.5), (5, 0, -2)]:
        got = qd.arange(*args, dtype=getattr(qd, dtype), device=device)
        assert got.dtype == getattr(qd, dtype) and got.device == qd.Device(device)
        np.testing.assert_array_equal(np.asarray(got), np.arange(*args, dtype=dtype),
                                      strict=True)
