"""What part of each array argument a kernel reads and writes, and in which order.

`derive(kernel)` summarises a kernel's IR for the tape (qdarray/ad/tape/tape.py): its accesses to
array parameters (loads, stores and atomic updates, each with its index expressions, each
index an *interval expression* over the kernel's scalar arguments, the arrays' shapes and the
ranges of the loops around the access); and, for every pair (a load, a store), whether within
one thread the load comes before the store ("rbw"), after it ("raw"), or either ("mixed": a
serial loop holds both). `compile_boxes` turns the entries into boxes at launch: per axis a
half-open interval `[lo, hi)`, the whole axis where the compiler cannot tell.

The summary is plain data (lists, strings, ints), stored with the kernel's disk cache entry.
An interval expression is one of
    ["c", v]                      the constant v
    ["arg", name]                 the scalar argument `name` (a dataclass field: "p.dt")
    ["shape", name, axis]         the length of axis `axis` of array parameter `name`
    ["range", begin, end]         a loop index: begin <= i < end (both interval expressions)
    [op, a, b]                    op in add, sub, mul, floordiv, min, max
    ["neg", a]
    None                          unknown: any index of the axis
An entry of the summary is [name, axes]: per axis of the array a list of interval
expressions, the indices the entry's accesses use there (its box: the hull of theirs), or
None when an access reaches the array through a kernel-side subview (any element may be
touched). A parameter the kernel reads and writes has one entry per distinct access, so the
order of each read and write is kept; one it only reads or only writes has one entry for all
its accesses (a kernel with unrolled loops may have hundreds), constants folded.
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


def _merge(indices: list[Any]) -> Any:
    """One entry's axes for accesses with these indices (None: a subview among them)."""
    if any(index is None for index in indices) or len({len(i) for i in indices}) != 1:
        return None
    axes = []
    for k in range(len(indices[0])):
        alternatives: list[Any] = []
        consts = []
        for index in indices:
            e = index[k]
            if e is not None and e[0] == "c":
                consts.append(e[1])
            elif e not in alternatives:
                alternatives.append(e)
        if None in alternatives:
            alternatives = [None]
        elif consts:
            alternatives += [["c", v] for v in sorted({min(consts), max(consts)})]
        axes.append(alternatives)
    return axes


def derive(kernel: KernelIR) -> dict[str, Any]:
    """The access summary of `kernel` (module docstring): {"reads": [[name, axes], ...],
    "writes": [[name, axes], ...], "order": [[read, write, "rbw"|"raw"|"mixed"], ...]}
    (`read` and `write` index the two lists)."""
    w = _Walker(kernel)
    w.block(kernel.body, ())
    both = {a[0] for a in w.accesses if "r" in a[1]} & {a[0] for a in w.accesses if "w" in a[1]}
    tables: dict[str, list[Any]] = {"r": [], "w": []}
    groups: dict[str, dict[Any, int]] = {"r": {}, "w": {}}  # key -> entry
    members: dict[str, list[list[Any]]] = {"r": [], "w": []}  # entry -> indices
    placed: dict[str, list[tuple[int, int, tuple[int, ...]]]] = {"r": [], "w": []}
    for name, kind, index, pos, loops in w.accesses:
        if name in w.views:
            index = None
        for k in "rw":
            if k not in kind:
                continue
            key = (name, repr(index)) if name in both else (name,)
            entry = groups[k].get(key)
            if entry is None:
                entry = groups[k][key] = len(tables[k])
                tables[k].append(name)
                members[k].append([])
            if index not in members[k][entry]:
                members[k][entry].append(index)
            placed[k].append((entry, pos, loops))
    order: dict[tuple[int, int], str] = {}
    for r, lpos, lloops in placed["r"]:
        for s, spos, sloops in placed["w"]:
            if set(lloops) & set(sloops):
                rel = "mixed"
            elif lpos < spos:
                rel = "rbw"
            else:
                rel = "raw"
            prev = order.get((r, s))
            order[(r, s)] = rel if prev in (None, rel) else "mixed"
    out: dict[str, Any] = {}
    for k, label in (("r", "reads"), ("w", "writes")):
        out[label] = [[name, _merge(idx)] for name, idx in zip(tables[k], members[k],
                                                                 strict=True)]
    out["order"] = [[r, s, rel] for (r, s), rel in sorted(order.items())]
    return out


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

    def access(self, name: str, axes: Any, out: str, indent: str) -> None:
        """`out` = the box of one entry of array `name` (None: not touched): per axis the
        hull of its expressions' intervals, each clamped to the axis."""
        sh = self.shape(name)
        if axes is None:
            self.emit(indent, f"{out} = tuple((0, n) for n in {sh})")
            return
        self.emit(indent, "try:")
        inner = indent + "    "
        names = []
        for k, alternatives in enumerate(axes):
            n, lo_, hi_ = self.tmp(), self.tmp(), self.tmp()
            names.append(f"({lo_}, {hi_})")
            self.emit(inner, f"{n} = {sh}[{k}]")
            if None in alternatives:
                self.emit(inner, f"{lo_}, {hi_} = 0, {n}")
                continue
            self.emit(inner, f"{lo_}, {hi_} = {n}, 0")
            for e in alternatives:
                self.widen(e, n, lo_, hi_, inner)
            self.emit(inner, f"if {hi_} <= {lo_}: raise _Empty")
        self.emit(inner, f"{out} = ({', '.join(names)}{',' if len(names) == 1 else ''})")
        self.emit(indent, "except _Empty:")
        self.emit(inner, f"{out} = None")

    def widen(self, e: Any, n: str, lo_: str, hi_: str, indent: str) -> None:
        """Widen [lo_, hi_) by expression `e`'s interval clamped to an axis of length `n`
        (the whole axis where it may be negative or cannot be bounded; nothing where it is
        the index of a loop that runs no iteration)."""
        if e[0] == "c":
            v = e[1]
            if v < 0:
                self.emit(indent, f"{lo_}, {hi_} = 0, {n}")
                return
            self.emit(indent, f"if {v} < {lo_}: {lo_} = {v} if {v} < {n} else {n}")
            self.emit(indent, f"if {v + 1} > {hi_}: {hi_} = {v + 1} if {v + 1} < {n} else {n}")
            return
        if e[0] == "range" and e[1][0] == "c" and e[1][1] >= 0 and e[2][0] == "shape":
            # range(c, x.shape[k]): [c, x.shape[k]), nothing when the loop runs no iteration
            c, end = e[1][1], f"{self.shape(e[2][1])}[{e[2][2]}]"
            self.emit(indent, f"if {c} < {end}:")
            self.emit(indent, f"    if {c} < {lo_}: {lo_} = {c} if {c} < {n} else {n}")
            self.emit(indent, f"    if {end} > {hi_}: {hi_} = {end} if {end} < {n} else {n}")
            return
        text = repr(e)
        guards = [(x, y) for x, y in (("'range'", "_Empty"), ("'floordiv'", "_Unknown"))
                  if x in text]
        body = indent + "    " * bool(guards)
        if guards:
            self.emit(indent, "try:")
        lo, hi = self.interval(e, body)
        self.emit(body, f"if {lo} < 0: {lo_}, {hi_} = 0, {n}")
        self.emit(body, "else:")
        self.emit(body, f"    if {lo} < {lo_}: {lo_} = {lo} if {lo} < {n} else {n}")
        self.emit(body, f"    if {hi} + 1 > {hi_}: {hi_} = {hi} + 1 if {hi} + 1 < {n} else {n}")
        for _, exc in guards:
            self.emit(indent, f"except {exc}:")
            if exc == "_Unknown":
                self.emit(indent, f"    {lo_}, {hi_} = 0, {n}")
            else:
                self.emit(indent, "    pass")


class _Empty(Exception):
    """An access inside a loop that runs no iteration at these arguments."""


def compile_boxes(summary: Any, names: tuple[str, ...], wrap: Any = None,
                  flat: bool = False) -> Any:
    """A function of a launch's arguments (in the order of `names`, the kernel's
    parameters) giving the array and the box of each access of `summary` (`derive`): (a list
    for the reads, one for the writes) of (the argument, its box; None for an access no
    thread makes at these arguments). Arguments for parameters the summary reads through a
    dataclass field are reached by attribute.

    `wrap(argument, box)`, when given, makes each entry instead: the lists are then of
    (parameter name, wrap(argument, box)), box None where no thread makes the access.
    With `flat`, it gives one tuple of the boxes alone: the reads' then the writes'."""
    g = _Gen(names)
    results = []
    every = []
    for table in ("reads", "writes"):
        outs = []
        for name, axes in summary[table]:
            out = g.tmp()
            g.access(name, axes, out, "    ")
            arg = g.arg(name, "")
            every.append(out)
            outs.append(f"({arg}, {out})" if wrap is None else f"({name!r}, _wrap({arg}, {out}))")
        results.append("[" + ", ".join(outs) + "]")
    ret = f"({', '.join(every)},)" if flat else f"{results[0]}, {results[1]}"
    src = "def boxes(args):\n" + "\n".join(g.head + g.lines) + f"\n    return {ret}\n"
    namespace = {"_shape": _shape, "_Empty": _Empty, "_Unknown": _Unknown, "_wrap": wrap}
    exec(compile(src, "<qdarray regions>", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["boxes"]
