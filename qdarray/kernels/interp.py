"""The IR interpreter: plain Python that runs the IR directly.

It is the executable definition of every op (each `OpDef.impl`, plus the structural ops
here) and the oracle for passes and code generators: a pass must not change what the
interpreter computes, and generated code must compute the same. Threads of a parallel loop
run one after the other, in index order; that is one of the orders a parallel launch may
take, so a race-free kernel gives the same result.

Arguments are NumPy arrays for `ArrayType` parameters, `ViewValue(base, offset, size)` for
`ViewType` parameters and NumPy scalars of the parameter's dtype for scalars.

`INTERP` is the interpreter as a kernel target (`target.py`): `kernel.interpret(...)` and
`kernel.grad.interpret(...)` launch through it whatever the arrays' device, with the launch's
own buffers in host memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import debug
from .ir import Block, Break, Continue, For, If, Instr, KernelIR, Op, While, format_kernel
from .ops import OPS
from .ops.memory import ViewValue
from .target import DeviceKernels, Launcher, ReductionLayout

_BREAK = 1
_CONTINUE = 2

# Ops the interpreter executes itself (they need its state); every other op runs its impl.
STRUCTURAL = frozenset({Op.LOAD_VAR, Op.STORE_VAR, Op.CHECK_INDEX, Op.IF, Op.FOR, Op.WHILE,
                        Op.BREAK, Op.CONTINUE})


class _ThreadStopped(Exception):
    """A failed index check inside a thread: ends that thread only."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def covered_ops() -> set[Op]:
    """The ops the interpreter can execute (for the coverage test)."""
    return set(STRUCTURAL) | {op for op, d in OPS.items() if d.impl is not None}


class Interpreter:
    """Runs one kernel's IR on packed arguments."""

    def __init__(self, kernel: KernelIR) -> None:
        self.kernel = kernel
        self.values: dict[int, Any] = {}
        self.vars: dict[int, Any] = {}
        self.thread: tuple[int, ...] = ()  # indices of the enclosing parallel loops
        self.failure: Exception | None = None
        self.args: Sequence[Any] = ()

    def run(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.kernel.params):
            raise TypeError(f"kernel {self.kernel.name} takes {len(self.kernel.params)} "
                            f"packed arguments; got {len(args)}")
        self.args = args
        for param, value in zip(self.kernel.params, args, strict=True):
            self.values[param.value.id] = value
        with np.errstate(all="ignore"):
            self.block(self.kernel.body)

    def block(self, block: Block) -> int:
        for stmt in block.stmts:
            if isinstance(stmt, Instr):
                self.instr(stmt)
            elif isinstance(stmt, If):
                taken = stmt.then_body if self.values[stmt.cond.id] else stmt.else_body
                status = self.block(taken)
                if status:
                    return status
            elif isinstance(stmt, For):
                self.for_loop(stmt)
            elif isinstance(stmt, While):
                self.while_loop(stmt)
            elif isinstance(stmt, Break):
                return _BREAK
            elif isinstance(stmt, Continue):
                return _CONTINUE
            else:
                raise TypeError(f"not a statement: {stmt!r}")
        return 0

    def for_loop(self, stmt: For) -> None:
        begin = int(self.values[stmt.begin.id])
        end = int(self.values[stmt.end.id])
        make = stmt.index.type._np.type  # type: ignore[union-attr]
        outer = self.thread
        # the innermost loop of a parallel nest runs the threads
        threads = stmt.parallel and not (
            len(stmt.body.stmts) == 1 and isinstance(stmt.body.stmts[0], For)
            and stmt.body.stmts[0].parallel)
        for i in range(begin, end):
            self.values[stmt.index.id] = make(i)
            if stmt.parallel:
                self.thread = outer + (i,)
            if threads:
                try:
                    self.block(stmt.body)
                except _ThreadStopped as stop:
                    # a failed check ends its thread; the first failure is reported after
                    # the loop, as on every backend
                    self.failure = self.failure or stop.error
                continue
            if self.block(stmt.body) == _BREAK:
                break
        self.thread = outer
        if stmt.parallel and not outer and self.failure is not None:
            raise self.failure

    def while_loop(self, stmt: While) -> None:
        while True:
            self.block(stmt.cond_body)
            if not self.values[stmt.cond.id]:
                return
            if self.block(stmt.body) == _BREAK:
                return

    def instr(self, instr: Instr) -> None:
        op = instr.op
        if op is Op.LOAD_VAR:
            var = instr.attrs[0]
            self.values[instr.result.id] = self.vars[var.id]  # type: ignore[union-attr]
            return
        if op is Op.STORE_VAR:
            self.vars[instr.attrs[0].id] = self.values[instr.args[0].id]
            return
        if op is Op.CHECK_INDEX:
            self.check_index(instr)
            return
        args = [self.values[a.id] for a in instr.args]
        rt = instr.result.type if instr.result is not None else None
        out = OPS[op].impl(rt, instr.attrs, *args)  # type: ignore[misc]
        if instr.result is not None:
            self.values[instr.result.id] = out

    def check_index(self, instr: Instr) -> None:
        vals = [int(self.values[a.id]) for a in instr.args]
        indices, extents = vals[0::2], vals[1::2]
        if all(0 <= i < n for i, n in zip(indices, extents, strict=True)):
            return
        _, name, kind = debug.site_info(instr.attrs)
        offset = self.view_offset(name) if kind in ("view", "subview") else None
        error = debug.check_error(self.kernel.name, instr.attrs, vals, self.thread,
                                  instr.loc.frames(), offset)
        if self.thread:
            raise _ThreadStopped(error)
        raise error

    def view_offset(self, name: str) -> int | None:
        for param, value in zip(self.kernel.params, self.args, strict=True):
            if param.name == name and type(value) is ViewValue:
                return value.offset
            if param.name == f"{name}@offset":  # views lowered to (base, offset, size)
                return int(value)
        return None


def typed_arguments(kernel: KernelIR, native: Sequence[Any]) -> list[Any]:
    """Packed launch values as the interpreter takes them: scalars as NumPy scalars of the
    parameter dtype; a view as one ViewValue, or as (base, offset, size) when the kernel's
    views were lowered."""
    params = kernel.params
    out: list[Any] = []
    for v in native:
        k = len(out)
        if (type(v) is ViewValue and k + 1 < len(params)
                and params[k + 1].name == f"{params[k].name}@offset"):
            out += [v.base, np.int64(v.offset), np.int64(v.size)]
        elif type(v) in (np.ndarray, ViewValue):
            out.append(v)
        else:
            out.append(params[k].value.type._np.type(v))  # type: ignore[union-attr]
    return out


def run(kernel: KernelIR, args: Sequence[Any]) -> None:
    """Execute `kernel` on packed arguments (see the module docstring)."""
    Interpreter(kernel).run(args)


class InterpLauncher(Launcher):
    """Runs the IR through the interpreter."""

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        try:
            run(self.kernel, typed_arguments(self.kernel, native))
        finally:
            self.bump(args)


class InterpTarget(DeviceKernels):
    """The interpreter as a kernel target (module docstring)."""

    name = "interp"
    lowers_views = False
    reduction = ReductionLayout(serial_below=32768)

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        return format_kernel(kernel)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> InterpLauncher:
        return InterpLauncher(kernel, packers, bumps)


    def buffer_device(self, device: Any) -> None:
        return None


INTERP = InterpTarget()
