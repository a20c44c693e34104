"""The CUDA backend: CuPy storage, array-api-compat's CuPy namespace, numba.cuda kernels.

`Device("cuda:N")` is CUDA device N in the driver's order. Arrays are CuPy arrays (the
optional dependency installed by `pip install 'qdarray[cuda13]'` or `'qdarray[cuda12]'`); the
namespace delegates to CuPy's kernels through array-api-compat, with floating-point warnings
silenced as on every device. User kernels compile through the numba.cuda code generator
(kernels/codegen/numba/gpu.py) and launch through backends/cuda/target.py.

Under numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1` set before numba is imported), there
is no GPU and no CuPy: the one simulated device `cuda:0` stores its arrays as NumPy arrays,
which the simulator's kernels take as device arrays, and the namespace is the CPU's. Copies to
and from the host are still copies, so the simulated device behaves like a real one, and the
namespace, transfers and kernels run through the same backend code paths. The simulator is
how CI tests the CUDA path (tests/cuda/).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._devices import Device
from .. import base
from ..base import Backend
from ..host_memory import host_available_bytes
from .target import SIMULATED, TARGET, upload


def _missing_cupy(missing: str | None = "cupy") -> RuntimeError:
    what = "CuPy, which is not installed" if missing in (None, "cupy") else (
        f"CuPy and {missing!r}, which does not import")
    return RuntimeError(
        f"The CUDA backend needs {what}. Try `pip install "
        "'qdarray[cuda13]'` (CUDA 13 drivers) or `pip install 'qdarray[cuda12]'` (CUDA 12); "
        "without a GPU, set NUMBA_ENABLE_CUDASIM=1 before importing qdarray to use numba's "
        "simulated device.")


class _CudaBase:
    """What the simulated and the real CUDA backends share."""

    kind = "cuda"
    target = TARGET
    simulated = SIMULATED

    def _count(self) -> int:
        raise NotImplementedError

    def devices(self) -> list[Device]:
        return [Device(f"cuda:{i}") for i in range(self._count())]

    def placement(self, device: Device) -> dict[str, Any]:
        return {"device": device}

    def check_device(self, device: Device) -> None:
        """Raise a ValueError for an index past the devices present."""
        n = self._count()
        if device.index >= n:
            raise ValueError(
                f"Device {device} does not exist: this machine has {n} CUDA "
                f"device{'s' if n != 1 else ''}"
                f"{' (cuda:0 to cuda:' + str(n - 1) + ')' if n > 1 else ''}. "
                "Use qd.__array_namespace_info__().devices() to list them.")

    def supports_dtype(self, np_dtype: np.dtype, device: Device) -> bool:
        return True  # NVIDIA GPUs compute float64 and complex128 (slower, but exactly)

    def capabilities(self, device: Device) -> dict[str, Any]:
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
            "device name": self.device_name(device),
            "float64": True,
            # CuPy compiles every kernel of the namespace with -ftz=true (no switch turns it
            # off), so float32 subnormals count as zero there: docs/cuda.md. The simulator
            # computes with NumPy, exactly.
            "float32 subnormals": self.simulated,
            "simulated": self.simulated,
        }

    def device_name(self, device: Device) -> str:
        raise NotImplementedError

    def description(self, device: Device) -> str:
        return self.device_name(device)

    def to_host(self, native: Any) -> np.ndarray:
        raise NotImplementedError


class SimulatedCudaBackend(_CudaBase):
    """numba's CUDA simulator: one device, NumPy arrays standing in for device memory."""

    native_type = np.ndarray

    def __init__(self) -> None:
        import array_api_compat.numpy as compat_numpy

        from ..cpu.backend import BACKEND as CPU_BACKEND
        from .namespace import CudaNamespace

        self._cpu = CPU_BACKEND
        self.xp = CudaNamespace(compat_numpy, None, False, self.check_device)

    def _count(self) -> int:
        return 1

    def device_name(self, device: Device) -> str:
        return "numba CUDA simulator"

    normalize = staticmethod(np.asarray)  # as on the CPU

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> Any:
        self.check_device(device)
        if copy is False and type(obj) is not np.ndarray:
            raise ValueError(
                f"asarray(copy=False) cannot place host data on {device} without a copy; "
                "use copy=None or copy=True.")
        return self._cpu.asarray(obj, np_dtype, copy, device)

    def to_host(self, native: Any) -> np.ndarray:
        # A copy, as from a real device: writing the result never changes the array.
        return np.array(native, copy=True)

    def index_add(self, native: np.ndarray, key: tuple[Any, ...], values: Any) -> None:
        np.add.at(native, key, values)

    def byte_layout(self, native: np.ndarray) -> tuple[int, tuple[int, ...]]:
        return self._cpu.byte_layout(native)

    def window_root(self, native: np.ndarray) -> tuple[np.ndarray, int]:
        return self._cpu.window_root(native)

    def copy_between(self, native: Any, device: Device) -> Any:
        self.check_device(device)
        return np.array(native, copy=True)

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Device) -> Any:
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Device) -> Any:
        """Uninitialized device memory (adstack heaps, reduction results)."""
        return np.empty(shape, np_dtype)

    def available_bytes(self, device: Device) -> int | None:
        return host_available_bytes()

    def from_dlpack(self, obj: Any) -> np.ndarray:
        return np.from_dlpack(obj)  # the simulated device's memory is the host's

    def cuda_array_interface(self, native: np.ndarray) -> dict[str, Any]:
        """The CUDA Array Interface (version 3) of a simulated array: its host memory."""
        face = native.__array_interface__
        return {"shape": face["shape"], "typestr": face["typestr"], "data": face["data"],
                "strides": face["strides"], "version": 3, "stream": None}

    def synchronize(self, device: Device) -> None:
        return None


class CupyBackend(_CudaBase):
    """CUDA GPUs through CuPy (see the module docstring)."""

    def __init__(self) -> None:
        try:
            import array_api_compat.cupy as compat_cupy
            import cupy  # type: ignore[import-not-found]
        except ImportError as exc:
            raise _missing_cupy((exc.name or "cupy").split(".")[0]) from None
        from .namespace import CudaNamespace

        self.cp = cupy
        self.native_type = cupy.ndarray
        self._n: int | None = None
        self._names: dict[int, str] = {}
        self.xp = CudaNamespace(compat_cupy, cupy, self._count() > 1, self.check_device)

    def _count(self) -> int:
        if self._n is None:
            try:
                self._n = int(self.cp.cuda.runtime.getDeviceCount())
            except self.cp.cuda.runtime.CUDARuntimeError:
                self._n = 0  # a driver without a device
        return self._n

    def device_name(self, device: Device) -> str:
        name = self._names.get(device.index)
        if name is None:
            props = self.cp.cuda.runtime.getDeviceProperties(device.index)
            raw = props["name"]
            name = raw.decode() if isinstance(raw, bytes) else str(raw)
            self._names[device.index] = name
        return name

    def normalize(self, result: Any) -> Any:
        if type(result) is self.native_type:
            return result
        if isinstance(result, (np.ndarray, np.generic, float, complex)):
            return upload(self.cp, np.asarray(result))
        return self.cp.asarray(result)

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> Any:
        cp = self.cp
        self.check_device(device)
        with cp.cuda.Device(device.index):
            if isinstance(obj, cp.ndarray):
                if obj.device.id != device.index:
                    if copy is False:
                        raise ValueError(
                            f"asarray(copy=False) cannot move data from cuda:{obj.device.id} "
                            f"to {device}; use copy=None or copy=True.")
                    obj = self._peer_copy(obj)
                    copy = False if copy is None else copy
                if np_dtype is not None and np.dtype(np_dtype) != obj.dtype:
                    # As on every device, a dtype change converts: the namespace decides
                    # beforehand whether the caller's copy=False allows it (a transfer to
                    # this device passes copy=False for its new data, and float64 host data
                    # asked for as float32 raised here).
                    return obj.astype(np_dtype)
                return obj.copy() if copy else obj
            if copy is False:
                raise ValueError(
                    f"asarray(copy=False) cannot place host data on {device} without a copy; "
                    "use copy=None or copy=True.")
            with np.errstate(over="ignore"):  # float64 data into float32: inf, as on the CPU
                host = np.asarray(obj, dtype=np_dtype)
            return upload(cp, host)

    def _peer_copy(self, x: Any) -> Any:
        """`x` copied onto the current device (peer-to-peer where the GPUs allow it)."""
        cp = self.cp
        out = cp.empty(x.shape, x.dtype)
        src = x if x.flags.c_contiguous else cp.ascontiguousarray(x)
        out.data.copy_from_device(src.data, src.nbytes)
        return out

    def to_host(self, native: Any) -> np.ndarray:
        return native.get()  # type: ignore[no-any-return]

    def index_add(self, native: Any, key: tuple[Any, ...], values: Any) -> None:
        with self.cp.cuda.Device(native.device.id):
            add_at = getattr(self.cp.add, "at", None)  # CuPy 14 deprecates scatter_add for it
            if add_at is not None:
                add_at(native, key, values)
                return
            import cupyx  # type: ignore[import-not-found]  # with CuPy

            cupyx.scatter_add(native, key, values)

    def byte_layout(self, native: Any) -> tuple[int, tuple[int, ...]]:
        return native.data.ptr, native.strides

    def window_root(self, native: Any) -> tuple[Any, int]:
        """The outermost 1-D contiguous array of the same dtype that `native` views, and
        `native`'s element offset in it."""
        root = native
        base = native.base
        while (base is not None and base.ndim == 1 and base.dtype == native.dtype
               and base.strides[0] == base.itemsize):
            root = base
            base = base.base
        if root is native:
            return native, 0
        return root, (native.data.ptr - root.data.ptr) // native.itemsize

    def copy_between(self, native: Any, device: Device) -> Any:
        self.check_device(device)
        with self.cp.cuda.Device(device.index):
            return self._peer_copy(native)

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Device) -> Any:
        """One device-to-device copy into pool memory where the region is one run of a
        C-contiguous array on the current device (a time step's row, a whole array): no
        array object, no copy kernel; CuPy's slicing and copy otherwise."""
        span = self._span(native, slices)
        if span is None:
            return base.save_region(self, native, slices, device)
        offset, count = span
        saved = self.cp.cuda.alloc(count)
        saved.copy_from_device_async(native.data + offset, count)
        return saved

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        if type(saved) is self.cp.cuda.MemoryPointer:
            offset, count = self._span(native, slices)  # type: ignore[misc]
            (native.data + offset).copy_from_device_async(saved, count)
        else:
            base.restore_region(native, slices, saved)

    def _span(self, native: Any, slices: tuple[slice, ...]) -> tuple[int, int] | None:
        if not native.flags.c_contiguous or native.device.id != self.cp.cuda.runtime.getDevice():
            return None
        return base.contiguous_span(native.shape, native.itemsize, slices)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Device) -> Any:
        """Uninitialized device memory (adstack heaps, reduction results)."""
        with self.cp.cuda.Device(device.index):
            return self.cp.empty(shape, np_dtype)

    def available_bytes(self, device: Device) -> int | None:
        """Free device memory, counting what CuPy's pool holds unused."""
        cp = self.cp
        with cp.cuda.Device(device.index):
            free, _ = cp.cuda.runtime.memGetInfo()
            pool = cp.get_default_memory_pool()
            return int(free) + int(pool.free_bytes())

    def from_dlpack(self, obj: Any) -> Any:
        return self.cp.from_dlpack(obj)

    def cuda_array_interface(self, native: Any) -> dict[str, Any]:
        return native.__cuda_array_interface__  # type: ignore[no-any-return]

    def synchronize(self, device: Device) -> None:
        with self.cp.cuda.Device(device.index):
            self.cp.cuda.get_current_stream().synchronize()
            self.cp.cuda.Device().synchronize()


# checked against the Backend protocol
BACKEND: Backend = SimulatedCudaBackend() if SIMULATED else CupyBackend()
