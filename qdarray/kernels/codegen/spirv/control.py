"""Structured control flow for the SPIR-V module writer (spirv/module.py): the selection
(if/else) and loop constructs `Function.if_` and `Function.loop` open, with their merge
blocks, continue targets and structured exits placed as SPIR-V's rules require; and the
`LoopGuard` that reports loops a driver ended early.

Mesa's llvmpipe (lavapipe) runs the invocations of a shader in SIMD batches and gives each
batch 65,535 passes through loop back edges in all (gallivm's loop limiter, shared by every
loop the batch runs, counted while any lane is active, also for loops no lane enters);
when they are spent, a loop ends at its back edge with lanes that were going on, silently.
With a guard set on the function (`Function.guard`), every loop marks whether the invocation
left it through one of its own exits (its test or a `break`): a word per invocation in
Workgroup memory is cleared before the loop, set on each exit, and read at the merge block,
where a clear word means the driver cut the loop, and the guard's `on_cut` records it. The
word is in memory rather than in a Function variable: the compiler knows that every path to
a merge block passes an exit, and folds such a variable to "left" (and a value carried out of
a loop reaches its merge block through copies made on the exits, which a cut lane skips); it
reads Workgroup memory as written. Code inside a loop runs on every pass of a SIMD batch
(masked), so the mark's store costs a scattered store per pass of a guarded loop.

Which loops need a guard: once a loop is cut the limiter is spent, so the next back edge
that any lane reaches ends its loop as well, with that lane going on. In a parallel stage
every lane reaches the back edge of the grid-stride loop after each of its items (a `break`
or `return` of the body goes on with the next item), so guarding that loop alone reports
every cut, at a store per item (spirv/render.py). A serial stage, and debug mode (where a failed
check returns from inside the loops), guard every loop.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .enums import Op


class Function(Protocol):
    """What the constructs write through: the function under construction
    (module.Function, which opens them)."""

    m: Any  # its Module
    guard: LoopGuard | None

    @property
    def open(self) -> bool: ...

    def label(self, label_id: int) -> None: ...

    def _terminate(self, opcode: int, operands: list[int]) -> None: ...

    def op(self, opcode: int, result_type: int, *operands: int) -> int: ...

    def op_void(self, opcode: int, *operands: int) -> None: ...

    def load(self, result_type: int, pointer: int, *memory: int) -> int: ...

    def store(self, pointer: int, value: int, *memory: int) -> None: ...

    def branch(self, target: int) -> None: ...

    def if_(self, cond: int) -> AbstractContextManager[Selection]: ...


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


class LoopGuard:
    """The per-invocation "left through an exit" word of a function's loops (module
    docstring): `slot` points to the invocation's uint32 in Workgroup memory, `on_cut` emits
    what a cut loop does (at the merge block, in the lanes that did not leave)."""

    def __init__(self, fn: Function, slot: int, on_cut: Callable[[], None]) -> None:
        self.fn, self.slot, self.on_cut = fn, slot, on_cut
        m = fn.m
        self.u32 = m.t_int(32, False)
        self.zero, self.one = m.const(self.u32, 0), m.const(self.u32, 1)

    def enter(self) -> None:
        self.fn.store(self.slot, self.zero)

    def leave(self) -> None:
        self.fn.store(self.slot, self.one)

    def check(self) -> None:
        """At a loop's merge: report a cut, then clear the word again (the code after the
        loop is still inside the enclosing loop, which it has not left)."""
        f = self.fn
        left = f.load(self.u32, self.slot)
        with f.if_(f.op(Op.IEqual, f.m.t_bool(), left, self.zero)):
            self.on_cut()
        f.store(self.slot, self.zero)


class Loop:
    """A loop construct (see `Function.loop`): a header with OpLoopMerge, the body, a continue
    block that branches back to the header, and a merge block after the loop; guarded when
    the function has a guard as it opens (`Function.guard`)."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        m = fn.m
        self.header, self.body = m.new_id(), m.new_id()
        self.cont, self.merge = m.new_id(), m.new_id()
        self.guard = fn.guard
        if self.guard is not None:
            self.guard.enter()
        fn.branch(self.header)
        fn.label(self.header)
        fn.op_void(Op.LoopMerge, self.merge, self.cont, 0)
        fn.branch(self.body)
        fn.label(self.body)
        self._continuing = False

    def exit_unless(self, cond: int) -> None:
        """Leave the loop when `cond` is false (a while-loop's test); the body goes on."""
        fn = self.fn
        go_on = fn.m.new_id()
        if self.guard is None:
            fn._terminate(Op.BranchConditional, [cond, go_on, self.merge])
        else:  # through a block that marks the exit
            leave = fn.m.new_id()
            fn.op_void(Op.SelectionMerge, go_on, 0)
            fn._terminate(Op.BranchConditional, [cond, go_on, leave])
            fn.label(leave)
            self.guard.leave()
            fn.branch(self.merge)
        fn.label(go_on)

    def break_(self) -> None:
        if self.guard is not None:
            self.guard.leave()
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
        if self.guard is not None:
            self.guard.check()
