"""stages: a kernel as a sequence of launches, for devices that launch grids of threads
(CUDA, OpenCL, Vulkan).

`plan_stages(kernel)` splits the top level of a lowered kernel:

- a parallel loop (or `qd.ndrange` nest) is a parallel stage: one thread per iteration (per
  index tuple of the nest);
- each run of other top-level statements is a serial stage, launched as a single thread;
- top-level pure instructions computable from the parameters alone (ops the host may
  evaluate, `OpDef.host`) are recomputed at the start of every stage, and on the host, which
  computes each parallel stage's trip counts from them;
- values and locals that a serial stage defines and a later stage reads are *carried*:
  stored in the carry slots at the end of the stage that defines them and loaded at the start
  of every other one (each slot 64 bits; a target spells the slots its own way).

The plan is an analysis: the IR is unchanged, and each renderer walks a stage's statements
with the loads and stores the plan lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import Block, For, Instr, KernelIR, Op, Stmt, Value, Var, operands, walk
from ..ops import OPS


def parallel_nest(s: For) -> list[For]:
    """The parallel loops of a nest, outermost first (one loop unless qd.ndrange)."""
    loops = [s]
    while (len(loops[-1].body.stmts) == 1 and isinstance(loops[-1].body.stmts[0], For)
           and loops[-1].body.stmts[0].parallel):
        loops.append(loops[-1].body.stmts[0])
    return loops


@dataclass
class Stage:
    """One launch: a parallel nest (`loops`, outermost first) or a run of serial statements
    (`stmts`)."""

    name: str
    loops: list[For] = field(default_factory=list)
    stmts: list[Stmt] = field(default_factory=list)

    @property
    def body(self) -> tuple[Stmt, ...]:
        """The statements one thread of the stage runs (for a nest, the innermost body)."""
        return self.loops[-1].body.stmts if self.loops else tuple(self.stmts)

    def defines(self) -> set[int]:
        """Ids of the values a serial stage's top-level statements define."""
        return {s.result.id for s in self.stmts if isinstance(s, Instr) and s.result is not None}


@dataclass
class Plan:
    """How a kernel runs as launches (see the module docstring)."""

    host: list[Instr]
    stages: list[Stage]
    carried_values: list[Value]
    carried_vars: list[Var]
    steps: list[tuple[int, Any, Any, tuple[Any, ...], list[int]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # (result id, impl, result type, attrs, argument ids) of each host instruction
        self.steps = [(i.result.id, OPS[i.op].impl, i.result.type, i.attrs,
                       [a.id for a in i.args]) for i in self.host if i.result is not None]

    def evaluate_host(self, env: dict[int, Any]) -> None:
        """Add the values of the host instructions to `env` (value id -> the parameters'
        values, scalars as NumPy scalars and arrays as the launch passes them)."""
        for rid, impl, rtype, attrs, arg_ids in self.steps:
            env[rid] = impl(rtype, attrs, *(env[a] for a in arg_ids))

    def bound(self, v: Value, env: dict[int, Any], carried: Any) -> int:
        """A loop bound's value at launch: computed on the host (`env`), else read from the
        carry slots a serial stage wrote (`carried`, the slots copied to the host as uint64)."""
        if v.id in env:
            return int(env[v.id])
        assert carried is not None, v
        raw = carried[self.slot(v)]
        return int(raw.astype(np.int64)) if getattr(v.type, "kind", "u") == "i" else int(raw)

    def trips(self, stage: Stage, env: dict[int, Any], carried: Any) -> int:
        """The number of threads of a parallel stage (the product of its loops' trip counts)."""
        total = 1
        for f in stage.loops:
            total *= max(self.bound(f.end, env, carried) - self.bound(f.begin, env, carried), 0)
        return total

    def on_host(self, stage: Stage, env: dict[int, Any]) -> bool:
        """Whether the host knows the bounds of `stage`'s loops without the carry slots."""
        return all(v.id in env for f in stage.loops for v in (f.begin, f.end))

    def slot(self, item: Value | Var) -> int:
        """The carry slot of a carried value or local."""
        if isinstance(item, Var):
            return len(self.carried_values) + self.carried_vars.index(item)
        return self.carried_values.index(item)

    @property
    def slots(self) -> int:
        return len(self.carried_values) + len(self.carried_vars)

    def loads(self, stage: Stage) -> list[Value | Var]:
        """What `stage` loads from the carry slots when it starts: the carried values it does
        not define itself, then every carried local."""
        own = stage.defines()
        values: list[Value | Var] = [v for v in self.carried_values if v.id not in own]
        return values + list(self.carried_vars)

    def stores(self, stage: Stage) -> list[Value | Var]:
        """What a serial `stage` stores into the carry slots when it ends: the carried values
        it defines, then every carried local (none for a parallel stage)."""
        if stage.loops:
            return []
        own = stage.defines()
        values: list[Value | Var] = [v for v in self.carried_values if v.id in own]
        return values + list(self.carried_vars)

    def locals(self, stage: Stage) -> list[Var]:
        """The locals `stage` uses that are not carried (each thread's own, from zero)."""
        carried = {v.id for v in self.carried_vars}
        found: dict[int, Var] = {}
        for s in walk(Block(stage.body)):
            if isinstance(s, Instr) and s.op in (Op.LOAD_VAR, Op.STORE_VAR):
                found.setdefault(s.attrs[0].id, s.attrs[0])
        return [v for k, v in found.items() if k not in carried]


def plan_stages(kernel: KernelIR) -> Plan:
    """Split the top level of `kernel` into host-computable instructions and stages."""
    known = {p.value.id for p in kernel.params}
    host: list[Instr] = []
    stages: list[Stage] = []
    for s in kernel.body.stmts:
        if (isinstance(s, Instr) and OPS[s.op].host and s.result is not None
                and all(a.id in known for a in s.args)):
            known.add(s.result.id)
            host.append(s)
        elif isinstance(s, For) and s.parallel:
            stages.append(Stage(f"qd_stage{len(stages)}", loops=parallel_nest(s)))
        else:
            if not stages or stages[-1].loops:
                stages.append(Stage(f"qd_stage{len(stages)}"))
            stages[-1].stmts.append(s)
    defined: dict[int, int] = {}  # value id -> the serial stage defining it
    stored: set[int] = set()
    vars_: dict[int, Var] = {}
    used_later: dict[int, Value] = {}
    for k, st in enumerate(stages):
        for v in (v for f in st.loops for v in (f.begin, f.end)):
            if v.id in defined:
                used_later[v.id] = v
        for stmt in walk(Block(st.body)):
            for a in operands(stmt):
                if a.id in defined and defined[a.id] != k:
                    used_later[a.id] = a
            if (isinstance(stmt, Instr) and stmt.op in (Op.LOAD_VAR, Op.STORE_VAR)
                    and not st.loops):
                vars_[stmt.attrs[0].id] = stmt.attrs[0]
                if stmt.op is Op.STORE_VAR:
                    stored.add(stmt.attrs[0].id)
        if not st.loops:
            for vid in st.defines():
                defined[vid] = k
    carried_vars = [vars_[i] for i in sorted(vars_) if i in stored]
    return Plan(host, stages, [used_later[i] for i in sorted(used_later)], carried_vars)
