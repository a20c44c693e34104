"""simplify: fold constants, take constant branches, drop unused pure instructions.

Folding runs each op's own `impl` (the interpreter's definition), so a folded constant is
exactly what the op would have computed at run time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Block, If, Instr, KernelIR, Op, Stmt, operands, walk
from ..ops import OPS
from .rewrite import Rewriter


class _Fold(Rewriter):
    def __init__(self) -> None:
        super().__init__()
        self.consts: dict[int, Any] = {}

    def instr(self, instr: Instr) -> list[Stmt]:
        instr = self.args(instr)
        d = OPS[instr.op]
        if instr.op is Op.CONST:
            self.consts[instr.result.id] = d.impl(instr.result.type, instr.attrs)  # type: ignore
            return [instr]
        if (d.pure and d.impl is not None and instr.result is not None and instr.args
                and all(a.id in self.consts for a in instr.args)):
            rt: Any = instr.result.type
            with np.errstate(all="ignore"):
                value = d.impl(rt, instr.attrs, *(self.consts[a.id] for a in instr.args))
            value = rt._np.type(value)
            self.consts[instr.result.id] = value
            if rt.kind == "c":  # no complex literals in the IR: the parts fold, COMPLEX stays
                return [instr]
            return [Instr(Op.CONST, instr.result, (), (value.item(), rt), instr.loc)]
        return [instr]

    def stmt(self, stmt: Stmt) -> list[Stmt]:
        if isinstance(stmt, If):
            cond = self.v(stmt.cond)
            if cond.id in self.consts:
                taken = stmt.then_body if self.consts[cond.id] else stmt.else_body
                return list(self.block(taken).stmts)
        return super().stmt(stmt)


def _uses(block: Block, counts: dict[int, int]) -> None:
    for stmt in walk(block):
        for v in operands(stmt):
            counts[v.id] = counts.get(v.id, 0) + 1


class _Prune(Rewriter):
    def __init__(self, counts: dict[int, int]) -> None:
        super().__init__()
        self.counts = counts
        self.removed = 0

    def instr(self, instr: Instr) -> list[Stmt]:
        if (instr.result is not None and OPS[instr.op].pure
                and not self.counts.get(instr.result.id)):
            self.removed += 1
            return []
        return [instr]


def simplify(kernel: KernelIR) -> KernelIR:
    """Fold constants and remove dead pure code; the result computes the same."""
    kernel = _Fold().run(kernel)
    for _ in range(64):
        counts: dict[int, int] = {}
        _uses(kernel.body, counts)
        prune = _Prune(counts)
        kernel = prune.run(kernel)
        if not prune.removed:
            break
    return kernel
