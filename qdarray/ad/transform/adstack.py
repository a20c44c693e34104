"""Adstacks: creation, the IR of push / pop / top, where each thread's entries are, and the
overflow record (the heaps themselves and the overflow check at launch: ad/heaps.py).

Layout (one launch; docs/autodiff.md): each dtype has one heap buffer, in which every stack
has its own region. The threads of a parallel loop are taken in groups of G consecutive
threads (the kernel target's `StackLayout.group`: a warp on GPUs, 1 on CPUs). Within a
group the entries of one depth are adjacent: the group's threads are ranked by capacity,
largest first (`pos`), and depth d holds one entry for each thread whose capacity exceeds d,
in rank order, so a warp pushing at one depth writes one contiguous run, and the group's
region is exactly the sum of its threads' capacities (packed: memory follows the workload,
not threads x maximum). A table per stack holds one row per group,

    [M, T(0), ..., T(lim - 1), S_0, ..., S_(M-1), end]

where T(d) is where depth d's entries start, lim the (M+1)-th largest capacity of the
group, and S_p where the thread ranked p (p < M) keeps its entries from depth lim on,
contiguous: the deepest few threads of a group (one, unless a row for each depth of several
deep threads would cost more than 1/8 of the group's entries) need no row for each of their
depths. With G = 1 a row is one element, the thread's first position: each thread's
entries are one contiguous slice, placed by a prefix sum of the capacities.

The launcher (`ad/sizing/packed_layout.py`) builds the table and the groups' row starts and ranks
(the `rows` array) on the device and fills the int64 `layout` array with (table start, rows
start, ranks start, G) per stack; the kernel reads it once, and `thread_slice` computes each
thread's (row, lim, pos, tail, end) when the thread starts: the one place that maps a thread
to its entries. The ops (kernels/ops/adstack.py) find depth d's entry from those. The
thread's `lim` is the number of depths of its group's row that hold an entry of it (found by
a binary search over the row's counts when the thread starts), so a push or read below it
takes one table read and no check, and only the tail's accesses are checked.

On a target whose `StackLayout` is scratch (CPUs), the stacks of parallel loops are not
packed: each worker thread owns a region of G lanes x capacity entries per stack, and
`scratch_slice` gives lane k of worker w (the WORKER and LANE ops) the entry of depth d at
first + w * region + d * G + k (depth-major, so lanes at one depth touch one contiguous run),
with (first, region, capacity, G) as the stack's layout fields (an empty row: `lim` 0, the
tail's entries G apart). The serial code's stacks stay packed.

Depths are locals of the thread. A push whose entry is not valid (beyond the thread's
capacity) writes nothing and records the depth reached in the `overflow` array, which the
host checks after the launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import _dtypes
from ...kernels.emit import Emitter, block
from ...kernels.ir import UNKNOWN_LOC, If, Op, SourceLoc, Stmt, Value, Var
from ...kernels.ops.adstack import AdStack
from ...kernels.types import ArrayType

LAYOUT_FIELDS = 4  # table start, rows start, positions start, threads per group
POS_BITS = 8       # a thread's rank in its group, 8 to an int64 of the rows array
SLICE = 8          # row, lim, pos, tail, end, run, base, width: where a thread's entries are


@dataclass(eq=False)
class StackInfo:
    """One stack of a reverse kernel and the Values its ops use."""

    desc: AdStack
    depth: Var
    heap: Value
    fields: tuple[Value, ...]                        # the layout fields (kernel prelude)
    slice: tuple[Value, ...]   # row, lim, pos, tail, end, run, base, width (thread)
    task: Any                                        # structure.Node of its task, or None
    sites: list[tuple[Any, ...]] = field(default_factory=list)  # enclosing loops per push

    @property
    def id(self) -> int:
        return self.desc.id


class Stacks:
    """The stacks of one reverse kernel, created while it is generated; `scratch`: the
    target keeps the stacks of parallel loops in per-worker scratch (`scratch_slice`)."""

    def __init__(self, em: Emitter, scratch: bool = False) -> None:
        self.em = em
        self.scratch = scratch
        i64 = _dtypes.int64
        self.layout = em.value(ArrayType(i64, 1))
        self.table = em.value(ArrayType(i64, 1))
        self.rows = em.value(ArrayType(i64, 1))
        self.overflow = em.value(ArrayType(i64, 1))
        self.heaps: dict[Any, Value] = {}
        self.all: list[StackInfo] = []
        self.orders: dict[int, Value] = {}  # task -> where its order is in rows (or -1)

    def new(self, name: str, dtype: Any, loc: SourceLoc, task: Any) -> StackInfo:
        em = self.em
        i64 = _dtypes.int64
        heap = self.heaps.get(dtype)
        if heap is None:
            heap = self.heaps[dtype] = em.value(ArrayType(dtype, 1))
        desc = AdStack(len(self.all), name, dtype, loc)
        info = StackInfo(desc, em.var(f"depth_{name}", i64), heap,
                         tuple(em.value(i64) for _ in range(LAYOUT_FIELDS)),
                         tuple(em.value(i64) for _ in range(SLICE)), task)
        self.all.append(info)
        return info

    # -- the ops ----------------------------------------------------------------------------

    def push(self, s: StackInfo, value: Value, loops: tuple[Any, ...]) -> None:
        em = self.em
        s.sites.append(loops)
        d = em.load_var(s.depth)
        d2 = em.emit(Op.ADSTACK_PUSH, s.heap, self.table, *s.slice, self.overflow, d, value,
                     attrs=(s.desc,))
        em.store_var(s.depth, d2)

    def pop(self, s: StackInfo) -> None:
        em = self.em
        d2 = em.emit(Op.ADSTACK_POP, em.load_var(s.depth), attrs=(s.desc,))
        em.store_var(s.depth, d2)

    def top(self, s: StackInfo) -> Value:
        em = self.em
        d = em.load_var(s.depth)
        return em.emit(Op.ADSTACK_TOP, s.heap, self.table, *s.slice,  # type: ignore[no-any-return]
                       d, attrs=(s.desc,))

    # -- preludes ---------------------------------------------------------------------------

    def kernel_prelude(self, live: list[StackInfo]) -> list[Stmt]:
        """Loads of each live stack's layout fields (once per launch)."""
        em = self.em
        with em.region() as out, em.at(UNKNOWN_LOC):
            for k, s in enumerate(live):
                for j, dest in enumerate(s.fields):
                    index = em.i64(LAYOUT_FIELDS * k + j)
                    em.emit_into(dest, Op.LOAD, self.layout, index)
            for task, dest in self.orders.items():
                index = em.i64(LAYOUT_FIELDS * len(self.all) + task)
                em.emit_into(dest, Op.LOAD, self.layout, index)
        return out

    def logical_thread(self, task: int, hardware: Value) -> Value:
        """The thread that hardware thread `hardware` of task `task` runs: the 32-bit half
        `hardware % 2` of rows[where + hardware // 2] when the launch reordered the task's
        threads (ad/transform/reorder.py; `where` the layout field after the stacks' fields), else
        itself."""
        em = self.em
        i64 = _dtypes.int64
        where = self.orders.get(task)
        if where is None:
            where = self.orders[task] = em.value(i64)
        thread = em.var("thread", i64)
        em.store_var(thread, hardware)
        with em.region() as load:  # two 32-bit thread numbers per int64
            word = em.emit(Op.LOAD, self.rows, em.emit(
                Op.ADD, where, em.emit(Op.FLOORDIV, hardware, em.i64(2))))
            shift = em.emit(Op.MUL, em.emit(Op.BIT_AND, hardware, em.i64(1)), em.i64(32))
            em.store_var(thread, em.emit(Op.BIT_AND, em.emit(Op.SHR, word, shift),
                                         em.i64(0xFFFFFFFF)))
        em.stmt(If(em.emit(Op.GE, where, em.i64(0)), block(load), block([])))
        return em.load_var(thread)

    def thread_prelude(self, live: list[StackInfo], task: Any, thread: Value | None
                       ) -> list[Stmt]:
        """Where each stack's entries are for this thread, and its depth set to 0."""
        em = self.em
        with em.region() as out, em.at(UNKNOWN_LOC):
            zero = em.i64(0)
            for s in live:
                if s.task is not task:
                    continue
                if self.scratch and thread is not None:
                    scratch_slice(em, s)
                else:
                    thread_slice(em, s, self.table, self.rows, thread)
                em.store_var(s.depth, zero)
        return out


def scratch_slice(em: Emitter, s: StackInfo) -> None:
    """Define `s.slice` for a thread of a parallel loop in the scratch layout
    (kernels/target.py `StackLayout.scratch`): the layout fields are (the stack's first
    entry in worker 0's region, entries per worker region, capacity, lanes per group G), and
    worker w's region holds its lanes' entries depth-major: lane k's entry of depth d is at
    first + w * region + d * G + k, so lanes pushing or popping at one depth touch one
    contiguous run. The slice is an empty row (`lim` 0, every depth in the tail), the tail
    at first + w * region + k, its entries `pos` = G apart (lower_adstack.py), and `end`
    the tail + capacity * G."""
    first, region, cap, group = s.fields
    zero = em.i64(0)
    base = em.emit(Op.ADD, first, em.emit(Op.MUL, em.emit(Op.WORKER), region))
    tail = em.emit(Op.ADD, base, em.emit(Op.LANE))
    em.emit_into(s.slice[0], Op.ADD, zero, zero)
    em.emit_into(s.slice[1], Op.ADD, zero, zero)
    em.emit_into(s.slice[2], Op.ADD, group, zero)
    em.emit_into(s.slice[3], Op.ADD, tail, zero)
    em.emit_into(s.slice[4], Op.ADD, tail, em.emit(Op.MUL, cap, group))
    for k in (5, 6, 7):  # no run of full depths
        em.emit_into(s.slice[k], Op.ADD, zero, zero)


def thread_slice(em: Emitter, s: StackInfo, table: Value, rows: Value, thread: Value | None
                 ) -> None:
    """Define `s.slice` (row, lim, pos, tail, end, run, base, width) for `thread` (None: the
    serial code, a group of one thread): the one place that maps a thread to its entries."""
    i64 = _dtypes.int64
    tab, rws, pws, group = s.fields
    row_v, lim_v, pos_v, m_v, own_v = (em.var(n, i64) for n in
                                       ("row", "lim", "pos", "tails", "own"))
    zero, one = em.i64(0), em.i64(1)
    t = zero if thread is None else thread
    with em.region() as alone:  # a group of one thread: its row is its first position
        em.store_var(row_v, em.emit(Op.ADD, tab, t))
        em.store_var(lim_v, zero)
        em.store_var(own_v, zero)
        em.store_var(pos_v, zero)
        em.store_var(m_v, one)
    with em.region() as grouped:  # the row of the thread's group: [M, T(0)...]
        g = em.emit(Op.FLOORDIV, t, group)
        r0 = em.emit(Op.LOAD, rows, em.emit(Op.ADD, rws, g))
        r1 = em.emit(Op.LOAD, rows, em.emit(Op.ADD, em.emit(Op.ADD, rws, g), one))
        at = em.emit(Op.ADD, tab, r0)
        m = em.emit(Op.LOAD, table, at)
        em.store_var(row_v, em.emit(Op.ADD, at, one))
        em.store_var(lim_v, em.emit(Op.SUB, em.emit(Op.SUB, em.emit(Op.SUB, r1, r0), m),
                                    em.i64(2)))
        em.store_var(m_v, m)
        per = em.i64(64 // POS_BITS)
        word = em.emit(Op.LOAD, rows, em.emit(Op.ADD, pws, em.emit(Op.FLOORDIV, t, per)))
        shift = em.emit(Op.MUL, em.emit(Op.MOD, t, per), em.i64(POS_BITS))
        em.store_var(pos_v, em.emit(Op.BIT_AND, em.emit(Op.SHR, word, shift),
                                    em.i64((1 << POS_BITS) - 1)))
        em.store_var(own_v, em.emit(Op.ADSTACK_OWN, table, em.load_var(row_v),
                                    em.load_var(lim_v), em.load_var(pos_v)))
    if thread is None:
        em.out.extend(alone)
    else:
        em.stmt(If(em.emit(Op.EQ, group, one), block(alone), block(grouped)))
    row, lim, pos, m, own = (em.load_var(v) for v in (row_v, lim_v, pos_v, m_v, own_v))
    # The M threads ranked first keep their entries from depth lim on contiguous, from
    # S_pos = row[lim + pos] to S_(pos+1); the others have none there (an empty tail at end).
    # The slice's lim is `own`, the depths of the row that hold an entry of the thread (lim
    # for those M), so each of them does: a push or a read below it needs no check, and the
    # tail's check finds the depths past the thread's capacity (tail + d < end for d < own
    # on the M threads' own tails, never for the others', which are empty).
    has_tail = em.emit(Op.LT, pos, m)
    at = em.emit(Op.ADD, em.emit(Op.ADD, row, lim), em.emit(Op.MIN, pos, m))
    first = em.emit(Op.LOAD, table, at)
    em.emit_into(s.slice[0], Op.ADD, row, zero)
    em.emit_into(s.slice[1], Op.ADD, own, zero)
    em.emit_into(s.slice[2], Op.ADD, pos, zero)
    em.emit_into(s.slice[3], Op.SUB, first, own)
    end_v = em.var("end", i64)
    em.store_var(end_v, first)
    with em.region() as own_tail:  # (past the row for the others: read only where theirs)
        em.store_var(end_v, em.emit(Op.LOAD, table, em.emit(Op.ADD, at, one)))
    em.stmt(If(has_tail, block(own_tail), block([])))
    em.emit_into(s.slice[4], Op.LOAD_VAR, attrs=(end_v,))
    full_depths(em, s, table, row, lim, pos, own)


def full_depths(em: Emitter, s: StackInfo, table: Value, row: Value, lim: Value, pos: Value,
                own: Value) -> None:
    """Define the slice's (run, base, width): the first depths of the thread's group row,
    those at which all `width` threads of the group with an entry at depth 0 have one, hold
    the thread's entry at base + d * width (base = T(0) + pos), so a push or pop there reads
    no table. `run` is the binary search's answer for the rank `width - 1` (the depths whose
    count is `width`), capped by the thread's own depths (0 for a thread without entries in
    the row); 0 where the row is empty (groups of one thread, `lim` 0)."""
    i64 = _dtypes.int64
    zero, one = em.i64(0), em.i64(1)
    run_v, base_v, width_v = (em.var(n, i64) for n in ("run", "base", "width"))
    for v in (run_v, base_v, width_v):
        em.store_var(v, zero)
    with em.region() as in_row:
        t0 = em.emit(Op.LOAD, table, row)
        width = em.emit(Op.SUB, em.emit(Op.LOAD, table, em.emit(Op.ADD, row, one)), t0)
        em.store_var(width_v, width)
        em.store_var(base_v, em.emit(Op.ADD, t0, pos))
        full = em.emit(Op.ADSTACK_OWN, table, row, lim, em.emit(Op.SUB, width, one))
        em.store_var(run_v, em.emit(Op.MIN, full, own))
    em.stmt(If(em.emit(Op.GT, lim, zero), block(in_row), block([])))
    for k, v in zip((5, 6, 7), (run_v, base_v, width_v), strict=True):
        em.emit_into(s.slice[k], Op.LOAD_VAR, attrs=(v,))
