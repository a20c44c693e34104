"""What part of each array argument a kernel reads and writes, and in which order.

`derive(kernel)` summarises a kernel's IR for the tape (qdarray/ad/tape.py): its accesses to
array parameters (loads, stores and atomic updates, each with its index expressions, each
index an *interval expression* over the kernel's scalar arguments, the arrays' shapes and the
ranges of the loops around the access); and, for every pair (a load, a store), whether within
one thread the load comes before the store ("rbw"), after it ("raw"), or either ("mixed": a
serial loop holds both). `box` turns an access into a box at launch: per axis a half-open
interval `[lo, hi)`, the whole axis where the compiler cannot tell.

The summary is plain data (lists, strings, ints), stored with the kernel's disk cache entry.
An interval expression is one of
    ["c", v]                      the constant v
    ["arg", name]                 the scalar argument `name` (a dataclass field: "p.dt")
    ["shape", name, axis]         the length of axis `axis` of array parameter `name`
    ["range", begin, end]         a loop index: begin <= i < end (both interval expressions)
    [op, a, b]                    op in add, sub, mul, floordiv, min, max
    ["neg", a]
    None                          unknown: any index of the axis
An access is a list of interval expressions (one per index), or None when it reaches the
array through a kernel-side subview (any element may be touched).
"""

from __future__ import annotations

from typing import Any

from .ir import Block, For, If, Instr, KernelIR, Op, Value, While
from .types import is_int, is_memory

_BINARY = {Op.ADD: "add", Op.SUB: "sub", Op.MUL: "mul", Op.FLOORDIV: "floordiv",
           Op.MIN: "min", Op.MAX: "max"}
_STORES = (Op.STORE, Op.ATOMIC_ADD)
_UPDATES = (Op.ATOMIC_MIN, Op.ATOMIC_MAX)  # read the element, then write it


class _Walker:
    """One pass over the IR: interval expressions of integer values, accesses in order."""

    def __init__(self, kernel: KernelIR) -> None:
        self.expr: dict[int, Any] = {}
        self.root: dict[int, str] = {}  # memref value id -> array parameter name
        self.views: set[str] = set()  # parameters reached through a subview
        self.accesses: list[tuple[str, str, Any, int, tuple[int, ...]]] = []
        self.position = 0
        for p in kernel.params:
            if is_memory(p.value.type):
                self.root[p.value.id] = p.name
            elif is_int(p.value.type):
                self.expr[p.value.id] = ["arg", p.name]
        self.params = set(self.root)  # memref ids of the parameters themselves

    def of(self, v: Value) -> Any:
        return self.expr.get(v.id)

    def block(self, block: Block, loops: tuple[int, ...]) -> None:
        for stmt in block.stmts:
            if isinstance(stmt, Instr):
                self.instr(stmt, loops)
            elif isinstance(stmt, If):
                self.block(stmt.then_body, loops)
                self.block(stmt.else_body, loops)
            elif isinstance(stmt, For):
                begin, end = self.of(stmt.begin), self.of(stmt.end)
                if begin is not None and end is not None:
                    self.expr[stmt.index.id] = ["range", begin, end]
                inner = loops if stmt.parallel else loops + (id(stmt),)
                self.block(stmt.body, inner)
            elif isinstance(stmt, While):
                inner = loops + (id(stmt),)
                self.block(stmt.cond_body, inner)
                self.block(stmt.body, inner)

    def instr(self, i: Instr, loops: tuple[int, ...]) -> None:
        op = i.op
        if op is Op.CONST and i.result is not None and isinstance(i.attrs[0], int) \
                and not isinstance(i.attrs[0], bool):
            self.expr[i.result.id] = ["c", i.attrs[0]]
        elif op is Op.SHAPE:
            name = self.root.get(i.args[0].id)
            if name is not None and name not in self.views:
                self.expr[i.result.id] = ["shape", name, i.attrs[0]]  # type: ignore[union-attr]
        elif op in _BINARY:
            a, b = self.of(i.args[0]), self.of(i.args[1])
            if a is not None and b is not None and i.result is not None \
                    and is_int(i.result.type):
                self.expr[i.result.id] = [_BINARY[op], a, b]
        elif op is Op.NEG:
            a = self.of(i.args[0])
            if a is not None and i.result is not None:
                self.expr[i.result.id] = ["neg", a]
        elif op is Op.CAST:
            a = self.of(i.args[0])
            if a is not None and i.result is not None and is_int(i.result.type):
                self.expr[i.result.id] = a
        elif op is Op.SUBVIEW:
            name = self.root.get(i.args[0].id)
            if name is not None and i.result is not None:
                self.root[i.result.id] = name
                self.views.add(name)
        elif op is Op.LOAD:
            self.access(i, "r", len(i.args) - 1, loops)
        elif op in _STORES:
            self.access(i, "w", len(i.args) - 2, loops)
        elif op in _UPDATES:
            self.access(i, "rw", len(i.args) - 2, loops)

    def access(self, i: Instr, kind: str, n: int, loops: tuple[int, ...]) -> None:
        name = self.root.get(i.args[0].id)
        if name is None:
            return
        index = [self.of(v) for v in i.args[1:1 + n]] if i.args[0].id in self.params else None
        self.position += 1
        self.accesses.append((name, kind, index, self.position, loops))


def derive(kernel: KernelIR) -> dict[str, Any]:
    """The access summary of `kernel` (module docstring): {"reads": [[name, index], ...],
    "writes": [[name, index], ...], "order": [[read, write, "rbw"|"raw"|"mixed"], ...]}
    (`read` and `write` index the two lists; equal accesses appear once)."""
    w = _Walker(kernel)
    w.block(kernel.body, ())
    reads: list[Any] = []
    writes: list[Any] = []
    loads: list[tuple[int, int, tuple[int, ...], bool]] = []  # (entry, position, loops, rmw)
    stores: list[tuple[int, int, tuple[int, ...]]] = []
    for name, kind, index, pos, loops in w.accesses:
        entry = [name, None if name in w.views else index]
        if "r" in kind:
            if entry not in reads:
                reads.append(entry)
            loads.append((reads.index(entry), pos, loops, kind == "rw"))
        if "w" in kind:
            if entry not in writes:
                writes.append(entry)
            stores.append((writes.index(entry), pos, loops))
    order: dict[tuple[int, int], str] = {}
    for r, lpos, lloops, rmw in loads:
        for s, spos, sloops in stores:
            if set(lloops) & set(sloops):
                rel = "mixed"
            elif lpos < spos or (lpos == spos and rmw):
                rel = "rbw"
            else:
                rel = "raw"
            prev = order.get((r, s))
            order[(r, s)] = rel if prev in (None, rel) else "mixed"
    return {"reads": reads, "writes": writes,
            "order": [[r, s, rel] for (r, s), rel in sorted(order.items())]}


# -- at launch ------------------------------------------------------------------------------


def _interval(e: Any, values: dict[str, Any], shapes: dict[str, tuple[int, ...]]
              ) -> tuple[int, int] | None:
    """The closed interval [lo, hi] of interval expression `e` (None: empty)."""
    tag = e[0]
    if tag == "c":
        return e[1], e[1]
    if tag == "arg":
        v = int(values[e[1]])
        return v, v
    if tag == "shape":
        n = shapes[e[1]][e[2]]
        return n, n
    if tag == "range":
        b = _interval(e[1], values, shapes)
        f = _interval(e[2], values, shapes)
        if b is None or f is None or f[1] - 1 < b[0]:
            return None
        return b[0], f[1] - 1
    a = _interval(e[1], values, shapes)
    if a is None:
        return None
    if tag == "neg":
        return -a[1], -a[0]
    b = _interval(e[2], values, shapes)
    if b is None:
        return None
    if tag == "add":
        return a[0] + b[0], a[1] + b[1]
    if tag == "sub":
        return a[0] - b[1], a[1] - b[0]
    if tag == "min":
        return min(a[0], b[0]), min(a[1], b[1])
    if tag == "max":
        return max(a[0], b[0]), max(a[1], b[1])
    if tag == "mul":
        p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return min(p), max(p)
    if tag == "floordiv" and b[0] > 0:
        q = (a[0] // b[0], a[0] // b[1], a[1] // b[0], a[1] // b[1])
        return min(q), max(q)
    raise _Unknown


class _Unknown(Exception):
    """An interval the evaluator cannot bound (a division by a range that may hold 0)."""


Box = tuple[tuple[int, int], ...]  # per axis [lo, hi); () for a 0-d array


def box(accesses: list[Any], values: dict[str, Any], shape: tuple[int, ...],
        shapes: dict[str, tuple[int, ...]]) -> Box | None:
    """The smallest box holding every access of `accesses` into an array of `shape` (None:
    no access happens at these values). An index that may be negative (Python's from-the-end
    indexing) or is unknown counts as the whole axis."""
    lo = [n for n in shape]
    hi = [0] * len(shape)
    touched = False
    for index in accesses:
        if index is None or len(index) != len(shape):
            return tuple((0, n) for n in shape)
        bounds = []
        empty = False
        for axis, e in enumerate(index):
            n = shape[axis]
            if e is None:
                bounds.append((0, n))
                continue
            try:
                iv = _interval(e, values, shapes)
            except _Unknown:
                bounds.append((0, n))
                continue
            if iv is None:
                empty = True
                break
            if iv[0] < 0:
                bounds.append((0, n))
            else:
                bounds.append((min(iv[0], n), min(iv[1] + 1, n)))
        if empty:
            continue
        touched = True
        for axis, (a, b) in enumerate(bounds):
            lo[axis] = min(lo[axis], a)
            hi[axis] = max(hi[axis], b)
    if not touched:
        return None
    return tuple((a, max(a, b)) for a, b in zip(lo, hi, strict=True))
