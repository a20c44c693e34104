"""Command recording and submission for one device: batches, barriers, copies, a timeline
semaphore and timestamp queries.

Commands are collected into the current *batch* as plain tuples and recorded into a command
buffer when the batch is submitted; every command after the first in a batch is preceded by
a memory barrier, and a batch ends with one whose second scope holds the host's reads and
the batches submitted after it, so each dispatch or copy sees the writes of the ones before
it (the order the host issued them in, as on an in-order queue). A batch is submitted when the host
needs
results (`finish`), when a timing is read, or once it holds `BATCH_COMMANDS` commands, so
long sequences of launches keep the device busy. A submitted batch keeps the buffers it uses
alive until the stream's timeline semaphore has reached the value its submission signals; then
its command buffer is reused.

A batch of at most `REPLAY_COMMANDS` commands that was submitted before, command for command
(the same pipelines, descriptor sets, push constants, workgroup counts, buffers and bytes),
is not recorded again: the command buffer recorded for it is submitted once more, as mature
runtimes replay recorded command buffers (CUDA graphs, Vulkan's reusable command buffers).
A launch followed by a synchronisation, repeated, then costs one submission and no
recording. `REPLAYS` such recordings are kept, the least recently used dropped first; all of
them when the descriptor cache drops its sets (a recording names them).

Descriptor sets come from the device's cache (_descriptors.py): a launch on buffers seen
before binds a set written earlier; descriptor pools the cache leaves behind are destroyed
once the batches that may use them have run. Recording allocates nothing per command: the
structures Vulkan calls read are made once per stream or command buffer. Every submission
signals the next value of the stream's timeline semaphore (Vulkan 1.2 core), so a wait is a
read of its counter (vkGetSemaphoreCounterValue), with no fence to reset, and retires every
batch up to the value it reads; `finish` waits once, for the last value submitted. Waiting
on a GPU polls the counter for up to `SPIN_SECONDS` before blocking in vkWaitSemaphores, whose
wake-up costs tens of microseconds, more than a small launch takes, and on NVIDIA's driver
about 0.7 ms (CUDA's default synchronisation spins likewise). The poll lasts long enough
that a wait which still blocks loses under a tenth of its time to the late wake-up (a
reverse launch of a few milliseconds polled for 2 ms, then blocked and woke late). A CPU
implementation (lavapipe) needs the host's cores for the work itself, so there the host
blocks at once. `waits` and `blocked` count the waits and those of them that blocked,
`wait_seconds` sums their time, `submitted` and `replayed` count the batches submitted and
those that replayed a recording (benchmarks/gpu/profile_vulkan.py reports them).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ._binding import api, check_result
from ._descriptors import DescriptorCache
from ._instance import DeviceState
from ._memory import Allocation, pool

BATCH_COMMANDS = 256
REPLAY_COMMANDS = 16
REPLAYS = 32
_TIMEOUT_NS = 600 * 10**9
_VK_TIMEOUT = 2
# Seconds a wait for a GPU's batch polls its fence before blocking (module docstring).
SPIN_SECONDS = 10e-3

# Commands of a batch: ("dispatch", program, descriptor set or None, push bytes, groups),
# ("copy", src buffer, src offset, dst buffer, dst offset, bytes), ("fill", buffer, offset,
# bytes, word), ("update", buffer, offset, data), ("timestamp", timer, index).


class Recording:
    """A command buffer and the submission that signals the stream's timeline with `value`;
    `key`: the commands recorded in it, when it is kept for replay (`busy`: submitted and not
    yet seen complete)."""

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
        self.cmds = ffi.new("VkCommandBuffer[1]", [self.cmd])
        self.value = ffi.new("uint64_t[1]")  # the timeline value its submission signals
        self.timeline = ffi.new("VkTimelineSemaphoreSubmitInfo*")
        self.timeline.sType = vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO
        self.timeline.signalSemaphoreValueCount = 1
        self.timeline.pSignalSemaphoreValues = self.value
        self.submit = ffi.new("VkSubmitInfo*")
        self.submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
        self.submit.pNext = self.timeline
        self.submit.commandBufferCount = 1
        self.submit.pCommandBuffers = self.cmds
        self.submit.signalSemaphoreCount = 1
        self.submit.pSignalSemaphores = stream.semaphores
        self.key: tuple[Any, ...] | None = None
        self.busy = False


class Batch:
    """The commands of one submission, the objects they keep alive and the descriptor pools
    to destroy once they have run; `recording` once submitted."""

    __slots__ = ("ops", "keep", "pools", "replayable", "recording", "value")

    def __init__(self) -> None:
        self.value = 0  # the timeline value that says it has run
        self.ops: list[tuple[Any, ...]] = []
        self.keep: list[Any] = []
        self.pools: list[Any] = []
        self.replayable = True  # no timestamps (a timer's queries are its own)
        self.recording: Recording | None = None


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
        self.idle: list[Recording] = []  # neither kept for replay nor in flight
        self.replays: OrderedDict[tuple[Any, ...], Recording] = OrderedDict()
        self.submitted = 0  # batches submitted so far (tests and stats read it)
        self.replayed = 0  # of them, those that replayed a recording
        self.waits = 0  # waits for a batch, and those that blocked in vkWaitForFences
        self.blocked = 0
        self.wait_seconds = 0.0  # the host's time in those waits
        # called after `finish` has waited (the loop guard's check: _loop_guard.py)
        self.checks: list[Callable[[], None]] = []
        barrier = vk.ffi.new("VkMemoryBarrier*")
        barrier.sType = vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        # (no HOST_WRITE: the host writes mapped memory only between batches, and a submission
        # makes them visible; the stages here cannot name host access, VUID-...-02815)
        barrier.srcAccessMask = vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
        barrier.dstAccessMask = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                                 | vk.VK_ACCESS_TRANSFER_READ_BIT
                                 | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        self._barrier = barrier
        self._stages = (vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                        | vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
        # The barrier ending a batch: its writes become visible to the host's reads and, as a
        # barrier's second scope holds every command later in submission order, to the
        # batches submitted after it (submission order alone makes no write visible).
        self._end_barrier = vk.ffi.new("VkMemoryBarrier*")
        self._end_barrier.sType = vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self._end_barrier.srcAccessMask = (vk.VK_ACCESS_SHADER_WRITE_BIT
                                           | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        self._end_barrier.dstAccessMask = barrier.dstAccessMask | vk.VK_ACCESS_HOST_READ_BIT
        self._end_stages = self._stages | vk.VK_PIPELINE_STAGE_HOST_BIT
        # Not ONE_TIME_SUBMIT: a recording may be submitted again (replayed).
        self._begin = vk.ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        self._region = vk.ffi.new("VkBufferCopy*")
        self.descriptors = DescriptorCache(st, self._retire)
        pool(st).on_release.append(self._forget_sets)
        pool(st).on_exhausted.append(self.finish)
        # The timeline semaphore every submission signals with the next value (`ticket`);
        # `reached`: the highest value seen signalled. A wait reads the counter (a cheap
        # call, no fence to reset) and retires every batch up to what it shows.
        stype = vk.ffi.new("VkSemaphoreTypeCreateInfo*")
        stype.sType = vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO
        stype.semaphoreType = vk.VK_SEMAPHORE_TYPE_TIMELINE
        sinfo = vk.ffi.new("VkSemaphoreCreateInfo*")
        sinfo.sType = vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO
        sinfo.pNext = stype
        self.semaphores = vk.ffi.new("VkSemaphore[1]")
        check_result(vk.lib.vkCreateSemaphore(st.device, sinfo, vk.ffi.NULL, self.semaphores),
                     st.label, "creating a timeline semaphore")
        self.semaphore = self.semaphores[0]
        self.ticket = 0
        self.reached = 0
        self._counter = vk.ffi.new("uint64_t*")
        self._target = vk.ffi.new("uint64_t[1]")
        self._wait_info = vk.ffi.new("VkSemaphoreWaitInfo*")
        self._wait_info.sType = vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO
        self._wait_info.semaphoreCount = 1
        self._wait_info.pSemaphores = self.semaphores
        self._wait_info.pValues = self._target

    # -- collecting commands -----------------------------------------------------------------

    def add(self, op: tuple[Any, ...], *keep: Any) -> None:
        """Append command `op` (see the commands above) to the current batch; `keep` stays
        alive until the batch has run. Call with the lock held."""
        b = self.current
        if b is None:
            b = self.current = Batch()
        b.ops.append(op)
        b.keep.extend(keep)
        if len(b.ops) >= BATCH_COMMANDS:
            self.flush()

    def copy(self, src: Allocation, src_offset: int, dst: Allocation, dst_offset: int,
             nbytes: int) -> None:
        """Add a buffer-to-buffer copy."""
        with self.lock:
            self.add(("copy", src.buffer, src_offset, dst.buffer, dst_offset, nbytes), src, dst)

    def fill(self, dst: Allocation, offset: int, nbytes: int, word: int) -> None:
        """Add filling `nbytes` (a multiple of 4) at `offset` with a 32-bit pattern."""
        with self.lock:
            self.add(("fill", dst.buffer, offset, nbytes, word & 0xFFFFFFFF), dst)

    def update(self, dst: Allocation, offset: int, data: bytes) -> None:
        """Add writing `data` (a multiple of 4 bytes, at most 65,536) at `offset`: the bytes
        travel in the command buffer itself (vkCmdUpdateBuffer), so nothing is allocated
        for them."""
        with self.lock:
            self.add(("update", dst.buffer, offset, bytes(data)), dst)

    def _forget_sets(self) -> None:
        with self.lock:
            self.descriptors.clear()
            self._drop_replays()

    def _retire(self, pools: list[Any]) -> None:
        """Destroy descriptor pools once the work collected so far has run (recordings kept
        for replay may name their sets: they are dropped)."""
        with self.lock:
            self._drop_replays()
            last = self.current or (self.in_flight[-1] if self.in_flight else None)
            if last is not None:
                last.pools.extend(pools)
                return
        vk = api()
        for p in pools:
            vk.lib.vkDestroyDescriptorPool(self.st.device, p, vk.ffi.NULL)

    def _drop_replays(self) -> None:
        for rec in self.replays.values():
            rec.key = None
            if not rec.busy:
                self.idle.append(rec)
        self.replays.clear()

    # -- recording and submission ------------------------------------------------------------

    def flush(self) -> None:
        """Submit the current batch (returns at once): its recording kept for replay when
        it was submitted before, else newly recorded."""
        vk = api()
        with self.lock:
            b = self.current
            if b is None:
                return
            self.current = None
            key = (tuple(b.ops) if b.replayable and len(b.ops) <= REPLAY_COMMANDS else None)
            rec = self.replays.get(key) if key is not None else None
            if rec is not None and not rec.busy:
                self.replays.move_to_end(key)  # type: ignore[arg-type]
                self.replayed += 1
            else:
                rec = self.idle.pop() if self.idle else Recording(self)
                self._record(rec, b.ops)
                if key is not None and key not in self.replays:
                    self._keep(key, rec)
            self.ticket += 1
            rec.value[0] = b.value = self.ticket
            with self.st.lock:
                result = vk.lib.vkQueueSubmit(self.st.queue, 1, rec.submit, vk.ffi.NULL)
            if result:
                self.ticket -= 1
                check_result(result, self.st.label, "submitting work")
            rec.busy = True
            b.recording = rec
            self.in_flight.append(b)
            self.submitted += 1
            if len(self.in_flight) > 4:  # bound the work queued ahead of the host
                self._wait(self.in_flight[-5].value)

    def _keep(self, key: tuple[Any, ...], rec: Recording) -> None:
        if len(self.replays) >= REPLAYS:  # drop the least recently used
            _, old = self.replays.popitem(last=False)
            old.key = None
            if not old.busy:
                self.idle.append(old)
        rec.key = key
        self.replays[key] = rec

    def _record(self, rec: Recording, ops: list[tuple[Any, ...]]) -> None:
        """Record `ops` into `rec`'s command buffer, a barrier between each two and one at
        the end for the host's reads and the batches submitted later."""
        vk = api()
        lib, ffi, cmd = vk.lib, vk.ffi, rec.cmd
        result = lib.vkBeginCommandBuffer(cmd, self._begin)  # resets it (RESET_..._BIT)
        if result:
            check_result(result, self.st.label, "beginning a command buffer")
        stages = self._stages
        pipeline = dset = layout = None  # what is bound (binding again records nothing)
        for k, op in enumerate(ops):
            if k:
                lib.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, self._barrier, 0, ffi.NULL,
                                         0, ffi.NULL)
            kind = op[0]
            if kind == "dispatch":
                _, prog, ds, push, groups = op
                # A set bound under the same pipeline layout stays bound across pipelines.
                if ds is not None and (ds is not dset or layout is not prog.layout):
                    lib.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE,
                                                prog.layout, 0, 1, ds, 0, ffi.NULL)
                    dset, layout = ds, prog.layout
                if pipeline is not prog:
                    lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE,
                                          prog.pipeline)
                    pipeline = prog
                if push:
                    lib.vkCmdPushConstants(cmd, prog.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                           len(push), push)
                lib.vkCmdDispatch(cmd, *groups)
            elif kind == "copy":
                _, src, src_offset, dst, dst_offset, nbytes = op
                region = self._region
                region.srcOffset, region.dstOffset, region.size = src_offset, dst_offset, nbytes
                lib.vkCmdCopyBuffer(cmd, src, dst, 1, region)
            elif kind == "fill":
                lib.vkCmdFillBuffer(cmd, *op[1:])
            elif kind == "update":
                _, dst, offset, data = op
                lib.vkCmdUpdateBuffer(cmd, dst, offset, len(data), data)
            else:  # "timestamp"
                _, timer, index = op
                if index == 0:
                    lib.vkCmdResetQueryPool(cmd, timer.pool, 0, 2)
                lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                        timer.pool, index)
        lib.vkCmdPipelineBarrier(cmd, stages, self._end_stages, 0, 1, self._end_barrier, 0,
                                 ffi.NULL, 0, ffi.NULL)
        result = lib.vkEndCommandBuffer(cmd)
        if result:
            check_result(result, self.st.label, "ending a command buffer")

    def finish(self) -> None:
        """Submit what is collected and wait until the device has done all of it."""
        with self.lock:
            if self.current is not None:
                self.flush()
            if self.in_flight:
                self._wait(self.ticket)
            for check in self.checks:
                check()

    def _wait(self, value: int) -> None:
        """Wait until the timeline reaches `value`, then retire the batches it covers (call
        with the lock held)."""
        vk = api()
        lib, dev = vk.lib, self.st.device
        start = time.perf_counter()
        counter = self._counter
        result = 0
        if self.reached < value:
            lib.vkGetSemaphoreCounterValue(dev, self.semaphore, counter)
            if counter[0] < value and SPIN_SECONDS > 0 and self.st.kind != "CPU":
                until = start + SPIN_SECONDS
                get, sem, now = lib.vkGetSemaphoreCounterValue, self.semaphore, time.perf_counter
                while True:
                    get(dev, sem, counter)
                    if counter[0] >= value or now() > until:
                        break
            self.waits += 1
            if counter[0] < value:
                self.blocked += 1
                self._target[0] = value
                result = lib.vkWaitSemaphores(dev, self._wait_info, _TIMEOUT_NS)
                while result == _VK_TIMEOUT:  # long work: keep waiting (a lost device says so)
                    result = lib.vkWaitSemaphores(dev, self._wait_info, _TIMEOUT_NS)
                if result:
                    check_result(result, self.st.label, "waiting for submitted work")
                lib.vkGetSemaphoreCounterValue(dev, self.semaphore, counter)
            self.reached = max(int(counter[0]), value)
            self.wait_seconds += time.perf_counter() - start
        reached = self.reached
        in_flight = self.in_flight
        while in_flight and in_flight[0].value <= reached:
            b = in_flight.pop(0)
            rec = b.recording
            assert rec is not None
            rec.busy = False
            if rec.key is None:
                self.idle.append(rec)
            for p in b.pools:
                lib.vkDestroyDescriptorPool(dev, p, vk.ffi.NULL)
            b.pools.clear()
            b.keep.clear()

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
        s = self.stream
        with s.lock:
            if s.current is None:
                s.current = Batch()
            s.current.replayable = False  # (the queries are this timer's)
            s.add(("timestamp", self, index), self)  # the pool lives until the batch has run

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
