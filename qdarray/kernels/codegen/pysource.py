"""A structured-source emitter shared by the code generators with Python syntax (numba CPU,
numba CUDA): names for values and locals, indentation, and the walk over regions.

A generator subclasses `PySourceEmitter` and supplies `TABLE: dict[Op, spelling]` with one
entry per op. A spelling is a format string over the argument names (`"{0} + {1}"`), or a
function `(emitter, node) -> str | None` for anything else (statements included); an
expression string is assigned to the result, if the instruction has one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from ..ir import Block, Instr, Op, Stmt, Value, Var


class PySourceEmitter:
    """Turns IR regions into indented Python-syntax lines."""

    TABLE: ClassVar[dict[Op, Any]] = {}
    INDENT = "    "

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.loop_depth = 0

    # -- names ----------------------------------------------------------------------------

    @staticmethod
    def val(v: Value) -> str:
        return f"v{v.id}"

    @staticmethod
    def var(var: Var) -> str:
        name = re.sub(r"\W", "_", var.name)
        return f"l{var.id}_{name}"

    # -- output ---------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append(self.INDENT * self.depth + text)

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextmanager
    def loop(self) -> Iterator[None]:
        self.loop_depth += 1
        try:
            with self.indent():
                yield
        finally:
            self.loop_depth -= 1

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    # -- walking --------------------------------------------------------------------------

    def block(self, block: Block) -> None:
        start = len(self.lines)
        for stmt in block.stmts:
            self.stmt(stmt)
        if len(self.lines) == start:
            self.line("pass")

    def stmt(self, stmt: Stmt) -> None:
        spelling = self.TABLE[stmt.op]
        if isinstance(stmt, Instr):
            self.instr(stmt, spelling)
        else:
            spelling(self, stmt)

    def instr(self, instr: Instr, spelling: Any) -> None:
        if callable(spelling):
            text = spelling(self, instr)
        else:
            text = spelling.format(*(self.val(a) for a in instr.args), *instr.attrs)
        if instr.result is not None:
            self.line(f"{self.val(instr.result)} = {self.result(instr, text)}")
        elif text:
            self.line(text)

    def result(self, instr: Instr, text: str) -> str:
        """The expression assigned to an instruction's result (generators add casts here)."""
        return text
