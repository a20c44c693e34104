"""SPIR-V code generator: `render_spirv(kernel) -> SpirvProgram`, one compute module per stage.

The stages are the OpenCL generator's (`plan`: parallel nests, serial runs, host-computable
instructions recomputed in every stage, values and locals carried between stages in a 64-bit
`carry` buffer). Each stage is a GLCompute module whose interface is:

- bindings 0..n-1 of set 0: one storage buffer per array parameter, a runtime array of its
  element type (bool stored as one byte, as in NumPy);
- binding n: the carry buffer (uint64 slots); binding n+1: the debug error record (int64,
  the CPU target's layout);
- a parameter block of 8-byte slots (`SpirvProgram.fields`): per array its element offset,
  shape and strides (in elements); per scalar its value (bool and 8/16-bit integers as 32
  bits, a complex number as two slots: its real and imaginary parts); then the stage's
  loop begins and trip counts and its total. It is a push-constant block when it fits the
  device's limit, else a storage buffer at binding n+2.

A parallel stage is a grid-stride loop over the flat index space: invocation `x` of a
one-dimensional dispatch of `groups_x` workgroups of `LOCAL` runs flat indices x,
x + groups_x * LOCAL, ... below the total (the launcher caps the workgroups, so each
invocation may run several), each decoded into the loop indices; a top-level `continue` goes
on with the next. Locals and carried variables start afresh in every iteration. Atomics that
every iteration aims at one element are accumulated per invocation and reduced per workgroup
(spirv_blocks.py). Locals are Function variables, loops and ifs structured constructs
(spirv_module.py); the op spellings are in spirv_ops.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._dtypes import DType
from ..ir import Block, Break, Continue, For, If, Instr, KernelIR, Op, Value, While, walk
from ..passes.stages import Plan, Stage, plan_stages
from ..types import ArrayType, scalar_type
from .regions import free_values
from .spirv_blocks import Accumulators
from .spirv_blocks import plan as plan_blocks
from .spirv_enums import SC, BuiltIn, Cap, Dec
from .spirv_enums import Op as S
from .spirv_module import Function, Loop, Module

LOCAL = 256  # invocations per workgroup: a power of two (workgroup reductions halve it)


@dataclass(frozen=True)
class SpirvStage:
    name: str
    spirv: bytes
    parallel: bool


@dataclass(frozen=True)
class SpirvProgram:
    """The modules of a kernel and the layout of their parameter block."""

    stages: list[SpirvStage]
    fields: list[tuple[str, str]]  # (name, numpy dtype name) of each 8-byte slot
    push: bool  # the block is push constants (else a storage buffer at binding n+2)
    n_arrays: int
    plan: Plan


def block_fields(kernel: KernelIR, nest: int,
                 wide: frozenset[int] = frozenset()) -> list[tuple[str, str]]:
    """The parameter block's slots (see the module docstring)."""
    fields: list[tuple[str, str]] = []
    for p in kernel.params:
        t = p.value.type
        n = f"a{p.value.id}"
        if isinstance(t, ArrayType):
            if p.value.id in wide:
                fields.append((f"{n}_addr", "uint64"))
            fields.append((f"{n}_off", "int64"))
            fields += [(f"{n}_n{d}", "int64") for d in range(t.ndim)]
            fields += [(f"{n}_s{d}", "int64") for d in range(t.ndim)]
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


def slot_dtype(t: DType) -> str:
    """How a scalar of dtype `t` is stored in the parameter block."""
    if t.kind == "b":
        return "uint32"
    if t.itemsize < 4:
        return "int32" if t.kind == "i" else "uint32"
    return t.name


class Ctx:
    """One stage module under construction: the writer, the current function, the maps from
    IR values and locals to SPIR-V ids, the open loops."""

    def __init__(self, kernel: KernelIR, prog_fields: list[tuple[str, str]], push: bool,
                 caps: dict[str, Any], debug: bool, wide: frozenset[int]) -> None:
        self.kernel = kernel
        self.wide = wide
        self.aligned: dict[int, int] = {}  # PhysicalStorageBuffer pointer -> its alignment
        self.caps = caps
        self.debug = debug
        m = self.m = Module()
        m.capability(Cap.Shader)
        m.capability(Cap.Int64)
        self.vals: dict[int, int] = {}
        self.vars: dict[int, int] = {}
        self.loops: list[Loop] = []
        self.grid: Loop | None = None  # a parallel stage's grid-stride loop
        self.acc: Accumulators | None = None  # its workgroup-reduced atomics
        self.nest = 0
        self.stage_no = 0
        self.i32 = m.t_int(32, True)
        self.i64 = m.t_int(64, True)
        self.u64 = m.t_int(64, False)
        self.bool = m.t_bool()
        self.arrays: dict[int, tuple[int, DType, int]] = {}  # id -> (variable, dtype, ndim)
        self.as_bits = _cas_arrays(kernel, caps)
        binding = 0
        for p in kernel.params:
            t = p.value.type
            if isinstance(t, ArrayType):
                elem = self.storage_of(p.value.id, t.dtype)
                self.arrays[p.value.id] = (self._buffer(elem, binding), t.dtype, t.ndim)
                binding += 1
        self.carry = self._buffer(self.u64, binding)
        self.err = self._buffer(self.i64, binding + 1)
        types = [self.scalar(_dt(dt)) for _, dt in prog_fields]
        block = m.t_struct(types, [8 * k for k in range(len(types))], block=True)
        sc = SC.PushConstant if push else SC.StorageBuffer
        self.block_sc = sc
        self.block = m.variable(m.t_pointer(sc, block), sc)
        if not push:
            m.decorate(self.block, Dec.DescriptorSet, 0)
            m.decorate(self.block, Dec.Binding, binding + 2)
        self.field_index = {name: k for k, (name, _) in enumerate(prog_fields)}
        self.field_type = {name: _dt(dt) for name, dt in prog_fields}
        self.f: Function = m.function(m.t_void(), "main")

    # -- types and constants -----------------------------------------------------------------

    def scalar(self, t: DType) -> int:
        """The register type of dtype `t` (complex: a 2-vector of its parts' float)."""
        m = self.m
        if t.kind == "b":
            return self.bool
        if t.kind == "c":
            if t.itemsize == 16:
                m.capability(Cap.Float64)
            return m.t_vector(m.t_float(t.itemsize * 4), 2)
        if t.kind == "f":
            if t.itemsize == 8:
                m.capability(Cap.Float64)
            return m.t_float(t.itemsize * 8)
        bits = t.itemsize * 8
        if bits == 8:
            m.capability(Cap.Int8)
        elif bits == 16:
            m.capability(Cap.Int16)
        return m.t_int(bits, t.kind == "i")

    def storage(self, t: DType) -> int:
        """The element type of an array of dtype `t` in its storage buffer."""
        m = self.m
        if t.itemsize == 1:  # bool too: one byte, as in NumPy
            m.capability(Cap.Int8)
            m.capability(Cap.StorageBuffer8BitAccess)
            m.extension("SPV_KHR_8bit_storage")  # core only from SPIR-V 1.5
            if t.kind == "b":
                return m.t_int(8, False)
        elif t.itemsize == 2:
            m.capability(Cap.StorageBuffer16BitAccess)
        return self.scalar(t)

    def const(self, t: DType, value: Any) -> int:
        if t.kind == "b":
            return self.m.const_bool(bool(value))
        if t.kind == "c":
            part = self.m.t_float(t.itemsize * 4)
            c = complex(value)
            return self.m.const_composite(self.scalar(t), [self.m.const(part, c.real),
                                                          self.m.const(part, c.imag)])
        return self.m.const(self.scalar(t), value)

    def ptr(self, sc: SC, type_id: int) -> int:
        return self.m.t_pointer(sc, type_id)

    def _buffer(self, elem: int, binding: int) -> int:
        m = self.m
        size = _bytes(m, elem)
        block = m.t_struct([m.t_runtime_array(elem, size)], [0], block=True)
        var = m.variable(m.t_pointer(SC.StorageBuffer, block), SC.StorageBuffer)
        m.decorate(var, Dec.DescriptorSet, 0)
        m.decorate(var, Dec.Binding, binding)
        return var

    # -- values ------------------------------------------------------------------------------

    def val(self, v: Value) -> int:
        return self.vals[v.id]

    def field(self, name: str) -> int:
        """The value of a parameter-block slot (its slot type)."""
        t = self.field_type[name]
        pointer = self.f.op(S.AccessChain, self.ptr(self.block_sc, self.scalar(t)), self.block,
                            self.m.const(self.i32, self.field_index[name]))
        return self.f.load(self.scalar(t), pointer)

    def convert(self, x: int, src: DType, dst: DType) -> int:
        """`x` of dtype `src` as dtype `dst` (C casts; bool as 0/1)."""
        from .spirv_ops import convert

        return convert(self, x, src, dst)

    def element(self, mem: Value, idx: tuple[Value, ...]) -> tuple[int, int, DType]:
        """(pointer to the element of array `mem` at `idx`, its storage type, its dtype)."""
        f, n = self.f, f"a{mem.id}"
        offset = self.field(f"{n}_off")
        for d, i in enumerate(idx):
            ix = self.convert(self.val(i), _itype(i), _I64)
            offset = f.op(S.IAdd, self.i64, offset,
                          f.op(S.IMul, self.i64, ix, self.field(f"{n}_s{d}")))
        return self._pointer(mem, offset)

    def _pointer(self, mem: Value, offset: int) -> tuple[int, int, DType]:
        var, dtype, _ = self.arrays[mem.id]
        elem = self.storage_of(mem.id, dtype)
        if mem.id not in self.wide:
            pointer = self.f.op(S.AccessChain, self.ptr(SC.StorageBuffer, elem), var,
                                self.m.const(self.i32, 0), offset)
            return pointer, elem, dtype
        # Past the device's binding range: through the buffer's device address.
        m = self.m
        m.capability(Cap.PhysicalStorageBufferAddresses)
        m.extension("SPV_KHR_physical_storage_buffer")
        size = _bytes(m, elem)
        block = m.t_struct([m.t_runtime_array(elem, size)], [0], block=True)
        base = self.f.op(S.ConvertUToPtr, self.ptr(SC.PhysicalStorageBuffer, block),
                         self.field(f"a{mem.id}_addr"))
        pointer = self.f.op(S.AccessChain, self.ptr(SC.PhysicalStorageBuffer, elem), base,
                            m.const(self.i32, 0), offset)
        self.aligned[pointer] = size
        return pointer, elem, dtype

    def memory(self, pointer: int) -> tuple[int, ...]:
        """The memory operands an access through `pointer` needs (Aligned, for device
        addresses)."""
        align = self.aligned.get(pointer)
        return () if align is None else (2, align)

    def storage_of(self, array_id: int, dtype: DType) -> int:
        """The element type array `array_id` is declared with: its dtype's storage type, or
        an unsigned integer of its width where compare-and-swap atomics update it."""
        if array_id in self.as_bits:
            return self.m.t_int(dtype.itemsize * 8, False)
        return self.storage(dtype)

    def load_element(self, pointer: int, storage: int, dtype: DType) -> int:
        raw = self.f.load(storage, pointer, *self.memory(pointer))
        if dtype.kind == "b":
            return self.f.op(S.INotEqual, self.bool, raw, self.m.const(storage, 0))
        if storage != self.scalar(dtype):
            return self.f.op(S.Bitcast, self.scalar(dtype), raw)
        return raw

    def store_element(self, pointer: int, storage: int, dtype: DType, value: int) -> None:
        if dtype.kind == "b":
            value = self.f.op(S.Select, storage, value, self.m.const(storage, 1),
                              self.m.const(storage, 0))
        elif storage != self.scalar(dtype):
            value = self.f.op(S.Bitcast, storage, value)
        self.f.store(pointer, value, *self.memory(pointer))

    def buffer_slot(self, var: int, elem: int, index: int) -> int:
        return self.f.op(S.AccessChain, self.ptr(SC.StorageBuffer, elem), var,
                         self.m.const(self.i32, 0), index)

    # -- statements --------------------------------------------------------------------------

    def block_(self, block: Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: Any) -> None:
        f = self.f
        if isinstance(s, Instr):
            from .spirv_ops import emit

            if self.acc is None or not self.acc.fold(s):
                emit(self, s)
        elif isinstance(s, If):
            with f.if_(self.val(s.cond)) as sel:
                self.block_(s.then_body)
                if s.else_body.stmts:
                    sel.otherwise()
                    self.block_(s.else_body)
        elif isinstance(s, For):
            self.serial_for(s)
        elif isinstance(s, While):
            with f.loop() as lp:
                self.loops.append(lp)
                self.block_(s.cond_body)
                lp.exit_unless(self.val(s.cond))
                self.block_(s.body)
                self.loops.pop()
        elif isinstance(s, Continue) and self.loops:
            self.loops[-1].continue_()
        elif isinstance(s, Break) and self.loops and self.loops[-1] is not self.grid:
            self.loops[-1].break_()
        elif self.loops:  # a break of the parallel body: this iteration is done
            self.loops[-1].continue_()
        else:
            f.ret_void()

    def serial_for(self, s: For) -> None:
        f, m = self.f, self.m
        it = _itype(s.index)
        # The counter's type: 32 bits where both bounds fit int32 (the counter stays within
        # [begin, end], so it cannot overflow); 64 otherwise.
        ct = _I32 if all(_fits_i32(_itype(v)) for v in (s.begin, s.end)) else _I64
        reg = self.scalar(ct)
        counter = f.var(self.ptr(SC.Function, reg))
        f.store(counter, self.convert(self.val(s.begin), _itype(s.begin), ct))
        end = self.convert(self.val(s.end), _itype(s.end), ct)
        with f.loop() as lp:
            self.loops.append(lp)
            i = f.load(reg, counter)
            lp.exit_unless(f.op(S.SLessThan, self.bool, i, end))
            self.vals[s.index.id] = self.convert(i, ct, it)
            self.block_(s.body)
            lp.continuing()
            f.store(counter, f.op(S.IAdd, reg, f.load(reg, counter), m.const(reg, 1)))
            self.loops.pop()


def _cas_arrays(kernel: KernelIR, caps: dict[str, Any]) -> frozenset[int]:
    """Float arrays that atomics update with compare-and-swap loops (min and max always, add
    without native float atomics): declared with unsigned elements of the same width."""
    found: set[int] = set()
    for s in walk(kernel.body):
        if isinstance(s, Instr) and s.op in (Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX):
            mem = s.args[0].type
            assert isinstance(mem, ArrayType)
            if mem.dtype.kind != "f":
                continue
            native = caps.get(f"float{mem.dtype.itemsize * 8}_atomic_add", False)
            if s.op is not Op.ATOMIC_ADD or not native:
                found.add(s.args[0].id)
    return frozenset(found)


def _dt(name: str) -> DType:
    from ... import _dtypes

    return getattr(_dtypes, name)  # type: ignore[no-any-return]


_I64 = _dt("int64")
_I32 = _dt("int32")


def _fits_i32(t: DType) -> bool:
    """Whether every value of integer dtype `t` is an int32."""
    return t.kind in "bi" and t.itemsize <= 4 or t.kind == "u" and t.itemsize <= 2


def _itype(v: Value) -> DType:
    assert isinstance(v.type, DType)
    return v.type


def _bytes(m: Module, type_id: int) -> int:
    key = m.type_of[type_id]
    if key[0] == "vec":  # complex numbers: two floats
        return _bytes(m, key[1]) * int(key[2])
    return max(int(key[1]) // 8, 1)


def _stage_module(kernel: KernelIR, p: Plan, stage: Stage, k: int,
                  fields: list[tuple[str, str]], push: bool, caps: dict[str, Any],
                  debug: bool, wide: frozenset[int]) -> bytes:
    ctx = Ctx(kernel, fields, push, caps, debug, wide)
    ctx.stage_no = k
    ctx.nest = len(stage.loops)
    m, f = ctx.m, ctx.f
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
    if debug:  # a check failed in an earlier stage: the launch stops there
        from ..error_record import STAGE as ABORT

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
    grid = None
    if stage.loops:
        outside = {v.id for v in free_values(Block(tuple(body)),
                                             [lp.index for lp in stage.loops])[0]}
        ctx.acc = Accumulators(ctx, plan_blocks(ctx, Block(tuple(body)), outside))
        counter = f.var(ctx.ptr(SC.Function, ctx.i64))
        m.name(counter, "qd_flat")  # 64 bits: the index space may pass 2**31
        f.store(counter, first)
        total = ctx.field("qd_total")
        grid = f.loop()
        lp = ctx.grid = grid.__enter__()
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
        assert ctx.acc is not None
        if ctx.acc.sums:
            ctx.acc.finish(lid, LOCAL)
    else:
        for v in p.carried_values:
            if v.id in defined_here:
                _store_carried(ctx, _itype(v), p.slot(v), ctx.val(v))
        for var in p.carried_vars:
            vt = scalar_type(var.dtype)
            _store_carried(ctx, vt, p.slot(var), f.load(ctx.scalar(vt), ctx.vars[var.id]))
    f.ret_void()
    m.entry_point(f, "main", interface, (LOCAL, 1, 1) if stage.loops else (1, 1, 1))
    return m.assemble()


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
                 wide: frozenset[int] = frozenset()) -> SpirvProgram:
    """The SPIR-V modules running `kernel` (views lowered) as the stages of `plan(kernel)`.

    Args:
        kernel: the kernel IR after the compile pipeline (views lowered).
        debug: emit index checks writing the error record.
        caps: device capabilities: "max_push" (bytes of push constants), "int64_atomics",
            "float32_atomic_add", "float64_atomic_add" (booleans), "device" (its name, for
            errors); ops that need a missing one raise `TypeError` naming the device.
        wide: ids of array parameters larger than the device binds in one descriptor
            (maxStorageBufferRange): addressed through their device address
            (PhysicalStorageBuffer pointers, the address in the parameter block).
    """
    caps = caps or {"max_push": 128, "int64_atomics": True, "float32_atomic_add": False,
                    "device": "the device"}
    p = plan_stages(kernel)
    nest = max((len(s.loops) for s in p.stages), default=0)
    fields = block_fields(kernel, nest, wide)
    push = 8 * len(fields) <= int(caps.get("max_push", 128))
    n_arrays = sum(isinstance(prm.value.type, ArrayType) for prm in kernel.params)
    stages = [SpirvStage(s.name, _stage_module(kernel, p, s, k, fields, push, caps, debug, wide),
                         bool(s.loops)) for k, s in enumerate(p.stages)]
    return SpirvProgram(stages, fields, push, n_arrays, p)
