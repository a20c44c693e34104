"""Privatized atomics: `y[c] += v` (or `qd.atomic_max(y, c, v)`, `atomic_min`) into one
element that every thread of a parallel loop updates.

Such an update is atomic (DESIGN.md), but when all threads hit the same element every atomic
contends for one cache line, and on a CPU that costs more than the arithmetic around it (the
forward of `y[0] += v` over 1e6 threads ran about twice as long as with a per-thread store).
The numba CPU generator instead gives each chunk of consecutive threads a private
accumulator, folds each thread's value into it without atomics, and folds the chunks'
accumulators into the element one after another. Threads are unordered, so this changes
only the order of the operations: integer sums (wrapping), minima and maxima are exact, a
float sum is the same sum up to rounding.

Which updates qualify (old value unused, one element for every thread, the array otherwise
untouched by the loop) and the accumulators' identities are shared with the CUDA generator's
block reductions: `block_sums.py`.
"""

from __future__ import annotations

from typing import Any

from ...ir import For, Value
from ..block_sums import BlockSum, block_sums

PrivateSum = BlockSum


def _atomic_ok(dtype: Any) -> bool:
    return getattr(dtype, "kind", "b") in "iuf"  # the CPU has atomics of every number type


def plan(loops: list[For], nests: dict[int, list[For]], captures: dict[int, Any]
         ) -> tuple[dict[int, list[PrivateSum]], dict[int, tuple[int, PrivateSum]]]:
    """The privatized atomics of each single parallel loop (by `id()` of the loop) and, by
    `id()` of each privatized instruction, (loop number, atomic). Nests of several parallel
    loops keep their atomics."""
    private: dict[int, list[PrivateSum]] = {}
    sites: dict[int, tuple[int, PrivateSum]] = {}
    for k, s in enumerate(loops):
        if len(nests[id(s)]) == 1:
            found = block_sums(s.body, {v.id for v in captures[id(s)][0]}, _atomic_ok)
            private[id(s)] = list(found.values())
            sites.update((i, (k, p)) for i, p in found.items())
    return private, sites


# A parallel loop with private accumulators runs as this many chunks of consecutive threads
# (numba shares them out statically, as it does a plain prange), each with its own.
# A fixed count, rather than one chunk per worker, also makes the order of the additions,
# and so the rounding of a float sum, the same for any number of threads.
CHUNKS = 256
# Bytes between two chunks' accumulators, so that no two chunks write one cache line.
LINE = 64


def accumulator(k: int, s: PrivateSum) -> str:
    """The name of the accumulator array of atomic `s` of parallel loop `k`."""
    return f"_acc{k}_{s.slot}"


def _spell(e: Any, s: PrivateSum, const: Any) -> list[str]:
    return [e.val(i) if isinstance(i, Value) else const(*i) for i in s.index]


def target_view(e: Any, s: PrivateSum, const: Any) -> str:
    """A 1-element view of the element `s` updates: the serial entry passes it as the
    accumulator, so the updates land in place, in the same order as in the interpreter."""
    parts = _spell(e, s, const) or ["0"]  # 0-d arrays arrive as 1-element 1-d views
    return f"{e.val(s.array)}[{', '.join(parts[:-1] + [f'{parts[-1]}:{parts[-1]} + 1'])}]"


def emit_loop(e: Any, k: int, loop: For, chunk: Any, sums: list[PrivateSum], const: Any
              ) -> None:
    """A single parallel loop whose body folds values into private accumulators: a `prange`
    over chunks of consecutive threads, then each chunk's accumulators folded into their
    elements one after another. `chunk(lo, hi)` emits the run of chunk `_w`'s threads
    [lo, hi) given each accumulator as `<name>[_w]`, the row of chunk `_w`."""
    e.line(f"_b = np.int64({e.val(loop.begin)})")
    e.line(f"_n = max(np.int64({e.val(loop.end)}) - _b, np.int64(0))")
    e.line(f"_nw = max(min(_n, np.int64({CHUNKS})), np.int64(1))")
    for s in sums:
        row = max(1, LINE // s.dtype.itemsize)
        e.line(f"{accumulator(k, s)} = np.full((_nw, {row}), {s.identity()}, "
               f"np.{s.dtype.name})")
    e.line("for _w in prange(_nw):")
    with e.indent():
        chunk("_b + _n * _w // _nw", "_b + _n * (_w + 1) // _nw")
    e.line("for _w in range(_nw):")
    with e.indent():
        for s in sums:
            index = f"({', '.join(_spell(e, s, const))},)" if s.index else "(0,)"
            e.line(f"atomic_{s.kind}({e.val(s.array)}, {index}, {accumulator(k, s)}[_w, 0])")
