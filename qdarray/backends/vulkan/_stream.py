"""Command recording and submission for one device: batches, barriers, copies, fences and
timestamp queries.

Work is recorded into the current command buffer (a *batch*); every command after the first
in a batch is preceded by a memory barrier, so each dispatch or copy sees the writes of the
ones recorded before it (the order the host issued them in, as on an in-order queue). A batch
is submitted when the host needs results (`finish`), when a timing is read, or once it holds
`BATCH_COMMANDS` commands, so long sequences of launches keep the device busy. A submitted
batch keeps the buffers and descriptor pools it uses alive until its fence has signalled;
then its command buffer, fence and descriptor pool are reused.
"""

from __future__ import annotations

import threading
from typing import Any

from ._binding import api, check_result
from ._instance import DeviceState
from ._memory import Allocation

BATCH_COMMANDS = 256
DESCRIPTOR_SETS_PER_POOL = 256
_TIMEOUT_NS = 600 * 10**9


class Batch:
    """One command buffer with its fence, descriptor pools and the objects it keeps alive."""

    def __init__(self, stream: Stream) -> None:
        vk = api()
        ffi, lib, dev = vk.ffi, vk.lib, stream.st.device
        info = ffi.new("VkCommandBufferAllocateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
        info.commandPool = stream.command_pool
        info.level = vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY
        info.commandBufferCount = 1
        cmd = ffi.new("VkCommandBuffer*")
        check_result(lib.vkAllocateCommandBuffers(dev, info, cmd), stream.st.label,
                     "allocating a command buffer")
        self.cmd = cmd[0]
        finfo = ffi.new("VkFenceCreateInfo*")
        finfo.sType = vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
        fence = ffi.new("VkFence*")
        check_result(lib.vkCreateFence(dev, finfo, ffi.NULL, fence), stream.st.label,
                     "creating a fence")
        self.fence = fence[0]
        self.pools: list[Any] = []
        self.pool_left = 0
        self.keep: list[Any] = []
        self.commands = 0


class Stream:
    """The command stream of one device (see the module docstring)."""

    def __init__(self, st: DeviceState) -> None:
        vk = api()
        self.st = st
        self.lock = threading.RLock()
        info = vk.ffi.new("VkCommandPoolCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        info.flags = vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        info.queueFamilyIndex = st.queue_family
        pool = vk.ffi.new("VkCommandPool*")
        check_result(vk.lib.vkCreateCommandPool(st.device, info, vk.ffi.NULL, pool), st.label,
                     "creating a command pool")
        self.command_pool = pool[0]
        self.current: Batch | None = None
        self.in_flight: list[Batch] = []
        self.idle: list[Batch] = []
        self.submitted = 0  # batches submitted so far (tests and stats read it)
        barrier = vk.ffi.new("VkMemoryBarrier*")
        barrier.sType = vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        barrier.srcAccessMask = (vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
                                 | vk.VK_ACCESS_HOST_WRITE_BIT)
        barrier.dstAccessMask = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                                 | vk.VK_ACCESS_TRANSFER_READ_BIT
                                 | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        self._barrier = barrier
        self._stages = (vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                        | vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
        self._host_barrier = vk.ffi.new("VkMemoryBarrier*")
        self._host_barrier.sType = vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self._host_barrier.srcAccessMask = (vk.VK_ACCESS_SHADER_WRITE_BIT
                                            | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        self._host_barrier.dstAccessMask = vk.VK_ACCESS_HOST_READ_BIT

    # -- recording ---------------------------------------------------------------------------

    def record(self, *keep: Any) -> Any:
        """The command buffer to record the next command into, after a barrier on the
        commands recorded before it; `keep` stays alive until the batch has run."""
        vk = api()
        b = self.current
        if b is None:
            b = self.idle.pop() if self.idle else Batch(self)
            info = vk.ffi.new("VkCommandBufferBeginInfo*")
            info.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
            info.flags = vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
            check_result(vk.lib.vkBeginCommandBuffer(b.cmd, info), self.st.label,
                         "beginning a command buffer")
            self.current = b
        elif b.commands:
            vk.lib.vkCmdPipelineBarrier(b.cmd, self._stages, self._stages, 0, 1, self._barrier,
                                        0, vk.ffi.NULL, 0, vk.ffi.NULL)
        b.commands += 1
        b.keep.extend(keep)
        return b.cmd

    def descriptor_set(self, layout: Any, n_buffers: int) -> Any:
        """A descriptor set of `layout` from the current batch's pools."""
        vk = api()
        ffi, lib, dev = vk.ffi, vk.lib, self.st.device
        b = self.current
        assert b is not None
        if b.pool_left == 0:
            size = ffi.new("VkDescriptorPoolSize*")
            size.type = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            size.descriptorCount = DESCRIPTOR_SETS_PER_POOL * 32
            info = ffi.new("VkDescriptorPoolCreateInfo*")
            info.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
            info.maxSets = DESCRIPTOR_SETS_PER_POOL
            info.poolSizeCount = 1
            info.pPoolSizes = size
            pool = ffi.new("VkDescriptorPool*")
            check_result(lib.vkCreateDescriptorPool(dev, info, ffi.NULL, pool), self.st.label,
                         "creating a descriptor pool")
            b.pools.append(pool[0])
            b.pool_left = DESCRIPTOR_SETS_PER_POOL
        info = ffi.new("VkDescriptorSetAllocateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
        info.descriptorPool = b.pools[-1]
        info.descriptorSetCount = 1
        layouts = ffi.new("VkDescriptorSetLayout[1]", [layout])
        info.pSetLayouts = layouts
        out = ffi.new("VkDescriptorSet*")
        check_result(lib.vkAllocateDescriptorSets(dev, info, out), self.st.label,
                     "allocating a descriptor set")
        b.pool_left -= 1
        return out[0]

    def copy(self, src: Allocation, src_offset: int, dst: Allocation, dst_offset: int,
             nbytes: int) -> None:
        """Record a buffer-to-buffer copy."""
        vk = api()
        with self.lock:
            cmd = self.record(src, dst)
            region = vk.ffi.new("VkBufferCopy*")
            region.srcOffset = src_offset
            region.dstOffset = dst_offset
            region.size = nbytes
            vk.lib.vkCmdCopyBuffer(cmd, src.buffer, dst.buffer, 1, region)
            self._maybe_flush()

    def fill(self, dst: Allocation, offset: int, nbytes: int, word: int) -> None:
        """Record filling `nbytes` (a multiple of 4) at `offset` with a 32-bit pattern."""
        vk = api()
        with self.lock:
            cmd = self.record(dst)
            vk.lib.vkCmdFillBuffer(cmd, dst.buffer, offset, nbytes, word & 0xFFFFFFFF)
            self._maybe_flush()

    def _maybe_flush(self) -> None:
        b = self.current
        if b is not None and b.commands >= BATCH_COMMANDS:
            self.flush()

    # -- submission --------------------------------------------------------------------------

    def flush(self) -> None:
        """Submit the current batch (returns at once)."""
        vk = api()
        with self.lock:
            b = self.current
            if b is None:
                return
            lib = vk.lib
            lib.vkCmdPipelineBarrier(b.cmd, self._stages, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                     self._host_barrier, 0, vk.ffi.NULL, 0, vk.ffi.NULL)
            check_result(lib.vkEndCommandBuffer(b.cmd), self.st.label, "ending a command buffer")
            submit = vk.ffi.new("VkSubmitInfo*")
            submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
            cmds = vk.ffi.new("VkCommandBuffer[1]", [b.cmd])
            submit.commandBufferCount = 1
            submit.pCommandBuffers = cmds
            with self.st.lock:
                check_result(lib.vkQueueSubmit(self.st.queue, 1, submit, b.fence),
                             self.st.label, "submitting work")
            self.current = None
            self.in_flight.append(b)
            self.submitted += 1
            while len(self.in_flight) > 4:  # bound the work queued ahead of the host
                self._wait(self.in_flight.pop(0))

    def finish(self) -> None:
        """Submit what is recorded and wait until the device has done all of it."""
        with self.lock:
            self.flush()
            while self.in_flight:
                self._wait(self.in_flight.pop(0))

    def _wait(self, b: Batch) -> None:
        vk = api()
        lib, dev = vk.lib, self.st.device
        fences = vk.ffi.new("VkFence[1]", [b.fence])
        check_result(lib.vkWaitForFences(dev, 1, fences, 1, _TIMEOUT_NS), self.st.label,
                     "waiting for submitted work")
        lib.vkResetFences(dev, 1, fences)
        lib.vkResetCommandBuffer(b.cmd, 0)
        for p in b.pools:
            lib.vkDestroyDescriptorPool(dev, p, vk.ffi.NULL)
        b.pools.clear()
        b.pool_left = 0
        b.keep.clear()
        b.commands = 0
        self.idle.append(b)

    # -- timing ------------------------------------------------------------------------------

    def timer(self) -> Timer:
        return Timer(self)


class Timer:
    """Device time between `start()` and `stop()`, from two timestamp queries::

        t = stream.timer(); t.start(); ...launches...; t.stop(); t.elapsed_ns()
    """

    def __init__(self, stream: Stream) -> None:
        vk = api()
        self.stream = stream
        st = stream.st
        info = vk.ffi.new("VkQueryPoolCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO
        info.queryType = vk.VK_QUERY_TYPE_TIMESTAMP
        info.queryCount = 2
        pool = vk.ffi.new("VkQueryPool*")
        check_result(vk.lib.vkCreateQueryPool(st.device, info, vk.ffi.NULL, pool), st.label,
                     "creating a timestamp query pool")
        self.pool = pool[0]

    def _write(self, index: int) -> None:
        vk = api()
        with self.stream.lock:
            cmd = self.stream.record(self)  # the pool lives until the batch has run
            if index == 0:
                vk.lib.vkCmdResetQueryPool(cmd, self.pool, 0, 2)
            vk.lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.pool,
                                       index)

    def start(self) -> None:
        self._write(0)

    def stop(self) -> None:
        self._write(1)

    def elapsed_ns(self) -> float:
        """Waits for the work, then returns the device time in nanoseconds."""
        vk = api()
        st = self.stream.st
        self.stream.finish()
        data = vk.ffi.new("uint64_t[2]")
        check_result(vk.lib.vkGetQueryPoolResults(
            st.device, self.pool, 0, 2, 16, data, 8,
            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT), st.label,
            "reading timestamps")
        mask = (1 << st.timestamp_bits) - 1 if st.timestamp_bits < 64 else (1 << 64) - 1
        ticks = (int(data[1]) - int(data[0])) & mask
        return ticks * st.timestamp_period

    def __del__(self) -> None:
        vk = api()
        vk.lib.vkDestroyQueryPool(self.stream.st.device, self.pool, vk.ffi.NULL)


_streams: dict[int, Stream] = {}
_streams_lock = threading.Lock()


def stream(st: DeviceState) -> Stream:
    with _streams_lock:
        found = _streams.get(st.index)
        if found is None:
            found = _streams[st.index] = Stream(st)
        return found
