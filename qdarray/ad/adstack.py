"""Adstacks: creation, the IR of push / pop / top, per-thread slices, heaps and overflow.

Layout (one launch): each dtype has one heap buffer. Each task (a parallel loop, or the
kernel's serial code) owns a region of it; a thread's slice of the region starts at
`thread_base(thread)` = `thread * stride` (stride = the sum of the capacities of the task's
stacks of that dtype), and stack `s` occupies `[offset_s, offset_s + capacity_s)` of the
slice. The launcher fills the int64 `layout` array with (capacity, offset + region start,
stride) per stack; the kernel reads it once and computes each thread's bases when the thread
starts. `thread_base` is the one place that maps a thread to its slice: a packed layout
(prefix sums of per-thread capacities) replaces it with a load.

Depths are locals of the thread. A push at depth >= capacity writes nothing and records the
depth reached in the `overflow` array, which the host checks after the launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _dtypes
from .._errors import AdStackOverflowError
from ..kernels.ir import UNKNOWN_LOC, Op, SourceLoc, Stmt, Value, Var
from ..kernels.ops.adstack import AdStack
from ..kernels.types import ArrayType
from ..backends.host_memory import cpu_available_bytes
from ..kernels.emit import Emitter

LAYOUT_FIELDS = 3  # capacity, offset, stride


@dataclass(eq=False)
class StackInfo:
    """One stack of a reverse kernel and the Values its ops use."""

    desc: AdStack
    depth: Var
    heap: Value
    cap: Value
    off: Value
    stride: Value
    base: Value
    task: Any                                        # structure.Node of its task, or None
    sites: list[tuple[Any, ...]] = field(default_factory=list)  # enclosing loops per push

    @property
    def id(self) -> int:
        return self.desc.id


class Stacks:
    """The stacks of one reverse kernel, created while it is generated."""

    def __init__(self, em: Emitter) -> None:
        self.em = em
        i64 = _dtypes.int64
        self.layout = em.value(ArrayType(i64, 1))
        self.overflow = em.value(ArrayType(i64, 1))
        self.heaps: dict[Any, Value] = {}
        self.all: list[StackInfo] = []

    def new(self, name: str, dtype: Any, loc: SourceLoc, task: Any) -> StackInfo:
        em = self.em
        i64 = _dtypes.int64
        heap = self.heaps.get(dtype)
        if heap is None:
            heap = self.heaps[dtype] = em.value(ArrayType(dtype, 1))
        desc = AdStack(len(self.all), name, dtype, loc)
        info = StackInfo(desc, em.var(f"depth_{name}", i64), heap, em.value(i64), em.value(i64),
                         em.value(i64), em.value(i64), task)
        self.all.append(info)
        return info

    # -- the ops ----------------------------------------------------------------------------

    def push(self, s: StackInfo, value: Value, loops: tuple[Any, ...]) -> None:
        em = self.em
        s.sites.append(loops)
        d = em.load_var(s.depth)
        d2 = em.emit(Op.ADSTACK_PUSH, s.heap, s.base, s.cap, self.overflow, d, value,
                     attrs=(s.desc,))
        em.store_var(s.depth, d2)

    def pop(self, s: StackInfo) -> None:
        em = self.em
        d2 = em.emit(Op.ADSTACK_POP, em.load_var(s.depth), attrs=(s.desc,))
        em.store_var(s.depth, d2)

    def top(self, s: StackInfo) -> Value:
        em = self.em
        d = em.load_var(s.depth)
        return em.emit(Op.ADSTACK_TOP, s.heap, s.base, s.cap, d,  # type: ignore[no-any-return]
                       attrs=(s.desc,))

    # -- preludes ---------------------------------------------------------------------------

    def kernel_prelude(self, live: list[StackInfo]) -> list[Stmt]:
        """Loads of each live stack's capacity, offset and stride (once per launch)."""
        em = self.em
        with em.region() as out, em.at(UNKNOWN_LOC):
            for k, s in enumerate(live):
                for j, dest in enumerate((s.cap, s.off, s.stride)):
                    index = em.i64(LAYOUT_FIELDS * k + j)
                    em.emit_into(dest, Op.LOAD, self.layout, index)
        return out

    def thread_prelude(self, live: list[StackInfo], task: Any, thread: Value | None
                       ) -> list[Stmt]:
        """Each stack's base for this thread and its depth set to 0."""
        em = self.em
        with em.region() as out, em.at(UNKNOWN_LOC):
            zero = em.i64(0)
            for s in live:
                if s.task is not task:
                    continue
                start = thread_base(em, thread, s.stride)
                em.emit_into(s.base, Op.ADD, s.off, start)
                em.store_var(s.depth, zero)
        return out


def thread_base(em: Emitter, thread: Value | None, stride: Value) -> Value:
    """Where a thread's slice starts in its task's region (the one indirection)."""
    if thread is None:
        return em.i64(0)
    return em.emit(Op.MUL, thread, stride)  # type: ignore[no-any-return]


# -- host side ------------------------------------------------------------------------------


def layout_array(live: Sequence[Any], caps: list[int], threads: dict[Any, int]
                 ) -> tuple[np.ndarray, dict[Any, int]]:
    """The layout array and the heap size per dtype, for capacities `caps` (one per live
    stack: a StackInfo or a plan's StackRecord, anything with `id`, `desc` and `task`) and
    thread counts per task."""
    layout = np.zeros(max(LAYOUT_FIELDS * len(live), 1), np.int64)
    strides: dict[tuple[Any, Any], int] = {}
    offsets: list[int] = []
    for s, cap in zip(live, caps, strict=True):
        key = (s.task, s.desc.dtype)
        offsets.append(strides.get(key, 0))
        strides[key] = strides.get(key, 0) + cap
    region_start: dict[tuple[Any, Any], int] = {}
    sizes: dict[Any, int] = {}
    for key, stride in strides.items():
        task, dtype = key
        region_start[key] = sizes.get(dtype, 0)
        sizes[dtype] = sizes.get(dtype, 0) + stride * threads.get(task, 1)
    for k, (s, cap) in enumerate(zip(live, caps, strict=True)):
        key = (s.task, s.desc.dtype)
        layout[LAYOUT_FIELDS * k:LAYOUT_FIELDS * k + 3] = (
            cap, region_start[key] + offsets[k], strides[key])
    return layout, sizes


class HeapPool:
    """Heap buffers reused across launches: they grow by doubling, or to the exact size when
    the doubled size does not fit. Before growing, the size is compared with what the device
    can give (`available()`, bytes or None when unknown; the host's by default): a heap that
    cannot fit raises a MemoryError with the figures instead of being allocated. `alloc(n,
    np_dtype)` makes a buffer (NumPy by default; device memory for other devices)."""

    def __init__(self, alloc: Any = None, available: Any = None) -> None:
        self.buffers: dict[Any, Any] = {}
        self.available = available or cpu_available_bytes
        self.alloc = alloc  # None: np.empty

    def get(self, dtype: Any, size: int, describe: Any) -> Any:
        """A buffer of at least `size` elements of `dtype`; `describe(dtype, size,
        available)` gives the MemoryError's message."""
        size = max(size, 1)
        buf = self.buffers.get(dtype)
        if buf is not None and buf.size >= size:
            return buf
        itemsize = dtype.itemsize
        avail = self.available()
        if avail is not None and buf is not None:
            avail += buf.nbytes  # freed before the new one is made
        if avail is not None and size * itemsize > avail:
            raise MemoryError(describe(dtype, size, avail))
        want = max(size, 2 * buf.size) if buf is not None else size
        if avail is not None and want * itemsize > avail:
            want = size
        self.buffers.pop(dtype, None)
        del buf
        for n in dict.fromkeys((want, size)):
            try:
                new = (self.alloc or np.empty)(n, dtype._np)
            except (MemoryError, ValueError):
                continue
            self.buffers[dtype] = new
            return new
        raise MemoryError(describe(dtype, size, avail))

    def clear(self) -> None:
        self.buffers.clear()


POOL = HeapPool()


def check_overflow(overflow: np.ndarray, live: Sequence[Any], caps: list[int],
                   kernel: str) -> None:
    """Raise AdStackOverflowError for the first stack whose pushes went past its capacity
    (`overflow` has one element per stack id, `caps` one per live stack)."""
    if not overflow.any():
        return
    sid = int(np.flatnonzero(overflow)[0])
    k = next(j for j, s in enumerate(live) if s.id == sid)
    s = live[k]
    where = f"{s.desc.loc.file}:{s.desc.loc.line}"
    raise AdStackOverflowError(
        f"The adstack of '{s.desc.name}' ({where}) in the reverse of kernel '{kernel}' "
        f"overflowed: capacity {caps[k]}, depth reached {int(overflow[sid])}. Nothing was "
        "written out of bounds, but the gradients of this launch are not computed. The "
        "capacity comes from the loop bounds at launch; this means a loop ran more often "
        "than its bounds allow (a bound array changed during the launch?). Try running the "
        "reverse again with unchanged bound arrays.")
