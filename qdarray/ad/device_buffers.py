"""The buffers a reverse launch passes besides the user's arrays, on the launch's device.

A reverse kernel takes adstack heaps, the stacks' layout, the overflow flags, scratch slots
and (for the counting pass) a counts array. On the CPU these are NumPy arrays. On another
device they live in its memory, so that a launch copies nothing large: heaps come from a
per-device `HeapPool` (allocated with the backend's `empty`, guarded by the device's free
memory), the layout is uploaded once per sizing, and the overflow flags stay on the device
and are read back right after the launch (the synchronisation point at which an overflow is
reported).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import Array
from .._devices import CPU, Device
from .adstack import POOL, HeapPool

_POOLS: dict[Device, HeapPool] = {CPU: POOL}


def pool_for(device: Device) -> HeapPool:
    """The heap pool of `device` (the CPU's is `adstack.POOL`)."""
    pool = _POOLS.get(device)
    if pool is None:
        backend: Any = device.backend
        pool = HeapPool(alloc=lambda n, dtype: backend.empty((n,), dtype, device),
                        available=lambda: backend.available_bytes(device))
        _POOLS[device] = pool
    return pool


class DeviceBuffers:
    """Allocation and read-back of a reverse launch's own buffers on one device."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.on_host = device is CPU
        self.pool = pool_for(device)

    def zeros(self, n: int, np_dtype: Any) -> Any:
        if self.on_host:
            return np.zeros(n, np_dtype)
        return self.upload(np.zeros(n, np_dtype))

    def upload(self, host: np.ndarray) -> Any:
        """A device copy of a host array (the host array itself on the CPU)."""
        if self.on_host:
            return host
        return self.device.backend.asarray(host, None, True, self.device)

    def to_host(self, native: Any) -> np.ndarray:
        if self.on_host:
            return native  # type: ignore[no-any-return]
        return self.device.backend.to_host(native)

    def as_argument(self, native: Any) -> Any:
        """What a launch on this device takes for a native array: the array on the CPU,
        an Array wrapping device memory elsewhere."""
        return native if self.on_host else Array._new(native, self.device)
