"""Adstack capacities: symbolic bounds, built when the reverse kernel compiles.

Each stack's capacity is the sum over its push sites of the product of the trip counts of
the loops around the site (inside its thread). A trip count is `max(end - begin, 0)` of the
loop's bounds written as an expression over constants, scalar arguments, array shapes,
integer reads of arrays at constant or loop-variable indices and `+ - * // max min`. A bound
that depends on an enclosing loop's variable is maximised over that loop's range with
`MaxOverRange(var, begin, end, body)` (nested dependent loops: the product of their maxima),
and the whole capacity over the parallel loop's range.

`Deriver` builds the expressions from the forward kernel's IR; a stack whose bounds it
cannot express (while loops, `a[b[i]]`, bounds read from locals) gets None and is sized by
the counting pass. The launch-time side (the max-reducer, the counting pass, the sizing
cache) lives in `qdarray.ad.sizing.at_launch`. There is no default size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ... import _dtypes
from ...kernels.ir import For, Op, Value, While
from ...kernels.ops import OPS
from ...kernels.types import is_int
from ..transform.structure import Node, Structure

# Slots per stack in the counting kernel's output (`reverse.counting_kernel` writes them; the
# sizer and the thread capacities read them).
COUNT_SLOTS = 1024


class Expr:
    """A symbolic integer."""


@dataclass(frozen=True)
class Const(Expr):
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Arg(Expr):
    """A scalar integer argument."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Shape(Expr):
    name: str
    axis: int

    def __str__(self) -> str:
        return f"{self.name}.shape[{self.axis}]"


@dataclass(frozen=True)
class Read(Expr):
    """An element of an integer array argument."""

    name: str
    index: tuple[Expr, ...]

    def __str__(self) -> str:
        return f"{self.name}[{', '.join(map(str, self.index))}]"


@dataclass(frozen=True)
class Bin(Expr):
    op: str  # + - * // max min
    a: Expr
    b: Expr

    def __str__(self) -> str:
        if self.op in ("max", "min"):
            return f"{self.op}({self.a}, {self.b})"
        return f"({self.a} {self.op} {self.b})"


@dataclass(frozen=True)
class LoopVar(Expr):
    """The variable of a loop (the id of its index Value); `name` for printing."""

    id: int
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class MaxOverRange(Expr):
    var: LoopVar
    begin: Expr
    end: Expr
    body: Expr

    def __str__(self) -> str:
        return f"MaxOverRange({self.var}, {self.begin}, {self.end}, {self.body})"


@dataclass(frozen=True)
class Slot(Expr):
    """The value of an inner `MaxOverRange` computed in an earlier round (a max-reducer
    kernel takes it as its parameter `@slot<index>`)."""

    index: int

    def __str__(self) -> str:
        return f"@slot{self.index}"


# A size expression's operators and the op of each: its semantics on int64 (`OpDef.impl`; an
# integer x // 0 is 0) are the kernels' own, when folding here, evaluating on the host
# (sizing/at_launch.py) and in the max-reducer's kernels (sizing/max_reducer.py).
BIN_OPS: dict[str, Op] = {"+": Op.ADD, "-": Op.SUB, "*": Op.MUL, "//": Op.FLOORDIV,
                          "max": Op.MAX, "min": Op.MIN}
_SYMBOLS = {op: symbol for symbol, op in BIN_OPS.items()}


def apply(op: str, a: int, b: int) -> int:
    """`a op b` for an operator of `BIN_OPS`, by its op's semantics on int64."""
    impl = OPS[BIN_OPS[op]].impl
    assert impl is not None
    return int(impl(_dtypes.int64, (), np.int64(a), np.int64(b)))


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """`Bin(op, a, b)`, folding constants and the identities of + - * (x + 0, 1 * x, ...)."""
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if ca is not None and cb is not None:
        return Const(apply(op, ca, cb))
    if op == "+" and ca == 0 or op == "*" and ca == 1:
        return b
    if op in ("+", "-") and cb == 0 or op in ("*", "//") and cb == 1:
        return a
    if op == "*" and (ca == 0 or cb == 0):
        return Const(0)
    return Bin(op, a, b)


def free_vars(e: Expr | None) -> set[int]:
    if isinstance(e, LoopVar):
        return {e.id}
    if isinstance(e, Read):
        return set().union(*(free_vars(i) for i in e.index)) if e.index else set()
    if isinstance(e, Bin):
        return free_vars(e.a) | free_vars(e.b)
    if isinstance(e, MaxOverRange):
        return (free_vars(e.body) - {e.var.id}) | free_vars(e.begin) | free_vars(e.end)
    return set()


def is_closed(e: Expr) -> bool:
    """No free loop variable: the expression has one value per launch."""
    return not free_vars(e)


def subexprs(e: Expr) -> Iterator[Expr]:
    """`e` and every expression inside it (pre-order)."""
    yield e
    if isinstance(e, Read):
        for i in e.index:
            yield from subexprs(i)
    elif isinstance(e, Bin):
        yield from subexprs(e.a)
        yield from subexprs(e.b)
    elif isinstance(e, MaxOverRange):
        for part in (e.begin, e.end, e.body):
            yield from subexprs(part)


def dependencies(e: Expr) -> tuple[set[str], set[str], set[str]]:
    """(arrays whose elements `e` reads, arrays whose shapes it uses, scalar arguments)."""
    reads: set[str] = set()
    shapes: set[str] = set()
    scalars: set[str] = set()
    for x in subexprs(e):
        if isinstance(x, Read):
            reads.add(x.name)
        elif isinstance(x, Shape):
            shapes.add(x.name)
        elif isinstance(x, Arg):
            scalars.add(x.name)
    return reads, shapes, scalars


def _has_read(e: Expr) -> bool:
    if isinstance(e, Read):
        return True
    if isinstance(e, Bin):
        return _has_read(e.a) or _has_read(e.b)
    return False


# -- derivation (compile time) ----------------------------------------------------------------


# The argument of a checkpointed reverse kernel: its loops keep every k-th state.
STRIDE = Arg("@checkpoint")


class Deriver:
    """Expressions for the Values of one forward kernel; `limited`: the ids of the loops a
    checkpointed reverse runs in blocks of `STRIDE` iterations (ad/transform/checkpoint.py)."""

    def __init__(self, st: Structure, limited: frozenset[int] | set[int] = frozenset()
                 ) -> None:
        self.st = st
        self.limited = limited
        self.names = {p.value.id: p.name for p in st.kernel.params}
        self.memo: dict[int, Expr | None] = {}

    def value(self, v: Value) -> Expr | None:
        if v.id not in self.memo:
            self.memo[v.id] = self._value(v)
        return self.memo[v.id]

    def _value(self, v: Value) -> Expr | None:
        if v.id in self.names:
            return Arg(self.names[v.id]) if is_int(v.type) else None
        d = self.st.defs.get(v.id)
        if isinstance(d, Node) and any(isinstance(f, For) and f.index.id == v.id
                                       for f in d.nest or (d.stmt,)):
            return LoopVar(v.id, f"i{v.id}")  # a loop's index (any axis of a parallel nest)
        i = self.st.instr_of.get(v.id)
        if i is None or not is_int(v.type):
            return None
        if i.op is Op.CONST:
            return Const(int(i.attrs[0]))
        if i.op is Op.SHAPE and i.args[0].id in self.names:
            return Shape(self.names[i.args[0].id], int(i.attrs[0]))
        if i.op is Op.CAST:
            return self.value(i.args[0]) if is_int(i.args[0].type) else None
        if i.op is Op.LOAD and i.args[0].id in self.names:
            index = [self.value(a) for a in i.args[1:]]
            if any(e is None or _has_read(e) for e in index):
                return None
            return Read(self.names[i.args[0].id], tuple(index))  # type: ignore[arg-type]
        op = _SYMBOLS.get(i.op)
        if op is not None:
            a, b = self.value(i.args[0]), self.value(i.args[1])
            return None if a is None or b is None else binop(op, a, b)
        return None

    def trip(self, node: Node) -> Expr | None:
        """The loop's trip count (a task's: its number of threads)."""
        total: Expr | None = None
        for s in node.nest or (node.stmt,):
            if isinstance(s, While):
                return None
            b, e = self.value(s.begin), self.value(s.end)
            if b is None or e is None:
                return None
            t = binop("max", binop("-", e, b), Const(0))
            total = t if total is None else binop("*", total, t)
        return total

    def over(self, loop: Node, body: Expr | None) -> Expr | None:
        """`body` maximised over `loop`'s range(s), where it depends on the loop variable."""
        for s in reversed(loop.nest or (loop.stmt,)):
            if body is None or not isinstance(s, For) or s.index.id not in free_vars(body):
                continue
            b, e = self.value(s.begin), self.value(s.end)
            if b is None or e is None:
                return None
            body = MaxOverRange(LoopVar(s.index.id, f"i{s.index.id}"), b, e, body)
        return body

    def site(self, loops: tuple[Node, ...]) -> Expr | None:
        """An upper bound of the number of times a push inside `loops` runs per thread (at
        any one time: a checkpointed loop holds one block of iterations, and one checkpoint
        per block, `checkpoint.Blocks`)."""
        total: Expr = Const(1)
        for k, loop in enumerate(loops):
            node = getattr(loop, "node", loop)  # a checkpoint.Blocks marker: its loop
            t = self.trip(node)
            if t is not None and node is not loop:
                t = binop("//", binop("-", binop("+", t, STRIDE), Const(1)), STRIDE)
            elif t is not None and id(node) in self.limited:
                t = binop("min", t, STRIDE)
            for outer in reversed(loops[:k]):
                if t is None:
                    return None
                t = self.over(outer, t)
            if t is None:
                return None
            total = binop("*", total, t)
        return total

    def thread_capacity(self, sites: list[tuple[Node, ...]]) -> Expr | None:
        """A thread's capacity: its free loop variables are its task's."""
        total: Expr = Const(0)
        for loops in sites:
            e = self.site(loops)
            if e is None:
                return None
            total = binop("+", total, e)
        return total

    def capacity(self, sites: list[tuple[Node, ...]], task: Node | None) -> Expr | None:
        """The largest capacity of any thread of `task` (None: the serial code)."""
        total = self.thread_capacity(sites)
        return total if task is None or total is None else self.over(task, total)

    def axes(self, task: Node) -> tuple[tuple[LoopVar, Expr, Expr], ...] | None:
        """(variable, begin, end) of each loop of the task's parallel nest, outermost first
        (a thread's flat index decodes to them row-major, as in `Gen.thread_index`)."""
        out = []
        for s in task.nest or (task.stmt,):
            if not isinstance(s, For):
                return None
            b, e = self.value(s.begin), self.value(s.end)
            if b is None or e is None or not is_closed(b) or not is_closed(e):
                return None
            out.append((LoopVar(s.index.id, f"i{s.index.id}"), b, e))
        return tuple(out)

    def threads(self, task: Node) -> Expr | None:
        return self.trip(task)
