"""Device backends, loaded on first use so optional dependencies stay optional.

This package is the one place that knows the device kinds: which module serves each, and the
DLPack device type code of its arrays. Importing it (the package root does) tells `Device`
how to find a device's backend (`Device.backend`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._devices import Device, register_backends

if TYPE_CHECKING:
    from .base import Backend

# kind -> (module defining BACKEND, DLPack device type code of its arrays, from dlpack.h)
_KINDS = {"cpu": ("cpu.backend", 1), "cuda": ("cuda.backend", 2), "opencl": ("opencl.backend", 4),
          "vulkan": ("vulkan.backend", 7)}


def backend_for(device: Device) -> Backend:
    """The backend of a device kind; raises a clear error when its dependency is missing."""
    name = _KINDS[device.kind][0]
    try:
        module = importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        raise RuntimeError(
            f"Device {str(device)!r} is not available: the {device.kind} backend needs "
            f"{exc.name!r}, which is not installed. Try `pip install qdarray[{device.kind}]`."
        ) from None
    backend: Backend = module.BACKEND
    return backend


def dlpack_device(device: Device) -> tuple[int, int]:
    """`(DLPack device type, device id)` of arrays on `device`."""
    return _KINDS[device.kind][1], device.index


def dlpack_kind(code: int) -> str | None:
    """The device kind whose arrays have DLPack device type `code` (None: no kind)."""
    return next((kind for kind, (_, c) in _KINDS.items() if c == code), None)


def describe(device: Device) -> str:
    """`device.description`: what the device is (discovery.py, cached across processes)."""
    from .discovery import description

    return description(device)


register_backends(backend_for, describe)
