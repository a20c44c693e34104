"""resolve_views: kernel-side subviews become offset arithmetic on the parameter view.

The frontend turns `v.subview(o, n)` and `v[a:b]` into `SUBVIEW(v, o, n)`, whose result is a
view again (it can be indexed, measured, sliced further and passed to funcs). This pass, the
first of the pipeline, gives every such view a *window* on the parameter view it comes from:
(root parameter, offset relative to the root, size). `LOAD(w, i)` becomes
`LOAD(root, rel + i)` (likewise stores and atomics), `SHAPE(w, 0)` becomes the size, and the
SUBVIEW instructions disappear, so later passes, reverse mode and the code generators only
see parameter views.

In debug mode it also checks, with CHECK_INDEX:

- every SUBVIEW: `0 <= o <= P` and `0 <= n <= P - o` for the parent's size P, as the pairs
  (o, P + 1), (n, P - o + 1); a third pair (prel, prel + 1) carries the parent's offset
  relative to the root into the error record (it holds for every valid parent);
  `attrs = (site, root name, "subview", label, parent label)`;
- every access through a subview: the pair (i, n), then (rel, rel + 1) carrying the view's
  relative offset; `attrs = (site, root name, "view", label)`.

`debug.check_error` turns these records into `BufferViewIndexError` messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import _dtypes
from ..ir import Instr, KernelIR, Op, SourceLoc, Stmt, Value, instrs, max_ids
from ..types import ViewType
from .rewrite import Rewriter

_ACCESSES = frozenset({Op.LOAD, Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})
_I64 = _dtypes.int64


@dataclass(frozen=True, slots=True)
class _Window:
    """A kernel-side view: `root[rel : rel + size]`; `label` is its source text."""

    root: Value
    rel: Value
    size: Value
    label: str


def first_free_site(kernel: KernelIR) -> int:
    """One more than the largest CHECK_INDEX site id in `kernel` (0 when it has none)."""
    return 1 + max((i.attrs[0] for i in instrs(kernel.body) if i.op is Op.CHECK_INDEX),
                   default=-1)


class _Resolve(Rewriter):
    def __init__(self, kernel: KernelIR, debug: bool) -> None:
        super().__init__()
        self.debug = debug
        self.names = {p.value.id: p.name for p in kernel.params}
        self.next_id = max_ids(kernel)[0] + 1
        self.sites = first_free_site(kernel)
        self.windows: dict[int, _Window] = {}

    def new(self, t: object) -> Value:
        v = Value(self.next_id, t)  # type: ignore[arg-type]
        self.next_id += 1
        return v

    def emit(self, out: list[Stmt], op: Op, args: tuple[Value, ...], attrs: tuple[object, ...],
             loc: SourceLoc) -> Value:
        v = self.new(_I64)
        out.append(Instr(op, v, args, attrs, loc))
        return v

    def root_name(self, w: _Window) -> str:
        return self.names.get(w.root.id, f"%{w.root.id}")

    def check(self, out: list[Stmt], values: list[Value], attrs: tuple[object, ...],
              loc: SourceLoc) -> None:
        out.append(Instr(Op.CHECK_INDEX, None, tuple(values), (self.sites,) + attrs, loc))
        self.sites += 1

    def plus_one(self, out: list[Stmt], v: Value, loc: SourceLoc) -> Value:
        one = self.emit(out, Op.CONST, (), (1, _I64), loc)
        return self.emit(out, Op.ADD, (v, one), (), loc)

    def parent_window(self, view: Value, out: list[Stmt], loc: SourceLoc) -> _Window:
        """The window of `view` for a check; a parameter view is its own root."""
        w = self.windows.get(view.id)
        if w is not None:
            return w
        zero = self.emit(out, Op.CONST, (), (0, _I64), loc)
        size = self.emit(out, Op.SHAPE, (view,), (0,), loc)
        return _Window(view, zero, size, self.names.get(view.id, f"%{view.id}"))

    def subview(self, instr: Instr) -> list[Stmt]:
        parent, offset, size = instr.args
        out: list[Stmt] = []
        loc = instr.loc
        if self.debug:
            w = self.parent_window(parent, out, loc)
            p1 = self.plus_one(out, w.size, loc)
            room = self.emit(out, Op.SUB, (w.size, offset), (), loc)
            r1 = self.plus_one(out, room, loc)
            prel1 = self.plus_one(out, w.rel, loc)
            self.check(out, [offset, p1, size, r1, w.rel, prel1],
                       (self.root_name(w), "subview", instr.attrs[0], w.label), loc)
        known = self.windows.get(parent.id)
        if known is None:
            root, rel = parent, offset
        else:
            root, rel = known.root, self.emit(out, Op.ADD, (known.rel, offset), (), loc)
        assert instr.result is not None
        self.windows[instr.result.id] = _Window(root, rel, size, instr.attrs[0])
        return out

    def access(self, instr: Instr, w: _Window) -> list[Stmt]:
        out: list[Stmt] = []
        loc = instr.loc
        index = instr.args[1]
        if index.type is not _I64:
            index = self.emit(out, Op.CAST, (index,), (_I64,), loc)
        if self.debug:
            rel1 = self.plus_one(out, w.rel, loc)
            self.check(out, [index, w.size, w.rel, rel1],
                       (self.root_name(w), "view", w.label), loc)
        flat = self.emit(out, Op.ADD, (w.rel, index), (), loc)
        out.append(Instr(instr.op, instr.result, (w.root, flat) + instr.args[2:], instr.attrs,
                         loc))
        return out

    def instr(self, instr: Instr) -> list[Stmt]:
        instr = self.args(instr)
        if instr.op is Op.SUBVIEW:
            return self.subview(instr)
        if not instr.args or instr.args[0].id not in self.windows:
            return [instr]
        w = self.windows[instr.args[0].id]
        if instr.op is Op.SHAPE:
            assert instr.result is not None
            self.subst[instr.result.id] = w.size
            return []
        assert instr.op in _ACCESSES, instr.op
        return self.access(instr, w)


def resolve_views(kernel: KernelIR, *, debug: bool = False) -> KernelIR:
    """Replace kernel-side subviews by windows on parameter views (checked in debug mode)."""
    if not any(isinstance(p.value.type, ViewType) for p in kernel.params):
        return kernel
    if not any(i.op is Op.SUBVIEW for i in instrs(kernel.body)):
        return kernel
    return _Resolve(kernel, debug).run(kernel)
