"""Adstack capacities: symbolic bounds built at compile time, evaluated at launch.

Each stack's capacity is the sum over its push sites of the product of the trip counts of
the loops around the site (inside its thread). A trip count is `max(end - begin, 0)` of the
loop's bounds written as an expression over constants, scalar arguments, array shapes,
integer reads of arrays at constant or loop-variable indices and `+ - * // max min`. A bound
that depends on an enclosing loop's variable is maximised over that loop's range with
`MaxOverRange(var, begin, end, body)` (nested dependent loops: the product of their maxima),
and the whole capacity over the parallel loop's range.

`capacities(...)` is the one entry point the launcher calls. It evaluates the expressions
with NumPy over the argument arrays; whatever they cannot express (while loops, `a[b[i]]`,
bounds read from locals) or cannot evaluate safely (a read outside its array, which a guard
in the kernel prevents) is sized exactly by the counting kernel: the forward sweep with each
push replaced by a counter, run as a kernel, followed by a max. There is no default size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernels.ir import For, Op, Value, While
from ..kernels.types import ArrayType, ViewType, is_int
from .structure import Node, Structure

# Test-only: when set to an int, every stack gets this capacity (to provoke overflows).
_TEST_CAPACITY_OVERRIDE: int | None = None

STATS = {"symbolic": 0, "counting": 0}


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


_BINOPS = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.FLOORDIV: "//", Op.MAX: "max",
           Op.MIN: "min"}
_FOLD: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "max": max, "min": min}


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """`Bin(op, a, b)`, folding constants and the identities of + - * (x + 0, 1 * x, ...)."""
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if ca is not None and cb is not None and op in _FOLD:
        return Const(int(_FOLD[op](ca, cb)))
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


def _has_read(e: Expr) -> bool:
    if isinstance(e, Read):
        return True
    if isinstance(e, Bin):
        return _has_read(e.a) or _has_read(e.b)
    return False


# -- derivation (compile time) ----------------------------------------------------------------


class Deriver:
    """Expressions for the Values of one forward kernel."""

    def __init__(self, st: Structure) -> None:
        self.st = st
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
        if isinstance(d, Node) and isinstance(d.stmt, For) and d.stmt.index.id == v.id:
            return LoopVar(v.id, f"i{v.id}")
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
        op = _BINOPS.get(i.op)
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
        """An upper bound of the number of times a push inside `loops` runs per thread."""
        total: Expr = Const(1)
        for k, loop in enumerate(loops):
            t = self.trip(loop)
            for outer in reversed(loops[:k]):
                if t is None:
                    return None
                t = self.over(outer, t)
            if t is None:
                return None
            total = binop("*", total, t)
        return total

    def capacity(self, sites: list[tuple[Node, ...]], task: Node | None) -> Expr | None:
        total: Expr = Const(0)
        for loops in sites:
            e = self.site(loops)
            if e is None:
                return None
            total = binop("+", total, e)
        return total if task is None else self.over(task, total)

    def threads(self, task: Node) -> Expr | None:
        return self.trip(task)


# -- evaluation (launch time) -----------------------------------------------------------------


class Unsized(Exception):
    """The expression cannot be evaluated safely here: use the counting kernel."""


def _range_max(values: np.ndarray, lo: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """max(values[s - lo : e - lo]) per (s, e) (0 for an empty range), by a sparse table."""
    out = np.zeros(starts.shape, np.int64)
    ok = ends > starts
    if not ok.any() or values.size == 0:
        return out
    table = [values.astype(np.int64)]
    width = 1
    while 2 * width <= values.size:
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    s = starts[ok] - lo
    length = ends[ok] - starts[ok]
    level = np.floor(np.log2(length)).astype(np.int64)
    res = np.empty(s.shape, np.int64)
    for k in np.unique(level):
        m = level == k
        t = table[int(k)]
        res[m] = np.maximum(t[s[m]], t[s[m] + length[m] - (1 << int(k))])
    out[ok] = res
    return out


class _Range:
    """The values [start, stop) of a loop variable (an arange made only when needed)."""

    def __init__(self, start: int, stop: int) -> None:
        self.start = start
        self.stop = stop
        self._array: np.ndarray | None = None

    @property
    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = np.arange(self.start, self.stop, dtype=np.int64)
        return self._array


class Evaluator:
    """Evaluates expressions over host arrays: `args` maps parameter names to NumPy arrays,
    (base, offset, size) triples for views, and Python ints for scalars."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.args = args

    def eval(self, e: Expr, env: dict[int, Any]) -> Any:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Arg):
            return int(self.args[e.name])
        if isinstance(e, LoopVar):
            v = env[e.id]
            return v.array if isinstance(v, _Range) else v
        if isinstance(e, Shape):
            a = self.args[e.name]
            return int(a[2]) if isinstance(a, tuple) else int(a.shape[e.axis])
        if isinstance(e, Read):
            return self.read(e, env)
        if isinstance(e, Bin):
            a, b = self.eval(e.a, env), self.eval(e.b, env)
            if e.op == "+":
                return np.add(a, b)
            if e.op == "-":
                return np.subtract(a, b)
            if e.op == "*":
                return np.multiply(a, b)
            if e.op == "//":
                bz = np.where(np.equal(b, 0), 1, b)
                return np.where(np.equal(b, 0), 0, np.floor_divide(a, bz))
            return np.maximum(a, b) if e.op == "max" else np.minimum(a, b)
        assert isinstance(e, MaxOverRange)
        return self.max_over(e, env)

    def read(self, e: Read, env: dict[int, Any]) -> Any:
        a = self.args[e.name]
        if len(e.index) == 1 and isinstance(e.index[0], LoopVar):
            r = env[e.index[0].id]
            if isinstance(r, _Range):  # a[i] over a whole range: a slice, checked at its ends
                base, offset, size = a if isinstance(a, tuple) else (a, 0, a.shape[0])
                if r.start < 0 or r.stop > size:
                    raise Unsized(e.name)
                return base[offset + r.start:offset + r.stop].astype(np.int64)
        idx = [np.asarray(self.eval(i, env), np.int64) for i in e.index]
        if isinstance(a, tuple):
            base, offset, size = a
            if np.any(idx[0] < 0) or np.any(idx[0] >= size):
                raise Unsized(e.name)
            return base[offset + idx[0]].astype(np.int64)
        for i, n in zip(idx, a.shape, strict=True):
            if np.any(i < 0) or np.any(i >= n):
                raise Unsized(e.name)
        return np.asarray(a[tuple(idx)]).astype(np.int64)

    def max_over(self, e: MaxOverRange, env: dict[int, Any]) -> Any:
        b = np.asarray(self.eval(e.begin, env), np.int64)
        n = np.asarray(self.eval(e.end, env), np.int64)
        if b.ndim == 0 and n.ndim == 0:
            if n <= b:
                return 0
            v = np.asarray(self.eval(e.body, {**env, e.var.id: _Range(int(b), int(n))}))
            return int(v.max()) if v.ndim else int(v)
        # a range that varies with enclosing variables: the body may only use this one
        if free_vars(e.body) - {e.var.id}:
            raise Unsized("a bound depends on two loop variables at once")
        b, n = np.broadcast_arrays(b, n)
        ok = n > b
        if not ok.any():
            return np.zeros(b.shape, np.int64)
        lo, hi = int(b[ok].min()), int(n[ok].max())
        vals = np.asarray(self.eval(e.body, {**env, e.var.id: np.arange(lo, hi)}), np.int64)
        vals = np.broadcast_to(vals, (hi - lo,))
        return _range_max(vals, lo, np.where(ok, b, 0), np.where(ok, n, 0))


def symbolic(exprs: list[Expr | None], threads: list[Expr | None], args: dict[str, Any]
             ) -> tuple[list[int], list[int]] | None:
    """Capacities and thread counts from the expressions, or None when one of them needs
    the counting kernel."""
    if any(e is None for e in exprs) or any(t is None for t in threads):
        return None
    ev = Evaluator(args)
    try:
        caps = [max(int(ev.eval(e, {})), 0) for e in exprs]  # type: ignore[arg-type]
        counts = [max(int(ev.eval(t, {})), 0) for t in threads]  # type: ignore[arg-type]
    except Unsized:
        return None
    return caps, counts


def capacities(exprs: list[Expr | None], threads: list[Expr | None], args: dict[str, Any],
               count: Any) -> tuple[list[int], list[int]]:
    """(capacity per stack, thread count per parallel loop) for one launch.

    Args:
        exprs: each stack's capacity expression (None: not expressible).
        threads: each parallel loop's trip count expression.
        args: host views of the arguments by parameter name (see `Evaluator`).
        count: runs the counting kernel and returns (counts per stack, threads per loop).
    """
    got = symbolic(exprs, threads, args)
    if got is None:
        STATS["counting"] += 1
        got = count()
    else:
        STATS["symbolic"] += 1
    caps, counts = got
    if _TEST_CAPACITY_OVERRIDE is not None:
        caps = [_TEST_CAPACITY_OVERRIDE] * len(caps)
    return caps, counts


def host_args(params: Any, args: Any) -> dict[str, Any]:
    """Parameter name -> host value for the evaluator (arrays, view triples, ints)."""
    from .._array import Array
    from ..buffer_view import BufferView

    out: dict[str, Any] = {}
    for p, a in zip(params, args, strict=True):
        t = p.value.type
        if isinstance(t, ViewType):
            v = a if type(a) is BufferView else BufferView(a)
            out[p.name] = (v._base._data, v._offset, v._size)
        elif isinstance(t, ArrayType):
            out[p.name] = a._data if type(a) is Array else np.asarray(a)
        else:
            out[p.name] = a
    return out
