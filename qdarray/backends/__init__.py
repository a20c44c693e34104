"""Device backends, loaded on first use so optional dependencies stay optional."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._devices import Device
    from .base import Backend

# kind -> module that defines BACKEND
_MODULES = {"cpu": "cpu", "cuda": "cuda", "opencl": "opencl", "vulkan": "vulkan"}


def backend_for(device: Device) -> Backend:
    """The backend of a device kind; raises a clear error when its dependency is missing."""
    name = _MODULES[device.kind]
    try:
        module = importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        raise RuntimeError(
            f"Device {str(device)!r} is not available: the {device.kind} backend needs "
            f"{exc.name!r}, which is not installed. Try `pip install qdarray[{device.kind}]`."
        ) from None
    backend: Backend = module.BACKEND
    return backend
