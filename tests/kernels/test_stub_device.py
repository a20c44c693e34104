"""A device built from the parts docs/writing_a_device.md lists, and nothing else: a backend
(storage, transfers, memory figures; qdarray/backends/base.py) and a kernel target
(qdarray/kernels/target.py) whose "renderer" prints the IR and whose launcher runs it through
the interpreter. Kernels and their reverse (adstacks, the max-reducer, the counting pass, the
overflow check) run on it through the same compiler passes and reverse-mode launcher as on
every device: what the seam promises a new device."""

from __future__ import annotations

from typing import Any

import array_api_compat.numpy as compat_numpy
import numpy as np
import pytest

import qdarray as qd
from qdarray._array import Array
from qdarray.backends import base
from qdarray.kernels.interp import InterpLauncher
from qdarray.kernels.ir import KernelIR, format_kernel
from qdarray.kernels.target import DeviceKernels, ReductionLayout


class StubNamespace:
    """array-api-compat's NumPy namespace, without the `device=` of a call made elsewhere
    than through `StubBackend.placement`."""

    def __getattr__(self, name: str) -> Any:
        func = getattr(compat_numpy, name)
        if not callable(func):
            return func

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("device", None)
            return func(*args, **kwargs)
        return call


class StubKernels(DeviceKernels):
    """The kernel target: lowered IR, "rendered" as text and run by the interpreter."""

    name = "stub"
    reduction = ReductionLayout(strided=True)  # a GPU's layout of the max-reducer

    def __init__(self) -> None:
        self.launched: list[str] = []

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        return format_kernel(kernel)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> InterpLauncher:
        self.launched.append(kernel.name)
        return InterpLauncher(kernel, packers, bumps)


class StubBackend:
    """The backend: NumPy arrays standing in for the device's memory, copied like a
    device's in and out."""

    kind = "vulkan"  # the kind of the Device object the test takes over
    native_type = np.ndarray

    def __init__(self) -> None:
        self.xp = StubNamespace()
        self.target = StubKernels()
        self.allocated = 0

    def devices(self) -> list[Any]:
        return []

    def supports_dtype(self, np_dtype: np.dtype, device: Any) -> bool:
        return True

    def normalize(self, result: Any) -> Any:
        return np.asarray(result)

    def placement(self, device: Any) -> dict[str, Any]:
        return {}  # the namespace makes host arrays, which stand in for the device's

    def asarray(self, obj: Any, np_dtype: Any, copy: bool | None, device: Any) -> Any:
        return np.array(obj, dtype=np_dtype, copy=True)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Any) -> Any:
        self.allocated += 1
        return np.empty(shape, np_dtype)

    def to_host(self, native: Any) -> np.ndarray:
        return np.array(native, copy=True)

    def copy_between(self, native: Any, device: Any) -> Any:
        return np.array(native, copy=True)

    def available_bytes(self, device: Any) -> int | None:
        return 1 << 30

    def from_dlpack(self, obj: Any) -> Any:
        raise BufferError("the stub device imports nothing through DLPack")

    def cuda_array_interface(self, native: Any) -> None:
        return None

    def window_root(self, native: Any) -> tuple[Any, int]:
        return native, 0

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Any) -> Any:
        self.saved_regions = getattr(self, "saved_regions", 0) + 1
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def synchronize(self, device: Any) -> None:
        return None

    def capabilities(self, device: Any) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> qd.Device:
    device = qd.Device("vulkan:9")
    monkeypatch.setattr(device, "backend", StubBackend())
    return device


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def decay(x: qd.Array[qd.float64, 1], n: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(n[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def on(device: qd.Device, host: np.ndarray, requires_grad: bool = False) -> Array:
    return qd.asarray(host, device=device, requires_grad=requires_grad)


def test_a_kernel_runs_on_the_stub_device(stub):
    x = np.arange(5, dtype=np.float32)
    y = on(stub, np.ones(5, np.float32))
    saxpy(2.0, on(stub, x), y)
    assert y.device == stub
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), 2 * x + 1)
    assert stub.backend.target.launched == ["saxpy"]
    assert "parallel for" in saxpy.generated_source(2.0, on(stub, x), y)  # its renderer


def _reference(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """d y[0] / d x[i] in float64: the chain rule through n[i] steps of the map."""
    grad = np.ones_like(x)
    v = x.copy()
    for k in range(int(n.max(initial=0))):
        step = n > k
        grad = np.where(step, grad * (1 - 0.2 * v), grad)
        v = np.where(step, v - 0.1 * v * v + 0.01, v)
    return grad


def test_a_reverse_runs_on_the_stub_device(stub):
    x_host = np.linspace(0.1, 0.9, 7)
    n_host = np.array([0, 1, 2, 5, 3, 8, 1], np.int32)
    x, y = on(stub, x_host, True), on(stub, np.zeros(1), True)
    n = on(stub, n_host)
    qd.ad.reset_stats()
    with qd.ad.Tape(loss=y):
        decay(x, n, y)
    np.testing.assert_allclose(np.asarray(x.grad.to_device("cpu")), _reference(x_host, n_host),
                               rtol=1e-12)
    backend = stub.backend
    # the stack was sized by a max-reducer launched on the stub device, and the reverse's
    # heap came from the stub backend's memory
    assert qd.ad.stats()["max_reducer_dispatches"] == 1
    assert "adstack_max" in backend.target.launched and "decay_reverse" in backend.target.launched
    assert backend.allocated >= 1


@qd.kernel
def square_in_place(x: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]


@qd.kernel
def total(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i]


def test_a_tape_keeps_what_an_in_place_update_overwrites_through_the_backend(stub):
    """x squared twice in place: the first square's reverse needs x before the second
    overwrote it, so the tape copies it through the backend's save_region (and puts it back
    with restore_region); d/dx of sum(x^4) is 4 x^3."""
    x_host = np.array([0.5, -1.5, 2.0])
    x, y = on(stub, x_host, True), on(stub, np.zeros(1), True)
    with qd.ad.Tape(loss=y):
        square_in_place(x)
        square_in_place(x)
        total(x, y)
    np.testing.assert_allclose(np.asarray(x.grad.to_device("cpu")), 4 * x_host ** 3,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(x.to_device("cpu")), x_host ** 4, rtol=1e-12)
    assert stub.backend.saved_regions >= 1


def test_the_stub_devices_adstack_overflow_is_reported(stub, monkeypatch):
    from qdarray.ad.sizing import at_launch as sizer

    monkeypatch.setattr(sizer, "_TEST_CAPACITY_OVERRIDE", 2)  # v is pushed 1 + n[i] times
    x, y = on(stub, np.full(3, 0.5), True), on(stub, np.zeros(1), True)
    with pytest.raises(qd.ad.AdStackOverflowError, match="capacity 2, depth reached 6"):
        with qd.ad.Tape(loss=y):
            decay(x, on(stub, np.array([1, 5, 2], np.int32)), y)
