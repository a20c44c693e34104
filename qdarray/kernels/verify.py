"""The IR verifier: one legality rule per op, plus the structural rules of regions.

- every Instr: its arity, and its `OpDef.type_rule` gives exactly its result type;
- every Value is defined once, before its uses, in an enclosing region (scoping in `ir.py`);
- If / While conditions are bool; For bounds and index share one integer dtype;
- Break / Continue sit inside a loop; no Break directly in a parallel loop's body;
- parallel For loops appear only among the kernel's top-level statements, or as the only
  statement of a parallel For's body (a nest whose threads are index tuples).

Debug mode runs it after every pass; tests run it on everything the frontend builds.
"""

from __future__ import annotations

from typing import Any

from . import types as T
from .ir import Block, Break, Continue, For, If, Instr, KernelIR, Op, Value, While, format_kernel
from .ops import OPS


class _Verifier:
    def __init__(self, kernel: KernelIR) -> None:
        self.kernel = kernel
        self.defined: set[int] = set()
        self.scopes: list[set[int]] = [set()]

    def fail(self, msg: str, node: Any) -> None:
        loc = getattr(node, "loc", None)
        where = f" (line {loc.line})" if loc is not None else ""
        raise AssertionError(f"invalid IR{where}: {msg}\n{format_kernel(self.kernel)}")

    def define(self, v: Value, node: Any) -> None:
        if v.id in self.defined:
            self.fail(f"{v} is defined twice", node)
        self.defined.add(v.id)
        self.scopes[-1].add(v.id)

    def use(self, v: Value, node: Any) -> None:
        if not any(v.id in s for s in self.scopes):
            self.fail(f"{v} is used outside the region that defines it (or before)", node)

    def run(self) -> None:
        for p in self.kernel.params:
            self.define(p.value, p)
        self.block(self.kernel.body, loops=[], top=True)

    def block(self, block: Block, loops: list[bool], top: bool) -> None:
        self.scopes.append(set())
        for stmt in block.stmts:
            self.stmt(stmt, loops, top)
        self.scopes.pop()

    def stmt(self, stmt: Any, loops: list[bool], top: bool) -> None:
        if isinstance(stmt, Instr):
            self.instr(stmt)
        elif isinstance(stmt, If):
            self.use(stmt.cond, stmt)
            if not T.is_bool(stmt.cond.type):
                self.fail("if condition must be bool", stmt)
            self.block(stmt.then_body, loops, False)
            self.block(stmt.else_body, loops, False)
        elif isinstance(stmt, For):
            self.use(stmt.begin, stmt)
            self.use(stmt.end, stmt)
            t = stmt.index.type
            if not T.is_int(t) or stmt.begin.type is not t or stmt.end.type is not t:
                self.fail("for bounds and index must share one integer dtype", stmt)
            if stmt.parallel and not top:
                self.fail("a parallel loop must be a top-level statement of the kernel", stmt)
            self.scopes.append(set())
            self.define(stmt.index, stmt)
            inner = stmt.body.stmts
            nest = (stmt.parallel and len(inner) == 1 and isinstance(inner[0], For)
                    and inner[0].parallel)
            self.block(stmt.body, loops + [stmt.parallel], nest)
            self.scopes.pop()
        elif isinstance(stmt, While):
            self.scopes.append(set())
            for s in stmt.cond_body.stmts:
                self.stmt(s, loops, False)
            self.use(stmt.cond, stmt)
            if not T.is_bool(stmt.cond.type):
                self.fail("while condition must be bool", stmt)
            self.scopes.pop()
            self.block(stmt.body, loops + [False], False)
        elif isinstance(stmt, (Break, Continue)):
            if not loops:
                self.fail(f"{stmt.op.name.lower()} outside a loop", stmt)
            if isinstance(stmt, Break) and loops[-1]:
                self.fail("break directly in a parallel loop", stmt)
        else:
            self.fail(f"not a statement: {stmt!r}", stmt)

    def instr(self, instr: Instr) -> None:
        if instr.op not in OPS or instr.op in (Op.IF, Op.FOR, Op.WHILE, Op.BREAK, Op.CONTINUE):
            self.fail(f"{instr.op} is not an instruction op", instr)
        d = OPS[instr.op]
        for a in instr.args:
            self.use(a, instr)
        if d.arity is not None and len(instr.args) != d.arity:
            self.fail(f"{instr.op.name} takes {d.arity} arguments; got {len(instr.args)}", instr)
        try:
            rt = d.type_rule(tuple(a.type for a in instr.args), instr.attrs)
        except (TypeError, ValueError, IndexError) as exc:
            self.fail(f"{instr.op.name}: {exc}", instr)
        got = None if instr.result is None else instr.result.type
        if rt != got:
            self.fail(f"{instr.op.name} gives {T.type_str(rt)} but its result is typed "
                      f"{T.type_str(got)}", instr)
        if instr.result is not None:
            self.define(instr.result, instr)


def verify(kernel: KernelIR) -> KernelIR:
    """Check `kernel` against every rule; raise AssertionError naming the first violation."""
    _Verifier(kernel).run()
    return kernel
