"""Which parallel loops the lane renderer (numba/lanes.py) runs in SIMD lanes, and how: the
classification of the body (passes/uniformity.py), its varying locals, and whether a lane
group of a reverse kernel shares one adstack depth (passes/lane_stacks.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import For, Op, Var, instrs
from ...passes.lane_stacks import depth_vars, group_depth
from ...passes.uniformity import Uniformity, uniformity


@dataclass
class LanePlan:
    """How one parallel loop runs in lanes: the classification of its body, the varying
    locals (vectors, zero at the start of a group), and whether a group keeps one adstack
    depth for its lanes (`per_lane` None) or each lane its own (`per_lane`: why)."""

    u: Uniformity
    varying_vars: list[Var]
    stacks: bool = False             # the body pushes or pops adstacks
    per_lane: str | None = None      # why each lane keeps its own depths (lane_stacks.py)


def lane_plan(nest: list[For], reasons: list[str], runs: set[int] | None = None,
              tables: set[int] | None = None) -> LanePlan | None:
    """The plan of the parallel nest `nest` in lanes, or None after adding to `reasons`
    why lanes would not give the scalar code's results; `runs`: the ids of a reverse
    kernel's adstack arrays, whose lane-indexed accesses often form runs (passes/
    uniformity.py); `tables`: those that place each thread's entries in the packed layout
    (a group shares its depths only in the scratch layout, which reads none of them)."""
    body = nest[-1].body
    depths = depth_vars(body, runs) if runs else {}
    u = uniformity(body, [nest[-1].index], runs, set(depths))
    if u.blockers:
        reasons += u.blockers
        return None
    stacks = None
    if depths:
        packed = any(i.op is Op.LOAD and i.args[0].id in (tables or set())
                     for i in instrs(body))
        stacks = ("the adstacks are packed: a table places each thread's entries" if packed
                  else group_depth(body, u, depths))
        if stacks is None:
            u = uniformity(body, [nest[-1].index], runs, set(depths), group=True)
    found: dict[int, Var] = {}
    for i in instrs(body):
        if i.op in (Op.LOAD_VAR, Op.STORE_VAR) and i.attrs[0].id in u.varying_vars:
            found.setdefault(i.attrs[0].id, i.attrs[0])
    return LanePlan(u, [found[k] for k in sorted(found)], bool(depths), stacks)
