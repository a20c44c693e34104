"""The OpenCL backend: pyopencl storage, the generated-kernel namespace, OpenCL C kernels.

`Device("opencl:N")` is the N-th device in qdarray's order: GPUs, then CPUs, then other
kinds, each by platform name and position in the platform (backends/opencl/_runtime.py).
Arrays are `ClArray`s (pyopencl arrays with NumPy's view semantics). float64 (and complex128)
exist only on devices that report double precision; elsewhere asking for them raises a
TypeError that names the device. User kernels and the namespace's own kernels (built as IR,
backends/kernel_xp/) compile to OpenCL C (kernels/codegen/c/opencl_c.py) and launch through
backends/opencl/target.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from ..._devices import Device
from ..base import Backend
from ..host_memory import host_available_bytes
from ..kernel_xp.backend import KernelBuiltBackend
from . import _runtime as runtime
from .namespace import HOST_FUNCTIONS, ClArray, OpenCLNamespace
from .target import TARGET


class OpenCLBackend(KernelBuiltBackend):
    """OpenCL devices through pyopencl (see the module docstring)."""

    kind = "opencl"
    label = "OpenCL"
    dlpack_hint = ("pyopencl exports none: use np.asarray on the producer's host copy, or a "
                   "CPU or CUDA producer.")
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

    def _dtype_refusal(self, dtype: np.dtype, device: Device) -> str:
        return (f"Device {device} ({self.state(device).name}) does not support dtype "
                f"{dtype.name}: it reports no double precision. Use float32 (or complex64), "
                "or another device.")

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

    def synchronize(self, device: Device) -> None:
        self.state(device).queue.finish()

    def device_capabilities(self, device: Device) -> dict[str, Any]:
        st = self.state(device)
        return {
            "device name": st.name,
            "float64": runtime.has_fp64(st),
            "int64 atomics": st.int64_atomics,
            "host functions": HOST_FUNCTIONS,
        }

    def cl_version(self, device: Device) -> str:
        st = self.state(device)
        return str(st.cl_device.get_info(cl.device_info.VERSION))


BACKEND: Backend = OpenCLBackend()  # checked against the Backend protocol
