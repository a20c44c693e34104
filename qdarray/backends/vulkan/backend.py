"""The Vulkan backend: arrays in Vulkan storage buffers, on any device with a Vulkan driver.

`Device("vulkan:N")` is the N-th device in qdarray's order (discrete GPUs, integrated GPUs,
virtual GPUs, CPU implementations such as lavapipe; backends/vulkan/_instance.py). Arrays are
`VkArray`s in device-local buffers from a per-device pool (_memory.py); work is recorded into
command buffers and submitted in batches (_stream.py); compute pipelines are built from
SPIR-V modules once per device and module (_pipelines.py; the module writer is
kernels/codegen/spirv/module.py). float64 and 64-bit integers exist only where the device
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
from ..base import Backend
from ..host_memory import host_available_bytes
from ..kernel_xp import HOST_FUNCTIONS, KernelNamespace
from ..kernel_xp.backend import KernelBuiltBackend
from . import _instance
from ._array import VkArray, VulkanDevice, device_of
from ._binding import VulkanUnavailableError
from ._memory import pool
from ._stream import stream
from .target import TARGET


def _kernel_device(device: Device) -> VulkanDevice:
    return device_of(_instance.state(device.index))


class VulkanBackend(KernelBuiltBackend):
    """Vulkan devices through the `vulkan` binding (see the module docstring)."""

    kind = "vulkan"
    label = "Vulkan"
    dlpack_hint = "Use the producer's host copy (np.asarray), or a CPU or CUDA producer."
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

    def _dtype_refusal(self, dtype: np.dtype, device: Device) -> str:
        need = "shaderFloat64" if dtype.kind in "fc" else "shaderInt64"
        return (f"Device {self.state(device).label} does not support dtype {dtype.name}: it "
                f"reports no {need}. Use a 32-bit dtype, or another device.")

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

    def synchronize(self, device: Device) -> None:
        stream(self.state(device)).finish()

    def device_capabilities(self, device: Device) -> dict[str, Any]:
        st = self.state(device)
        return {
            "device name": st.name,
            "device type": st.kind,
            "float64": st.features["float64"],
            "int64 atomics": st.features["int64_atomics"],
            "float32 atomic add": st.features["float32_atomic_add"],
            "host functions": HOST_FUNCTIONS + (
                "index_add (the scatter-add with repeated indices of reverse mode's gathers)",),
        }


BACKEND: Backend = VulkanBackend()
