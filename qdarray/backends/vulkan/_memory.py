"""Vulkan buffers: one storage buffer per allocation, from a per-device pool.

Arrays live in device-local memory. Where a device-local memory type is also host-visible and
coherent (CPU implementations such as lavapipe, integrated GPUs, and the part of a discrete
GPU's memory the host can map), buffers are mapped once and the host reads and writes them
directly; elsewhere transfers go through host-visible staging buffers and copy commands
(backends/vulkan/_stream.py).

The pool keeps released buffers by size class and hands them out again, as CuPy's and
pyopencl's pools do: sizes below 1 MiB round up to a power of two (256 bytes at least), larger
ones to a multiple of 1 MiB; `exact=True` asks for the size itself (the adstack heap's
fallback when a doubled heap does not fit). When the driver reports out-of-memory the pool
frees what it keeps and tries once more, then raises a MemoryError that names the device,
the size, and what qdarray holds there. A buffer is recycled only when no array references
it and no submitted command buffer still uses it (the stream keeps a reference until its
fence has signalled).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._binding import (
    BUFFER_USAGE_SHADER_DEVICE_ADDRESS,
    MEMORY_ALLOCATE_DEVICE_ADDRESS,
    VulkanError,
    api,
    check_result,
)
from ._instance import DeviceState

_MIB = 1 << 20
HOST_VISIBLE = 0x2
HOST_COHERENT = 0x4
HOST_CACHED = 0x8
DEVICE_LOCAL = 0x1


def size_class(nbytes: int) -> int:
    if nbytes <= 256:
        return 256
    if nbytes < _MIB:
        return 1 << (nbytes - 1).bit_length()
    return -(-nbytes // _MIB) * _MIB


class Block:
    """One VkBuffer with its own VkDeviceMemory; `host` is a NumPy uint8 view of its mapped
    memory (None where the memory is not host-visible)."""

    __slots__ = ("buffer", "memory", "size", "host", "address", "staging")

    def __init__(self, buffer: Any, memory: Any, size: int, host: np.ndarray | None,
                 address: int, staging: bool) -> None:
        self.buffer = buffer
        self.memory = memory
        self.size = size
        self.host = host
        self.address = address
        self.staging = staging


class Allocation:
    """A block lent out by the pool: what arrays and queued commands hold. When the last
    reference goes, the block returns to the pool (one Allocation per loan, so this runs
    once per loan: Python calls `__del__` once per object)."""

    __slots__ = ("block", "buffer", "size", "host", "address", "pool", "__weakref__")

    def __init__(self, pool: Pool, block: Block) -> None:
        self.pool = pool
        self.block = block
        self.buffer = block.buffer
        self.size = block.size
        self.host = block.host
        self.address = block.address

    def __del__(self) -> None:
        self.pool.recycle(self.block)


class Pool:
    """The buffers of one device (see the module docstring)."""

    def __init__(self, st: DeviceState) -> None:
        self.st = st
        self.lock = threading.RLock()  # __del__ may recycle while held
        self.free: dict[tuple[int, bool], list[Block]] = {}
        self.active_bytes = 0  # held by live arrays and in-flight work
        self.cached_bytes = 0  # kept for reuse
        self.device_type, self.mapped = _device_type(st)
        self.staging_type = _staging_type(st)
        self.device_heap = st.memory_types[self.device_type][1]
        bda = st.features["buffer_device_address"]
        vk = api()
        self.usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                      | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
                      | (BUFFER_USAGE_SHADER_DEVICE_ADDRESS if bda else 0))
        self.bda = bda
        # Called before kept buffers are destroyed (the stream's descriptor cache forgets
        # the sets that name them).
        self.on_release: list[Callable[[], None]] = []
        # Called when the driver refuses a buffer, before trying once more (the device's
        # stream waits for its queued work, whose finished batches give their buffers back).
        self.on_exhausted: list[Callable[[], None]] = []

    # -- allocation --------------------------------------------------------------------------

    def alloc(self, nbytes: int, exact: bool = False, staging: bool = False) -> Allocation:
        """A buffer of at least `nbytes` (exactly, with `exact`); `staging`: host-visible
        memory for transfers."""
        size = max(int(nbytes), 4) if exact else size_class(int(nbytes))
        key = (size, staging)
        with self.lock:
            bucket = self.free.get(key)
            if bucket:
                block = bucket.pop()
                self.cached_bytes -= size
                self.active_bytes += size
                return Allocation(self, block)
        try:
            block = self._create(size, staging)
        except MemoryError:
            self.release_cached()
            for wait in self.on_exhausted:
                wait()
            self.release_cached()
            try:
                block = self._create(size, staging)
            except MemoryError:
                raise MemoryError(
                    f"{self.st.label} cannot allocate {size:,} bytes: out of device memory "
                    f"(qdarray's arrays hold {self.active_bytes:,} bytes there; the heap has "
                    f"{self.st.heap_sizes[self.device_heap]:,}). Free arrays or use smaller "
                    "ones.") from None
        with self.lock:
            self.active_bytes += size
        return Allocation(self, block)

    def recycle(self, block: Block) -> None:
        """Called when the last reference to a loan of `block` goes: keep it for reuse."""
        with self.lock:
            self.active_bytes -= block.size
            self.cached_bytes += block.size
            self.free.setdefault((block.size, block.staging), []).append(block)

    def release_cached(self) -> None:
        """Give every kept buffer back to the driver."""
        vk = api()
        with self.lock:
            kept = [a for bucket in self.free.values() for a in bucket]
            self.free.clear()
            self.cached_bytes = 0
        if kept:
            for forget in self.on_release:
                forget()
        for a in kept:
            vk.lib.vkDestroyBuffer(self.st.device, a.buffer, vk.ffi.NULL)
            vk.lib.vkFreeMemory(self.st.device, a.memory, vk.ffi.NULL)

    def _create(self, size: int, staging: bool) -> Block:
        heap = self.st.heap_sizes[self.st.memory_types[
            self.staging_type if staging else self.device_type][1]]
        largest = min(heap, self.st.limits["maxMemoryAllocationSize"])
        if size > largest:  # drivers need not refuse these themselves (lavapipe does not)
            raise MemoryError(f"{self.st.label} allocates at most {largest:,} bytes at once "
                              f"(its heap and maxMemoryAllocationSize); asked for {size:,}.")
        vk = api()
        ffi, lib, dev = vk.ffi, vk.lib, self.st.device
        info = ffi.new("VkBufferCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = size
        info.usage = self.usage
        info.sharingMode = vk.VK_SHARING_MODE_EXCLUSIVE
        buf = ffi.new("VkBuffer*")
        check_result(lib.vkCreateBuffer(dev, info, ffi.NULL, buf), self.st.label,
                     f"creating a buffer of {size:,} bytes")
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(dev, buf[0], req)
        mtype = self.staging_type if staging else self.device_type
        if not req.memoryTypeBits & (1 << mtype):
            lib.vkDestroyBuffer(dev, buf[0], ffi.NULL)
            raise VulkanError(f"{self.st.label}: storage buffers cannot use memory type "
                              f"{mtype} (allowed bits {req.memoryTypeBits:#x}).")
        ainfo = ffi.new("VkMemoryAllocateInfo*")
        ainfo.sType = vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
        ainfo.allocationSize = req.size
        ainfo.memoryTypeIndex = mtype
        flags = None
        if self.bda:
            flags = ffi.new("VkMemoryAllocateFlagsInfo*")
            flags.sType = vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO
            flags.flags = MEMORY_ALLOCATE_DEVICE_ADDRESS
            ainfo.pNext = flags
        mem = ffi.new("VkDeviceMemory*")
        result = lib.vkAllocateMemory(dev, ainfo, ffi.NULL, mem)
        if result < 0:
            lib.vkDestroyBuffer(dev, buf[0], ffi.NULL)
            check_result(result, self.st.label, f"allocating {size:,} bytes")
        lib.vkBindBufferMemory(dev, buf[0], mem[0], 0)
        host = None
        if staging or self.mapped:
            ptr = ffi.new("void**")
            check_result(lib.vkMapMemory(dev, mem[0], 0, size, 0, ptr), self.st.label,
                         "mapping memory")
            host = np.frombuffer(ffi.buffer(ptr[0], size), dtype=np.uint8)
        address = 0
        if self.bda:
            ainfo2 = ffi.new("VkBufferDeviceAddressInfo*")
            ainfo2.sType = vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO
            ainfo2.buffer = buf[0]
            address = int(lib.vkGetBufferDeviceAddress(dev, ainfo2))
        return Block(buf[0], mem[0], size, host, address, staging)


def _device_type(st: DeviceState) -> tuple[int, bool]:
    """(memory type for arrays, whether it is host-mapped): device-local in the largest
    device-local heap. Where that memory is the host's own (CPU implementations, integrated
    GPUs: `shares_host_memory`), a host-visible coherent type there is mapped. A discrete GPU
    keeps arrays in a type the host does not map when it has one: a host mapping of video
    memory (resizable BAR) is uncached, so host reads through it crawl; staging buffers in
    cached host memory carry the transfers instead."""
    local = [i for i, (flags, _) in enumerate(st.memory_types) if flags & DEVICE_LOCAL]
    if not local:  # a device without device-local memory: any type will do
        local = list(range(len(st.memory_types)))
    biggest = max(st.heap_sizes[st.memory_types[i][1]] for i in local)
    local = [i for i in local if st.heap_sizes[st.memory_types[i][1]] == biggest]
    want = HOST_VISIBLE | HOST_COHERENT
    mapped = [i for i in local if st.memory_types[i][0] & want == want]
    unmapped = [i for i in local if not st.memory_types[i][0] & HOST_VISIBLE]
    if mapped and (shares_host_memory(st) or not unmapped):
        return mapped[0], True
    return (unmapped or local)[0], False


def shares_host_memory(st: DeviceState) -> bool:
    """Whether the device's memory is the host's (a CPU implementation or integrated GPU)."""
    return st.type in (1, 4)


def _staging_type(st: DeviceState) -> int:
    want = HOST_VISIBLE | HOST_COHERENT
    usable = [i for i, (flags, _) in enumerate(st.memory_types) if flags & want == want]
    if not usable:
        raise VulkanError(f"{st.label} has no host-visible coherent memory type.")
    cached = [i for i in usable if st.memory_types[i][0] & HOST_CACHED]
    return (cached or usable)[0]


_pools: dict[int, Pool] = {}
_pools_lock = threading.Lock()


def pool(st: DeviceState) -> Pool:
    with _pools_lock:
        found = _pools.get(st.index)
        if found is None:
            found = _pools[st.index] = Pool(st)
        return found
