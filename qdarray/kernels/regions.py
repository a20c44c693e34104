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
# Update the element; their reverse compares each thread's value with the element's final
# value (the winner's), so it reads the element after the write: "raw" with itself.
_UPDATES = (Op.ATOMIC_MIN, Op.ATOMIC_MAX)


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
    loads: list[tuple[int, int, tuple[int, ...]]] = []  # (entry, position, loops)
    stores: list[tuple[int, int, tuple[int, ...]]] = []
    for name, kind, index, pos, loops in w.accesses:
        entry = [name, None if name in w.views else index]
        if "r" in kind:
            if entry not in reads:
                reads.append(entry)
            loads.append((reads.index(entry), pos, loops))
        if "w" in kind:
            if entry not in writes:
                writes.append(entry)
            stores.append((writes.index(entry), pos, loops))
    order: dict[tuple[int, int], str] = {}
    for r, lpos, lloops in loads:
        for s, spos, sloops in stores:
            if set(lloops) & set(sloops):
                rel = "mixed"
            elif lpos < spos:
                rel = "rbw"
            else:
                rel = "raw"
            prev = order.get((r, s))
            order[(r, s)] = rel if prev in (None, rel) else "mixed"
    return {"reads": reads, "writes": writes,
            "order": [[r, s, rel] for (r, s), rel in sorted(order.items())]}


# -- at launch ------------------------------------------------------------------------------


class _Unknown(Exception):
    """An interval that cannot be bounded (a division by a range that may hold 0)."""


Box = tuple[tuple[int, int], ...]  # per axis [lo, hi); () for a 0-d array


def _shape(x: Any) -> tuple[int, ...]:
    """The shape a kernel sees of an array argument (an Array, a BufferView, a NumPy
    array)."""
    data = getattr(x, "_data", None)
    if data is not None:
        return data.shape  # type: ignore[no-any-return]
    size = getattr(x, "_size", None)
    return (size,) if size is not None else tuple(x.shape)


class _Gen:
    """Python source computing the boxes of a summary's accesses (`compile_boxes`)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.lines: list[str] = []
        self.head: list[str] = []  # the arguments, loaded first
        self.n = 0
        self.paths: dict[str, str] = {}
        self.shapes: dict[str, str] = {}

    def tmp(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def emit(self, indent: str, line: str) -> None:
        self.lines.append(indent + line)

    def arg(self, name: str, indent: str) -> str:
        """A local holding argument `name` (a dataclass field: "p.dt")."""
        var = self.paths.get(name)
        if var is None:
            head, *fields = name.split(".")
            var = self.paths[name] = f"a{len(self.paths)}"
            self.head.append(f"    {var} = args[{self.names.index(head)}]"
                             + "".join(f".{f}" for f in fields))
        return var

    def shape(self, name: str) -> str:
        """A local holding the shape of array argument `name`."""
        var = self.shapes.get(name)
        if var is None:
            x = self.arg(name, "")
            var = self.shapes[name] = f"s{len(self.shapes)}"
            self.head.append(f"    {var} = _shape({x})")
        return var

    def interval(self, e: Any, indent: str) -> tuple[str, str]:
        """Locals (lo, hi) of interval expression `e`; `raise _Empty` when it is empty."""
        tag = e[0]
        if tag == "c":
            return repr(e[1]), repr(e[1])
        if tag in ("arg", "shape"):
            v = self.tmp()
            if tag == "arg":
                self.emit(indent, f"{v} = int({self.arg(e[1], indent)})")
            else:
                self.emit(indent, f"{v} = {self.shape(e[1])}[{e[2]}]")
            return v, v
        lo, hi = self.tmp(), self.tmp()
        if tag == "range":
            b, f = self.interval(e[1], indent), self.interval(e[2], indent)
            self.emit(indent, f"{lo}, {hi} = {b[0]}, {f[1]} - 1")
            self.emit(indent, f"if {hi} < {lo}: raise _Empty")
            return lo, hi
        a = self.interval(e[1], indent)
        if tag == "neg":
            self.emit(indent, f"{lo}, {hi} = -{a[1]}, -{a[0]}")
            return lo, hi
        b = self.interval(e[2], indent)
        if tag == "add":
            self.emit(indent, f"{lo}, {hi} = {a[0]} + {b[0]}, {a[1]} + {b[1]}")
        elif tag == "sub":
            self.emit(indent, f"{lo}, {hi} = {a[0]} - {b[1]}, {a[1]} - {b[0]}")
        elif tag in ("min", "max"):
            self.emit(indent, f"{lo}, {hi} = {tag}({a[0]}, {b[0]}), {tag}({a[1]}, {b[1]})")
        else:
            op = "*" if tag == "mul" else "//"
            if op == "//":
                self.emit(indent, f"if {b[0]} <= 0: raise _Unknown")
            p = [f"{x} {op} {y}" for x in a for y in b]
            self.emit(indent, f"{lo}, {hi} = min({', '.join(p)}), max({', '.join(p)})")
        return lo, hi

    def access(self, name: str, index: Any, out: str, indent: str) -> None:
        """`out` = the box of one access of array `name` (None: not touched)."""
        sh = self.shape(name)
        if index is None:
            self.emit(indent, f"{out} = tuple((0, n) for n in {sh})")
            return
        self.emit(indent, "try:")
        axes = []
        for k, e in enumerate(index):
            ax = self.tmp()
            axes.append(ax)
            inner = indent + "    "
            if e is None:
                self.emit(inner, f"{ax} = (0, {sh}[{k}])")
                continue
            self.emit(inner, "try:")
            lo, hi = self.interval(e, inner + "    ")
            self.emit(inner + "    ", f"{ax} = (0, {sh}[{k}]) if {lo} < 0 else "
                      f"(min({lo}, {sh}[{k}]), min({hi} + 1, {sh}[{k}]))")
            self.emit(inner, "except _Unknown:")
            self.emit(inner + "    ", f"{ax} = (0, {sh}[{k}])")
        self.emit(indent + "    ", f"{out} = ({', '.join(axes)}{',' if len(axes) == 1 else ''})")
        self.emit(indent, "except _Empty:")
        self.emit(indent + "    ", f"{out} = None")


class _Empty(Exception):
    """An access inside a loop that runs no iteration at these arguments."""


def compile_boxes(summary: Any, names: tuple[str, ...]) -> Any:
    """A function of a launch's arguments (in the order of `names`, the kernel's
    parameters) giving the array and the box of each access of `summary` (`derive`): (a list
    for the reads, one for the writes) of (the argument, its box; None for an access no
    thread makes at these arguments). Arguments for parameters the summary reads through a
    dataclass field are reached by attribute."""
    g = _Gen(names)
    results = []
    for table in ("reads", "writes"):
        outs = []
        for name, index in summary[table]:
            out = g.tmp()
            g.access(name, index, out, "    ")
            outs.append(f"({g.arg(name, '')}, {out})")
        results.append("[" + ", ".join(outs) + "]")
    src = "def boxes(args):\n" + "\n".join(g.head + g.lines) + \
        f"\n    return {results[0]}, {results[1]}\n"
    namespace = {"_shape": _shape, "_Empty": _Empty, "_Unknown": _Unknown}
    exec(compile(src, "<qdarray regions>", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["boxes"]
