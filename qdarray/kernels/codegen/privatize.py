"""Privatized atomic sums: `y[c] += v` into one element that every thread of a parallel loop
updates.

Such an update is atomic (DESIGN.md), but when all threads hit the same element every atomic
contends for one cache line, and on a CPU that costs more than the arithmetic around it (the
forward of `y[0] += v` over 1e6 threads runs about twice as long as with a per-thread
store). A CPU code generator can instead give each worker of the parallel loop a private
accumulator, add each thread's contribution there without atomics, and add the accumulator
into the element once per worker, atomically. Threads are unordered, so this changes only
the order of the additions: the same sum up to rounding for floats, the same wrap-around
sum for integers.

An update qualifies when its old value is unused, its element is the same for every thread
(indices are constants or values computed outside the loop), and the loop body uses that
array for nothing else (no load or store of it could see a missing contribution).
Accumulators of float sums start at -0.0, the additive identity, so a worker that adds
nothing leaves the element untouched (even a -0.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir import Block, For, If, Instr, Op, Value, While, walk


@dataclass(frozen=True)
class PrivateSum:
    """One privatized `atomic_add`: the accumulator `slot` of its parallel loop, the array
    and the index (each a Value defined outside the loop or a constant (value, dtype))."""

    slot: int
    array: Value
    index: tuple[Value | tuple[Any, Any], ...]
    dtype: Any


def _uses(body: Block) -> dict[int, list[Any]]:
    """Value id -> the statements of `body` that use it."""
    out: dict[int, list[Any]] = {}
    for stmt in walk(body):
        if isinstance(stmt, Instr):
            vals: tuple[Value, ...] = stmt.args
        elif isinstance(stmt, For):
            vals = (stmt.begin, stmt.end)
        elif isinstance(stmt, (If, While)):
            vals = (stmt.cond,)
        else:
            vals = ()
        for v in vals:
            out.setdefault(v.id, []).append(stmt)
    return out


def private_sums(body: Block, outside: set[int]) -> dict[int, PrivateSum]:
    """The qualifying atomic sums of a parallel loop body, by `id()` of their instruction.

    Args:
        body: the body of the (innermost loop of the) parallel nest.
        outside: ids of the values the body reads but does not define.
    """
    consts: dict[int, tuple[Any, Any]] = {}
    defined: set[int] = set()
    for stmt in walk(body):
        if isinstance(stmt, Instr) and stmt.result is not None:
            defined.add(stmt.result.id)
            if stmt.op is Op.CONST:
                consts[stmt.result.id] = stmt.attrs
    uses = _uses(body)
    candidates: list[Instr] = []
    for stmt in walk(body):
        if not isinstance(stmt, Instr) or stmt.op is not Op.ATOMIC_ADD:
            continue
        array, *index, value = stmt.args
        if getattr(value.type, "kind", "b") not in "iuf":
            continue
        if stmt.result is not None and uses.get(stmt.result.id):
            continue
        if array.id not in outside or array.id in defined:
            continue
        if not all(i.id in consts or (i.id in outside and i.id not in defined) for i in index):
            continue
        candidates.append(stmt)
    chosen = {id(c) for c in candidates}
    out: dict[int, PrivateSum] = {}
    for stmt in candidates:
        array = stmt.args[0]
        others = [u for u in uses.get(array.id, [])
                  if id(u) not in chosen and not (isinstance(u, Instr) and u.op is Op.SHAPE)]
        if others:
            continue
        where = tuple(consts.get(i.id, i) for i in stmt.args[1:-1])
        out[id(stmt)] = PrivateSum(len(out), array, where, stmt.args[-1].type)
    return out


def plan(loops: list[For], nests: dict[int, list[For]], captures: dict[int, Any]
         ) -> tuple[dict[int, list[PrivateSum]], dict[int, tuple[int, PrivateSum]]]:
    """The private sums of each single parallel loop (by `id()` of the loop) and, by `id()` of
    each privatized instruction, (loop number, sum). Nests of several parallel loops keep
    their atomics."""
    private: dict[int, list[PrivateSum]] = {}
    sites: dict[int, tuple[int, PrivateSum]] = {}
    for k, s in enumerate(loops):
        if len(nests[id(s)]) == 1:
            found = private_sums(s.body, {v.id for v in captures[id(s)][0]})
            private[id(s)] = list(found.values())
            sites.update((i, (k, p)) for i, p in found.items())
    return private, sites


# A parallel loop with private sums runs as this many chunks of consecutive threads (numba
# shares them out statically, as it does a plain prange), each with its own accumulators.
# A fixed count, rather than one chunk per worker, also makes the order of the additions,
# and so the rounding of a float sum, the same for any number of threads.
CHUNKS = 256
# Bytes between two chunks' accumulators, so that no two chunks write one cache line.
LINE = 64


def accumulator(k: int, s: PrivateSum) -> str:
    """The name of the accumulator array of sum `s` of parallel loop `k`."""
    return f"_acc{k}_{s.slot}"


def _spell(e: Any, s: PrivateSum, const: Any) -> list[str]:
    return [e.val(i) if isinstance(i, Value) else const(*i) for i in s.index]


def target_view(e: Any, s: PrivateSum, const: Any) -> str:
    """A 1-element view of the element `s` adds into: the serial entry passes it as the
    accumulator, so the sum lands in place, in the same order as in the interpreter."""
    parts = _spell(e, s, const) or ["0"]  # 0-d arrays arrive as 1-element 1-d views
    return f"{e.val(s.array)}[{', '.join(parts[:-1] + [f'{parts[-1]}:{parts[-1]} + 1'])}]"


def emit_loop(e: Any, k: int, loop: For, call: str, sums: list[PrivateSum], const: Any
              ) -> None:
    """A single parallel loop whose body adds into private accumulators: a `prange` over
    chunks of consecutive threads, then each chunk's accumulators added into their elements
    one after another. `call` runs the body for thread `_t0` given each accumulator as
    `<name>[_w]`, the row of chunk `_w`."""
    e.line(f"_b = np.int64({e.val(loop.begin)})")
    e.line(f"_n = max(np.int64({e.val(loop.end)}) - _b, np.int64(0))")
    e.line(f"_nw = max(min(_n, np.int64({CHUNKS})), np.int64(1))")
    for s in sums:
        ctor = f"np.{s.dtype.name}"
        ident = f"{ctor}(-0.0)" if s.dtype.kind == "f" else f"{ctor}(0)"
        row = max(1, LINE // s.dtype.itemsize)
        e.line(f"{accumulator(k, s)} = np.full((_nw, {row}), {ident}, {ctor})")
    e.line("for _w in prange(_nw):")
    with e.indent():
        e.line("for _t0 in range(_b + _n * _w // _nw, _b + _n * (_w + 1) // _nw):")
        with e.indent():
            e.line(call)
    e.line("for _w in range(_nw):")
    with e.indent():
        for s in sums:
            index = f"({', '.join(_spell(e, s, const))},)" if s.index else "(0,)"
            e.line(f"atomic_add({e.val(s.array)}, {index}, {accumulator(k, s)}[_w, 0])")
