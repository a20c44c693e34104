"""Build a reverse kernel (and its counting kernel) from a forward kernel's IR.

`build_reverse(ir, with_grad)` runs the steps in order: lower break/continue, find the
segments, activity, keep cross-segment values in locals, generate the forward and reverse
sweeps, factor the incoming adjoints out of adjoint expressions (`factor.py`), merge
repeated pure instructions (`cse.py`), remove dead code and unused adstacks, and derive the
stacks' size expressions. The result depends on the target only through where its stacks
live (`StackLayout.scratch`: per-worker scratch or packed); the launcher (`ad/launch.py`)
compiles it like any kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import _dtypes
from ..._errors import AutodiffError
from ...kernels.emit import Emitter, block
from ...kernels.frontend.diagnostics import format_location
from ...kernels.ir import For, If, Instr, KernelIR, Op, Param, Stmt, Value, While, instrs, walk
from ...kernels.passes.cse import eliminate_common
from ...kernels.passes.dce import eliminate, stacks_read
from ...kernels.passes.factor import factor_adjoints
from ...kernels.types import ArrayType, ViewType, is_float
from .activity import analyze, trace
from .adstack import StackInfo
from .exits import lower_exits
from .generator import Gen, nest_loops
from .materialize import materialize
from .plan import COUNT_SLOTS
from .structure import Node, Structure


@dataclass
class Reverse:
    """A reverse kernel and what its launcher needs to size and check its stacks."""

    kernel: KernelIR              # the reverse kernel (forward params, then `extra`)
    counting: KernelIR            # forward sweep counting pushes: params + counts array
    forward: KernelIR             # the forward kernel as the transform saw it
    structure: Structure
    stacks: list[StackInfo]       # the stacks the reverse kernel uses
    n_stacks: int                 # ids run below this (the overflow array's size)
    tasks: list[Node]             # parallel loops, in program order
    grads: list[int]              # forward parameter positions whose gradients it takes
    outer_slots: int              # size of the float64 scratch of serial-code adjoints
    heaps: list[Any]              # dtypes of the heap parameters, in order
    checkpointed: list[Node]      # loops kept every k-th state (transform/checkpoint.py)


def _grad_params(kernel: KernelIR, with_grad: set[str]) -> dict[int, Value]:
    return {p.value.id: p.value for p in kernel.params
            if p.name in with_grad and isinstance(p.value.type, (ArrayType, ViewType))
            and is_float(p.value.type.dtype)}


def check_flow(kernel: KernelIR, grads: dict[int, Value], act: Any) -> None:
    """An input whose gradient was asked for must reach an output with a gradient."""
    names = {p.value.id: p.name for p in kernel.params}
    loads: dict[int, list[Instr]] = {}
    for i in instrs(kernel.body):
        if i.op is Op.LOAD and i.args[0].id in grads:
            loads.setdefault(i.args[0].id, []).append(i)
    for pid, sites in loads.items():
        if any(act.value(i.result.id) for i in sites):  # type: ignore[union-attr]
            continue
        flow = trace(kernel, pid, set(grads), names)
        name = names[pid]
        if flow.sinks_without_grad:
            arr, at = flow.sinks_without_grad[0]
            raise AutodiffError(
                f"The gradient of '{name}' cannot flow through kernel '{kernel.name}': its "
                f"values reach only '{arr}', which has no gradient.\n{format_location(at.loc)}\n"
                f"Use requires_grad=True when creating '{arr}' (qd.zeros(..., "
                "requires_grad=True)).")
        where = f"\n{format_location(flow.cut.loc)}" if flow.cut is not None else ""
        how = ("an integer conversion or a comparison" if flow.cut is not None
               else "nothing the kernel writes")
        raise AutodiffError(
            f"The gradient of '{name}' cannot flow through kernel '{kernel.name}': its values "
            f"reach the outputs only through {how}, which has no gradient.{where}\n"
            f"Use float arithmetic on '{name}' (gradients stop at integer casts and "
            "comparisons), or create it without requires_grad.")


def _counting_stmt(s: Stmt, live: set[int], em: Emitter) -> list[Stmt]:
    if isinstance(s, Instr) and s.op is Op.ADSTACK_PUSH and s.attrs[0].id in live:
        with em.at(s.loc), em.region() as out:
            one = em.i64(1)
        out.append(Instr(Op.ADD, s.result, (s.args[-2], one), (), s.loc))
        return out
    if isinstance(s, If):
        return [If(s.cond, _counting_block(s.then_body.stmts, live, em),
                   _counting_block(s.else_body.stmts, live, em), s.loc)]
    if isinstance(s, For):
        return [For(s.index, s.begin, s.end, _counting_block(s.body.stmts, live, em),
                    s.parallel, s.loc)]
    if isinstance(s, While):
        return [While(s.cond_body, s.cond, _counting_block(s.body.stmts, live, em), s.loc)]
    return [s]


def _counting_block(stmts: Any, live: set[int], em: Emitter) -> Any:
    out: list[Stmt] = []
    for s in stmts:
        out += _counting_stmt(s, live, em)
    return block(out)


def counting_kernel(forward: KernelIR, gen: Gen, live: list[StackInfo], dead: set[int],
                    dead_vars: set[int], em: Emitter) -> KernelIR:
    """The forward sweep of every thread, counting pushes. Each thread folds the depth its
    stacks reach into `counts[stack id * COUNT_SLOTS + thread % COUNT_SLOTS]` with an atomic
    max (threads of one stretch of the launch hit different slots: no contention), so the
    largest depth of a stack is the max over its slots; `counts[n_stacks * COUNT_SLOTS + t]`
    gets the thread count of task t. Where `starts[stack id]` is not negative, each thread
    also stores its own depth at `counts[starts[stack id] + thread]` (the per-thread
    capacities of a packed layout, ad/sizing/packed_layout.py)."""
    i64 = _dtypes.int64
    counts = em.value(ArrayType(i64, 1))
    starts = em.value(ArrayType(i64, 1))
    ids = {s.id for s in live}
    n = len(gen.stacks.all) * COUNT_SLOTS

    def own(s: StackInfo, thread: Value) -> None:
        at = em.emit(Op.LOAD, starts, em.i64(s.id))
        with em.region() as store:
            em.emit(Op.STORE, counts, em.emit(Op.ADD, at, thread), em.load_var(s.depth))
        em.stmt(If(em.emit(Op.GE, at, em.i64(0)), block(store), block([])))

    body: list[Stmt] = list(_counting_block(gen.serial_fwd, ids, em).stmts)
    with em.region() as tail:
        for s in live:
            if s.task is None:
                em.emit(Op.STORE, counts, em.i64(s.id * COUNT_SLOTS), em.load_var(s.depth))
                own(s, em.i64(0))
    for t, task in enumerate(gen.st.tasks):
        fwd, prelude = gen.thread_fwd[id(task)]
        with em.region() as thread_end:
            thread = gen.thread_index(task.nest)
            slot = em.emit(Op.MOD, thread, em.i64(COUNT_SLOTS))
            for s in live:
                if s.task is task:
                    where = em.emit(Op.ADD, em.i64(s.id * COUNT_SLOTS), slot)
                    em.emit(Op.ATOMIC_MAX, counts, where, em.load_var(s.depth))
                    own(s, thread)
        with em.at(task.stmt.loc), em.region() as before:
            threads = em.i64(1)
            for loop in task.nest:
                trip = em.emit(Op.MAX, em.emit(Op.SUB, loop.end, loop.begin),
                               em.const(0, loop.end.type))
                threads = em.emit(Op.MUL, threads, em.cast(trip, i64))
            em.emit(Op.STORE, counts, em.i64(n + t), threads)
        inner = _counting_block(prelude + fwd + thread_end, ids, em)
        body += before + [nest_loops(task.nest, list(inner.stmts))]
    body += tail
    params = forward.params + (Param("@counts", counts), Param("@starts", starts))
    cleaned = eliminate(block(body), dead, dead_vars)
    return KernelIR(f"{forward.name}_count", params, cleaned, forward.loc, ())


def build_reverse(ir: KernelIR, with_grad: set[str], checkpoint: bool = False,
                  scratch: bool = False) -> Reverse:
    """The reverse of `ir` (a forward kernel after `simplify`) for the parameters named in
    `with_grad` (arrays whose gradients exist); raises AutodiffError when it cannot be
    differentiated. `checkpoint`: its dynamic loops keep every k-th state and run the rest
    again (ad/transform/checkpoint.py), k its `@checkpoint` argument. `scratch`: the stacks of
    parallel loops in per-worker scratch (the target's `StackLayout.scratch`), else packed."""
    em = Emitter.after(ir)
    lowered = lower_exits(ir, em)
    st = Structure(lowered)
    grads = _grad_params(lowered, with_grad)
    act = analyze(lowered, set(grads))
    check_flow(lowered, grads, act)
    forward = materialize(lowered, st, act, em)
    st = Structure(forward)
    act = analyze(forward, set(grads))
    grad_values = {pid: em.value(v.type) for pid, v in grads.items()}
    names = {p.value.id: p.name for p in forward.params}
    gen = Gen(forward, st, act, em, grad_values, names, checkpoint, scratch)
    body = gen.run()
    seed_vars = {v.id for v in gen.adj_vars.values()} | {v.id for v, _ in gen.outer_adj.values()}
    seed_arrays = {v.id for v in grad_values.values()}
    if gen.scratch is not None:
        seed_arrays.add(gen.scratch.id)
    body = eliminate_common(factor_adjoints(body, em, seed_vars, seed_arrays),
                            set(gen.placeholders))
    body = eliminate(body)
    used = stacks_read(body)
    dead = {s.id for s in gen.stacks.all if s.id not in used}
    dead_vars = {s.depth.id for s in gen.stacks.all if s.id in dead}
    body = eliminate(body, dead, dead_vars)
    for s in walk(body):
        if isinstance(s, Instr) and s.result is not None and s.result.id in gen.placeholders:
            gen.atomic_result_error(gen.placeholders[s.result.id])
    live = [s for s in gen.stacks.all if s.id not in dead]
    params = forward.params + gen.params()
    kernel = KernelIR(f"{ir.name}_reverse", params, body, ir.loc, ())
    counting = counting_kernel(forward, gen, live, dead, dead_vars, em)
    order = [k for k, p in enumerate(forward.params) if p.value.id in grad_values]
    outer = len(gen.outer_adj)
    return Reverse(kernel, counting, forward, st, live, len(gen.stacks.all), list(st.tasks),
                   order, outer, list(gen.stacks.heaps),
                   [c.node for c in gen.checkpointed.values()])
