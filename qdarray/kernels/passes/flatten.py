"""flatten: a parallel nest (`qd.ndrange`) as one flat index space, in IR.

Devices launch a one-dimensional range of threads (a CUDA grid, an OpenCL NDRange, the CPU's
prange over the flattened space); the thread with flat index f runs the nest's body at the
index tuple f decodes to, last axis fastest:

    n_d = max(end_d - begin_d, 0)   total = n_0 * n_1 * ...          (`sizes`: once)
    t_{k-1} = begin_{k-1} + f % n_{k-1}; f' = f // n_{k-1}; ...; t_0 = begin_0 + f'  (`decode`)

`flatten_nests(kernel)` gives each parallel nest's `FlatNest`: the IR of both parts, with
fresh value ids (the kernel itself is unchanged). A target binds `flat` to its thread index,
runs `decode` in each thread and hands the body the thread indices `threads` (int64, which
debug mode's error record holds too). The decode divides in uint64 (f is never negative and
each extent of a non-empty launch is positive), so no target spells a signed floor division
for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import _dtypes
from ..emit import Emitter
from ..ir import For, Instr, KernelIR, Op, Value
from .stages import parallel_nest


@dataclass(frozen=True)
class FlatNest:
    """The flat index space of one parallel nest (see the module docstring)."""

    loops: tuple[For, ...]
    sizes: tuple[Instr, ...]
    extents: tuple[Value, ...]
    total: Value
    flat: Value
    decode: tuple[Instr, ...]
    threads: tuple[Value, ...]


def _flatten(em: Emitter, loops: list[For]) -> FlatNest:
    i64, u64 = _dtypes.int64, _dtypes.uint64
    with em.region() as sizes:
        zero = em.i64(0)
        begins = [em.cast(f.begin, i64) for f in loops]
        extents = [em.emit(Op.MAX, em.emit(Op.SUB, em.cast(f.end, i64), b), zero)
                   for f, b in zip(loops, begins, strict=True)]
        total = extents[0]
        for n in extents[1:]:
            total = em.emit(Op.MUL, total, n)
    flat = em.value(i64)
    with em.region() as decode:
        if len(loops) > 1:
            wide = extents[:1] + [em.cast(n, u64) for n in extents[1:]]  # (the first: unused)
            at = em.unravel(em.cast(flat, u64), wide)
        else:
            at = [flat]
        threads = [em.emit(Op.ADD, b, em.cast(k, i64)) for b, k in zip(begins, at, strict=True)]
    assert all(isinstance(s, Instr) for s in sizes + decode)
    return FlatNest(tuple(loops), tuple(sizes), tuple(extents), total, flat,  # type: ignore[arg-type]
                    tuple(decode), tuple(threads))  # type: ignore[arg-type]


def flatten_nests(kernel: KernelIR) -> dict[int, FlatNest]:
    """The `FlatNest` of each top-level parallel loop of `kernel`, by `id()` of the loop."""
    em = Emitter.after(kernel)
    return {id(s): _flatten(em, parallel_nest(s)) for s in kernel.body.stmts
            if isinstance(s, For) and s.parallel}
