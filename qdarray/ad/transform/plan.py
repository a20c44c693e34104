"""The plan of a reverse kernel: everything its launcher needs, without the transform's IR.

`build_reverse` produces IR and analysis objects (`Reverse`); a `ReverseLauncher` needs only
a small part of them: the parameters the reverse kernel adds, the stack table (id, dtype,
variable name and source line for overflow messages, which task owns it), the stacks'
symbolic size expressions and thread counts, what the counting pass reads, and the compiled
reverse and counting kernels. `plan_of(rev)` extracts that part into a `ReversePlan` of plain
values, which `transform/plan_json.py` writes to the disk cache next to the generated modules, so a
second process launches `kernel.grad` from it without running the transform again.

A compiled kernel is recorded as a `KernelRecord` (`kernels/records.py`): the cache key of
its generated module (`Launcher.module_key`) and what debug-mode messages need; a launcher is
built from it without IR, through the kernel target's `cached_launcher`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...kernels.ops.adstack import AdStack
from ...kernels.records import KernelRecord, launcher_of, record_of
from ..sizing.bounds import COUNT_SLOTS, Expr, LoopVar, free_vars

__all__ = ["COUNT_SLOTS", "KernelRecord", "ReversePlan", "StackRecord", "launcher_of", "plan_of",
           "record_of"]


@dataclass(frozen=True)
class StackRecord:
    """One live stack: its descriptor and the index of its task (None: serial code)."""

    desc: AdStack
    task: int | None

    @property
    def id(self) -> int:
        return self.desc.id


@dataclass(frozen=True)
class ReversePlan:
    """What launching the reverse of one kernel signature needs (see the module docstring).

    Attributes:
        name: the forward kernel's name.
        params: (name, type) of the forward kernel's parameters (dataclass fields flattened).
        extra: (name, type) of the parameters the reverse kernel adds after those: the
            gradients (`<name>@grad`), then the scratch, heaps, layout and overflow arrays.
        stacks: the live stacks, in the order of `exprs`.
        n_stacks: stack ids run below this (the overflow array's length).
        n_tasks: the number of parallel loops (tasks), in program order.
        grads: positions of the forward parameters whose gradients the reverse takes.
        outer_slots: the float64 scratch of serial-code adjoints (0: none).
        heaps: the dtype of each heap parameter, in order.
        exprs: each live stack's capacity expression (None: sized by the counting pass).
        threads: each task's thread count expression (None: from the counting pass).
        thread_exprs: each live stack's capacity at one thread of its task, over the task's
            loop variables (None: per-thread capacities from the counting pass).
        axes: each task's parallel loops as (variable, begin, end), outermost first (None:
            not expressible).
        count_deps: (kind, flattened argument position) the counting kernel reads
            (`sizer.counting_deps`).
        reverse, counting: the compiled kernels, where they are recorded (None: compile
            them from IR).
    """

    name: str
    params: tuple[tuple[str, Any], ...]
    extra: tuple[tuple[str, Any], ...]
    stacks: tuple[StackRecord, ...]
    n_stacks: int
    n_tasks: int
    grads: tuple[int, ...]
    outer_slots: int
    heaps: tuple[Any, ...]
    exprs: tuple[Expr | None, ...]
    threads: tuple[Expr | None, ...]
    count_deps: tuple[tuple[int, int], ...]
    thread_exprs: tuple[Expr | None, ...] = ()
    axes: tuple[tuple[tuple[LoopVar, Expr, Expr], ...] | None, ...] = ()
    reverse: KernelRecord | None = None
    counting: KernelRecord | None = None


def plan_of(rev: Any, name: str) -> ReversePlan:
    """The plan of a `Reverse` (`reverse.build_reverse`) of kernel `name`."""
    from ..sizing.at_launch import counting_deps
    from ..sizing.bounds import Deriver

    deriver = Deriver(rev.structure, {id(n) for n in rev.checkpointed})
    task_index = {id(t): k for k, t in enumerate(rev.tasks)}
    nfwd = len(rev.forward.params)
    axes = tuple(deriver.axes(t) for t in rev.tasks)
    thread_exprs: list[Expr | None] = []
    for s in rev.stacks:
        e = deriver.thread_capacity(s.sites)
        own = () if s.task is None else axes[task_index[id(s.task)]]
        if e is None or own is None or not free_vars(e) <= {v.id for v, _, _ in own}:
            e = None
        thread_exprs.append(e)
    return ReversePlan(
        name=name,
        params=tuple((p.name, p.value.type) for p in rev.forward.params),
        extra=tuple((p.name, p.value.type) for p in rev.kernel.params[nfwd:]),
        stacks=tuple(StackRecord(s.desc, None if s.task is None else task_index[id(s.task)])
                     for s in rev.stacks),
        n_stacks=rev.n_stacks,
        n_tasks=len(rev.tasks),
        grads=tuple(rev.grads),
        outer_slots=rev.outer_slots,
        heaps=tuple(rev.heaps),
        exprs=tuple(deriver.capacity(s.sites, s.task) for s in rev.stacks),
        threads=tuple(deriver.threads(t) for t in rev.tasks),
        count_deps=tuple(counting_deps(rev.forward.params, rev.counting)),
        thread_exprs=tuple(thread_exprs),
        axes=axes,
    )
