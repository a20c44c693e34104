"""IR emission: fresh ids, nested regions, typed instructions; the one IR builder.

The frontend, the compile passes, the reverse-mode passes (`qdarray.ad`), and the internal
kernels (the namespace's in `kernels/library/`, the max-reducer's, over a `KernelBuilder`) build
IR through an `Emitter`, which hands out Value and Var ids above those of the kernel it
started from (`Emitter.after`), so the ids of a forward kernel stay valid. Result types come
from each op's own type rule (`emit`), or from the caller that derived them (`emit_typed`: the
frontend).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import _dtypes
from .ir import (
    UNKNOWN_LOC,
    Block,
    For,
    If,
    Instr,
    KernelIR,
    Op,
    Param,
    SourceLoc,
    Stmt,
    Value,
    Var,
    instrs,
)
from .ir import max_ids as _max_ids
from .ops import OPS


def max_ids(kernel: KernelIR) -> tuple[int, int]:
    """(largest Value id, largest Var id) of `kernel`, counting every place ids occur."""
    vmax, varmax = _max_ids(kernel)
    for instr in instrs(kernel.body):
        for a in instr.attrs:
            if isinstance(a, Var):
                varmax = max(varmax, a.id)
    return vmax, varmax


class Emitter:
    """Builds statement lists; `region()` opens a nested one."""

    def __init__(self, next_value: int, next_var: int) -> None:
        self.next_value = next_value
        self.next_var = next_var
        self.blocks: list[list[Stmt]] = [[]]
        self.loc: SourceLoc = UNKNOWN_LOC

    @classmethod
    def after(cls, kernel: KernelIR) -> Emitter:
        vmax, varmax = max_ids(kernel)
        return cls(vmax + 1, varmax + 1)

    # -- ids --------------------------------------------------------------------------------

    def value(self, t: Any) -> Value:
        v = Value(self.next_value, t)
        self.next_value += 1
        return v

    def var(self, name: str, dtype: Any) -> Var:
        var = Var(self.next_var, name, dtype)
        self.next_var += 1
        return var

    # -- regions ----------------------------------------------------------------------------

    @property
    def out(self) -> list[Stmt]:
        return self.blocks[-1]

    @contextmanager
    def region(self) -> Iterator[list[Stmt]]:
        stmts: list[Stmt] = []
        self.blocks.append(stmts)
        try:
            yield stmts
        finally:
            self.blocks.pop()

    @contextmanager
    def reopen(self, stmts: list[Stmt]) -> Iterator[None]:
        """Append to a region built earlier (`stmts`) again."""
        self.blocks.append(stmts)
        try:
            yield
        finally:
            self.blocks.pop()

    @contextmanager
    def at(self, loc: SourceLoc) -> Iterator[None]:
        saved = self.loc
        self.loc = loc
        try:
            yield
        finally:
            self.loc = saved

    def stmt(self, stmt: Stmt) -> None:
        self.out.append(stmt)

    # -- instructions -----------------------------------------------------------------------

    def emit(self, op: Op, *args: Value, attrs: tuple[Any, ...] = ()) -> Any:
        """Append `op(args)`; returns its result Value (None for ops without one)."""
        rt = OPS[op].type_rule(tuple(a.type for a in args), attrs)
        result = None if rt is None else self.value(rt)
        self.out.append(Instr(op, result, tuple(args), attrs, self.loc))
        return result

    def emit_typed(self, rtype: Any, op: Op, args: tuple[Value, ...], attrs: tuple[Any, ...],
                   loc: SourceLoc) -> Value | None:
        """Append `op(args)` whose result type `rtype` (None: no result) the caller derived
        itself (the frontend, which checks operands with its own messages first)."""
        result = None if rtype is None else self.value(rtype)
        self.out.append(Instr(op, result, args, attrs, loc))
        return result

    def emit_into(self, result: Value, op: Op, *args: Value, attrs: tuple[Any, ...] = ()
                  ) -> None:
        """Append `op(args)` defining the pre-made Value `result` (ids handed out earlier)."""
        rt = OPS[op].type_rule(tuple(a.type for a in args), attrs)
        assert rt == result.type, (op, rt, result.type)
        self.out.append(Instr(op, result, tuple(args), attrs, self.loc))

    def const(self, value: Any, dtype: Any) -> Value:
        if dtype.kind == "f":
            value = float(value)
        elif dtype.kind == "b":
            value = bool(value)
        else:
            value = int(value)
        return self.emit(Op.CONST, attrs=(value, dtype))  # type: ignore[no-any-return]

    def cast(self, v: Value, dtype: Any) -> Value:
        if v.type is dtype:
            return v
        return self.emit(Op.CAST, v, attrs=(dtype,))  # type: ignore[no-any-return]

    def load_var(self, var: Var) -> Value:
        return self.emit(Op.LOAD_VAR, attrs=(var,))  # type: ignore[no-any-return]

    def store_var(self, var: Var, v: Value) -> None:
        self.emit(Op.STORE_VAR, v, attrs=(var,))

    def i64(self, value: int) -> Value:
        return self.const(value, _dtypes.int64)

    def unravel(self, flat: Value, extents: list[Value]) -> list[Value]:
        """The index along each axis (from 0; the last axis fastest) of position `flat` of a
        nest of `extents`, in their dtype: the one flat-index decode of parallel nests,
        reverse kernels and reducers. Each extent after the first must be positive."""
        out = []
        rest = flat
        for n in reversed(extents[1:]):
            out.append(self.emit(Op.MOD, rest, n))
            rest = self.emit(Op.FLOORDIV, rest, n)
        out.append(rest)
        return out[::-1]


def block(stmts: list[Stmt]) -> Block:
    return Block(tuple(stmts))


class KernelBuilder:
    """An internal kernel built in IR (the namespace's kernels in `kernels/library/`, reverse
    mode's reducers and packing kernels): its parameters in order, and helpers over its
    `Emitter` for int64 constants, instructions, loops, parallel nests, guarded blocks and
    locals; `ir(name)` gives the KernelIR of what was emitted at the top level."""

    def __init__(self) -> None:
        self.em = Emitter(0, 0)
        self.params: list[Param] = []
        self.i64 = _dtypes.int64

    def param(self, name: str, t: Any) -> Value:
        v = self.em.value(t)
        self.params.append(Param(name, v))
        return v

    def c(self, value: int) -> Value:
        """An int64 constant."""
        return self.em.i64(value)

    def op(self, op: Op, *args: Value) -> Value:
        return self.em.emit(op, *args)  # type: ignore[no-any-return]

    def shape(self, mem: Value, axis: int) -> Value:
        return self.em.emit(Op.SHAPE, mem, attrs=(axis,))  # type: ignore[no-any-return]

    def local(self, name: str, t: Any, init: Value) -> Var:
        var = self.em.var(name, t)
        self.em.store_var(var, init)
        return var

    def loop(self, begin: Value, end: Value, body: Callable[[Value], None],
             parallel: bool = False) -> None:
        """`for i in range(begin, end): body(i)` (int64 i)."""
        em = self.em
        i = em.value(self.i64)
        with em.region() as inner:
            body(i)
        em.stmt(For(i, begin, end, block(inner), parallel))

    def nest(self, ends: list[Value], body: Callable[[list[Value]], None]) -> None:
        """A parallel nest over [0, ends[0]) x [0, ends[1]) x ..., the last axis innermost;
        `body(indices)` emits the body."""
        em = self.em
        idx = [em.value(self.i64) for _ in ends]
        zero = em.i64(0)
        with em.region() as inner:
            body(idx)
        stmts = block(inner)
        for d in range(len(ends) - 1, -1, -1):
            stmts = block([For(idx[d], zero, ends[d], stmts, True)])
        for s in stmts.stmts:
            em.stmt(s)

    def when(self, cond: Value, then: Callable[[], None]) -> None:
        """`if cond: then()`."""
        em = self.em
        with em.region() as inner:
            then()
        em.stmt(If(cond, block(inner), block([])))

    def ir(self, name: str) -> KernelIR:
        return KernelIR(name, tuple(self.params), block(self.em.blocks[0]))
