"""Dead code elimination for generated reverse kernels, and removal of unused adstacks.

The generator emits freely (every segment is recomputed whole, every stored local gets a
stack); this pass keeps only what the gradients need. It marks what the effects (stores,
atomics, pushes) and the control flow depend on, through locals as well (a local whose
loads feed nothing live is dead, even when it feeds itself in a loop), and sweeps the rest:
unused loads, adstack tops, stores to dead locals, and control statements left empty. A stack
whose top is never read is removed with its pushes and pops.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, For, If, Instr, Op, Stmt, While, operands, walk
from ..ops import OPS

_REMOVABLE = frozenset(op for op, d in OPS.items() if d.pure) | {
    Op.LOAD, Op.LOAD_VAR, Op.ADSTACK_TOP, Op.WORKER, Op.LANE}
_STACK_OPS = (Op.ADSTACK_PUSH, Op.ADSTACK_POP, Op.ADSTACK_TOP)


def _root(i: Instr, drop_stacks: set[int]) -> bool:
    """Kept for its effect: stores, atomics, pushes and pops of kept stacks, checks."""
    if i.op in _STACK_OPS:
        return i.op is not Op.ADSTACK_TOP and i.attrs[0].id not in drop_stacks
    return i.op is not Op.STORE_VAR and i.op not in _REMOVABLE


def _mark(code: list[Any], drop_stacks: set[int], drop_vars: set[int]
          ) -> tuple[set[int], set[int]]:
    """(live value ids, live local ids)."""
    live: set[int] = set()
    live_vars: set[int] = set()
    changed = True
    while changed:
        changed = False
        for s in code:
            if isinstance(s, Instr):
                if s.op is Op.STORE_VAR:
                    var = s.attrs[0].id
                    keep = var in live_vars and var not in drop_vars
                else:
                    keep = (s.result is not None and s.result.id in live) or _root(s, drop_stacks)
                if not keep:
                    continue
                if s.result is not None and s.result.id not in live:
                    live.add(s.result.id)
                    changed = True
                if s.op is Op.LOAD_VAR and s.attrs[0].id not in live_vars:
                    live_vars.add(s.attrs[0].id)
                    changed = True
            elif not isinstance(s, (If, While, For)):
                continue
            for v in operands(s):
                if v.id not in live:
                    live.add(v.id)
                    changed = True
    return live, live_vars


class _Sweep:
    def __init__(self, live: set[int], live_vars: set[int], drop_stacks: set[int],
                 drop_vars: set[int]) -> None:
        self.live = live
        self.live_vars = live_vars
        self.drop_stacks = drop_stacks
        self.drop_vars = drop_vars
        self.removed = 0

    def dead(self, i: Instr) -> bool:
        if i.op in _STACK_OPS and i.attrs[0].id in self.drop_stacks:
            return True
        if i.op is Op.STORE_VAR:
            return i.attrs[0].id not in self.live_vars or i.attrs[0].id in self.drop_vars
        if i.result is not None and i.result.id in self.live:
            return False
        return not _root(i, self.drop_stacks)

    def block(self, b: Block) -> Block:
        out: list[Stmt] = []
        for s in b.stmts:
            if isinstance(s, Instr):
                if self.dead(s):
                    self.removed += 1
                else:
                    out.append(s)
            elif isinstance(s, If):
                then, other = self.block(s.then_body), self.block(s.else_body)
                if then.stmts or other.stmts:
                    out.append(If(s.cond, then, other, s.loc))
                else:
                    self.removed += 1
            elif isinstance(s, For):
                body = self.block(s.body)
                if body.stmts:
                    out.append(For(s.index, s.begin, s.end, body, s.parallel, s.loc))
                else:
                    self.removed += 1
            elif isinstance(s, While):
                body = self.block(s.body)
                pure = all(isinstance(c, Instr) and c.op in _REMOVABLE
                           for c in s.cond_body.stmts)
                if body.stmts or not pure:
                    out.append(While(s.cond_body, s.cond, body, s.loc))
                else:
                    self.removed += 1
            else:
                out.append(s)
        return Block(tuple(out))


def eliminate(body: Block, drop_stacks: frozenset[int] | set[int] = frozenset(),
              drop_vars: frozenset[int] | set[int] = frozenset()) -> Block:
    """`body` without dead code, without the stacks `drop_stacks` (ids) and without stores to
    the locals `drop_vars` (their depth locals)."""
    while True:
        live, live_vars = _mark(list(walk(body)), set(drop_stacks), set(drop_vars))
        sweep = _Sweep(live, live_vars, set(drop_stacks), set(drop_vars))
        body = sweep.block(body)
        if not sweep.removed:
            return body


def stacks_read(body: Block) -> set[int]:
    """Ids of the stacks whose top some instruction reads."""
    return {s.attrs[0].id for s in walk(body)
            if isinstance(s, Instr) and s.op is Op.ADSTACK_TOP}
