"""OpenCL devices, their arrays (`ClArray`) and the array namespace over them.

The namespace is `kernel_xp.KernelNamespace`: every function with a device implementation
runs kernels built as IR (`qdarray.kernels.library`) and compiled to OpenCL C by the kernel
compiler, like user kernels; the rest computes on the host and is listed in `HOST_FUNCTIONS`
(the backend's capabilities, docs/opencl.md).
"""

from __future__ import annotations

from typing import Any

from ..kernel_xp import HOST_FUNCTIONS, KernelNamespace
from ._clarray import ClArray
from ._runtime import DeviceState, state


def _state(device: Any) -> DeviceState:
    return state(device.index)


def OpenCLNamespace() -> KernelNamespace:  # noqa: N802 - the backend's `xp` object
    """The namespace of the OpenCL backend."""
    return KernelNamespace(_state)


__all__ = ["OpenCLNamespace", "ClArray", "HOST_FUNCTIONS"]
