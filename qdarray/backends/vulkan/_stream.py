"""Command recording and submission for one device: batches, barriers, copies, fences and
timestamp queries.

Work is recorded into the current command buffer (a *batch*); every command after the first
in a batch is preceded by a memory barrier, so each dispatch or copy sees the writes of the
ones recorded before it (the order the host issued them in, as on an in-order queue). A batch
is submitted when the host needs results (`finish`), when a timing is read, or once it holds
`BATCH_COMMANDS` commands, so long sequences of launches keep the device busy. A submitted
batch keeps the buffers it uses alive until its fence has signalled; then its command
buffer and fence are reused. Descriptor sets come from the device's cache
(_descriptors.py): a launch on buffers seen before binds a set written earlier; descriptor
pools the cache leaves behind are destroyed once the batches that may use them have run.
Recording allocates nothing per command: the structures Vulkan calls read are made once per
stream or batch. Waiting for a batch on a GPU polls its fence for up to `SPIN_SECONDS` before
blocking in vkWaitForFences, whose wake-up costs tens of microseconds, more than a small
launch takes, and on NVIDIA's driver about 0.7 ms (CUDA's default synchronisation spins
likewise). The poll lasts long enough that a wait which still blocks loses under a tenth of
its time to the late wake-up (a reverse launch of a few milliseconds polled for 2 ms, then
blocked and woke late). A CPU implementation (lavapipe) needs the host's cores for the work
itself, so there the host blocks at once. `waits` and `blocked` count the waits and those of
them that blocked, `wait_seconds` sums their time (benchmarks/gpu/profile_vulkan.py reports
them).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ._binding import api, check_result
from ._descriptors import DescriptorCache
from ._instance import DeviceState
from ._memory import Allocation, pool

BATCH_COMMANDS = 256
_TIMEOUT_NS = 600 * 10**9
_VK_TIMEOUT = 2
_VK_NOT_READY = 1
# Seconds a wait for a GPU's batch polls its fence before blocking (module docstring).
SPIN_SECONDS = 10e-3


class Batch:
    """One command buffer with its fence, the objects it keeps alive and the descriptor
    pools to destroy once it has run."""

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
        self.fences = ffi.new("VkFence[1]", [self.fence])
        self.cmds = ffi.new("VkCommandBuffer[1]", [self.cmd])
        self.submit = ffi.new("VkSubmitInfo*")
        self.submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
        self.submit.commandBufferCount = 1
        self.submit.pCommandBuffers = self.cmds
        self.pools: list[Any] = []
        self.keep: list[Any] = []
        self.commands = 0
        # What the last dispatch bound (binding again what is bound records nothing).
        self.pipeline: Any = None
        self.dset: Any = None
        self.layout: Any = None  # the pipeline layout `dset` was bound with


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
        cpool = vk.ffi.new("VkCommandPool*")
        check_result(vk.lib.vkCreateCommandPool(st.device, info, vk.ffi.NULL, cpool), st.label,
                     "creating a command pool")
        self.command_pool = cpool[0]
        self.current: Batch | None = None
        self.in_flight: list[Batch] = []
        self.idle: list[Batch] = []
        self.submitted = 0  # batches submitted so far (tests and stats read it)
        self.waits = 0  # waits for a batch, and those that blocked in vkWaitForFences
        self.blocked = 0
        self.wait_seconds = 0.0  # the host's time in those waits
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
        self._begin = vk.ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        self._begin.flags = vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
        self.descriptors = DescriptorCache(st, self._retire)
        pool(st).on_release.append(self._forget_sets)

    # -- recording ---------------------------------------------------------------------------

    def record(self, *keep: Any) -> Any:
        """The command buffer to record the next command into, after a barrier on the
        commands recorded before it; `keep` stays alive until the batch has run."""
        vk = api()
        b = self.current
        if b is None:
            b = self.idle.pop() if self.idle else Batch(self)
            # Beginning resets the buffer (its pool has RESET_COMMAND_BUFFER_BIT).
            result = vk.lib.vkBeginCommandBuffer(b.cmd, self._begin)
            if result:
                check_result(result, self.st.label, "beginning a command buffer")
            b.pipeline = b.dset = b.layout = None
            self.current = b
        elif b.commands:
            vk.lib.vkCmdPipelineBarrier(b.cmd, self._stages, self._stages, 0, 1, self._barrier,
                                        0, vk.ffi.NULL, 0, vk.ffi.NULL)
        b.commands += 1
        b.keep.extend(keep)
        return b.cmd

    def _forget_sets(self) -> None:
        with self.lock:
            self.descriptors.clear()

    def _retire(self, pools: list[Any]) -> None:
        """Destroy descriptor pools once the work recorded so far has run."""
        with self.lock:
            last = self.current or (self.in_flight[-1] if self.in_flight else None)
            if last is not None:
                last.pools.extend(pools)
                return
        vk = api()
        for p in pools:
            vk.lib.vkDestroyDescriptorPool(self.st.device, p, vk.ffi.NULL)

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

    def update(self, dst: Allocation, offset: int, data: bytes) -> None:
        """Record writing `data` (a multiple of 4 bytes, at most 65,536) at `offset`: the
        bytes travel in the command buffer itself (vkCmdUpdateBuffer), so nothing is
        allocated for them."""
        vk = api()
        with self.lock:
            cmd = self.record(dst)
            vk.lib.vkCmdUpdateBuffer(cmd, dst.buffer, offset, len(data), data)
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
            result = lib.vkEndCommandBuffer(b.cmd)
            if result:
                check_result(result, self.st.label, "ending a command buffer")
            with self.st.lock:
                result = lib.vkQueueSubmit(self.st.queue, 1, b.submit, b.fence)
            if result:
                check_result(result, self.st.label, "submitting work")
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
        result = _VK_NOT_READY
        start = time.perf_counter()
        if SPIN_SECONDS > 0 and self.st.kind != "CPU":
            until = start + SPIN_SECONDS
            result = lib.vkGetFenceStatus(dev, b.fence)
            while result == _VK_NOT_READY and time.perf_counter() < until:
                result = lib.vkGetFenceStatus(dev, b.fence)
        self.waits += 1
        if result == _VK_NOT_READY:
            self.blocked += 1
            result = lib.vkWaitForFences(dev, 1, b.fences, 1, _TIMEOUT_NS)
        while result == _VK_TIMEOUT:  # long work: keep waiting (a lost device says so)
            result = lib.vkWaitForFences(dev, 1, b.fences, 1, _TIMEOUT_NS)
        if result:
            check_result(result, self.st.label, "waiting for submitted work")
        self.wait_seconds += time.perf_counter() - start
        lib.vkResetFences(dev, 1, b.fences)
        for p in b.pools:
            lib.vkDestroyDescriptorPool(dev, p, vk.ffi.NULL)
        b.pools.clear()
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
