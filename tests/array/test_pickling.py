"""Pickling and copying arrays and BufferViews on every device present."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd


def _first_of_each_kind() -> list[str]:
    first: dict[str, str] = {}
    for d in qd.__array_namespace_info__().devices():
        first.setdefault(d.kind, str(d))
    return list(first.values())


DEVICES = _first_of_each_kind()  # the CPU, then one device of every other kind present
VALUES = {
    "float64": np.array([[1.5, -2.0, 0.0], [np.inf, np.nan, -0.0]]),
    "float32": np.array([1.25, -3.5], np.float32),
    "int8": np.array([-128, 0, 127], np.int8),
    "uint64": np.array([0, 2**64 - 1], np.uint64),
    "bool": np.array([True, False, True]),
    "complex128": np.array([1 + 2j, -0.5j]),
    "scalar": np.array(3.0),
    "empty": np.zeros((0, 4)),
}


def same(got: qd.Array, expected: np.ndarray, device: str) -> None:
    assert type(got) is qd.Array
    assert got.device == device
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_pickle_round_trip_keeps_values_dtype_shape_and_device(device: str, name: str) -> None:
    x = qd.asarray(VALUES[name], device=device)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        same(pickle.loads(pickle.dumps(x, protocol=protocol)), VALUES[name], device)


@pytest.mark.parametrize("device", DEVICES)
def test_copies_are_independent_and_stay_on_the_device(device: str) -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = qd.asarray(a, device=device)
    for c in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        same(c, a, device)
        c[0, 0] = 100.0
        same(x, a, device)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_views_pickle_their_elements(device: str) -> None:
    a = np.arange(12.0).reshape(3, 4)
    x = qd.asarray(a, device=device)
    same(pickle.loads(pickle.dumps(x[::2, 1:])), a[::2, 1:], device)
    same(pickle.loads(pickle.dumps(x.T)), a.T, device)


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_companions_are_pickled_and_copied(device: str) -> None:
    x = qd.ones(3, dtype=qd.float32, device=device, requires_grad=True)
    assert x.grad is not None
    x.grad[...] = qd.asarray([1.0, 2.0, 3.0], dtype=qd.float32, device=device)
    for c in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
        assert c.requires_grad and c.grad is not None and c.grad is not x.grad
        same(c.grad, np.array([1.0, 2.0, 3.0], np.float32), device)


def test_pickle_protocol_5_exports_cpu_data_out_of_band() -> None:
    x = qd.asarray(np.arange(1000.0))
    buffers: list[pickle.PickleBuffer] = []
    payload = pickle.dumps(x, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(payload) < 1000
    y = pickle.loads(payload, buffers=buffers)
    same(y, np.arange(1000.0), "cpu")


def test_arrays_sharing_storage_share_it_after_unpickling() -> None:
    base = qd.arange(10.0)
    view = qd.BufferView(base, offset=2, size=4)
    narrower = view[1:3]
    base2, view2, narrower2 = pickle.loads(pickle.dumps((base, view, narrower)))
    assert (view2.offset, view2.size, narrower2.offset, narrower2.size) == (2, 4, 3, 2)
    narrower2[0] = -1.0  # writes base2[3]: the three share one storage again
    same(base2, np.array([0, 1, 2, -1, 4, 5, 6, 7, 8, 9.0]), "cpu")
    same(qd.asarray(view2), np.array([2, -1, 4, 5.0]), "cpu")
    assert base2._buffer is view2.base._buffer
    same(base, np.arange(10.0), "cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_buffer_views_pickle_as_windows_of_their_base(device: str) -> None:
    base = qd.arange(8, dtype=qd.int32, device=device)
    original = qd.BufferView(base, offset=3, size=2)
    view = pickle.loads(pickle.dumps(original))
    assert type(view) is qd.BufferView and view.device == device
    # (a device may allocate more than the array: the view's base is what it allocated)
    assert (view.offset, view.size, view.base.shape) == (3, 2, original.base.shape)
    same(qd.asarray(view), np.array([3, 4], np.int32), device)


def test_unpickling_for_an_absent_device_names_it() -> None:
    rebuild, args = qd.ones(2).__reduce__()
    for name in ("opencl:9", "vulkan:7"):
        with pytest.raises(qd.DeviceUnavailableError,
                           match=rf"Cannot unpickle an array stored on {name}: that device is "
                                 r"not present in this process.*pickle x.to_device\('cpu'\)"):
            rebuild(args[0], name, None, None)
    assert issubclass(qd.DeviceUnavailableError, RuntimeError)


@pytest.mark.parametrize("device", DEVICES)
def test_joblib_dump_and_load(tmp_path: Path, device: str) -> None:
    joblib = pytest.importorskip("joblib", reason="joblib comes with scikit-learn")
    a = np.linspace(0.0, 1.0, 50_000).reshape(100, 500)
    x = qd.asarray(a, device=device)
    joblib.dump({"x": x, "y": x[1:3]}, tmp_path / "arrays.joblib")
    loaded = joblib.load(tmp_path / "arrays.joblib")
    same(loaded["x"], a, device)
    same(loaded["y"], a[1:3], device)
    if device == "cpu":
        # Memory-mapped loading gives read-only arrays on the mapped file, as for NumPy's.
        mapped = joblib.load(tmp_path / "arrays.joblib", mmap_mode="r")["x"]
        same(mapped, a, "cpu")
        same(mapped * 2, 2 * a, "cpu")
