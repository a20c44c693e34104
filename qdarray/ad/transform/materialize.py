"""materialize: values the reverse sweep cannot have at hand become locals.

The reverse sweep recomputes each segment from its entry state, so a value used outside the
segment that defines it must come back some other way. Three cases:

- a value of a top region used inside a construct (or by another task's threads) and active:
  its adjoint collects contributions from many places, so it becomes a local (the reverse
  adds into the local's adjoint); its value stays available (top regions are in scope);
- a value of a nested segment used by another segment, active or not recomputable: a local,
  which the adstack machinery then saves like any other local;
- anything else used elsewhere (constants, loop indices, loads of inputs, ...) is recomputed
  where it is needed, and uses by construct headers (conditions, loop bounds) are handled by
  the construct itself.

The rewrite stores the value into a new local right after its definition and loads it again
in every other segment that uses it; the result computes the same values.
"""

from __future__ import annotations

from typing import Any

from ...kernels.emit import Emitter, block
from ...kernels.ir import Block, For, If, Instr, KernelIR, Value, Var, While
from .activity import Activity
from .structure import Node, Region, Seg, Structure


def _nested(use: Any, seg: Seg) -> bool:
    region: Region = use.region
    return not region.top or region.task is not seg.task


def _region_top_node(region: Region) -> Node | None:
    return None if region.parent is None else region.parent.top_node


def choose(st: Structure, act: Activity) -> set[int]:
    """The ids of the values to turn into locals."""
    chosen = set()
    for vid, uses in st.uses.items():
        seg = st.defs.get(vid)
        if not isinstance(seg, Seg):
            continue
        cross = [u for u in uses if isinstance(u, Seg) and u is not seg]
        if seg.region.top:
            if act.value(vid) and any(_nested(u, seg) for u in uses):
                chosen.add(vid)
            continue
        if not cross:
            continue
        value = st.instr_of[vid].result
        assert value is not None
        if act.value(vid) or not st.recomputable(value, _region_top_node(seg.region)):
            chosen.add(vid)
    return chosen


class _Rewrite:
    def __init__(self, st: Structure, chosen: set[int], em: Emitter) -> None:
        self.st = st
        self.em = em
        self.locals: dict[int, Var] = {}
        for vid in sorted(chosen):
            instr = st.instr_of[vid]
            self.locals[vid] = em.var(f"expr@{instr.loc.line}", instr.result.type)  # type: ignore[union-attr]

    def region(self, reg: Region) -> Block:
        out: list[Any] = []
        for item in reg.items:
            if isinstance(item, Seg):
                out += self.seg(item)
            else:
                out.append(self.node(item))
        return block(out)

    def seg(self, seg: Seg) -> list[Any]:
        em = self.em
        loaded: dict[int, Value] = {}
        with em.region() as out:
            for instr in seg.instrs:
                args = tuple(self.arg(a, seg, loaded, instr) for a in instr.args)
                if args != instr.args:
                    instr = Instr(instr.op, instr.result, args, instr.attrs, instr.loc)
                em.stmt(instr)
                r = instr.result
                if r is not None and r.id in self.locals:
                    with em.at(instr.loc):
                        em.store_var(self.locals[r.id], r)
        return out

    def arg(self, a: Value, seg: Seg, loaded: dict[int, Value], user: Instr) -> Value:
        var = self.locals.get(a.id)
        if var is None:
            return a
        home = self.st.defs[a.id]
        if home is seg or (home.region.top and not _nested(seg, home)):
            return a
        if a.id not in loaded:
            with self.em.at(user.loc):
                loaded[a.id] = self.em.load_var(var)
        return loaded[a.id]

    def node(self, node: Node) -> Any:
        s = node.stmt
        if node.exit:
            return s
        kids = [self.region(r) for r in node.children]
        if isinstance(s, If):
            return If(s.cond, kids[0], kids[1], s.loc)
        if isinstance(s, For):
            # a task's nest (qd.ndrange): its region is the innermost loop's body
            body = kids[0]
            for f in reversed(node.nest[1:] if node.nest else ()):
                body = block([For(f.index, f.begin, f.end, body, f.parallel, f.loc)])
            return For(s.index, s.begin, s.end, body, s.parallel, s.loc)
        assert isinstance(s, While)
        return While(s.cond_body, s.cond, kids[0], s.loc)


def materialize(kernel: KernelIR, st: Structure, act: Activity, em: Emitter) -> KernelIR:
    """The kernel with the values `choose` picks kept in locals (see the module docstring)."""
    chosen = choose(st, act)
    if not chosen:
        return kernel
    return kernel.replace_body(_Rewrite(st, chosen, em).region(st.root))
