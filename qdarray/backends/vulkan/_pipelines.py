"""Compute pipelines from SPIR-V modules, cached per (device, module), and their dispatch.

A `Program` is one SPIR-V compute module with entry point `main`: its storage buffers are
bindings 0..n-1 of descriptor set 0 (one per array it accesses), its scalars and shapes a
push-constant
block of `push_bytes` bytes. `dispatch` adds to the stream's batch the descriptor set naming
the buffers (written once per list of buffers and kept, _descriptors.py), the pipeline, the
push constants and the workgroup counts; the stream records them (a set or pipeline already
bound in the batch is not bound again) or replays a recording of the same batch
(_stream.py). Programs are kept per device by the module's hash, so a kernel compiled once is a
pipeline once; the driver's own pipeline cache (a `VkPipelineCache` per device) speeds up
re-creating pipelines the driver has seen.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from ._binding import VulkanError, api, check_result
from ._descriptors import pipeline_layout, set_layout
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
                f"storage buffers per kernel; this kernel needs {n_buffers} (one per array "
                "whose elements it reads or writes, and its own). Use fewer arrays per kernel "
                "(e.g. split the kernel).")
        if push_bytes > st.limits["maxPushConstantsSize"]:
            raise VulkanError(f"{st.label} takes at most {st.limits['maxPushConstantsSize']} "
                              f"bytes of push constants; this kernel needs {push_bytes}.")
        self.set_layout = set_layout(st, n_buffers)
        self.layout = pipeline_layout(st, n_buffers, push_bytes)
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
        self.max_groups = st.limits["maxComputeWorkGroupCountX"]
        self.stream = stream(st)

    def dispatch(self, groups: tuple[int, int, int], buffers: list[Allocation | None],
                 push: bytes = b"") -> None:
        """Add a dispatch of `groups` workgroups over `buffers` (None: an empty array) to
        the stream's batch."""
        if len(buffers) != self.n_buffers or len(push) != self.push_bytes:
            raise ValueError(f"dispatch got {len(buffers)} buffers and {len(push)} push bytes;"
                             f" the program takes {self.n_buffers} and {self.push_bytes}.")
        if max(groups) > self.max_groups:
            raise VulkanError(f"{self.st.label} dispatches at most {self.max_groups} "
                              f"workgroups per dimension; got {groups}.")
        self.enqueue(groups, [b if b is not None else dummy(self.st) for b in buffers], push)

    def enqueue(self, groups: tuple[int, int, int], buffers: list[Allocation],
                push: bytes) -> None:
        """`dispatch` without its checks, for callers that made the arguments right once
        (kernel launchers: their buffer count and block size are the program's, their
        workgroup counts within every device's limit)."""
        s = self.stream
        with s.lock:
            dset = s.descriptors.get(buffers) if self.n_buffers else None
            s.add(("dispatch", self, dset, push, groups), self, *buffers)


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


def dummy(st: DeviceState) -> Allocation:
    """A small buffer bound where an array is empty (a binding must name a buffer)."""
    with _lock:
        found = _dummies.get(st.index)
        if found is None:
            found = _dummies[st.index] = pool(st).alloc(256)
        return found
