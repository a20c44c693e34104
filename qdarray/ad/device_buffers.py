"""The buffers a reverse launch passes besides the user's arrays, where its target keeps them.

A reverse kernel takes adstack heaps, the stacks' layout, the overflow flags, scratch slots
and (for the counting pass) a counts array; the max-reducer takes partial maxima. The kernel
target says where they live (`KernelTarget.buffer_device`): in host memory (NumPy arrays;
the CPU and the interpreter) or in a device's memory, so that a launch copies nothing large.
On a device, heaps come from a per-device `HeapPool` (allocated with the backend's `empty`,
guarded by the device's free memory), the layout is uploaded once per sizing, and the
overflow flags stay on the device and are read back right after the launch (the
synchronisation point at which an overflow is reported).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import Array
from .heaps import POOL, HeapPool

_POOLS: dict[Any, HeapPool] = {None: POOL}


def pool_for(device: Any) -> HeapPool:
    """The heap pool of `device` (None: host memory, whose pool is `heaps.POOL`)."""
    pool = _POOLS.get(device)
    if pool is None:
        backend: Any = device.backend
        pool = HeapPool(alloc=lambda n, dtype: backend.empty((n,), dtype, device),
                        available=lambda: backend.available_bytes(device))
        _POOLS[device] = pool
    return pool


class DeviceBuffers:
    """Allocation and read-back of a launch's own buffers on one device (None: host)."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.on_host = device is None

    @property
    def pool(self) -> HeapPool:
        """The device's heap pool."""
        return pool_for(self.device)

    def empty(self, n: int, np_dtype: Any) -> Any:
        """An uninitialised buffer of `n` elements."""
        if self.on_host:
            return np.empty(n, np_dtype)
        backend: Any = self.device.backend
        return backend.empty((n,), np.dtype(np_dtype), self.device)

    def zeros(self, n: int, np_dtype: Any) -> Any:
        if self.on_host:
            return np.zeros(n, np_dtype)
        return self.upload(np.zeros(n, np_dtype))

    def upload(self, host: np.ndarray) -> Any:
        """A device copy of a host array (the host array itself in host memory)."""
        if self.on_host:
            return host
        return self.device.backend.asarray(host, None, True, self.device)

    def to_host(self, native: Any) -> np.ndarray:
        if self.on_host:
            return native  # type: ignore[no-any-return]
        backend: Any = self.device.backend
        return backend.to_host(native)  # type: ignore[no-any-return]

    def max(self, native: Any) -> int:
        """The largest element of a 1-D integer buffer (computed where it lives: one number
        comes back)."""
        if self.on_host:
            return int(native.max())
        backend = self.device.backend
        return int(backend.to_host(backend.normalize(backend.xp.max(native))))

    def as_argument(self, native: Any) -> Any:
        """What a launch on this device takes for a native array: the array in host memory,
        an Array wrapping device memory elsewhere."""
        return native if self.on_host else Array._new(native, self.device)
