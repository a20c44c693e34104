"""Activity: which values and locals carry gradients through a kernel.

A value is *varied* when it is a float that depends on a load of an array whose gradient is
wanted, and *useful* when it reaches a store or atomic update of an array with a gradient.
Only values that are both (*active*) get adjoints. Locals follow their stores and loads;
the analysis is flow-insensitive over the whole kernel (a local is one thing everywhere).
Values returned by atomics are never varied: reverse mode cannot recompute them, and an
atomic's old value is a synchronisation device rather than a differentiable quantity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...kernels.ir import Block, Instr, KernelIR, Op, instrs
from ...kernels.types import is_float
from .structure import WRITES


@dataclass
class Activity:
    varied: set[int] = field(default_factory=set)       # value ids
    varied_vars: set[int] = field(default_factory=set)  # var ids
    useful: set[int] = field(default_factory=set)
    useful_vars: set[int] = field(default_factory=set)

    def value(self, vid: int) -> bool:
        return vid in self.varied and vid in self.useful

    def var(self, var_id: int) -> bool:
        return var_id in self.varied_vars and var_id in self.useful_vars


def _all_instrs(block: Block) -> list[Instr]:
    return list(instrs(block))


def _forward(code: list[Instr], sources: Iterable[int], act: Activity) -> None:
    grads = set(sources)
    changed = True
    while changed:
        changed = False
        for i in code:
            op = i.op
            if op is Op.STORE_VAR:
                if i.args[0].id in act.varied and i.attrs[0].id not in act.varied_vars:
                    act.varied_vars.add(i.attrs[0].id)
                    changed = True
                continue
            r = i.result
            if r is None or r.id in act.varied or not is_float(r.type) or op in WRITES:
                continue
            if op is Op.LOAD:
                hit = i.args[0].id in grads
            elif op is Op.LOAD_VAR:
                hit = i.attrs[0].id in act.varied_vars
            else:
                hit = any(a.id in act.varied for a in i.args)
            if hit:
                act.varied.add(r.id)
                changed = True


def _backward(code: list[Instr], sinks: set[int], act: Activity) -> None:
    changed = True
    while changed:
        changed = False
        for i in reversed(code):
            op = i.op
            if op in WRITES and i.args[0].id in sinks:
                seeds = [i.args[-1]]
            elif op is Op.STORE_VAR:
                seeds = [i.args[0]] if i.attrs[0].id in act.useful_vars else []
            elif op is Op.LOAD_VAR:
                if i.result.id in act.useful and i.attrs[0].id not in act.useful_vars:  # type: ignore[union-attr]
                    act.useful_vars.add(i.attrs[0].id)
                    changed = True
                continue
            elif i.result is not None and i.result.id in act.useful and op not in WRITES:
                seeds = [a for a in i.args if is_float(a.type)]
            else:
                continue
            for a in seeds:
                if is_float(a.type) and a.id not in act.useful:
                    act.useful.add(a.id)
                    changed = True


def analyze(kernel: KernelIR, with_grad: set[int]) -> Activity:
    """Activity of every value of `kernel`; `with_grad` holds the ids of the memory
    parameters whose gradients exist."""
    code = _all_instrs(kernel.body)
    act = Activity()
    _forward(code, with_grad, act)
    _backward(code, with_grad, act)
    return act


@dataclass
class Flow:
    """Where the values loaded from one array go (for the "cannot flow" error)."""

    sinks_without_grad: list[tuple[str, Instr]]
    cut: Instr | None


def trace(kernel: KernelIR, param: int, with_grad: set[int],
          names: dict[int, str]) -> Flow:
    """Follow the values loaded from parameter `param` to the stores they reach."""
    code = _all_instrs(kernel.body)
    act = Activity()
    _forward(code, {param}, act)
    sinks: list[tuple[str, Instr]] = []
    cut: Instr | None = None
    for i in code:
        if i.op in WRITES and i.args[-1].id in act.varied and i.args[0].id not in with_grad:
            sinks.append((names.get(i.args[0].id, "?"), i))
        elif (cut is None and i.result is not None and not is_float(i.result.type)
              and i.op not in (Op.LOAD, Op.SHAPE) and any(a.id in act.varied for a in i.args)):
            cut = i
    return Flow(sinks, cut)
