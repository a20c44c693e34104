"""Adstacks: the per-thread LIFO stacks reverse mode keeps overwritten values on.

A stack is named by an `AdStack` descriptor in `attrs[0]`; everything else about it is an
explicit operand, so the ops are plain functions of their arguments:

- `heap`: the 1-D buffer of the stack's dtype that every stack of that dtype shares (one per
  launch), `base`: where this thread's slice of this stack starts in it, `capacity`: how many
  values the slice holds, `overflow`: an int64 array with one element per stack of the kernel;
- the depth lives in a local of the thread (LOAD_VAR / STORE_VAR around the ops).

ADSTACK_PUSH(heap, base, capacity, overflow, depth, value) -> depth + 1 writes
`heap[base + depth]` when `depth < capacity`; otherwise it writes nothing and records
`overflow[stack.id] = max(overflow[stack.id], depth + 1)`, which the host turns into an
`AdStackOverflowError` after the launch. ADSTACK_POP(depth) -> depth - 1.
ADSTACK_TOP(heap, base, capacity, depth) -> the value pushed last, `heap[base + depth - 1]`
(the index is clamped to the slice, so a read after an overflow stays in bounds; the launch
then fails anyway). Reverse mode only emits TOP at depth >= 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import types as T
from ..ir import UNKNOWN_LOC, Op, SourceLoc
from . import defop


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


def _push_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    heap, base, cap, overflow, depth, value = types
    _heap_check(heap, attrs[0], "ADSTACK_PUSH")
    i64 = _int64()
    if (base, cap, depth) != (i64, i64, i64) or overflow != T.ArrayType(i64, 1):
        raise TypeError("ADSTACK_PUSH takes int64 base, capacity and depth and an int64 "
                        "overflow array")
    if value is not attrs[0].dtype:
        raise TypeError(f"ADSTACK_PUSH of {T.type_str(value)} onto {attrs[0]}")
    return i64


def _top_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    heap, base, cap, depth = types
    _heap_check(heap, attrs[0], "ADSTACK_TOP")
    i64 = _int64()
    if (base, cap, depth) != (i64, i64, i64):
        raise TypeError("ADSTACK_TOP takes int64 base, capacity and depth")
    return attrs[0].dtype


def _pop_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    if not isinstance(attrs[0], AdStack) or types != (_int64(),):
        raise TypeError("ADSTACK_POP takes the int64 depth and an AdStack")
    return _int64()


def _push(rt: Any, attrs: Any, heap: Any, base: Any, cap: Any, overflow: Any, depth: Any,
          value: Any) -> Any:
    d = int(depth)
    if d < int(cap):
        heap[int(base) + d] = value
    else:
        slot = attrs[0].id
        overflow[slot] = max(int(overflow[slot]), d + 1)
    return np.int64(d + 1)


def _top(rt: Any, attrs: Any, heap: Any, base: Any, cap: Any, depth: Any) -> Any:
    return heap[int(base) + min(int(depth), int(cap)) - 1]


defop(Op.ADSTACK_PUSH, "memory", 6, _push_rule, _push, pure=False,
      doc="heap[base + depth] = value if depth < capacity, else record the overflow; "
          "returns depth + 1")
defop(Op.ADSTACK_POP, "memory", 1, _pop_rule, lambda rt, attrs, d: np.int64(int(d) - 1),
      doc="depth - 1")
defop(Op.ADSTACK_TOP, "memory", 4, _top_rule, _top, pure=False,
      doc="heap[base + min(depth, capacity) - 1]: the value pushed last")
