"""The OpenCL backend: pyopencl storage, the generated-kernel namespace, OpenCL C kernels.

`Device("opencl:N")` is the N-th device in qdarray's order: GPUs, then CPUs, then other
kinds, each by platform name and position in the platform (backends/opencl_xp/_runtime.py).
Arrays are `ClArray`s (pyopencl arrays with NumPy's view semantics). float64 (and complex128)
exist only on devices that report double precision; elsewhere asking for them raises a
TypeError that names the device. User kernels and the namespace's own kernels (built as IR,
backends/kernel_xp/) compile to OpenCL C (kernels/codegen/opencl_c.py) and launch through
backends/opencl_kernels.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from .._devices import Device
from . import base
from .base import Backend
from .host_memory import host_available_bytes
from .kernel_xp import copy as copy_ops
from .opencl_kernels import TARGET
from .opencl_xp import HOST_FUNCTIONS, ClArray, OpenCLNamespace
from .opencl_xp import _runtime as runtime


class OpenCLBackend:
    """OpenCL devices through pyopencl (see the module docstring)."""

    kind = "opencl"
    target = TARGET
    xp = OpenCLNamespace()
    native_type = ClArray

    def devices(self) -> list[Device]:
        return [Device(f"opencl:{s.index}") for s in runtime.devices()]

    def description(self, device: Device) -> str:
        """`<platform> <version> on <device>`, e.g. `PoCL 5.0+debian on cpu-haswell-...`
        (the platform version without its `OpenCL x.y` prefix)."""
        dev = self.state(device).cl_device
        words = dev.platform.version.split()
        short = " ".join(words[2:4]) if words[:1] == ["OpenCL"] else " ".join(words[:2])
        return f"{short or dev.platform.name.strip()} on {dev.name.strip()}"

    def state(self, device: Device) -> runtime.DeviceState:
        """The pyopencl context, queue and capabilities of `device`."""
        return runtime.state(device.index)

    def supports_dtype(self, np_dtype: np.dtype, device: Device) -> bool:
        if np.dtype(np_dtype) in (np.float64, np.complex128):
            return runtime.has_fp64(self.state(device))
        return True

    def placement(self, device: Device) -> dict[str, Any]:
        return {"device": device}

    def normalize(self, result: Any) -> Any:
        if isinstance(result, ClArray):
            return result
        raise TypeError(f"an OpenCL namespace function returned {type(result).__name__}")

    def _check_dtype(self, dtype: np.dtype, device: Device) -> None:
        if not self.supports_dtype(dtype, device):
            st = self.state(device)
            raise TypeError(
                f"Device {device} ({st.name}) does not support dtype {dtype.name}: it reports "
                "no double precision. Use float32 (or complex64), or another device."
            )

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> ClArray:
        st = self.state(device)
        if isinstance(obj, ClArray):
            if obj.qd_state is not st:
                return self.asarray(obj.to_host(), np_dtype, True, device)
            if np_dtype is not None and np.dtype(np_dtype) != obj.dtype:
                # As on the CPU (np.asarray), a dtype change converts; the namespace decides
                # beforehand whether the caller's copy=False allows it.
                self._check_dtype(np.dtype(np_dtype), device)
                converted: ClArray = copy_ops.astype(obj, np.dtype(np_dtype))
                return converted
            return copy_ops.contiguous(obj, force=True) if copy else obj
        if copy is False:
            raise ValueError(
                f"asarray(copy=False) cannot place host data on {device} without a copy; "
                "use copy=None or copy=True.")
        with np.errstate(over="ignore"):
            host = np.asarray(obj, dtype=np_dtype)
        if host.dtype == np.float16:
            host = host.astype(np.float32)
        self._check_dtype(host.dtype, device)
        return ClArray.from_host(st, host)

    def index_add(self, native: ClArray, key: tuple[Any, ...], values: Any) -> None:
        # On the host, as the OpenCL namespace's other writes through index arrays.
        host = native.to_host()
        hkey = tuple(k.to_host() if isinstance(k, ClArray) else k for k in key)
        np.add.at(host, hkey, values.to_host() if isinstance(values, ClArray) else values)
        copy_ops.write_host(native, host)

    def to_host(self, native: Any) -> np.ndarray:
        return native.to_host()  # type: ignore[no-any-return]

    def byte_layout(self, native: ClArray) -> tuple[int, tuple[int, ...]]:
        return int(native.offset), tuple(native.strides)

    def window_root(self, native: ClArray) -> tuple[ClArray, int]:
        """The whole buffer as a 1-D array, and `native`'s element offset in it."""
        item = native.dtype.itemsize
        if native.base_data is None:
            return native, 0
        total = native.qd_buffer.size // item
        root = native._view((total,), (item,), 0)
        return root, native.elem_offset

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Device) -> Any:
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Device) -> ClArray:
        """Uninitialized device memory (adstack heaps, reduction results); a MemoryError
        when the device cannot allocate it."""
        st = self.state(device)
        try:
            return ClArray.empty(st, shape, np_dtype)
        except (cl.MemoryError, cl.LogicError, cl.RuntimeError) as exc:
            raise MemoryError(f"{device} ({st.name}) cannot allocate {shape} "
                              f"{np.dtype(np_dtype).name}: {exc}") from None

    def available_bytes(self, device: Device) -> int | None:
        """The largest buffer the device can give now: its global memory less what qdarray's
        arrays hold there, at most its largest single allocation (CL_DEVICE_MAX_MEM_ALLOC_
        SIZE); on devices that share the host's memory, at most what the host has free."""
        st = self.state(device)
        dev = st.cl_device
        free = int(dev.global_mem_size) - int(st.allocator.active_bytes)
        figures = [free, int(dev.max_mem_alloc_size)]
        if st.kind == "CPU" or dev.host_unified_memory:
            host = host_available_bytes()
            if host is not None:
                figures.append(host)
        return max(min(figures), 0)

    def copy_between(self, native: ClArray, device: Device) -> ClArray:
        return self.asarray(native.to_host(), None, True, device)

    def from_dlpack(self, obj: Any) -> ClArray:
        """A qdarray array on an OpenCL device (its memory, no copy); no other producer's
        OpenCL memory can be read."""
        native = getattr(obj, "_data", None)
        if isinstance(native, ClArray):
            return native
        raise BufferError(
            "qdarray cannot import OpenCL memory through DLPack (pyopencl exports none). Use "
            "np.asarray on the producer's host copy, or a CPU or CUDA producer.")

    def cuda_array_interface(self, native: ClArray) -> None:
        return None

    def synchronize(self, device: Device) -> None:
        self.state(device).queue.finish()

    def capabilities(self, device: Device) -> dict[str, Any]:
        st = self.state(device)
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
            "device name": st.name,
            "float64": runtime.has_fp64(st),
            "int64 atomics": st.int64_atomics,
            "host functions": HOST_FUNCTIONS,
        }

    def cl_version(self, device: Device) -> str:
        st = self.state(device)
        return str(st.cl_device.get_info(cl.device_info.VERSION))


BACKEND: Backend = OpenCLBackend()  # checked against the Backend protocol
