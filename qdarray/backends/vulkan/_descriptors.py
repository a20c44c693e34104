"""Descriptor sets of storage buffers, written once per list of buffers and kept; the
descriptor set and pipeline layouts kernels share.

Every compute pipeline of a device with `n` storage-buffer bindings uses one descriptor set
layout (`set_layout(st, n)`: bindings 0..n-1, compute stage), so a set written for a list of
buffers serves every kernel and stage launched on those buffers. `DescriptorCache.get`
returns the set of a list of buffers, allocating and writing it the first time: a launch on
arrays it has seen before updates no descriptors and allocates nothing. A set's contents
depend only on its buffers (each bound whole, up to maxStorageBufferRange), which live as
long as the pool's blocks do (`_memory.Block`), so a kept set stays valid until the pool
destroys a block; `clear()` then drops them all.

Sets are never freed one by one: once `CAPACITY` sets are kept, or on `clear()`, the cache
starts over with fresh descriptor pools and hands the old ones to the stream, which destroys
them when the work recorded so far (which may still bind their sets) has run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ._binding import VulkanError, api, check_result
from ._instance import DeviceState
from ._memory import Allocation, Block

CAPACITY = 4096
SETS_PER_POOL = 256
_RESULT_POOL_EXHAUSTED = (-1000069000, -1000072003)  # OUT_OF_POOL_MEMORY, FRAGMENTED_POOL

_layouts: dict[tuple[int, ...], Any] = {}
_layouts_lock = threading.RLock()


def set_layout(st: DeviceState, n_buffers: int) -> Any:
    """The descriptor set layout of `n_buffers` storage buffers at bindings 0..n-1, one per
    device and count."""
    key = (st.index, n_buffers)
    with _layouts_lock:
        found = _layouts.get(key)
        if found is not None:
            return found
        vk = api()
        ffi = vk.ffi
        bindings = ffi.new("VkDescriptorSetLayoutBinding[]", max(n_buffers, 1))
        for i in range(n_buffers):
            bindings[i].binding = i
            bindings[i].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            bindings[i].descriptorCount = 1
            bindings[i].stageFlags = vk.VK_SHADER_STAGE_COMPUTE_BIT
        info = ffi.new("VkDescriptorSetLayoutCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
        info.bindingCount = n_buffers
        info.pBindings = bindings
        out = ffi.new("VkDescriptorSetLayout*")
        check_result(vk.lib.vkCreateDescriptorSetLayout(st.device, info, ffi.NULL, out),
                     st.label, "creating a descriptor set layout")
        found = _layouts[key] = out[0]
        return found


def pipeline_layout(st: DeviceState, n_buffers: int, push_bytes: int) -> Any:
    """The pipeline layout of `set_layout(st, n_buffers)` and `push_bytes` bytes of push
    constants, one per device, count and size: pipelines sharing it keep a bound set."""
    key = (st.index, n_buffers, push_bytes)
    with _layouts_lock:
        found = _layouts.get(key)
        if found is not None:
            return found
        vk = api()
        ffi = vk.ffi
        info = ffi.new("VkPipelineLayoutCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
        info.setLayoutCount = 1
        layouts = ffi.new("VkDescriptorSetLayout[1]", [set_layout(st, n_buffers)])
        info.pSetLayouts = layouts
        prange = ffi.new("VkPushConstantRange*")
        if push_bytes:
            prange.stageFlags = vk.VK_SHADER_STAGE_COMPUTE_BIT
            prange.offset = 0
            prange.size = push_bytes
            info.pushConstantRangeCount = 1
            info.pPushConstantRanges = prange
        out = ffi.new("VkPipelineLayout*")
        check_result(vk.lib.vkCreatePipelineLayout(st.device, info, ffi.NULL, out), st.label,
                     "creating a pipeline layout")
        found = _layouts[key] = out[0]
        return found


class DescriptorCache:
    """The kept descriptor sets of one device (see the module docstring). `retire(pools)`
    receives the descriptor pools of a generation the cache has left behind."""

    def __init__(self, st: DeviceState, retire: Callable[[list[Any]], None]) -> None:
        self.st = st
        self.retire = retire
        self.sets: dict[tuple[Block, ...], Any] = {}
        self.pools: list[Any] = []
        self.left = 0  # sets the newest pool can still give
        self.written = 0  # sets allocated and written so far (tests and stats read it)
        self.max_range = st.limits["maxStorageBufferRange"]

    def get(self, buffers: Sequence[Allocation]) -> Any:
        """A `VkDescriptorSet[1]` naming `buffers` at bindings 0..n-1 (call with the stream's
        lock held)."""
        key = tuple([b.block for b in buffers])
        found = self.sets.get(key)
        if found is None:
            if len(self.sets) >= CAPACITY:
                self.clear()
            found = self.sets[key] = self._write(buffers)
        return found

    def clear(self) -> None:
        """Forget every set; their pools go to `retire`."""
        self.sets.clear()
        pools, self.pools, self.left = self.pools, [], 0
        if pools:
            self.retire(pools)

    def _write(self, buffers: Sequence[Allocation]) -> Any:
        vk = api()
        ffi, lib, st = vk.ffi, vk.lib, self.st
        n = len(buffers)
        if self.left == 0:
            self._new_pool(max(n, 32))
        info = ffi.new("VkDescriptorSetAllocateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
        info.descriptorSetCount = 1
        layouts = ffi.new("VkDescriptorSetLayout[1]", [set_layout(st, n)])
        info.pSetLayouts = layouts
        out = ffi.new("VkDescriptorSet[1]")
        for attempt in range(2):
            info.descriptorPool = self.pools[-1]
            result = lib.vkAllocateDescriptorSets(st.device, info, out)
            if result not in _RESULT_POOL_EXHAUSTED:
                break
            if attempt:
                raise VulkanError(f"{st.label}: a fresh descriptor pool cannot hold a set of "
                                  f"{n} storage buffers.")
            self._new_pool(max(n, 32))
        check_result(result, st.label, "allocating a descriptor set")
        self.left -= 1
        self.written += 1
        infos = ffi.new("VkDescriptorBufferInfo[]", n)
        writes = ffi.new("VkWriteDescriptorSet[]", n)
        for i, b in enumerate(buffers):
            infos[i].buffer = b.buffer
            infos[i].offset = 0
            infos[i].range = min(b.size, self.max_range)
            w = writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstSet = out[0]
            w.dstBinding = i
            w.descriptorCount = 1
            w.descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            w.pBufferInfo = infos + i
        lib.vkUpdateDescriptorSets(st.device, n, writes, 0, ffi.NULL)
        return out

    def _new_pool(self, per_set: int) -> None:
        """A descriptor pool of `SETS_PER_POOL` sets of up to `per_set` buffers on average."""
        vk = api()
        ffi = vk.ffi
        size = ffi.new("VkDescriptorPoolSize*")
        size.type = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        size.descriptorCount = SETS_PER_POOL * per_set
        info = ffi.new("VkDescriptorPoolCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
        info.maxSets = SETS_PER_POOL
        info.poolSizeCount = 1
        info.pPoolSizes = size
        out = ffi.new("VkDescriptorPool*")
        check_result(vk.lib.vkCreateDescriptorPool(self.st.device, info, ffi.NULL, out),
                     self.st.label, "creating a descriptor pool")
        self.pools.append(out[0])
        self.left = SETS_PER_POOL
