"""Structured control flow for the SPIR-V module writer (spirv_module.py): the selection
(if/else) and loop constructs `Function.if_` and `Function.loop` open, with their merge
blocks, continue targets and structured exits placed as SPIR-V's rules require."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spirv_enums import Op

if TYPE_CHECKING:
    from .spirv_module import Function


class Selection:
    """An if/else construct (see `Function.if_`)."""

    def __init__(self, fn: Function, cond: int) -> None:
        self.fn = fn
        m = fn.m
        self.then_label, self.else_label, self.merge = m.new_id(), m.new_id(), m.new_id()
        fn.op_void(Op.SelectionMerge, self.merge, 0)
        fn._terminate(Op.BranchConditional, [cond, self.then_label, self.else_label])
        fn.label(self.then_label)
        self._in_else = False

    def otherwise(self) -> None:
        """End the then-branch; what follows is the else-branch."""
        if self.fn.open:
            self.fn.branch(self.merge)
        self.fn.label(self.else_label)
        self._in_else = True

    def close(self) -> None:
        if not self._in_else:
            self.otherwise()
        if self.fn.open:
            self.fn.branch(self.merge)
        self.fn.label(self.merge)


class Loop:
    """A loop construct (see `Function.loop`): a header with OpLoopMerge, the body, a continue
    block that branches back to the header, and a merge block after the loop."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        m = fn.m
        self.header, self.body = m.new_id(), m.new_id()
        self.cont, self.merge = m.new_id(), m.new_id()
        fn.branch(self.header)
        fn.label(self.header)
        fn.op_void(Op.LoopMerge, self.merge, self.cont, 0)
        fn.branch(self.body)
        fn.label(self.body)
        self._continuing = False

    def exit_unless(self, cond: int) -> None:
        """Leave the loop when `cond` is false (a while-loop's test); the body goes on."""
        go_on = self.fn.m.new_id()
        self.fn._terminate(Op.BranchConditional, [cond, go_on, self.merge])
        self.fn.label(go_on)

    def break_(self) -> None:
        self.fn.branch(self.merge)

    def continue_(self) -> None:
        self.fn.branch(self.cont)

    def continuing(self) -> None:
        """End the body; what follows is the continue block (runs before the next test)."""
        if self.fn.open:
            self.fn.branch(self.cont)
        self.fn.label(self.cont)
        self._continuing = True

    def close(self) -> None:
        if not self._continuing:
            self.continuing()
        self.fn.branch(self.header)
        self.fn.label(self.merge)
