"""Replayed locals: integer and bool locals of a loop that the reverse computes again.

A top construct that is a `for` loop with no loop inside runs each statement of its body at
most once per iteration. A local of such a loop whose values carry no gradient (an integer
or bool: a neighbour's index, a `continue` flag) and that each iteration assigns before it
reads it is a function of the iteration's index, the kernel's arguments, values in scope and
data the kernel does not write, provided the values it is assigned and the conditions of the
ifs that assign it are. Such a local needs no adstack: the reverse of each iteration first
*replays* the body's computations of these locals (and of the conditions of its ifs, kept in
locals), noting the value each segment starts from, then runs the body's reverse as usual.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._dtypes import DType
from ...kernels.emit import block
from ...kernels.ir import For, If, Op, Value
from .activity import Activity
from .structure import RECOMPUTE_OPS, Node, Region, Seg, Structure, entry_reads, nodes, segments
from .sweep import Env, Sweep


@dataclass
class Replay:
    """What the reverse of one loop's iterations replays."""

    vars: set[int]    # the replayed locals
    conds: set[int]   # id() of the ifs whose conditions the replay keeps in locals


def _integral(dtype: object) -> bool:
    return isinstance(dtype, DType) and dtype.kind in "biu"


def _killed(reg: Region, vid: int, stored: bool = False) -> bool | None:
    """Whether local `vid` is assigned on every path through `reg` (entered with `stored`);
    None where a path may read it before an assignment of the same iteration."""
    for item in reg.items:
        if isinstance(item, Seg):
            for instr in item.instrs:
                if instr.op in (Op.LOAD_VAR, Op.STORE_VAR) and instr.attrs[0].id == vid:
                    if instr.op is Op.LOAD_VAR and not stored:
                        return None
                    stored = True
        elif not item.exit:
            after = [_killed(child, vid, stored) for child in item.children]
            if None in after:
                return None
            stored = all(after)
    return stored


class _Check:
    def __init__(self, st: Structure, top: Node, local: set[int]) -> None:
        self.st, self.top, self.local = st, top, local
        self.memo: dict[int, bool] = {}

    def ok(self, v: Value) -> bool:
        """Whether the replay can compute `v` (a value of the loop's body)."""
        if v.id in self.memo:
            return self.memo[v.id]
        st = self.st
        if st.is_top_value(v):
            return True
        instr = st.instr_of.get(v.id)
        ok: bool
        if instr is None:  # a loop index: only the loop's own
            ok = v.id == self.top.stmt.index.id
        elif instr.op is Op.LOAD_VAR:
            vid = instr.attrs[0].id
            ok = vid not in self.top.stores or vid in self.local
        elif instr.op in RECOMPUTE_OPS:
            self.memo[v.id] = False
            ok = all(self.ok(a) for a in instr.args)
        else:
            ok = False
        self.memo[v.id] = ok
        return ok


def plan(st: Structure, act: Activity, top: Node) -> Replay | None:
    """The replay of the top construct `top`, or None where it replays nothing."""
    if not (isinstance(top.stmt, For) and top.is_loop):
        return None
    body = top.children[0]
    if any(n.is_loop or n.task_body for n in nodes(body)):
        return None
    local = {vid for vid in top.stores if _integral(st.vars[vid].dtype)
             and not act.var(vid) and _killed(body, vid) is not None}
    while True:
        check = _Check(st, top, local)
        bad: set[int] = set()
        for seg in segments(body):
            for instr in seg.instrs:
                if (instr.op is Op.STORE_VAR and instr.attrs[0].id in local
                        and not check.ok(instr.args[0])):
                    bad.add(instr.attrs[0].id)
        for node in nodes(body):
            if not node.exit and not check.ok(node.stmt.cond):
                bad |= node.stores & local
        if not bad:
            break
        local -= bad
    if not local:
        return None
    conds: set[int] = set()

    def walk(reg: Region) -> None:
        for item in reg.items:
            if isinstance(item, Node) and not item.exit and check.ok(item.stmt.cond):
                if not st.recomputable(item.stmt.cond, top):
                    conds.add(id(item))
                for child in item.children:
                    walk(child)

    walk(body)
    return Replay(local, conds)


def emit(gen: Sweep, top: Node, rep: Replay, env: Env) -> None:
    """The replay of one iteration of `top`, in the reverse sweep (`env`: the iteration's,
    with the loop index)."""
    _region(gen, top, rep, top.children[0], env)


def _region(gen: Sweep, top: Node, rep: Replay, reg: Region, parent: Env) -> None:
    em = gen.em
    env = Env(gen, parent, top)
    check = _Check(gen.st, top, rep.vars)
    for item in reg.items:
        if isinstance(item, Seg):
            _entry(gen, rep, item)
            for instr in item.instrs:
                if instr.op is Op.STORE_VAR:
                    if instr.attrs[0].id in rep.vars:
                        with em.at(instr.loc):
                            em.store_var(instr.attrs[0], env.get(instr.args[0]))
                elif instr.op is Op.LOAD_VAR and instr.attrs[0].id in rep.vars:
                    assert instr.result is not None
                    with em.at(instr.loc):
                        env.map[instr.result.id] = em.load_var(instr.attrs[0])
            continue
        if item.exit:
            continue
        cond = item.stmt.cond
        if not check.ok(cond):  # assigns no replayed local: they keep their values inside
            for child in item.children:
                for seg in segments(child):
                    _entry(gen, rep, seg)
            continue
        with em.at(item.stmt.loc):
            c = env.get(cond)
            if id(item) in rep.conds:
                var = gen.cond_copies.setdefault(id(item), gen.copy_var("cond", cond.type))
                em.store_var(var, c)
            kids = []
            for child in item.children:
                with em.region() as out:
                    _region(gen, top, rep, child, env)
                kids.append(out)
            em.stmt(If(c, block(kids[0]), block(kids[1]), item.stmt.loc))


def _entry(gen: Sweep, rep: Replay, seg: Seg) -> None:
    """Copies of the replayed locals `seg` reads before assigning them."""
    em = gen.em
    with em.at(seg.instrs[0].loc):
        for var in entry_reads(seg, rep.vars):
            em.store_var(gen.entry_copy(seg, var), em.load_var(var))
