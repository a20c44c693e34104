"""Adstacks: the per-thread LIFO stacks reverse mode keeps overwritten values on.

A stack is named by an `AdStack` descriptor in `attrs[0]`; everything else about it is an
explicit operand, so the ops are plain functions of their arguments:

- `heap`: the 1-D buffer of the stack's dtype that every stack of that dtype shares (one per
  launch); `overflow`: an int64 array with one element per stack of the kernel;
- where this thread's entries are (qdarray/ad/transform/adstack.py builds these when the thread
  starts): `table`, an int64 array of heap positions, `row`, where this thread's group's row
  of it starts, `lim`, the depths of the row that hold an entry of this thread, `pos`, the
  thread's place among the threads of its group, `tail` and `end` for depths from `lim` on,
  and `run`, `base` and `width` for the first depths of the row, those at which every
  thread of the group with an entry at depth 0 has one (`width` of them, so the row's
  positions there step by `width`; `run` 0 where the thread has none there). The entry at
  depth d is at

      d < run:         a = base + d * width       always valid
      run <= d < lim:  a = table[row + d] + pos   always valid
      d >= lim:        a = tail + d               valid when a < end

  (with `lim` 0, `tail` and `end` a thread's first position and the end of its slice:
  each thread's entries contiguous; where `lim` is the constant 0 and `pos` is not the
  constant 0, a = tail + d * pos: the scratch layout's lanes, one depth's entries adjacent);
- the depth lives in a local of the thread (LOAD_VAR / STORE_VAR around the ops).

ADSTACK_PUSH(heap, table, row, lim, pos, tail, end, run, base, width, overflow, depth, value)
-> depth + 1
writes `heap[a]` when the entry at `depth` is valid; otherwise it writes nothing and records
`overflow[stack.id] = max(overflow[stack.id], depth + 1)`, which the host turns into an
`AdStackOverflowError` after the launch. ADSTACK_POP(depth) -> depth - 1.
ADSTACK_TOP(heap, table, row, lim, pos, tail, end, run, base, width, depth) -> the value
pushed last, the entry
at depth - 1 (an entry that is not valid reads `heap[0]` instead, so a read after an overflow
stays in bounds; the launch then fails anyway). Reverse mode only emits TOP at depth >= 1.
ADSTACK_OWN(table, row, lim, pos) -> the thread's `lim` from its group's: the number of
depths d < lim whose row holds more than `pos` entries, table[row + d + 1] - table[row + d]
> pos (a prefix of the depths: the counts fall with d). Pure, so that reverse mode's dead
code pass drops it with the stack it belongs to.

Where a target keeps adstacks in per-worker scratch (`StackLayout.scratch`,
kernels/target.py), a thread finds its entries from two int64 values of its own:
WORKER() -> the index of the host worker thread running it (0 in serial code), and
LANE() -> its lane in the group of consecutive threads that run together in SIMD lanes (0
where threads run one at a time). Neither is a function of the kernel's data, so they are
not pure (never folded, merged or moved), but a result nobody uses is removed. Targets
without host workers (GPUs) do not spell them: reverse mode asks for them only on targets
whose StackLayout is scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import types as T
from ..ir import UNKNOWN_LOC, Op, SourceLoc
from .table import defop

# Reverse mode names a reverse kernel's adstack parameters (heaps, layout, overflow) with this
# prefix: a code generator may expect lane-indexed accesses to a heap to form runs (one depth
# of a lane group's stacks, numba/lanes.py) and check for them at run time.
PARAM_PREFIX = "@adstack_"


@dataclass(frozen=True, slots=True)
class AdStack:
    """One adstack of a reverse kernel.

    Attributes:
        id: index of the stack in the kernel (its element of the overflow array).
        name: what it holds, for messages: a local's name, "if condition", "trip count", ...
        dtype: the element dtype.
        loc: the source location of what it holds (the local's assignment, the loop, ...).
    """

    id: int
    name: str
    dtype: Any
    loc: SourceLoc = UNKNOWN_LOC

    def __str__(self) -> str:
        return f"stack{self.id}:{self.name}"


def _int64() -> Any:
    from ... import _dtypes

    return _dtypes.int64


def _heap_check(heap: Any, stack: Any, what: str) -> None:
    if not isinstance(stack, AdStack):
        raise TypeError(f"{what} needs an AdStack in attrs[0]; got {stack!r}")
    if not isinstance(heap, T.ArrayType) or heap.ndim != 1 or heap.dtype is not stack.dtype:
        raise TypeError(f"{what} of {stack} needs a 1-D {T.type_str(stack.dtype)} heap; got "
                        f"{T.type_str(heap)}")


def _slice_check(types: tuple[Any, ...], what: str) -> None:
    table, *scalars = types
    i64 = _int64()
    if table != T.ArrayType(i64, 1) or any(t is not i64 for t in scalars):
        raise TypeError(f"{what} takes an int64 table array and int64 row, lim, pos, tail, "
                        "end, run, base, width and depth")


def _push_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    heap, table, *where, overflow, depth, value = types
    _heap_check(heap, attrs[0], "ADSTACK_PUSH")
    _slice_check((table, *where, depth), "ADSTACK_PUSH")
    i64 = _int64()
    if overflow != T.ArrayType(i64, 1):
        raise TypeError("ADSTACK_PUSH takes an int64 overflow array")
    if value is not attrs[0].dtype:
        raise TypeError(f"ADSTACK_PUSH of {T.type_str(value)} onto {attrs[0]}")
    return i64


def _top_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    _heap_check(types[0], attrs[0], "ADSTACK_TOP")
    _slice_check(types[1:], "ADSTACK_TOP")
    return attrs[0].dtype


def _pop_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    if not isinstance(attrs[0], AdStack) or types != (_int64(),):
        raise TypeError("ADSTACK_POP takes the int64 depth and an AdStack")
    return _int64()


def _own_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    _slice_check(types, "ADSTACK_OWN")
    return _int64()


def own_depths(table: Any, row: int, lim: int, pos: int) -> int:
    """ADSTACK_OWN: the binary search passes/lower_adstack.py spells in IR."""
    lo, hi = 0, lim
    while lo < hi:
        mid = (lo + hi) // 2
        if pos < int(table[row + mid + 1]) - int(table[row + mid]):
            lo = mid + 1
        else:
            hi = mid
    return lo


def entry(table: Any, where: Any, depth: int) -> tuple[int, bool]:
    """(heap position, valid) of the entry at `depth` for a thread whose entries are at
    `where` = (row, lim, pos, tail, end, run, base, width) (the module docstring's rule)."""
    row, lim, pos, tail, end, run, base, width = (int(v) for v in where)
    if depth < run:
        return base + depth * width, True
    if depth < lim:
        return int(table[row + depth]) + pos, True
    a = tail + depth
    return a, a < end


def _push(rt: Any, attrs: Any, heap: Any, table: Any, *args: Any) -> Any:
    *where, overflow, depth, value = args
    d = int(depth)
    a, ok = entry(table, where, d)
    if ok:
        heap[a] = value
    else:
        slot = attrs[0].id
        overflow[slot] = max(int(overflow[slot]), d + 1)
    return np.int64(d + 1)


def _top(rt: Any, attrs: Any, heap: Any, table: Any, *args: Any) -> Any:
    *where, depth = args
    a, ok = entry(table, where, int(depth) - 1)
    return heap[a if ok else 0]


defop(Op.ADSTACK_PUSH, "memory", 13, _push_rule, _push, pure=False,
      doc="heap[entry(depth)] = value if that entry is valid, else record the overflow; "
          "returns depth + 1")
defop(Op.ADSTACK_POP, "memory", 1, _pop_rule, lambda rt, attrs, d: np.int64(int(d) - 1),
      doc="depth - 1")
defop(Op.ADSTACK_TOP, "memory", 11, _top_rule, _top, pure=False,
      doc="heap[entry(depth - 1)]: the value pushed last")
defop(Op.ADSTACK_OWN, "memory", 4, _own_rule,
      lambda rt, attrs, table, row, lim, pos: np.int64(own_depths(table, int(row), int(lim),
                                                                int(pos))),
      doc="the depths below lim at which the thread ranked pos has an entry in its row")


def _no_args_int64(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    if types:
        raise TypeError("WORKER and LANE take no arguments")
    return _int64()


defop(Op.WORKER, "memory", 0, _no_args_int64, lambda rt, attrs: np.int64(0), pure=False,
      doc="the index of the host worker thread running this code (0 in serial code)")
defop(Op.LANE, "memory", 0, _no_args_int64, lambda rt, attrs: np.int64(0), pure=False,
      doc="the thread's lane in the group of threads run together in SIMD lanes (0 where "
          "threads run one at a time)")
