"""Launching: devices, signatures, packing without copies, views, write generations."""

from __future__ import annotations

import gc
from dataclasses import dataclass

import numpy as np
import pytest

import qdarray as qd
from qdarray._array import Array
from qdarray.kernels.interp import INTERP


class StubBackend:
    """A test-only device backend: NumPy storage, kernels through the given kernel target
    (None: a device kind without one)."""

    kind = "opencl"
    xp = None
    native_type = np.ndarray

    def __init__(self, target) -> None:
        self.target = target

    def to_host(self, native):
        return native


@pytest.fixture
def stub_device(monkeypatch):
    def make(target, index: int = 7) -> qd.Device:
        device = qd.Device(f"opencl:{index}")
        monkeypatch.setattr(device, "backend", StubBackend(target))
        return device

    return make


@qd.kernel
def add_into(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] += x[i]


def test_arrays_on_two_devices_are_rejected(stub_device):
    other = Array._new(np.zeros(3), stub_device(INTERP))
    with pytest.raises(qd.DeviceMismatchError) as info:
        add_into(qd.zeros(3, dtype=qd.float64), other)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (
        "add_into() got arrays on two devices: 'x' on cpu and 'y' on opencl:7. A kernel runs "
        "on one device; move arrays with x.to_device('cpu') first.")


def test_the_device_picks_the_backend(stub_device):
    device = stub_device(INTERP)
    x = Array._new(np.arange(3.0), device)
    y = Array._new(np.ones(3), device)
    add_into(x, y)  # runs through the stub backend's target: the interpreter
    np.testing.assert_array_equal(y._data, [1.0, 2.0, 3.0])
    missing = stub_device(None, 8)
    with pytest.raises(NotImplementedError, match="need a kernel target for its device kind"):
        add_into(Array._new(np.zeros(3), missing), Array._new(np.zeros(3), missing))


def test_one_compile_per_signature():
    k = qd.kernel(add_into.fn)
    a64, b64 = np.zeros(4), np.zeros(4)
    for _ in range(3):
        k(a64, b64)
        k(qd.asarray(a64), qd.asarray(b64))
    assert len(k._launchers[qd.debug_mode()]) == 2
    with pytest.raises(qd.KernelTypeError):
        k(np.zeros(4, np.float32), b64)  # annotated float64: a type error, nothing cached
    assert len(k._launchers[qd.debug_mode()]) == 2


@qd.kernel
def fill_view(v: qd.BufferView[qd.float32], value: qd.float32):
    for i in range(v.size):
        v[i] = value + i


def test_transient_views_are_never_confused(launch):
    data = qd.zeros(32, dtype=qd.float32)
    for start in range(0, 32, 8):
        launch(fill_view, data[start:start + 8], float(start))  # a fresh view every call
        gc.collect()  # the next view may reuse the address of this one
    np.testing.assert_array_equal(np.asarray(data), np.arange(32) % 8 + np.arange(32) // 8 * 8)


def test_views_are_windows_on_the_base(launch):
    data = qd.asarray(np.zeros(32, np.float32))
    gen = data._buffer.generation
    launch(fill_view, qd.BufferView(data, offset=16, size=8), 100.0)
    launch(fill_view, qd.BufferView(data, offset=4, size=4)[1:3], -1.0)
    host = np.asarray(data)
    np.testing.assert_array_equal(host[16:24], 100 + np.arange(8))
    np.testing.assert_array_equal(host[5:7], [-1.0, 0.0])
    assert host[:5].sum() == 0 and host[7:16].sum() == 0 and host[24:].sum() == 0
    assert data._buffer.generation > gen


@dataclass(frozen=True)
class Windows:
    a: qd.BufferView
    b: qd.BufferView


@qd.kernel
def copy_window(w: Windows):
    for i in range(w.a.size):
        w.b[i] = w.a[i]


def test_views_inside_dataclasses(launch):
    data = qd.asarray(np.arange(10, dtype=np.float64))
    launch(copy_window, Windows(qd.BufferView(data, 0, 3), qd.BufferView(data, 6, 3)))
    np.testing.assert_array_equal(np.asarray(data), [0, 1, 2, 3, 4, 5, 0, 1, 2, 9])


@qd.kernel
def read_only(x: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        out[i] = x[i]


def test_only_written_arrays_bump_their_generation(launch):
    x = qd.asarray(np.arange(3.0))
    out = qd.zeros(3, dtype=qd.float64)
    gx, go = x._buffer.generation, out._buffer.generation
    launch(read_only, x, out)
    assert x._buffer.generation == gx
    assert out._buffer.generation == go + 1
    view = out[1:]
    launch(read_only, x[:2], view)
    assert out._buffer.generation == go + 2  # a view shares its base's buffer token


def test_wrong_number_of_arguments():
    with pytest.raises(qd.KernelTypeError, match=r"read_only\(\): missing a required argument"):
        read_only(np.zeros(3))


def test_writing_read_only_memory_is_rejected(launch):
    x = np.arange(3.0)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(qd.KernelTypeError, match=r"read_only\(\) writes argument 'out', but its "
                                                 r"memory is read-only"):
        launch(read_only, x, frozen)
    out = np.zeros(3)
    launch(read_only, np.broadcast_to(np.float64(2.0), (3,)), out)  # reading it is fine
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


# -- the last launch's signature is tried first (args.compile_fits) ---------------------------


@qd.kernel
def scaled(x, y, a):
    for i in range(x.shape[0]):
        y[i] = x[i] * a


def test_alternating_signatures_each_run_their_own_code():
    k = qd.kernel(scaled.fn)
    src = np.linspace(-1, 1, 5)
    cases = [(np.float32, 1 / 3), (np.float64, 1 / 3), (np.float64, 3), (np.float32, True),
             (np.float64, np.float32(1 / 3))]
    for _ in range(2):  # every call has another signature than the one before
        for dtype, a in cases:
            x = qd.asarray(src.astype(dtype))
            y = qd.zeros(5, dtype=qd.float32 if dtype is np.float32 else qd.float64)
            k(x, y, a)
            want = src.astype(dtype) * np.asarray(a, dtype=float).astype(
                np.float32 if isinstance(a, np.float32) else float)
            np.testing.assert_allclose(np.asarray(y), want.astype(dtype),
                                       rtol=1e-6 if dtype is np.float32 else 1e-15)
    assert len(k._launchers[qd.debug_mode()]) == len(cases)


def test_read_only_memory_is_refused_after_writeable_memory_of_one_signature():
    x = qd.asarray(np.arange(3.0))
    out = qd.zeros(3, dtype=qd.float64)
    read_only(x, out)
    frozen = np.full(3, 7.0)
    frozen.flags.writeable = False
    with pytest.raises(qd.KernelTypeError, match="writes argument 'out', but its memory is "
                                                 "read-only"):
        read_only(x, Array._new(frozen, qd.Device("cpu")))
    np.testing.assert_array_equal(frozen, [7.0, 7.0, 7.0])
    read_only(Array._new(frozen, qd.Device("cpu")), out)  # reading it is fine
    np.testing.assert_array_equal(np.asarray(out), frozen)


@qd.kernel
def swap_components(v: qd.Array[qd.vec2, 1]):
    for i in range(v.shape[0]):
        v[i] = qd.vec2(v[i][1], v[i][0])


def test_the_element_shape_is_checked_at_every_launch():
    good = qd.asarray(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    swap_components(good)
    bad = qd.asarray(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    with pytest.raises(ValueError, match=r"last 1 axis must be \(2,\).*shape \(4, 3\)"):
        swap_components(bad)
    np.testing.assert_array_equal(np.asarray(bad), np.arange(12.0).reshape(4, 3))
    swap_components(good)
    np.testing.assert_array_equal(np.asarray(good), np.arange(8.0).reshape(4, 2))


@dataclass(frozen=True)
class Pair:
    src: object
    dst: object


@qd.kernel
def copy_pair(p: Pair):
    for i in range(p.src.shape[0]):
        p.dst[i] = p.src[i] + 0.1


def test_a_dataclass_field_of_another_dtype_is_another_signature():
    for _ in range(2):
        for dtype in (np.float32, np.float64):
            src = np.arange(3, dtype=dtype)
            pair = Pair(qd.asarray(src), qd.zeros(3, dtype=qd.asarray(src).dtype))
            copy_pair(pair)
            np.testing.assert_array_equal(np.asarray(pair.dst), src + dtype(0.1))


def test_arrays_moved_to_another_device_launch_there(stub_device):
    device = stub_device(INTERP)
    k = qd.kernel(add_into.fn)
    y = qd.zeros(3, dtype=qd.float64)
    k(qd.asarray(np.arange(3.0)), y)
    other = Array._new(np.ones(3), device)
    k(Array._new(np.arange(3.0), device), other)  # same dtypes: the device tells them apart
    np.testing.assert_array_equal(other._data, [1.0, 2.0, 3.0])
    assert len(k._launchers[qd.debug_mode()]) == 2


def test_the_read_generations_drop_arrays_that_are_gone():
    k = qd.kernel(read_only.fn)
    out = qd.zeros(3, dtype=qd.float64)
    keep = qd.asarray(np.arange(3.0))
    k(keep, out)
    for _ in range(2):  # two batches of arrays alive together, the first gone before the second
        batch = [qd.asarray(np.arange(3.0)) for _ in range(600)]
        for x in batch:
            k(x, out)
        del batch
    assert len(k._reads.table) < 1000  # 1,201 entries without the pruning of gone arrays
    assert k._reads.seen(keep._buffer) == keep._buffer.generation  # a live array's is kept
