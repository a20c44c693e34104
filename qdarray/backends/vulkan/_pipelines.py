"""Compute pipelines from SPIR-V modules, cached per (device, module), and their dispatch.

A `Program` is one SPIR-V compute module with entry point `main`: its storage buffers are
bindings 0..n-1 of descriptor set 0 (one per array), its scalars and shapes a push-constant
block of `push_bytes` bytes. `dispatch` records: a descriptor set naming the buffers, the
pipeline, the push constants and `vkCmdDispatch`. Programs are kept per device by the
module's hash, so a kernel compiled once is a pipeline once; the driver's own pipeline cache
(a `VkPipelineCache` per device) speeds up re-creating pipelines the driver has seen.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from ._binding import VulkanError, api, check_result
from ._instance import DeviceState
from ._memory import Allocation, pool
from ._stream import stream


class Program:
    """One compute pipeline on one device (see the module docstring)."""

    def __init__(self, st: DeviceState, spirv: bytes, n_buffers: int, push_bytes: int) -> None:
        vk = api()
        ffi, lib, dev = vk.ffi, vk.lib, st.device
        self.st = st
        self.n_buffers = n_buffers
        self.push_bytes = push_bytes
        if n_buffers > st.limits["maxPerStageDescriptorStorageBuffers"]:
            raise VulkanError(
                f"{st.label} binds at most {st.limits['maxPerStageDescriptorStorageBuffers']} "
                f"storage buffers per kernel; this kernel needs {n_buffers}. Pass fewer arrays "
                "(e.g. split the kernel).")
        if push_bytes > st.limits["maxPushConstantsSize"]:
            raise VulkanError(f"{st.label} takes at most {st.limits['maxPushConstantsSize']} "
                              f"bytes of push constants; this kernel needs {push_bytes}.")
        bindings = ffi.new("VkDescriptorSetLayoutBinding[]", max(n_buffers, 1))
        for i in range(n_buffers):
            bindings[i].binding = i
            bindings[i].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            bindings[i].descriptorCount = 1
            bindings[i].stageFlags = vk.VK_SHADER_STAGE_COMPUTE_BIT
        linfo = ffi.new("VkDescriptorSetLayoutCreateInfo*")
        linfo.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
        linfo.bindingCount = n_buffers
        linfo.pBindings = bindings
        layout = ffi.new("VkDescriptorSetLayout*")
        check_result(lib.vkCreateDescriptorSetLayout(dev, linfo, ffi.NULL, layout), st.label,
                     "creating a descriptor set layout")
        self.set_layout = layout[0]
        pinfo = ffi.new("VkPipelineLayoutCreateInfo*")
        pinfo.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
        pinfo.setLayoutCount = 1
        layouts = ffi.new("VkDescriptorSetLayout[1]", [self.set_layout])
        pinfo.pSetLayouts = layouts
        prange = ffi.new("VkPushConstantRange*")
        if push_bytes:
            prange.stageFlags = vk.VK_SHADER_STAGE_COMPUTE_BIT
            prange.offset = 0
            prange.size = push_bytes
            pinfo.pushConstantRangeCount = 1
            pinfo.pPushConstantRanges = prange
        playout = ffi.new("VkPipelineLayout*")
        check_result(lib.vkCreatePipelineLayout(dev, pinfo, ffi.NULL, playout), st.label,
                     "creating a pipeline layout")
        self.layout = playout[0]
        code = ffi.new("char[]", spirv)
        minfo = ffi.new("VkShaderModuleCreateInfo*")
        minfo.sType = vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
        minfo.codeSize = len(spirv)
        minfo.pCode = ffi.cast("uint32_t*", code)
        module = ffi.new("VkShaderModule*")
        check_result(lib.vkCreateShaderModule(dev, minfo, ffi.NULL, module), st.label,
                     "creating a shader module")
        cinfo = ffi.new("VkComputePipelineCreateInfo*")
        cinfo.sType = vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
        cinfo.stage.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
        cinfo.stage.stage = vk.VK_SHADER_STAGE_COMPUTE_BIT
        cinfo.stage.module = module[0]
        entry = ffi.new("char[]", b"main")
        cinfo.stage.pName = entry
        cinfo.layout = self.layout
        pipe = ffi.new("VkPipeline*")
        result = lib.vkCreateComputePipelines(dev, _pipeline_cache(st), 1, cinfo, ffi.NULL, pipe)
        lib.vkDestroyShaderModule(dev, module[0], ffi.NULL)
        check_result(result, st.label, "creating a compute pipeline")
        self.pipeline = pipe[0]
        # Reused per dispatch: the descriptor writes and buffer infos.
        self._infos = ffi.new("VkDescriptorBufferInfo[]", max(n_buffers, 1))
        self._writes = ffi.new("VkWriteDescriptorSet[]", max(n_buffers, 1))
        for i in range(n_buffers):
            w = self._writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = i
            w.descriptorCount = 1
            w.descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            w.pBufferInfo = self._infos + i
        self._sets = ffi.new("VkDescriptorSet[1]")

    def dispatch(self, groups: tuple[int, int, int], buffers: list[Allocation | None],
                 push: bytes = b"") -> None:
        """Record a dispatch of `groups` workgroups over `buffers` (None: an empty array)."""
        vk = api()
        ffi, lib = vk.ffi, vk.lib
        st = self.st
        if len(buffers) != self.n_buffers or len(push) != self.push_bytes:
            raise ValueError(f"dispatch got {len(buffers)} buffers and {len(push)} push bytes;"
                             f" the program takes {self.n_buffers} and {self.push_bytes}.")
        limit = st.limits["maxComputeWorkGroupCountX"]
        if max(groups) > limit:
            raise VulkanError(f"{st.label} dispatches at most {limit} workgroups per "
                              f"dimension; got {groups}.")
        s = stream(st)
        real = [b if b is not None else _dummy(st) for b in buffers]
        max_range = st.limits["maxStorageBufferRange"]
        with s.lock:
            cmd = s.record(self, *real)
            if self.n_buffers:
                dset = s.descriptor_set(self.set_layout, self.n_buffers)
                for i, b in enumerate(real):
                    info = self._infos[i]
                    info.buffer = b.buffer
                    info.offset = 0
                    info.range = min(b.size, max_range)
                    self._writes[i].dstSet = dset
                lib.vkUpdateDescriptorSets(st.device, self.n_buffers, self._writes, 0, ffi.NULL)
                self._sets[0] = dset
                lib.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout,
                                            0, 1, self._sets, 0, ffi.NULL)
            lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
            if self.push_bytes:
                lib.vkCmdPushConstants(cmd, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       self.push_bytes, ffi.from_buffer(push))
            lib.vkCmdDispatch(cmd, *groups)
            s._maybe_flush()


_lock = threading.Lock()
_programs: dict[tuple[int, bytes, int, int], Program] = {}
_caches: dict[int, Any] = {}
_dummies: dict[int, Allocation] = {}


def program(st: DeviceState, spirv: bytes, n_buffers: int, push_bytes: int) -> Program:
    """The cached pipeline of `spirv` on `st` (built on first use)."""
    key = (st.index, hashlib.sha256(spirv).digest(), n_buffers, push_bytes)
    with _lock:
        found = _programs.get(key)
    if found is None:
        found = Program(st, spirv, n_buffers, push_bytes)
        with _lock:
            _programs[key] = found
    return found


def _pipeline_cache(st: DeviceState) -> Any:
    vk = api()
    with _lock:
        found = _caches.get(st.index)
        if found is None:
            info = vk.ffi.new("VkPipelineCacheCreateInfo*")
            info.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
            out = vk.ffi.new("VkPipelineCache*")
            check_result(vk.lib.vkCreatePipelineCache(st.device, info, vk.ffi.NULL, out),
                         st.label, "creating a pipeline cache")
            found = _caches[st.index] = out[0]
        return found


def _dummy(st: DeviceState) -> Allocation:
    """A small buffer bound where an array is empty (a binding must name a buffer)."""
    with _lock:
        found = _dummies.get(st.index)
        if found is None:
            found = _dummies[st.index] = pool(st).alloc(256)
        return found
