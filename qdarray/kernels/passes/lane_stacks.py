"""lane_stacks: whether a lane group of a reverse kernel can share one adstack depth.

In the scratch layout (ad/transform/adstack.py `scratch_slice`) the entry of depth d of lane k is at
tail_0 + d * G + k: lanes at one depth touch one contiguous run. Each lane keeps its own
depth in general (a varying local: its pushes and pops are scatters and gathers, checked at
run time for runs, numba/lanes_memory.py). A group can keep *one* depth for all its lanes
(a uniform local: every push a masked contiguous store, every pop a contiguous load) when its
lockstep order pushes and pops exactly as each of its deepest lanes does:

- every push and pop (a store of a depth local: depth + 1, depth - 1) is outside varying
  `if`s and inside at most one masked loop (passes/uniformity.py); a uniform loop is no
  masked loop (its lanes run it alike);
- the masked loops that push are start-aligned (a `for` from a uniform start or a `while`,
  its lanes' iterations from the first step on; no push in a masked `while`'s condition, which
  runs once more than its body) and there is at most one of them; the masked loops that pop
  are end-aligned (uniformity.py), so the reverse of a loop runs its steps in the mirror
  order of the forward's lockstep steps, with the same lanes in each;
- the masked loop that pushes or pops is inside no other loop (it runs once per thread): run
  again, it would start at the depth of the lanes that ran the most iterations the time
  before, and its last reverse step would read, for the other lanes, a slot below that they
  never wrote instead of their value from before the loop.

Then the group's depth is at every point the depth of its lanes that have run the most
iterations, at most the capacity the launch sized for one thread; a lane that ran fewer
iterations leaves its slots of the later depths unwritten and never reads them. A kernel
outside these rules keeps per-lane depths (the renderer names the reason in a comment).
"""

from __future__ import annotations

from ..ir import Block, For, If, Instr, Op, Stmt, Var, While, instrs
from .uniformity import Uniformity

_ADDRESS_OPS = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.SELECT, Op.CAST})


def depth_vars(body: Block, runs: set[int]) -> dict[int, Var]:
    """The locals that the indices of accesses to the arrays `runs` (adstack heaps) are
    computed from: the adstacks' depths."""
    defs = {i.result.id: i for i in instrs(body) if i.result is not None}
    out: dict[int, Var] = {}
    for i in instrs(body):
        if i.op not in (Op.LOAD, Op.STORE) or i.args[0].id not in runs:
            continue
        todo = list(i.args[1:] if i.op is Op.LOAD else i.args[1:-1])
        seen: set[int] = set()
        while todo:
            v = todo.pop()
            if v.id in seen:
                continue
            seen.add(v.id)
            d = defs.get(v.id)
            if d is None:
                continue
            if d.op is Op.LOAD_VAR:
                out[d.attrs[0].id] = d.attrs[0]
            elif d.op in _ADDRESS_OPS:
                todo.extend(d.args)
    return out


def group_depth(body: Block, u: Uniformity, depths: dict[int, Var]) -> str | None:
    """None when the lanes of a group can share the adstack depths `depths` (module
    docstring), else why not."""
    defs = {i.result.id: i for i in instrs(body) if i.result is not None}
    pushing: set[int] = set()
    popping: set[int] = set()

    repeated: set[int] = set()  # masked loops inside another loop

    def site(s: Instr, chain: list[For | While], vary: bool) -> str | None:
        d = defs.get(s.args[0].id)
        kind = d.op if d is not None else None
        if kind not in (Op.ADD, Op.SUB):
            if not chain and not vary and u.uniform(s.args[0]):
                return None  # (the depth set when a thread starts)
            return f"a depth set at {s.loc} to something other than depth + 1 or depth - 1"
        if vary:
            return f"an adstack {'push' if kind is Op.ADD else 'pop'} at {s.loc} depends on " \
                   "a branch or a loop condition that lanes take differently"
        if len(chain) > 1:
            return f"an adstack operation at {s.loc} is inside nested loops whose trip " \
                   "counts vary between lanes"
        if not chain:
            return None
        loop = chain[0]
        if id(loop) in repeated:
            return f"the loop at {loop.loc}, whose trip counts vary between lanes, runs " \
                   "inside another loop"
        if kind is Op.ADD:
            if id(loop) in u.end_aligned or (isinstance(loop, For)
                                             and not u.uniform(loop.begin)):
                return f"the loop at {loop.loc} pushes from a start that varies between lanes"
            pushing.add(id(loop))
        else:
            if id(loop) not in u.end_aligned:
                return f"the loop at {loop.loc} pops with its lanes not aligned at their ends"
            popping.add(id(loop))
        return None

    def walk(b: Block, chain: list[For | While], vary: bool, loops: int) -> str | None:
        for s in b.stmts:
            why = stmt(s, chain, vary, loops)
            if why is not None:
                return why
        return None

    def stmt(s: Stmt, chain: list[For | While], vary: bool, loops: int) -> str | None:
        if isinstance(s, Instr):
            if s.op is Op.STORE_VAR and s.attrs[0].id in depths:
                return site(s, chain, vary)
            return None
        if isinstance(s, If):
            inner = vary or not u.uniform(s.cond)
            return (walk(s.then_body, chain, inner, loops)
                    or walk(s.else_body, chain, inner, loops))
        if isinstance(s, (For, While)):
            masked = id(s) in u.masked_loops
            if masked and loops:
                repeated.add(id(s))
            if isinstance(s, While):
                why = walk(s.cond_body, chain, vary or masked, loops + 1)
                if why is not None:
                    return why
            return walk(s.body, chain + [s] if masked else chain, vary, loops + 1)
        return None

    why = walk(body, [], False, 0)
    if why is None and (len(pushing) > 1 or len(popping) > 1):
        why = "more than one loop whose trip counts vary between lanes pushes or pops"
    return why
