"""OpenCL C code generator: `render_opencl_c(kernel) -> str`, one program per kernel.

A kernel runs as the stages of `passes/stages.py`, each one OpenCL kernel launched in order on
one in-order queue:

- a parallel stage runs one work-item per index tuple of its nest: the work-item id is the
  flat index of passes/flatten.py (sizes and decode in IR); work-items past the total end;
- a serial stage runs as a single work-item;
- every stage recomputes the host-computable instructions; values and locals a serial stage
  defines and a later stage reads travel through a small `carry` buffer (each slot 64 bits:
  integers sign- or zero-extended, floats by their bits).

Arrays are (pointer, element offset, shape, strides in elements), so any view works. The op
spellings (atomics, NumPy-exact integer and float division, math) are in c/opencl_ops.py and
c/opencl_helpers.py; the statements are written by the C walker (c/csource.py). In debug mode
every check writes the error record (error_record.py) into a device buffer the launcher reads
after the launch, and a stage after a failed one does nothing.
"""

from __future__ import annotations

from typing import Any

from ... import error_record
from ...ir import For, Instr, KernelIR, Value, Var, walk
from ...passes.flatten import flatten_nests
from ...passes.stages import Plan, Stage, plan_stages
from ...types import ArrayType, scalar_type
from .csource import CSourceEmitter
from .opencl_helpers import CTYPES, PTYPES, ct, helper_source
from .opencl_ops import TABLE

# Carry slots by dtype name (else by kind): (load from slot `{}`, store value `{}`).
_CARRY = {"float32": ("as_float((uint){})", "(ulong)as_uint({})"),
          "float64": ("as_double({})", "as_ulong({})")}
_CARRY_KIND: dict[str, tuple[str | None, str]] = {
    "b": ("({} != 0)", "(ulong){}"), "i": (None, "(ulong)(long){}"), "u": (None, "(ulong){}")}


class OpenCLEmitter(CSourceEmitter):
    """Writes the stage kernels of one kernel (see `render_opencl_c`)."""

    TABLE = TABLE

    def __init__(self, kernel: KernelIR, debug: bool, caps: dict[str, Any],
                 unit: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.kernel = kernel
        self.unit = unit
        self.debug = debug
        self.caps = caps
        self.helpers: dict[str, str] = {}
        self.threads: list[str] = []  # the current thread's index along each loop of its nest
        self.stage_no = 0

    def ctype(self, dtype: Any) -> str:
        return ct(dtype)

    def helper(self, name: str, text: str) -> str:
        self.helpers.setdefault(name, text)
        return name

    def index(self, mem: Value, idx: tuple[Value, ...]) -> str:
        a = f"a{mem.id}"
        last = len(idx) - 1
        parts = [f"{a}_off"] + [f"(long){self.val(i)}" + (
            "" if d == last and mem.id in self.unit else f" * {a}_s{d}")
            for d, i in enumerate(idx)]
        return f"{a}[{' + '.join(parts)}]"

    def check(self, i: Instr) -> None:
        """A failed check claims the error record, fills it and ends the work-item."""
        pairs = list(zip(i.args[0::2], i.args[1::2], strict=True))
        if not pairs:  # a 0-d array: nothing to check
            return
        test = " && ".join(f"0 <= (long){self.val(a)} && (long){self.val(a)} < (long)"
                           f"{self.val(n)}" for a, n in pairs)
        r = error_record
        self.line(f"if (!({test})) {{")
        self.depth += 1
        self.line(f"if (atomic_cmpxchg((volatile __global int *)(qd_err + {r.SITE}), 0, "
                  f"{i.attrs[0] + 1}) == 0) {{")
        self.depth += 1
        self.line(f"qd_err[{r.DEPTH}] = {len(self.threads)};")
        for d, t in enumerate(self.threads):
            self.line(f"qd_err[{r.THREAD + d}] = {t};")
        self.line(f"qd_err[{r.COUNT}] = {len(i.args)};")
        self.line(f"qd_err[{r.STAGE}] = {self.stage_no + 1};")
        for k, a in enumerate(i.args):
            self.line(f"qd_err[{r.VALUES + k}] = (long){self.val(a)};")
        self.depth -= 1
        self.line("}")
        self.line("return;")
        self.depth -= 1
        self.line("}")

    # -- stages -----------------------------------------------------------------------------

    def name(self, item: Value | Var) -> str:
        return self.val(item) if isinstance(item, Value) else self.var(item)

    @staticmethod
    def carry(item: Value | Var) -> tuple[Any, str, str]:
        """(dtype, load spelling, store spelling) of a carried value or local."""
        t = scalar_type(item.type if isinstance(item, Value) else item.dtype)
        if t.kind == "c":  # a slot is 64 bits; namespace kernels carry none between stages
            raise TypeError(f"a {t.name} value cannot travel between stages (64-bit slots)")
        load, store = _CARRY[t.name] if t.name in _CARRY else _CARRY_KIND[t.kind]
        return t, load or f"({ct(t)}){{}}", store

    def load(self, item: Value | Var, slot: int) -> None:
        t, load, _ = self.carry(item)
        self.line(f"{ct(t)} {self.name(item)} = {load.format(f'qd_carry[{slot}]')};")

    def store(self, item: Value | Var, slot: int) -> None:
        _, _, store = self.carry(item)
        self.line(f"qd_carry[{slot}] = {store.format(self.name(item))};")

    def signature(self, stage: Stage) -> str:
        params = []
        for p in self.kernel.params:
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
        return f"__kernel void {stage.name}({', '.join(params)})"

    def stage(self, p: Plan, stage: Stage, flat: Any) -> None:
        self.lines.append(self.signature(stage) + "\n{")
        self.depth = 1
        if self.debug:  # a check failed in an earlier stage: the launch stops there
            stop = error_record.STAGE
            self.line(f"if (qd_err[{stop}] != 0 && qd_err[{stop}] != {self.stage_no + 1}) "
                      "return;")
        for prm in self.kernel.params:
            t = prm.value.type
            if not isinstance(t, ArrayType):
                t = scalar_type(t)
                conv = f"(a{prm.value.id} != 0)" if t.kind == "b" else f"a{prm.value.id}"
                self.line(f"{ct(t)} {self.val(prm.value)} = {conv};")
        for i in p.host:
            self.instr(i)
        for item in p.loads(stage):
            self.load(item, p.slot(item))
        for var in p.locals(stage):
            self.line(f"{ct(var.dtype)} {self.var(var)} = 0;")
        self.threads = []
        if stage.loops:
            for i in flat.sizes:
                self.instr(i)
            self.line(f"long {self.val(flat.flat)} = get_global_id(0);")
            self.line(f"if ({self.val(flat.flat)} >= {self.val(flat.total)}) return;")
            for i in flat.decode:
                self.instr(i)
            self.threads = [self.val(t) for t in flat.threads]
            for f, t in zip(stage.loops, flat.threads, strict=True):
                self.line(f"{ct(f.index.type)} {self.val(f.index)} = "
                          f"({ct(f.index.type)}){self.val(t)};")
        for s in stage.body:
            self.stmt(s)
        for item in p.stores(stage):
            self.store(item, p.slot(item))
        self.lines.append("}\n")


def render_opencl_c(kernel: KernelIR, *, debug: bool = False,
                    caps: dict[str, Any] | None = None,
                    unit_stride: frozenset[int] = frozenset()) -> str:
    """OpenCL C source running `kernel` (views lowered) as the stages of
    `passes.stages.plan_stages(kernel)`, kernels named after the stages.

    Args:
        kernel: the kernel IR after the compile pipeline (views lowered).
        debug: emit index checks writing the error record.
        caps: device capabilities: "int64_atomics", "int64_minmax" (booleans); atomics
            that need a missing one raise `KernelTypeError` naming `caps["device"]`.
        unit_stride: ids of array parameters whose last axis has stride 1 in this launch:
            their innermost index needs no multiplication, so loops over them vectorize.
    """
    caps = caps or {"int64_atomics": True, "int64_minmax": True, "device": "the device"}
    p = plan_stages(kernel)
    flat = flatten_nests(kernel)
    e = OpenCLEmitter(kernel, debug, caps, unit_stride)
    for k, stage in enumerate(p.stages):
        e.stage_no = k
        e.stage(p, stage, flat.get(id(stage.loops[0])) if stage.loops else None)
    body = "\n".join(e.lines)
    fp64 = any(t.startswith("double") for t in _types(kernel))  # double2: complex128
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
