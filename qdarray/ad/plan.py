"""The plan of a reverse kernel: everything its launcher needs, without the transform's IR.

`build_reverse` produces IR and analysis objects (`Reverse`); a `ReverseLauncher` needs only
a small part of them: the parameters the reverse kernel adds, the stack table (id, dtype,
variable name and source line for overflow messages, which task owns it), the stacks'
symbolic size expressions and thread counts, what the counting pass reads, and the compiled
reverse and counting kernels. `plan_of(rev)` extracts that part into a `ReversePlan` of plain
values, which `plan_json.py` writes to the disk cache next to the generated modules, so a
second process launches `kernel.grad` from it without running the transform again.

A compiled kernel is recorded as a `KernelRecord`: the cache key of its generated module
(`Launcher.module_key`) and what debug-mode messages need (its parameters after lowering and
its check sites). A launcher built from a record (`launcher_of`, through the kernel target's
`cached_launcher`) is the same as one built from IR; it holds a *skeleton* of the kernel's
IR (parameters and check sites, no body), which is all a compiled launcher reads. Only
targets that keep their modules in the disk cache (`KernelTarget.caches_modules`) record
kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..kernels.args import ArgSpec
from ..kernels.ir import UNKNOWN_LOC, Block, Instr, KernelIR, Op, Param, SourceLoc, Value, instrs
from ..kernels.launch import packer
from ..kernels.ops.adstack import AdStack
from ..kernels.target import KernelTarget, Launcher
from .sizing import Expr


@dataclass(frozen=True)
class StackRecord:
    """One live stack: its descriptor and the index of its task (None: serial code)."""

    desc: AdStack
    task: int | None

    @property
    def id(self) -> int:
        return self.desc.id


@dataclass(frozen=True)
class KernelRecord:
    """A compiled kernel as its launcher sees it."""

    module: str                                            # cache key of the generated module
    name: str                                              # the kernel's name in messages
    params: tuple[tuple[str, Any], ...]                    # (name, type) after lowering
    sites: tuple[tuple[tuple[Any, ...], SourceLoc], ...]   # CHECK_INDEX (attrs, location)


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
    reverse: KernelRecord | None = None
    counting: KernelRecord | None = None


def plan_of(rev: Any, name: str) -> ReversePlan:
    """The plan of a `Reverse` (`reverse.build_reverse`) of kernel `name`."""
    from .sizer import counting_deps
    from .sizing import Deriver

    deriver = Deriver(rev.structure)
    task_index = {id(t): k for k, t in enumerate(rev.tasks)}
    nfwd = len(rev.forward.params)
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
    )


def record_of(launcher: Launcher) -> KernelRecord | None:
    """The record of a compiled launcher (None for launchers whose code the disk cache does
    not keep)."""
    if launcher.module_key is None:
        return None
    ir: KernelIR = launcher.kernel
    sites = tuple((i.attrs, i.loc) for i in instrs(ir.body) if i.op is Op.CHECK_INDEX)
    return KernelRecord(launcher.module_key, ir.name,
                        tuple((p.name, p.value.type) for p in ir.params), sites)


def skeleton(record: KernelRecord) -> KernelIR:
    """The parts of a compiled kernel's IR its launcher reads: parameters and check sites
    (each CHECK_INDEX without operands; the compiled code holds the real ones)."""
    params = tuple(Param(n, Value(k, t)) for k, (n, t) in enumerate(record.params))
    checks = tuple(Instr(Op.CHECK_INDEX, None, (), attrs, loc) for attrs, loc in record.sites)
    return KernelIR(record.name, params, Block(checks), UNKNOWN_LOC, ())


def launcher_of(record: KernelRecord, specs: Sequence[ArgSpec], names: Sequence[str],
                bumps: list[Any], target: KernelTarget, debug: bool, device: Any
                ) -> Launcher | None:
    """A launcher of the recorded kernel on `target`, or None when its module is no longer
    in the disk cache (or no longer hashes to its key)."""
    packers = [packer(s, f"{record.name}() argument '{n}'", not target.lowers_views,
                      exact=debug) for n, s in zip(names, specs, strict=True)]
    return target.cached_launcher(record.module, skeleton(record), packers, bumps,
                                  debug=debug, device=device)
