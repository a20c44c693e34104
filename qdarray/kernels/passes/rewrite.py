"""A small base for IR -> IR passes: rebuild blocks, substituting values.

Subclasses override `instr(instr) -> list[Stmt]` (the default keeps the instruction with its
arguments substituted) and may record `self.subst[old_id] = new_value` so later uses of an
old value read the new one. Nodes are never mutated.
"""

from __future__ import annotations

from ..ir import Block, Break, Continue, For, If, Instr, KernelIR, Stmt, Value, While


class Rewriter:
    def __init__(self) -> None:
        self.subst: dict[int, Value] = {}

    def v(self, value: Value) -> Value:
        return self.subst.get(value.id, value)

    def args(self, instr: Instr) -> Instr:
        if not any(a.id in self.subst for a in instr.args):
            return instr
        return Instr(instr.op, instr.result, tuple(self.v(a) for a in instr.args), instr.attrs,
                     instr.loc)

    def instr(self, instr: Instr) -> list[Stmt]:
        return [self.args(instr)]

    def block(self, block: Block) -> Block:
        out: list[Stmt] = []
        for stmt in block.stmts:
            out.extend(self.stmt(stmt))
        return Block(tuple(out))

    def stmt(self, stmt: Stmt) -> list[Stmt]:
        if isinstance(stmt, Instr):
            return self.instr(stmt)
        if isinstance(stmt, If):
            return [If(self.v(stmt.cond), self.block(stmt.then_body), self.block(stmt.else_body),
                       stmt.loc)]
        if isinstance(stmt, For):
            return [For(stmt.index, self.v(stmt.begin), self.v(stmt.end), self.block(stmt.body),
                        stmt.parallel, stmt.loc)]
        if isinstance(stmt, While):
            cond_body = self.block(stmt.cond_body)
            return [While(cond_body, self.v(stmt.cond), self.block(stmt.body), stmt.loc)]
        assert isinstance(stmt, (Break, Continue))
        return [stmt]

    def run(self, kernel: KernelIR) -> KernelIR:
        return kernel.replace_body(self.block(kernel.body))
