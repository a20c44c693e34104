"""The shape of a kernel as reverse mode sees it: tasks, segments, constructs, defs and uses.

A kernel body is split into *regions* (the kernel's top level, the body of the parallel loop,
the branches of an if, loop bodies). A region is a list of items: *segments* (maximal runs of
instructions) and *constructs* (If, For, While; the exit test `if brk: break` is a construct
too). The kernel's top level and the body of each parallel loop are *top* regions: one
thread runs them straight through, so a value defined there is in scope for the whole
reverse of that thread. Each parallel loop is a *task*; the kernel's own top level is the
serial task (None). The *top construct* of an item is its enclosing construct that sits in
a top region; reverse mode keeps one set of adstacks per top construct.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...kernels.ir import Block, For, If, Instr, KernelIR, Op, Stmt, Value, Var, While
from ...kernels.ops import OPS
from .exits import is_exit_test

# Instructions reverse mode may run again to get a value back (LOAD relies on the rule
# that a kernel does not overwrite what it read in the same launch).
RECOMPUTE_OPS = frozenset(op for op, d in OPS.items() if d.pure) | {Op.LOAD, Op.SHAPE}
RECOMPUTE_OPS = RECOMPUTE_OPS - {Op.LOAD_VAR, Op.STORE_VAR, Op.ADSTACK_POP}
WRITES = frozenset({Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})
EXTREMA = frozenset({Op.ATOMIC_MIN, Op.ATOMIC_MAX})  # updates that can replace the element


@dataclass(eq=False, repr=False)
class Region:
    items: list[Any]
    parent: Node | None
    top: bool
    task: Node | None

    def __repr__(self) -> str:
        return f"<Region of {len(self.items)} items{' (top)' if self.top else ''}>"


@dataclass(eq=False, repr=False)
class Seg:
    instrs: list[Instr]
    region: Region

    def __repr__(self) -> str:
        return f"<Seg of {len(self.instrs)} instructions>"

    @property
    def task(self) -> Node | None:
        return self.region.task


@dataclass(eq=False, repr=False)
class Node:
    """A construct: `stmt` is an If, For or While (or the exit test, `exit` True)."""

    stmt: Any
    region: Region
    children: list[Region] = field(default_factory=list)
    top_node: Node | None = None
    loops: tuple[Node, ...] = ()   # enclosing non-parallel loops of its task, outermost first
    exit: bool = False
    task_body: bool = False         # a parallel For: its body is a task's top region
    nest: tuple[For, ...] = ()      # a task's parallel loops, outermost first (qd.ndrange)
    stores: set[int] = field(default_factory=set)   # Var ids stored anywhere inside
    reads: dict[int, Var] = field(default_factory=dict)  # Vars loaded anywhere inside
    stmt_straight: bool | None = None  # Structure.straight, once asked

    @property
    def task(self) -> Node | None:
        return self.region.task

    def __repr__(self) -> str:
        return f"<{type(self.stmt).__name__} at line {self.stmt.loc.line}>"

    @property
    def is_loop(self) -> bool:
        return isinstance(self.stmt, (For, While)) and not self.task_body


class Structure:
    """The regions of one kernel, with where each Value is defined and used."""

    def __init__(self, kernel: KernelIR) -> None:
        self.kernel = kernel
        self.params = {p.value.id for p in kernel.params}
        self.defs: dict[int, Any] = {}        # value id -> Seg, Node (For index / header)
        self.instr_of: dict[int, Instr] = {}  # value id -> defining Instr
        self.uses: dict[int, list[Any]] = {}  # value id -> [Seg | Node] where it is used
        self.vars: dict[int, Var] = {}
        self.tasks: list[Node] = []
        self.root = self.region(kernel.body, None, True, None, None, ())

    def region(self, block: Block, parent: Node | None, top: bool, task: Node | None,
               top_node: Node | None, loops: tuple[Node, ...]) -> Region:
        reg = Region([], parent, top, task)
        seg: Seg | None = None
        for stmt in block.stmts:
            if isinstance(stmt, Instr):
                if seg is None:
                    seg = Seg([], reg)
                    reg.items.append(seg)
                seg.instrs.append(stmt)
                self.instr(stmt, seg)
                continue
            seg = None
            reg.items.append(self.node(stmt, reg, top_node, loops))
        return reg

    def instr(self, instr: Instr, where: Any) -> None:
        for a in instr.args:
            self.uses.setdefault(a.id, []).append(where)
        if instr.result is not None:
            self.defs[instr.result.id] = where
            self.instr_of[instr.result.id] = instr
        if instr.op in (Op.LOAD_VAR, Op.STORE_VAR):
            var = instr.attrs[0]
            self.vars[var.id] = var

    def node(self, stmt: Stmt, reg: Region, top_node: Node | None,
             loops: tuple[Node, ...]) -> Node:
        node = Node(stmt, reg)
        node.top_node = node if reg.top else top_node
        node.loops = loops
        if is_exit_test(stmt):
            node.exit = True
            self.use(stmt.cond, node)  # type: ignore[union-attr]
            return node
        if isinstance(stmt, If):
            self.use(stmt.cond, node)
            for b in (stmt.then_body, stmt.else_body):
                node.children.append(self.region(b, node, False, reg.task, node.top_node, loops))
        elif isinstance(stmt, For):
            self.use(stmt.begin, node)
            self.use(stmt.end, node)
            self.defs[stmt.index.id] = node
            if stmt.parallel:
                node.task_body = True
                node.top_node = None
                self.tasks.append(node)
                nest = [stmt]
                while (len(nest[-1].body.stmts) == 1 and isinstance(nest[-1].body.stmts[0], For)
                       and nest[-1].body.stmts[0].parallel):
                    inner = nest[-1].body.stmts[0]
                    nest.append(inner)
                    self.use(inner.begin, node)
                    self.use(inner.end, node)
                    self.defs[inner.index.id] = node
                node.nest = tuple(nest)
                node.children.append(self.region(nest[-1].body, node, True, node, None, ()))
            else:
                node.children.append(self.region(stmt.body, node, False, reg.task,
                                                 node.top_node, loops + (node,)))
        elif isinstance(stmt, While):
            for s in stmt.cond_body.stmts:
                assert isinstance(s, Instr), "lower_exits leaves only instructions in conditions"
                self.instr(s, node)
            self.use(stmt.cond, node)
            node.children.append(self.region(stmt.body, node, False, reg.task, node.top_node,
                                             loops + (node,)))
        else:
            raise AssertionError(f"unexpected statement {stmt!r}")
        for child in node.children:
            self.collect(child, node)
        if isinstance(stmt, While):
            for s in stmt.cond_body.stmts:
                self.note_var(s, node)  # type: ignore[arg-type]
        return node

    def use(self, v: Value, where: Any) -> None:
        self.uses.setdefault(v.id, []).append(where)

    def note_var(self, instr: Instr, node: Node) -> None:
        if instr.op is Op.STORE_VAR:
            node.stores.add(instr.attrs[0].id)
        elif instr.op is Op.LOAD_VAR:
            node.reads[instr.attrs[0].id] = instr.attrs[0]

    def collect(self, reg: Region, node: Node) -> None:
        for item in reg.items:
            if isinstance(item, Seg):
                for instr in item.instrs:
                    self.note_var(instr, node)
            else:
                node.stores |= item.stores
                node.reads.update(item.reads)

    # -- queries ----------------------------------------------------------------------------

    def where(self, v: Value) -> Any:
        return self.defs.get(v.id)

    def is_top_value(self, v: Value) -> bool:
        """Defined in a top region (or a parameter, or a parallel loop index)."""
        if v.id in self.params:
            return True
        d = self.defs.get(v.id)
        if isinstance(d, Seg):
            return d.region.top
        return isinstance(d, Node) and d.task_body

    def task_of_value(self, v: Value) -> Node | None:
        d = self.defs.get(v.id)
        if isinstance(d, Seg):
            return d.task
        if isinstance(d, Node):
            return d if d.task_body else d.task
        return None

    def straight(self, top: Node) -> bool:
        """Whether the top construct `top` is an if with no loop inside: a thread runs each
        of its statements at most once."""
        if top.stmt_straight is None:
            top.stmt_straight = isinstance(top.stmt, If) and not top.exit and not any(
                n.is_loop or n.task_body for child in top.children for n in nodes(child))
        return top.stmt_straight

    def recomputable(self, v: Value, top_node: Node | None) -> bool:
        """Whether the reverse sweep inside `top_node` can compute `v` again exactly."""
        memo: dict[int, bool] = {}
        return self._recomputable(v, top_node, memo)

    def _recomputable(self, v: Value, top_node: Node | None, memo: dict[int, bool]) -> bool:
        if v.id in memo:
            return memo[v.id]
        if self.is_top_value(v):
            return True
        d = self.defs.get(v.id)
        if isinstance(d, Node):
            ok = isinstance(d.stmt, For) and v.id == d.stmt.index.id  # a loop index
            memo[v.id] = ok
            return ok
        instr = self.instr_of.get(v.id)
        if instr is None:
            return False
        if instr.op is Op.LOAD_VAR:
            ok = top_node is not None and instr.attrs[0].id not in top_node.stores
        elif instr.op in RECOMPUTE_OPS:
            memo[v.id] = False  # cycles cannot happen in SSA; guard anyway
            ok = all(self._recomputable(a, top_node, memo) for a in instr.args)
        else:
            ok = False
        memo[v.id] = ok
        return ok


def walk_regions(reg: Region) -> Any:
    """Every region under `reg` (itself first)."""
    yield reg
    for item in reg.items:
        if isinstance(item, Node):
            for child in item.children:
                yield from walk_regions(child)


def segments(reg: Region) -> Any:
    for r in walk_regions(reg):
        for item in r.items:
            if isinstance(item, Seg):
                yield item


def nodes(reg: Region) -> Any:
    for r in walk_regions(reg):
        for item in r.items:
            if isinstance(item, Node):
                yield item


def stored_vars(seg: Seg) -> list[Var]:
    """Vars stored in `seg`, in order of their first store."""
    out: dict[int, Var] = {}
    for instr in seg.instrs:
        if instr.op is Op.STORE_VAR:
            out.setdefault(instr.attrs[0].id, instr.attrs[0])
    return list(out.values())


def entry_reads(seg: Seg, among: set[int]) -> list[Var]:
    """Vars with ids in `among` that `seg` loads before storing them (its entry state)."""
    out: dict[int, Var] = {}
    stored: set[int] = set()
    for instr in seg.instrs:
        vid = instr.attrs[0].id if instr.op in (Op.LOAD_VAR, Op.STORE_VAR) else None
        if instr.op is Op.STORE_VAR:
            stored.add(vid)  # type: ignore[arg-type]
        elif vid is not None and vid in among and vid not in stored:
            out.setdefault(vid, instr.attrs[0])
    return list(out.values())
