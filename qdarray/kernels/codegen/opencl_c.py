"""OpenCL C code generator: `render_opencl_c(kernel) -> str`, one program per kernel.

A kernel's top-level statements are split into *stages* (`plan`), each one OpenCL kernel
launched in order on one in-order queue:

- a parallel loop (or `qd.ndrange` nest) is a parallel stage: one work-item per iteration
  (per index tuple), the flat work-item id decomposed into the loop indices;
- each run of other top-level statements is a serial stage, launched as a single work-item;
- top-level pure instructions computable from the parameters alone (shapes, scalars,
  constants and arithmetic on them) are recomputed in every stage and on the host, which
  computes the parallel trip counts from them;
- values and locals a serial stage defines and a later stage reads travel through a small
  `carry` buffer (each slot 64 bits: integers sign- or zero-extended, floats by their bits).

Arrays are (pointer, element offset, shape, strides in elements), so any view works. Atomics
are native for 32-bit integers, `atom_*` for 64-bit integers (cl_khr_int64_*_atomics),
compare-and-swap loops for floats (PoCL and NVIDIA have no float atomics in OpenCL C) and
for 8- and 16-bit integers (on the aligned 32-bit word holding the element). In debug mode
every check writes the error record the CPU target writes ([site + 1, depth, thread, n,
values...]) into a device buffer the launcher reads after the launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .. import error_record
from ..ir import Block, Continue, For, If, Instr, KernelIR, Op, Value, Var, While, walk
from ..types import ArrayType, scalar_type
from .opencl_helpers import CTYPES, PTYPES, atomic_helper, helper_source

# Pure ops the host may evaluate for launch sizes (and every stage recomputes).
HOST_OPS = frozenset({
    Op.CONST, Op.CAST, Op.SHAPE, Op.ADD, Op.SUB, Op.MUL, Op.FLOORDIV, Op.MOD, Op.MIN, Op.MAX,
    Op.NEG, Op.ABS, Op.SELECT, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.NOT,
    Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR})


ABORT = error_record.STAGE  # the error record's slot of 1 + the failed stage


def ct(t: Any) -> str:
    """The C type of a value of dtype `t` in registers."""
    return PTYPES[t.name]


@dataclass
class Stage:
    """One launch: a parallel nest (`loops`) or a run of serial statements (`stmts`)."""

    name: str
    loops: list[For] = field(default_factory=list)
    stmts: list[Any] = field(default_factory=list)


@dataclass
class Plan:
    """How a kernel runs as OpenCL launches (see the module docstring)."""

    host: list[Instr]
    stages: list[Stage]
    carried_values: list[Value]
    carried_vars: list[Var]

    def slot(self, item: Value | Var) -> int:
        if isinstance(item, Var):
            return len(self.carried_values) + self.carried_vars.index(item)
        return self.carried_values.index(item)


def _nest(s: For) -> list[For]:
    loops = [s]
    while (len(loops[-1].body.stmts) == 1 and isinstance(loops[-1].body.stmts[0], For)
           and loops[-1].body.stmts[0].parallel):
        loops.append(loops[-1].body.stmts[0])
    return loops


def plan(kernel: KernelIR) -> Plan:
    """Split the top level of `kernel` into host-computable instructions and stages."""
    known = {p.value.id for p in kernel.params}
    host: list[Instr] = []
    stages: list[Stage] = []
    for s in kernel.body.stmts:
        if (isinstance(s, Instr) and s.op in HOST_OPS and s.result is not None
                and all(a.id in known for a in s.args)):
            known.add(s.result.id)
            host.append(s)
        elif isinstance(s, For) and s.parallel:
            stages.append(Stage(f"qd_stage{len(stages)}", loops=_nest(s)))
        else:
            if not stages or stages[-1].loops:
                stages.append(Stage(f"qd_stage{len(stages)}"))
            stages[-1].stmts.append(s)
    defined: dict[int, int] = {}  # value id -> serial stage index
    stored: set[int] = set()
    vars_: dict[int, Var] = {}
    used_later: dict[int, Value] = {}
    for k, st in enumerate(stages):
        body = Block(tuple(st.stmts)) if not st.loops else st.loops[-1].body
        bounds = [v for f in st.loops for v in (f.begin, f.end)]
        for v in bounds:
            if v.id in defined:
                used_later[v.id] = v
        for stmt in walk(body):
            if isinstance(stmt, Instr):
                for a in stmt.args:
                    if a.id in defined and defined[a.id] != k:
                        used_later[a.id] = a
                if stmt.op in (Op.LOAD_VAR, Op.STORE_VAR) and not st.loops:
                    vars_[stmt.attrs[0].id] = stmt.attrs[0]
                    if stmt.op is Op.STORE_VAR:
                        stored.add(stmt.attrs[0].id)
            elif isinstance(stmt, (If, While, For)):
                vals = (stmt.cond,) if not isinstance(stmt, For) else (stmt.begin, stmt.end)
                for a in vals:
                    if a.id in defined and defined[a.id] != k:
                        used_later[a.id] = a
        if not st.loops:
            for stmt in st.stmts:
                if isinstance(stmt, Instr) and stmt.result is not None:
                    defined[stmt.result.id] = k
    carried_vars = [vars_[i] for i in sorted(vars_) if i in stored]
    return Plan(host, stages, [used_later[i] for i in sorted(used_later)], carried_vars)


def _const(value: Any, t: Any) -> str:
    if t.kind == "b":
        return "true" if value else "false"
    if t.kind == "f":
        v = float(value)
        suffix = "f" if t.name == "float32" else ""
        if math.isnan(v):
            return f"(({ct(t)})NAN)"
        if math.isinf(v):
            return f"(({ct(t)}){'' if v > 0 else '-'}INFINITY)"
        if t.name == "float32":
            import numpy as np

            v = float(np.float32(v))
        return f"(({ct(t)}){v.hex()}{suffix})"
    v = int(value)
    if t.kind == "u":
        return f"(({ct(t)}){v}UL)"
    if v == -(1 << 63):
        return "((long)(-9223372036854775807L - 1))"
    return f"(({ct(t)}){v}L)"


class Emitter:
    """Emits the C statements of IR regions (see `render_opencl_c`)."""

    def __init__(self, kernel: KernelIR, debug: bool, caps: dict[str, Any],
                 unit: frozenset[int] = frozenset()) -> None:
        self.kernel = kernel
        self.unit = unit
        self.debug = debug
        self.caps = caps
        self.lines: list[str] = []
        self.depth = 1
        self.loop_depth = 0
        self.helpers: dict[str, str] = {}
        self.nest = 0  # parallel loops around the current stage body
        self.stage_no = 0
        self.arrays = {p.value.id: p for p in kernel.params if isinstance(p.value.type,
                                                                            ArrayType)}

    # -- output ------------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    @staticmethod
    def val(v: Value) -> str:
        return f"v{v.id}"

    @staticmethod
    def var(v: Var) -> str:
        return f"l{v.id}"

    def helper(self, name: str, text: str) -> str:
        self.helpers.setdefault(name, text)
        return name

    # -- statements --------------------------------------------------------------------------

    def block(self, block: Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: Any) -> None:
        if isinstance(s, Instr):
            self.instr(s)
        elif isinstance(s, If):
            self.line(f"if ({self.val(s.cond)}) {{")
            self.nested(s.then_body)
            if s.else_body.stmts:
                self.line("} else {")
                self.nested(s.else_body)
            self.line("}")
        elif isinstance(s, For):
            i = f"_i{s.index.id}"
            self.line(f"for (long {i} = (long){self.val(s.begin)}; {i} < (long)"
                      f"{self.val(s.end)}; ++{i}) {{")
            self.loop_depth += 1
            self.depth += 1
            self.line(f"{ct(s.index.type)} {self.val(s.index)} = ({ct(s.index.type)}){i};")
            self.block(s.body)
            self.depth -= 1
            self.loop_depth -= 1
            self.line("}")
        elif isinstance(s, While):
            self.line("while (1) {")
            self.loop_depth += 1
            self.depth += 1
            self.block(s.cond_body)
            self.line(f"if (!{self.val(s.cond)}) break;")
            self.block(s.body)
            self.depth -= 1
            self.loop_depth -= 1
            self.line("}")
        elif isinstance(s, Continue):
            self.line("continue;" if self.loop_depth else "return;")
        else:
            self.line("break;")

    def nested(self, block: Block) -> None:
        self.depth += 1
        self.block(block)
        self.depth -= 1

    def index(self, mem: Value, idx: tuple[Value, ...]) -> str:
        a = f"a{mem.id}"
        last = len(idx) - 1
        parts = [f"{a}_off"] + [f"(long){self.val(i)}" + (
            "" if d == last and mem.id in self.unit else f" * {a}_s{d}")
            for d, i in enumerate(idx)]
        return f"{a}[{' + '.join(parts)}]"

    def instr(self, i: Instr) -> None:
        from .opencl_ops import spell

        text = spell(self, i)
        if i.result is None:
            if text:
                self.line(text)
            return
        t = scalar_type(i.result.type)
        if t.kind == "b":
            self.line(f"bool {self.val(i.result)} = ({text});")
        else:
            self.line(f"{ct(t)} {self.val(i.result)} = ({ct(t)})({text});")

    def check(self, i: Instr) -> None:
        pairs = list(zip(i.args[0::2], i.args[1::2], strict=True))
        if not pairs:  # a 0-d array: nothing to check
            return
        test = " && ".join(f"0 <= (long){self.val(a)} && (long){self.val(a)} < (long)"
                           f"{self.val(n)}" for a, n in pairs)
        self.line(f"if (!({test})) {{")
        self.depth += 1
        r = error_record
        self.line(f"if (atomic_cmpxchg((volatile __global int *)(qd_err + {r.SITE}), 0, "
                  f"{i.attrs[0] + 1}) == 0) {{")
        self.depth += 1
        self.line(f"qd_err[{r.DEPTH}] = {self.nest};")
        for d in range(self.nest):
            self.line(f"qd_err[{r.THREAD + d}] = qd_t{d};")
        self.line(f"qd_err[{r.COUNT}] = {len(i.args)};")
        self.line(f"qd_err[{r.STAGE}] = {self.stage_no + 1};")
        for k, a in enumerate(i.args):
            self.line(f"qd_err[{r.VALUES + k}] = (long){self.val(a)};")
        self.depth -= 1
        self.line("}")
        self.line("return;")
        self.depth -= 1
        self.line("}")

    # -- carry -------------------------------------------------------------------------------

    def load_carried(self, t: Any, k: int) -> str:
        c = f"qd_carry[{k}]"
        if t.kind == "b":
            return f"({c} != 0)"
        if t.name == "float32":
            return f"as_float((uint){c})"
        if t.name == "float64":
            return f"as_double({c})"
        return f"({ct(t)}){c}"

    @staticmethod
    def store_carried(t: Any, k: int, name: str) -> str:
        if t.name == "float32":
            return f"qd_carry[{k}] = (ulong)as_uint({name});"
        if t.name == "float64":
            return f"qd_carry[{k}] = as_ulong({name});"
        if t.kind == "i":
            return f"qd_carry[{k}] = (ulong)(long){name};"
        return f"qd_carry[{k}] = (ulong){name};"


def _signature(kernel: KernelIR, stage: Stage) -> str:
    params = []
    for p in kernel.params:
        t = p.value.type
        n = f"a{p.value.id}"
        if isinstance(t, ArrayType):
            params.append(f"__global {CTYPES[t.dtype.name]} *{n}")
            params.append(f"long {n}_off")
            params += [f"long {n}_n{d}" for d in range(t.ndim)]
            params += [f"long {n}_s{d}" for d in range(t.ndim)]
        else:
            params.append(f"{CTYPES[scalar_type(t).name]} {n}")
    params += ["__global ulong *qd_carry", "__global long *qd_err"]
    for d in range(len(stage.loops)):
        params += [f"long qd_b{d}", f"long qd_n{d}"]
    params.append("long qd_total")
    return f"__kernel void {stage.name}({', '.join(params)})"


def _locals(body: list[Any]) -> dict[int, Var]:
    found: dict[int, Var] = {}
    for s in walk(Block(tuple(body))):
        if isinstance(s, Instr) and s.op in (Op.LOAD_VAR, Op.STORE_VAR):
            found[s.attrs[0].id] = s.attrs[0]
    return found


def _stage(e: Emitter, p: Plan, stage: Stage) -> None:
    kernel = e.kernel
    e.lines.append(_signature(kernel, stage) + "\n{")
    e.depth = 1
    e.nest = len(stage.loops)
    if stage.loops:
        e.line("long qd_gid = get_global_id(0);")
        e.line("if (qd_gid >= qd_total) return;")
    if e.debug:  # a check failed in an earlier stage: the launch stops there
        e.line(f"if (qd_err[{ABORT}] != 0 && qd_err[{ABORT}] != {e.stage_no + 1}) return;")
    for prm in kernel.params:
        t = prm.value.type
        if not isinstance(t, ArrayType):
            t = scalar_type(t)
            conv = f"(a{prm.value.id} != 0)" if t.kind == "b" else f"a{prm.value.id}"
            e.line(f"{ct(t)} {e.val(prm.value)} = {conv};")
    for i in p.host:
        e.instr(i)
    for v in p.carried_values:
        if not stage.loops and any(isinstance(s, Instr) and s.result is not None and
                                   s.result.id == v.id for s in stage.stmts):
            continue
        e.line(f"{ct(v.type)} {e.val(v)} = {e.load_carried(v.type, p.slot(v))};")
    body = stage.loops[-1].body.stmts if stage.loops else stage.stmts
    local_vars = _locals(list(body))
    for var in p.carried_vars:
        local_vars.pop(var.id, None)
        e.line(f"{ct(var.dtype)} {e.var(var)} = {e.load_carried(var.dtype, p.slot(var))};")
    for var in local_vars.values():
        e.line(f"{ct(var.dtype)} {e.var(var)} = 0;")
    if stage.loops:
        e.line("long qd_r = qd_gid;")
        for d in range(len(stage.loops) - 1, 0, -1):
            e.line(f"long qd_t{d} = qd_b{d} + qd_r % qd_n{d};")
            e.line(f"qd_r /= qd_n{d};")
        e.line("long qd_t0 = qd_b0 + qd_r;")  # qd_gid < qd_total: no remainder needed
        for d, f in enumerate(stage.loops):
            e.line(f"{ct(f.index.type)} {e.val(f.index)} = ({ct(f.index.type)})qd_t{d};")
    e.block(Block(tuple(body)))
    if not stage.loops:
        for v in p.carried_values:
            if any(isinstance(s, Instr) and s.result is not None and s.result.id == v.id
                   for s in stage.stmts):
                e.line(e.store_carried(v.type, p.slot(v), e.val(v)))
        for var in p.carried_vars:
            e.line(e.store_carried(var.dtype, p.slot(var), e.var(var)))
    e.lines.append("}\n")


def render_opencl_c(kernel: KernelIR, *, debug: bool = False,
                    caps: dict[str, Any] | None = None,
                    unit_stride: frozenset[int] = frozenset()) -> str:
    """OpenCL C source running `kernel` (views lowered) as the stages of `plan(kernel)`.

    Args:
        kernel: the kernel IR after the compile pipeline (views lowered).
        debug: emit index checks writing the error record.
        caps: device capabilities: "int64_atomics", "int64_minmax" (booleans); atomics
            that need a missing one raise `KernelTypeError` naming `caps["device"]`.
        unit_stride: ids of array parameters whose last axis has stride 1 in this launch:
            their innermost index needs no multiplication, so loops over them vectorize.
    """
    caps = caps or {"int64_atomics": True, "int64_minmax": True, "device": "the device"}
    p = plan(kernel)
    e = Emitter(kernel, debug, caps, unit_stride)
    for k, stage in enumerate(p.stages):
        e.stage_no = k
        _stage(e, p, stage)
    body = "\n".join(e.lines)
    fp64 = any(t == "double" for t in _types(kernel))
    head = [f"// Generated by qdarray for kernel '{kernel.name}' "
            f"({kernel.loc.file}:{kernel.loc.line}). Do not edit."]
    if fp64:
        head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if "atom_" in body or any("atom_" in h for h in e.helpers.values()):
        head.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
        head.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
    return "\n".join(head + [helper_source()] + list(e.helpers.values()) + [body]) + "\n"


def _types(kernel: KernelIR) -> set[str]:
    names: set[str] = set()
    for prm in kernel.params:
        t = prm.value.type
        names.add(PTYPES[scalar_type(t.dtype if isinstance(t, ArrayType) else t).name])
    for s in walk(kernel.body):
        if isinstance(s, Instr) and s.result is not None and not isinstance(
                s.result.type, ArrayType):
            names.add(PTYPES[scalar_type(s.result.type).name])
        elif isinstance(s, For):
            names.add(PTYPES[scalar_type(s.index.type).name])
    return names


__all__ = ["render_opencl_c", "plan", "Plan", "Stage", "HOST_OPS", "atomic_helper"]
