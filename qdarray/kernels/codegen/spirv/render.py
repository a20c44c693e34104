"""SPIR-V code generator: `render_spirv(kernel) -> SpirvProgram`, one compute module per stage.

The stages are the OpenCL generator's (`plan`: parallel nests, serial runs, host-computable
instructions recomputed in every stage, values and locals carried between stages in a 64-bit
`carry` buffer). Each stage is a GLCompute module whose interface is:

- bindings 0..n-1 of set 0: one storage buffer per array parameter whose elements the kernel
  reads, writes or updates (`SpirvProgram.bound`; an array whose shape alone it reads, or
  that it does not use, takes none), a runtime array of its element type (bool stored as one
  byte, as in NumPy);
- binding n: the carry buffer (uint64 slots); binding n+1: the debug error record (int64,
  the CPU target's layout);
- a parameter block of slots (`SpirvProgram.fields`): per array its element offset,
  shape and strides (in elements); per scalar its value (bool and 8/16-bit integers as 32
  bits, a complex number as two slots: its real and imaginary parts); then the stage's
  loop begins and trip counts and its total. The 8-byte slots come first, then the 4-byte
  ones (`block_layout`); in a `narrow` program an array's offset and strides are 4-byte
  slots (exact where they matter: see `block_fields`), so the block of a kernel with many
  arrays still fits push constants. It is a push-constant block when it fits the device's
  limit, else a storage buffer at binding n+2.

A parallel stage is a grid-stride loop over the flat index space: invocation `x` of a
one-dimensional dispatch of `groups_x` workgroups of `LOCAL` runs flat indices x,
x + groups_x * LOCAL, ... below the total (the launcher caps the workgroups, so each
invocation may run several), each decoded into the loop indices; a top-level `continue` goes
on with the next. Locals and carried variables start afresh in every iteration. Atomics that
every iteration aims at one element are accumulated per invocation and reduced per workgroup
(spirv/blocks.py). Locals are Function variables, loops and ifs structured constructs
(spirv/module.py, spirv/control.py); statements are emitted by the stage context
(spirv/ctx.py), the op spellings are in spirv/ops.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...._dtypes import DType
from ...error_record import LENGTH as RECORD_LENGTH
from ...ir import Block, Instr, KernelIR
from ...passes.stages import Plan, Stage, plan_stages
from ...types import ArrayType, scalar_type
from ..regions import free_values
from .blocks import Accumulators
from .blocks import plan as plan_blocks
from .control import LoopGuard
from .ctx import _I64, Ctx, Spellings, _dt, _itype, bound_arrays
from .enums import SC, BuiltIn, Dec
from .enums import Op as S
from .ops import convert, emit

LOCAL = 256  # invocations per workgroup: a power of two (workgroup reductions halve it)
# The slot of the error-record buffer (binding n+1) where a stage whose loops the driver cut
# writes caps["loop_guard"] (control.LoopGuard): the one after the debug record.
CUT_SLOT = RECORD_LENGTH

SPELLINGS = Spellings(emit, convert)



@dataclass(frozen=True)
class SpirvStage:
    name: str
    spirv: bytes
    parallel: bool


@dataclass(frozen=True)
class SpirvProgram:
    """The modules of a kernel and the layout of their parameter block."""

    stages: list[SpirvStage]
    fields: list[tuple[str, str]]  # (name, numpy dtype name) of each slot
    offsets: list[int]  # the byte offset of each slot in the block (`block_layout`)
    block_bytes: int
    push: bool  # the block is push constants (else a storage buffer at binding n+2)
    bound: tuple[int, ...]  # ids of the arrays at bindings 0..n-1 (ctx.bound_arrays)
    plan: Plan


def block_fields(kernel: KernelIR, nest: int, wide: frozenset[int] = frozenset(),
                 narrow: bool = False) -> list[tuple[str, str]]:
    """The parameter block's slots (see the module docstring). With `narrow`, an array's
    element offset and strides are int32 slots: where a launcher packs one that does not fit
    it runs the 64-bit program instead (backends/vulkan/target.py), but none that matters
    can miss: in a buffer below 2 GiB, the offset of an element and the stride of a dimension
    of two or more elements are below 2**31 (a stride of a dimension of one element is
    multiplied by index 0 only)."""
    fields: list[tuple[str, str]] = []
    for p in kernel.params:
        t = p.value.type
        n = f"a{p.value.id}"
        if isinstance(t, ArrayType):
            small = "int32" if narrow and p.value.id not in wide else "int64"
            if p.value.id in wide:
                fields.append((f"{n}_addr", "uint64"))
            fields.append((f"{n}_off", small))
            fields += [(f"{n}_n{d}", "int64") for d in range(t.ndim)]
            fields += [(f"{n}_s{d}", small) for d in range(t.ndim)]
        else:
            assert isinstance(t, DType)
            if t.kind == "c":  # a complex scalar: its real and imaginary parts
                part = "float64" if t.itemsize == 16 else "float32"
                fields += [(f"{n}_re", part), (f"{n}_im", part)]
            else:
                fields.append((n, slot_dtype(t)))
    for d in range(nest):
        fields += [(f"qd_b{d}", "int64"), (f"qd_n{d}", "int64")]
    fields.append(("qd_total", "int64"))
    return fields


def block_layout(fields: list[tuple[str, str]]) -> tuple[list[int], int]:
    """(the byte offset of each slot, the block's size): the 8-byte slots in order, then the
    4-byte ones, each at its natural alignment."""
    offsets = [0] * len(fields)
    at = 0
    for size in (8, 4):
        for k, (_, dt) in enumerate(fields):
            if _SLOT_BYTES[dt] == size:
                offsets[k] = at
                at += size
    return offsets, at


_SLOT_BYTES = {"int64": 8, "uint64": 8, "float64": 8, "int32": 4, "uint32": 4, "float32": 4}


def slot_dtype(t: DType) -> str:
    """How a scalar of dtype `t` is stored in the parameter block."""
    if t.kind == "b":
        return "uint32"
    if t.itemsize < 4:
        return "int32" if t.kind == "i" else "uint32"
    return t.name


def _stage_module(kernel: KernelIR, p: Plan, stage: Stage, k: int,
                  fields: list[tuple[str, str]], push: bool, caps: dict[str, Any],
                  debug: bool, wide: frozenset[int], narrow: bool,
                  unit: frozenset[int], aliased: frozenset[int], bound: tuple[int, ...]) -> bytes:
    ctx = Ctx(SPELLINGS, kernel, fields, block_layout(fields)[0], push, caps, debug, wide,
              bound)
    ctx.narrow = narrow
    ctx.unit = unit
    ctx.stage_no = k
    ctx.nest = len(stage.loops)
    m, f = ctx.m, ctx.f
    if not push:  # (push constants: drivers read them in place; hoisted, they hold registers)
        ctx.hoist_fields()
    # No buffer is declared NonWritable, even one the kernel only reads: NVIDIA's driver then
    # reads it through a cache that a launch's barriers did not make coherent with earlier
    # writes (15 gradient tests read stale values on an H200).
    for pid in aliased:
        if pid in ctx.arrays:  # (an array without a buffer is never accessed)
            m.decorate(ctx.arrays[pid][0], Dec.Aliased)
    interface: list[int] = []
    u32 = m.t_int(32, False)
    lid = first = step = 0
    if stage.loops:
        v3 = m.t_vector(u32, 3)
        ids = []
        for builtin in (BuiltIn.GlobalInvocationId, BuiltIn.NumWorkgroups,
                        BuiltIn.LocalInvocationId):
            put = m.variable(ctx.ptr(SC.Input, v3), SC.Input)
            m.decorate(put, Dec.BuiltIn, builtin)
            interface.append(put)
            ids.append(f.op(S.CompositeExtract, u32, f.load(v3, put), 0))
        first = f.op(S.Bitcast, ctx.i64, f.op(S.UConvert, ctx.u64, ids[0]))
        step = f.op(S.Bitcast, ctx.i64, f.op(S.UConvert, ctx.u64, f.op(
            S.IMul, u32, ids[1], m.const(u32, LOCAL))))
        lid = ids[2]
    if caps.get("loop_guard"):
        _guard(ctx, lid, LOCAL if stage.loops else 1, int(caps["loop_guard"]))
    if debug:  # a check failed in an earlier stage: the launch stops there
        from ...error_record import STAGE as ABORT

        aborted = f.load(ctx.i64, ctx.buffer_slot(ctx.err, ctx.i64, m.const(ctx.i32, ABORT)))
        other = f.op(S.LogicalAnd, ctx.bool,
                     f.op(S.INotEqual, ctx.bool, aborted, m.const(ctx.i64, 0)),
                     f.op(S.INotEqual, ctx.bool, aborted, m.const(ctx.i64, k + 1)))
        with f.if_(other):
            f.ret_void()
    for prm in kernel.params:
        t = prm.value.type
        if not isinstance(t, ArrayType):
            assert isinstance(t, DType)
            slot = f"a{prm.value.id}"
            if t.kind == "c":
                ctx.vals[prm.value.id] = f.op(S.CompositeConstruct, ctx.scalar(t),
                                              ctx.field(f"{slot}_re"), ctx.field(f"{slot}_im"))
            else:
                ctx.vals[prm.value.id] = ctx.convert(ctx.field(slot), _dt(slot_dtype(t)), t)
    for i in p.host:
        ctx.stmt(i)
    defined_here = {s.result.id for s in stage.stmts
                    if isinstance(s, Instr) and s.result is not None}
    for v in p.carried_values:
        if not stage.loops and v.id in defined_here:
            continue
        ctx.vals[v.id] = _load_carried(ctx, _itype(v), p.slot(v))
    body = stage.loops[-1].body.stmts if stage.loops else tuple(stage.stmts)
    carried = {var.id: _load_carried(ctx, scalar_type(var.dtype), p.slot(var))
               for var in p.carried_vars}
    grid = acc = None
    if stage.loops:
        outside = {v.id for v in free_values(Block(tuple(body)),
                                             [lp.index for lp in stage.loops])[0]}
        ctx.acc = acc = Accumulators(ctx, plan_blocks(ctx, Block(tuple(body)), outside))
        counter = f.var(ctx.ptr(SC.Function, ctx.i64))
        m.name(counter, "qd_flat")  # 64 bits: the index space may pass 2**31
        f.store(counter, first)
        total = ctx.field("qd_total")
        grid = f.loop()
        lp = ctx.grid = grid.__enter__()
        if not debug:  # the grid-stride loop's guard reports the cuts of its body's loops
            f.guard = None
        ctx.loops.append(lp)
        flat = f.load(ctx.i64, counter)
        lp.exit_unless(f.op(S.SLessThan, ctx.bool, flat, total))
        r = flat
        for d in range(len(stage.loops) - 1, -1, -1):
            begin = ctx.field(f"qd_b{d}")
            if d:
                n = ctx.field(f"qd_n{d}")
                at = f.op(S.IAdd, ctx.i64, begin, f.op(S.SRem, ctx.i64, r, n))
                r = f.op(S.SDiv, ctx.i64, r, n)
            else:
                at = f.op(S.IAdd, ctx.i64, begin, r)
            index = stage.loops[d].index
            ctx.vals[index.id] = ctx.convert(at, _I64, _itype(index))
            ctx.vals[-1 - d] = at  # the thread's index tuple, for the error record
    # Locals and carried variables: afresh in every iteration of a parallel stage.
    local_vars = {v.id: v for v in p.locals(stage)}
    for var in p.carried_vars:
        local_vars.pop(var.id, None)
        ptr = f.var(ctx.ptr(SC.Function, ctx.scalar(scalar_type(var.dtype))))
        f.store(ptr, carried[var.id])
        ctx.vars[var.id] = ptr
    for var in local_vars.values():
        vt = scalar_type(var.dtype)
        ptr = f.var(ctx.ptr(SC.Function, ctx.scalar(vt)))
        f.store(ptr, ctx.const(vt, 0))
        ctx.vars[var.id] = ptr
    ctx.block_(Block(tuple(body)))
    if grid is not None:
        lp.continuing()
        f.store(counter, f.op(S.IAdd, ctx.i64, f.load(ctx.i64, counter), step))
        ctx.loops.pop()
        grid.__exit__(None, None, None)
        ctx.grid = None
        assert acc is not None
        if acc.sums:
            acc.finish(lid, LOCAL)
    else:
        for v in p.carried_values:
            if v.id in defined_here:
                _store_carried(ctx, _itype(v), p.slot(v), ctx.val(v))
        for var in p.carried_vars:
            vt = scalar_type(var.dtype)
            _store_carried(ctx, vt, p.slot(var), f.load(ctx.scalar(vt), ctx.vars[var.id]))
    f.ret_void()
    m.entry_point(f, "main", interface, (LOCAL, 1, 1) if stage.loops else (1, 1, 1))
    if caps.get("loop_guard") and stage.loops and not debug and f.loops == 1:
        # The grid-stride loop is the stage's only loop: an invocation runs it once per item,
        # and the launcher refuses a launch with more items per invocation than the driver's
        # limit (backends/vulkan/target.py), so no guard is needed (its store per item cost
        # lavapipe a third of a saxpy's time).
        return _stage_module(kernel, p, stage, k, fields, push, {**caps, "loop_guard": 0},
                             debug, wide, narrow, unit, aliased, bound)
    return m.assemble()


def _guard(ctx: Ctx, lid: int, local: int, mark: int) -> None:
    """Set the stage's LoopGuard (spirv/control.py): a uint32 per invocation of the
    workgroup (`local` of them, `lid` the invocation's index; 0 alone in a serial stage), and
    `mark` written into the error-record buffer's CUT_SLOT when a loop was cut."""
    m, f = ctx.m, ctx.f
    u32 = m.t_int(32, False)
    words = m.variable(ctx.ptr(SC.Workgroup, m.t_array(u32, local)), SC.Workgroup)
    m.name(words, "qd_left_loop")
    slot = f.op(S.AccessChain, ctx.ptr(SC.Workgroup, u32), words,
                lid if local > 1 else m.const(u32, 0))

    def cut() -> None:
        f.store(ctx.buffer_slot(ctx.err, ctx.i64, m.const(ctx.i32, CUT_SLOT)),
                m.const(ctx.i64, mark))

    f.guard = LoopGuard(f, slot, cut)


def _load_carried(ctx: Ctx, t: DType, k: int) -> int:
    f = ctx.f
    raw = f.load(ctx.u64, ctx.buffer_slot(ctx.carry, ctx.u64, ctx.m.const(ctx.i32, k)))
    if t.kind == "f":
        bits = raw if t.itemsize == 8 else f.op(S.UConvert, ctx.m.t_int(32, False), raw)
        return f.op(S.Bitcast, ctx.scalar(t), bits)
    return ctx.convert(f.op(S.Bitcast, ctx.i64, raw), _I64, t)


def _store_carried(ctx: Ctx, t: DType, k: int, x: int) -> None:
    f = ctx.f
    if t.kind == "f":
        if t.itemsize == 8:
            raw = f.op(S.Bitcast, ctx.u64, x)
        else:
            raw = f.op(S.UConvert, ctx.u64, f.op(S.Bitcast, ctx.m.t_int(32, False), x))
    else:
        raw = f.op(S.Bitcast, ctx.u64, ctx.convert(x, t, _I64))
    f.store(ctx.buffer_slot(ctx.carry, ctx.u64, ctx.m.const(ctx.i32, k)), raw)


def render_spirv(kernel: KernelIR, *, debug: bool = False, caps: dict[str, Any] | None = None,
                 wide: frozenset[int] = frozenset(), narrow: bool = False,
                 unit: frozenset[int] = frozenset(),
                 aliased: frozenset[int] = frozenset()) -> SpirvProgram:
    """The SPIR-V modules running `kernel` (views lowered) as the stages of `plan_stages(kernel)`.

    Args:
        kernel: the kernel IR after the compile pipeline (views lowered).
        debug: emit index checks writing the error record.
        caps: device capabilities: "max_push" (bytes of push constants), "int64_atomics",
            "float32_atomic_add", "float64_atomic_add" (booleans), "device" (its name, for
            errors); ops that need a missing one raise `TypeError` naming the device.
            "loop_guard": a nonzero int on drivers that end long loops early (llvmpipe):
            every loop reports a cut by writing it at CUT_SLOT of the error-record buffer
            (control.LoopGuard).
        wide: ids of array parameters larger than the device binds in one descriptor
            (maxStorageBufferRange): addressed through their device address
            (PhysicalStorageBuffer pointers, the address in the parameter block).
        narrow: every array's buffer is smaller than 2 GiB, so element offsets (below
            2**31) are computed in 32-bit arithmetic, whose wrapping cannot change a result
            that fits (64-bit multiplies cost several instructions on GPUs).
        unit: ids of array parameters whose last dimension has a stride of one element (or
            at most one element): their accesses add the last index without multiplying
            it by the stride slot, as compilers do for C-contiguous arrays.
        aliased: ids of array parameters bound to a buffer that another one is bound to as
            well: decorated Aliased (SPIR-V takes the storage buffers of distinct variables
            not to alias, so a compiler could move a read of one past a write to another).
    """
    caps = caps or {"max_push": 128, "int64_atomics": True, "float32_atomic_add": False,
                    "device": "the device"}
    p = plan_stages(kernel)
    nest = max((len(s.loops) for s in p.stages), default=0)
    fields = block_fields(kernel, nest, wide, narrow)
    offsets, block_bytes = block_layout(fields)
    push = block_bytes <= int(caps.get("max_push", 128))
    bound = bound_arrays(kernel)
    stages = [SpirvStage(s.name, _stage_module(kernel, p, s, k, fields, push, caps, debug, wide,
                                               narrow, unit, aliased, bound),
                         bool(s.loops))
              for k, s in enumerate(p.stages)]
    return SpirvProgram(stages, fields, offsets, block_bytes, push, bound, p)
