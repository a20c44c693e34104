"""The walker of the code generators with C syntax (OpenCL C; any C-like kernel language).

A generator subclasses `CSourceEmitter`, supplies `TABLE: dict[Op, spelling]` with one entry
per instruction op that reaches it (a format string over the argument names, or a function
`(emitter, instr) -> str`, empty for a statement it wrote itself) and `ctype(dtype)`, the C
type of a value in registers. The walker writes the structured statements (if, for, while,
break, continue) and declares each result in its IR dtype with a cast, since C's own
promotion (char + char -> int) differs from the IR's.

Values are named `v<id>`, locals `l<id>`. A `continue` at the top of a thread's body ends
the thread (`return`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from ...ir import Block, Break, Continue, For, If, Instr, Op, Stmt, Value, Var, While
from ...types import scalar_type


class CSourceEmitter:
    """Turns IR regions into C statements (see the module docstring)."""

    TABLE: ClassVar[dict[Op, Any]] = {}
    INDENT = "  "

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.loop_depth = 0

    def ctype(self, dtype: Any) -> str:
        raise NotImplementedError

    # -- names and output -------------------------------------------------------------------

    @staticmethod
    def val(v: Value) -> str:
        return f"v{v.id}"

    @staticmethod
    def var(v: Var) -> str:
        return f"l{v.id}"

    def line(self, text: str) -> None:
        self.lines.append(self.INDENT * self.depth + text)

    def nested(self, block: Block) -> None:
        self.depth += 1
        self.block(block)
        self.depth -= 1

    # -- statements -------------------------------------------------------------------------

    def block(self, block: Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Instr):
            self.instr(s)
        elif isinstance(s, If):
            self.line(f"if ({self.val(s.cond)}) {{")
            self.nested(s.then_body)
            if s.else_body.stmts:
                self.line("} else {")
                self.nested(s.else_body)
            self.line("}")
        elif isinstance(s, For):
            i = f"_i{s.index.id}"
            t = self.ctype(s.index.type)
            self.line(f"for (long {i} = (long){self.val(s.begin)}; {i} < (long)"
                      f"{self.val(s.end)}; ++{i}) {{")
            with self.loop():
                self.line(f"{t} {self.val(s.index)} = ({t}){i};")
                self.block(s.body)
            self.line("}")
        elif isinstance(s, While):
            self.line("while (1) {")
            with self.loop():
                self.block(s.cond_body)
                self.line(f"if (!{self.val(s.cond)}) break;")
                self.block(s.body)
            self.line("}")
        elif isinstance(s, Continue):
            self.line("continue;" if self.loop_depth else "return;")
        else:
            assert isinstance(s, Break)
            self.line("break;")

    @contextmanager
    def loop(self) -> Iterator[None]:
        self.loop_depth += 1
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.loop_depth -= 1

    def spell(self, i: Instr) -> str:
        """The C expression (or statement) of one instruction."""
        s = self.TABLE[i.op]
        if callable(s):
            return s(self, i)  # type: ignore[no-any-return]
        return s.format(*(self.val(a) for a in i.args))  # type: ignore[no-any-return]

    def instr(self, i: Instr) -> None:
        text = self.spell(i)
        if i.result is None:
            if text:
                self.line(text)
            return
        t = scalar_type(i.result.type)
        if t.kind == "b":
            self.line(f"bool {self.val(i.result)} = ({text});")
        else:
            c = self.ctype(t)
            self.line(f"{c} {self.val(i.result)} = ({c})({text});")
