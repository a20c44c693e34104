"""The Vulkan backend: arrays in Vulkan storage buffers, on any device with a Vulkan driver.

`Device("vulkan:N")` is the N-th device in qdarray's order (discrete GPUs, integrated GPUs,
virtual GPUs, CPU implementations such as lavapipe; backends/vulkan/_instance.py). Arrays are
`VkArray`s in device-local buffers from a per-device pool (_memory.py); work is recorded into
command buffers and submitted in batches (_stream.py); compute pipelines are built from
SPIR-V modules once per device and module (_pipelines.py; the module writer is
kernels/codegen/spirv_module.py). float64 and 64-bit integers exist only where the device
reports them; elsewhere asking for them raises a TypeError that names the device. The
namespace is `kernel_xp.KernelNamespace`: its operations are kernels built as IR
(`qdarray.kernels.library`) and compiled to SPIR-V through the Vulkan kernel target, as user
kernels are; what has no device kernel computes on the host and is listed in
`capabilities()` (`HOST_FUNCTIONS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._devices import Device
from .. import base
from ..base import Backend
from ..host_memory import host_available_bytes
from ..kernel_xp import HOST_FUNCTIONS, KernelNamespace
from ..kernel_xp import copy as copy_ops
from . import _instance
from ._array import VkArray, VulkanDevice, device_of
from ._binding import VulkanUnavailableError
from ._kernels import TARGET
from ._memory import pool
from ._stream import stream


def _kernel_device(device: Device) -> VulkanDevice:
    return device_of(_instance.state(device.index))


class VulkanBackend:
    """Vulkan devices through the `vulkan` binding (see the module docstring)."""

    kind = "vulkan"
    target = TARGET
    xp = KernelNamespace(_kernel_device)
    native_type = VkArray

    def devices(self) -> list[Device]:
        try:
            found = _instance.physical_devices()
        except VulkanUnavailableError:
            return []
        return [Device(f"vulkan:{i}") for i in range(len(found))]

    def description(self, device: Device) -> str:
        """The device's name and its driver's, e.g. `llvmpipe (LLVM 15.0.7, 256 bits)
        (llvmpipe)`."""
        found = _instance.physical_devices()[device.index]
        return f"{found.name} ({found.driver})"

    def state(self, device: Device) -> _instance.DeviceState:
        """The logical device, queue, limits and features of `device`."""
        return _instance.state(device.index)

    def supports_dtype(self, np_dtype: np.dtype, device: Device) -> bool:
        dt = np.dtype(np_dtype)
        features = self.state(device).features
        if dt in (np.float64, np.complex128):
            return features["float64"]
        if dt.itemsize == 8 and dt.kind in "iu":
            return features["int64"]
        return True

    def _check_dtype(self, dtype: np.dtype, device: Device) -> None:
        if not self.supports_dtype(dtype, device):
            st = self.state(device)
            need = "shaderFloat64" if dtype.kind in "fc" else "shaderInt64"
            raise TypeError(
                f"Device {st.label} does not support dtype {dtype.name}: it reports no "
                f"{need}. Use a 32-bit dtype, or another device.")

    def placement(self, device: Device) -> dict[str, Any]:
        return {"device": device}

    def normalize(self, result: Any) -> Any:
        if isinstance(result, VkArray):
            return result
        raise TypeError(f"a Vulkan namespace function returned {type(result).__name__}")

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> VkArray:
        st = self.state(device)
        if isinstance(obj, VkArray):
            if obj.st is not st:
                return self.asarray(obj.to_host(), np_dtype, True, device)
            if np_dtype is not None and np.dtype(np_dtype) != obj.dtype:
                # As on the CPU (np.asarray), a dtype change converts; the namespace decides
                # beforehand whether the caller's copy=False allows it.
                self._check_dtype(np.dtype(np_dtype), device)
                converted: VkArray = copy_ops.astype(obj, np.dtype(np_dtype))
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
        return VkArray.from_host(st, host)

    def to_host(self, native: Any) -> np.ndarray:
        return native.to_host()  # type: ignore[no-any-return]

    def index_add(self, native: VkArray, key: tuple[Any, ...], values: Any) -> None:
        # On the host, as on OpenCL (a scatter-add with repeated indices).
        host = native.to_host()
        hkey = tuple(k.to_host() if isinstance(k, VkArray) else k for k in key)
        np.add.at(host, hkey, values.to_host() if isinstance(values, VkArray) else values)
        copy_ops.write_host(native, host)

    def byte_layout(self, native: VkArray) -> tuple[int, tuple[int, ...]]:
        return int(native.offset), tuple(native.strides)

    def window_root(self, native: VkArray) -> tuple[VkArray, int]:
        """The whole buffer as a 1-D array, and `native`'s element offset in it."""
        item = native.dtype.itemsize
        if native.alloc is None:
            return native, 0
        total = native.alloc.size // item
        root = VkArray(native.st, native.alloc, native.dtype, (total,), (item,), 0)
        return root, native.elem_offset

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Device) -> Any:
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Device) -> VkArray:
        """Uninitialized device memory (adstack heaps, reduction results); a MemoryError
        when the device cannot allocate it."""
        self._check_dtype(np.dtype(np_dtype), device)
        return VkArray.empty(self.state(device), shape, np_dtype)

    def available_bytes(self, device: Device) -> int | None:
        """The largest buffer the device can give now: the budget VK_EXT_memory_budget
        reports for the arrays' heap where the driver has it, else the heap's size less what
        qdarray's arrays hold there; on CPU implementations at most what the host has free."""
        st = self.state(device)
        p = pool(st)
        budgets = _instance.heap_budgets(st)
        if budgets is not None:
            figures = [budgets[p.device_heap] + p.cached_bytes]
        else:
            figures = [st.heap_sizes[p.device_heap] - p.active_bytes]
        if st.type in (1, 4):  # integrated GPU or CPU: the host's memory
            host = host_available_bytes()
            if host is not None:
                figures.append(host + p.cached_bytes)
        return max(min(figures), 0)

    def copy_between(self, native: VkArray, device: Device) -> VkArray:
        return self.asarray(native.to_host(), None, True, device)

    def from_dlpack(self, obj: Any) -> VkArray:
        """A qdarray array on a Vulkan device (its memory, no copy); no other producer's
        Vulkan memory can be read."""
        native = getattr(obj, "_data", None)
        if isinstance(native, VkArray):
            return native
        raise BufferError(
            "qdarray cannot import another library's Vulkan memory through DLPack. Use the "
            "producer's host copy (np.asarray), or a CPU or CUDA producer.")

    def cuda_array_interface(self, native: VkArray) -> None:
        return None

    def synchronize(self, device: Device) -> None:
        stream(self.state(device)).finish()

    def capabilities(self, device: Device) -> dict[str, Any]:
        st = self.state(device)
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
            "device name": st.name,
            "device type": st.kind,
            "float64": st.features["float64"],
            "int64 atomics": st.features["int64_atomics"],
            "float32 atomic add": st.features["float32_atomic_add"],
            "host functions": HOST_FUNCTIONS + (
                "index_add (the scatter-add with repeated indices of reverse mode's gathers)",),
        }


BACKEND: Backend = VulkanBackend()
