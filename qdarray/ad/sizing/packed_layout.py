"""Packed adstacks: where each stack's entries go in one launch, computed on the device.

Given each thread's capacity of each stack (`ad/sizing/thread_caps.py`: the size expression at each
thread, or the counting pass's exact count, or every thread the largest capacity), the
`Packer` builds the arrays `ad/transform/adstack.py` describes, with the IR kernels of
`sizing/pack_kernels.py` on the arrays' device:

- groups of one thread (CPUs; a kernel's serial code): the table is the exclusive prefix sum
  of the capacities, from the stack's region start: thread t's entries are
  [table[t], table[t + 1]);
- groups of G threads (GPUs): per group the sum of its capacities, its second-largest one
  and its threads' ranks (`groups`), the prefix sums of the group sums (where each group's
  region starts) and of the row lengths (where each row starts in the table), then the rows
  (`rows`): the entries of one depth of a group are adjacent, and each group's region is the
  sum of its threads' capacities.

On a target whose `StackLayout` is scratch (CPUs), the stacks of parallel loops are not
packed: each takes `group` x its capacity entries in each worker's region, after the packed
entries of the serial code's stacks (`scratch_layout`; nothing runs on the device).

So a stack takes the sum of its threads' capacities, not threads x maximum; the table adds
about 8 bytes per thread (G = 1) or 8 bytes per group per depth below the group's
second-largest capacity, and 1 byte per thread for the ranks (G > 1). `Packed` holds the
result: the layout, table and rows arrays the reverse kernel takes, the heap size of each
dtype and these figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...kernels.launch import internal_launcher
from ...kernels.target import KernelTarget
from ..device_buffers import DeviceBuffers
from ..transform import reorder as reorder_mod
from ..transform.adstack import LAYOUT_FIELDS
from ..transform.reorder import Order, task_order
from .at_launch import STATS
from .pack_kernels import BIG, BUILDERS, PER_WORD

# Elements per chunk of a prefix sum's rounds: many small chunks where work-items run side
# by side (GPUs), few large ones where each core takes a contiguous stretch (CPUs).
CHUNK_STRIDED = 64
CHUNK_CONTIGUOUS = 4096


class TooLarge(Exception):
    """A stack's entries add up to BIG or more (no heap holds them)."""


@dataclass
class Packed:
    """One launch's packed layout (module docstring).

    Attributes:
        layout, table, rows: the arrays the reverse kernel takes (device memory where the
            target keeps its buffers there).
        sizes: the heap size of each dtype, in elements.
        entries: each live stack's entries (elements) in its heap.
        index_bytes: the bytes of the table and rows arrays.
    """

    layout: Any
    table: Any
    rows: Any
    sizes: dict[Any, int]
    entries: list[int]
    index_bytes: int
    orders: list[Order] = field(default_factory=list)

    @property
    def reordered(self) -> int:
        """The tasks whose threads run reordered."""
        return sum(o.sorted for o in self.orders)

    def efficiency(self, after: bool) -> float:
        """The group efficiency Σ entries / Σ_groups count x max entries over the grouped
        tasks, before or after reordering (1.0 when there is none)."""
        work = sum(o.work_after if after else o.work_before for o in self.orders)
        return sum(o.entries for o in self.orders) / work if work else 1.0

    @property
    def tape_bytes(self) -> int:
        """The bytes of the heaps."""
        return sum(n * d.itemsize for d, n in self.sizes.items())


@dataclass
class _Item:
    k: int                 # position among the live stacks
    sid: int               # stack id (its layout fields)
    dtype: Any
    n: int                 # threads
    group: int
    caps: Any = None       # per-thread capacities (device array) and where they start
    caps_at: int = 0
    gbase: Any = None      # G > 1: group starts (ng + 1)
    ms: Any = None         # G > 1: threads with tails per group
    rws: int = 0
    pws: int = 0
    tab: int = 0
    total: int = 0
    rows_total: int = 0
    scratch: bool = False  # in per-worker scratch (module docstring)

    @property
    def ng(self) -> int:
        return -(-self.n // self.group)


class Packer:
    """Packs the stacks of one reverse launcher on `target`, for arrays on `device`."""

    def __init__(self, target: KernelTarget, device: Any) -> None:
        group = target.adstack.group
        self.scratch = target.adstack.scratch
        if self.scratch and not 1 <= group <= 1 << 8:
            raise ValueError(f"Kernel target '{target.name}' runs {group} threads together "
                             "per worker; a scratch StackLayout.group is 1 to 256.")
        if not self.scratch and group != 1 and (group % PER_WORD or group > 1 << 8):
            raise ValueError(f"Kernel target '{target.name}' groups adstacks by {group} "
                             f"threads; a group is 1 thread or a multiple of {PER_WORD} up "
                             "to 256. Use such a StackLayout.group.")
        self.group = group
        self.target = target
        self.device = device
        self.buffers = DeviceBuffers(target.buffer_device(device))
        self.chunk = CHUNK_STRIDED if target.reduction.strided else CHUNK_CONTIGUOUS
        self.launchers: dict[str, Any] = {}  # by kernel name

    def run(self, name: str, *args: Any) -> None:
        """Launch pack kernel `name` (compiled once per target and device)."""
        launcher: Any = self.launchers.get(name)
        if launcher is None:
            launcher = self.launchers[name] = internal_launcher(
                f"qdarray.ad.sizing.pack_kernels.{name}", BUILDERS[name], self.target, self.device)
        launcher(list(args))

    def empty(self, n: int) -> Any:
        return self.buffers.empty(max(n, 1), np.int64)

    def filled(self, n: int, value: int) -> Any:
        out = self.empty(n)
        if n:
            self.run("fill", out, n, value)
        return out

    def scan(self, src: Any, src_at: int, n: int, dst: Any, dst_at: int, add: int,
             totals: Any, tk: int) -> None:
        """dst[dst_at + i] = add + sum(src[src_at:src_at + i]) for i in [0, n]; totals[tk]
        = the sum (saturated at BIG)."""
        if n <= self.chunk:
            self.run("serial_scan", src, src_at, n, dst, dst_at, add, totals, tk)
            return
        nc = -(-n // self.chunk)
        sums = self.empty(nc)
        self.run("chunk_sums", src, src_at, n, self.chunk, nc, sums)
        offs = self.empty(nc + 1)
        self.scan(sums, 0, nc, offs, 0, 0, totals, tk)
        self.run("distribute", src, src_at, n, self.chunk, nc, offs, dst, dst_at, add)

    def pack(self, stacks: Sequence[Any], n_stacks: int, caps: list[int], threads: list[int],
             per_thread: Callable[[int, int], Any], n_tasks: int = 0) -> Packed:
        """The layout of `stacks` (a plan's live StackRecords) with largest capacities `caps`
        and thread counts per task `threads`; `per_thread(k, n)` gives the n per-thread
        capacities of live stack k as (device array, where they start), or None (then every
        thread gets `caps[k]`). With groups of G > 1 threads, each of the `n_tasks` tasks
        may have its threads reordered (ad/transform/reorder.py; the layout's field n_stacks x
        LAYOUT_FIELDS + task says where its order is in `rows`, -1 where none). Raises
        TooLarge when a stack's entries reach BIG."""
        items = []
        for k, s in enumerate(stacks):
            serial = s.task is None
            n = 1 if serial else threads[s.task]
            items.append(_Item(k, s.id, s.desc.dtype, n, 1 if serial else self.group))
        for it in items:
            it.scratch = self.scratch and stacks[it.k].task is not None
            if it.scratch:
                it.group = min(it.group, it.n)
            elif it.n == 1 and it.group > 1:
                it.group = 1
        n_items = len(items)
        scratch = [it for it in items if it.scratch]
        items = [it for it in items if not it.scratch]
        grouped = [it for it in items if it.group > 1]
        at = 0
        for it in grouped:
            it.rws = at
            it.pws = at + it.ng + 1
            at = it.pws + it.ng * (it.group // PER_WORD)
        for it in items:
            got = per_thread(it.k, it.n)
            it.caps, it.caps_at = got if got is not None else (self.filled(it.n, caps[it.k]), 0)
        orders = self.reorder(stacks, [it for it in grouped if stacks[it.k].task is not None
                                       and stacks[it.k].task < n_tasks], caps)
        order_at = {}
        for task, o in orders.items():
            if o.order is not None:
                order_at[task] = at
                at += -(-o.n // 2)  # two 32-bit thread numbers per int64
        rows_len = at
        rows = self.empty(at)
        for task, where in order_at.items():
            o = orders[task]
            self.run("pairs", o.order, o.n, rows, where)
            o.order = None  # (only the rows' copy stays)
        totals = self.empty(2 * n_items)
        for it in grouped:
            sizes, rowlen, it.ms = self.empty(it.ng), self.empty(it.ng), self.empty(it.ng)
            self.run("groups", it.caps, it.caps_at, it.n, it.group, it.ng, it.dtype.itemsize,
                     sizes, rowlen, it.ms, rows, it.pws)
            it.gbase = self.empty(it.ng + 1)
            self.scan(sizes, 0, it.ng, it.gbase, 0, 0, totals, 2 * it.k)
            self.scan(rowlen, 0, it.ng, rows, it.rws, 0, totals, 2 * it.k + 1)
        if grouped:
            got = self.buffers.to_host(totals)
            for it in grouped:
                it.total, it.rows_total = int(got[2 * it.k]), int(got[2 * it.k + 1])
                self.check(it)
        at = 0
        for it in items:
            it.tab = at
            at += it.rows_total if it.group > 1 else it.n + 1
        table = self.empty(at)
        cursor: dict[Any, int] = {}
        entries = [0] * n_items
        for it in grouped:
            region = cursor.get(it.dtype, 0)
            if it.ng:
                self.run("rows", it.caps, it.caps_at, it.n, it.group, it.ng, it.gbase, it.ms,
                         rows, it.rws, it.pws, table, it.tab, region)
            cursor[it.dtype] = region + it.total
            entries[it.k] = it.total
        for it in items:
            if it.group > 1:
                continue
            region = cursor.get(it.dtype, 0)
            self.scan(it.caps, it.caps_at, it.n, table, it.tab, region, totals, 2 * it.k)
            it.total = int(self.buffers.to_host(totals)[2 * it.k])
            self.check(it)
            cursor[it.dtype] = region + it.total
            entries[it.k] = it.total
        layout = np.zeros(max(LAYOUT_FIELDS * n_stacks + n_tasks, 1), np.int64)
        layout[LAYOUT_FIELDS * n_stacks:] = -1
        for task, where in order_at.items():
            layout[LAYOUT_FIELDS * n_stacks + task] = where
        for it in items:
            layout[LAYOUT_FIELDS * it.sid:LAYOUT_FIELDS * (it.sid + 1)] = (
                it.tab, it.rws, it.pws, it.group)
        if scratch:
            self.scratch_layout(scratch, caps, cursor, entries, layout)
        return Packed(self.buffers.upload(layout), table, rows, cursor, entries,
                      8 * (at + rows_len), list(orders.values()))

    def reorder(self, stacks: Sequence[Any], grouped: list[_Item], caps: list[int]
                ) -> dict[int, Order]:
        """Per task whose stacks are grouped: its threads' order (ad/transform/reorder.py); the
        stacks of a reordered task get their capacities in that order."""
        by_task: dict[int, list[_Item]] = {}
        for it in grouped:
            by_task.setdefault(stacks[it.k].task, []).append(it)
        out = {}
        for task, its in by_task.items():
            n = its[0].n
            if n >= 1 << 31:  # (thread numbers are stored in 32 bits)
                continue
            largest = sum(caps[it.k] for it in its)
            o = task_order(self, [(it.caps, it.caps_at) for it in its], n, largest,
                           reorder_mod.THRESHOLD)
            if o.order is not None:
                STATS["reorderings"] += 1
                for it in its:
                    permuted = self.empty(n)
                    self.run("gather", it.caps, it.caps_at, o.order, n, permuted, 0)
                    it.caps, it.caps_at = permuted, 0
            out[task] = o
        return out

    def scratch_layout(self, items: list[_Item], caps: list[int], cursor: dict[Any, int],
                       entries: list[int], layout: np.ndarray) -> None:
        """Place the per-worker regions of the scratch stacks `items` after `cursor` (the
        packed entries of each dtype), and fill their layout fields (first entry in worker
        0's region, entries per region, capacity, lanes per group; ad/transform/adstack.py
        `scratch_slice`)."""
        workers = self.target.adstack.regions()
        region: dict[Any, int] = {}
        for it in items:
            at = region.get(it.dtype, 0)
            region[it.dtype] = at + it.group * caps[it.k]
            it.tab = at  # (the offset within the region, until the regions are placed)
        for dtype, size in region.items():
            if workers * size >= BIG:
                raise TooLarge(f"scratch of {dtype}")
        for it in items:
            base = cursor.get(it.dtype, 0)
            layout[LAYOUT_FIELDS * it.sid:LAYOUT_FIELDS * (it.sid + 1)] = (
                base + it.tab, region[it.dtype], caps[it.k], it.group)
            entries[it.k] = workers * it.group * caps[it.k]
        for dtype, size in region.items():
            cursor[dtype] = cursor.get(dtype, 0) + workers * size

    @staticmethod
    def check(it: _Item) -> None:
        if it.total >= BIG or it.rows_total >= BIG:
            raise TooLarge(f"stack {it.sid}")
