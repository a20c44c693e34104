"""Atomics that every thread of a parallel loop aims at one element (`y[0] += v`), reduced
within each CUDA block first.

On a GPU, atomics that all hit one address serialise: with 1e7 threads each `y[0] += v` waits
for the previous one. The CUDA generator instead gives each thread a register accumulator
that its grid-stride iterations update without atomics, reduces the accumulators of a block
in shared memory after the loop, and issues one atomic per block. Threads are unordered, so
this only changes the order of the operations: integer sums (wrapping), minima and maxima are
exact; a float sum is the same sum up to rounding.

An atomic qualifies when its old value is unused, its element is the same for every thread
(indices are constants or values defined outside the loop) and the loop body uses the array
for nothing else (no load or store could see a missing contribution). Accumulators start at
the operation's identity: -0.0 or 0 for sums (adding -0.0 leaves any element unchanged, even
-0.0), -inf / +inf or the integer extremes for max / min, so a block with nothing to add leaves
the element as it is. Min and max keep the atomics' rule that a NaN never wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import Block, Instr, Op, Value, operands, walk

_KIND = {Op.ATOMIC_ADD: "add", Op.ATOMIC_MIN: "min", Op.ATOMIC_MAX: "max"}


@dataclass(frozen=True)
class BlockSum:
    """One block-reduced atomic of a parallel loop: its accumulator `slot`, the operation
    ("add", "min" or "max"), the array, the index (each a Value defined outside the loop or a
    constant (value, dtype)) and the dtype."""

    slot: int
    kind: str
    array: Value
    index: tuple[Value | tuple[Any, Any], ...]
    dtype: Any

    @property
    def name(self) -> str:
        return f"_acc{self.slot}"

    def identity(self) -> str:
        """The accumulator's initial value, as a typed expression."""
        ctor = f"np.{self.dtype.name}"
        if self.kind == "add":
            return f"{ctor}(-0.0)" if self.dtype.kind == "f" else f"{ctor}(0)"
        if self.dtype.kind == "f":
            return f"{ctor}({'-' if self.kind == 'max' else ''}np.inf)"
        info = np.iinfo(self.dtype._np)
        return f"{ctor}({info.min if self.kind == 'max' else info.max})"

    def combine(self, e: Any, acc: str, value: str) -> None:
        """Emit the statements folding `value` into `acc` (an element expression)."""
        if self.kind == "add":
            e.line(f"{acc} += {value}")
            return
        e.line(f"if {value} {'>' if self.kind == 'max' else '<'} {acc}:")
        with e.indent():
            e.line(f"{acc} = {value}")


def _uses(body: Block) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for stmt in walk(body):
        for v in operands(stmt):
            out.setdefault(v.id, []).append(stmt)
    return out


def block_sums(body: Block, outside: set[int], atomic_ok: Any) -> dict[int, BlockSum]:
    """The qualifying atomics of a parallel loop body, by `id()` of their instruction.

    Args:
        body: the body of the innermost loop of the parallel nest.
        outside: ids of the values the body reads but does not define.
        atomic_ok: `atomic_ok(dtype)`, whether the device has atomics of that dtype.
    """
    consts: dict[int, tuple[Any, Any]] = {}
    defined: set[int] = set()
    for stmt in walk(body):
        if isinstance(stmt, Instr) and stmt.result is not None:
            defined.add(stmt.result.id)
            if stmt.op is Op.CONST:
                consts[stmt.result.id] = stmt.attrs
    uses = _uses(body)
    found: list[Instr] = []
    for stmt in walk(body):
        if not isinstance(stmt, Instr) or stmt.op not in _KIND or stmt.attrs:
            continue  # (an atomic with attrs records an adstack overflow: passes/lower_adstack)
        array, *index, value = stmt.args
        if not atomic_ok(value.type):
            continue
        if stmt.result is not None and uses.get(stmt.result.id):
            continue
        if array.id not in outside or array.id in defined:
            continue
        if all(i.id in consts or (i.id in outside and i.id not in defined) for i in index):
            found.append(stmt)
    chosen = {id(c) for c in found}
    out: dict[int, BlockSum] = {}
    for stmt in found:
        array = stmt.args[0]
        others = [u for u in uses.get(array.id, [])
                  if id(u) not in chosen and not (isinstance(u, Instr) and u.op is Op.SHAPE)]
        if others:
            continue
        where = tuple(consts.get(i.id, i) for i in stmt.args[1:-1])
        out[id(stmt)] = BlockSum(len(out), _KIND[stmt.op], array, where, stmt.args[-1].type)
    return out


def emit_reduction(e: Any, s: BlockSum, atomic: str, index: str) -> None:
    """After the grid-stride loop: the block's accumulators reduced in shared memory (a tree
    over the block's `TPB` threads) and one atomic of the result into the element."""
    sh = f"_sh{s.slot}"
    ctor = f"np.{s.dtype.name}"
    e.line(f"{sh} = cuda.shared.array(TPB, {ctor})")
    e.line(f"{sh}[_tid] = {s.name}[0]")
    e.line("cuda.syncthreads()")
    e.line("_w = TPB // 2")
    e.line("while _w > 0:")
    with e.indent():
        e.line("if _tid < _w:")
        with e.indent():
            s.combine(e, f"{sh}[_tid]", f"{sh}[_tid + _w]")
        e.line("cuda.syncthreads()")
        e.line("_w //= 2")
    e.line("if _tid == 0:")
    with e.indent():
        e.line(f"{atomic}({e.val(s.array)}, {index}, {sh}[0])")
