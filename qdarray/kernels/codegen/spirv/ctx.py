"""The state of one SPIR-V stage module under construction (`Ctx`): the module writer, the
current function, the maps from IR values and locals to SPIR-V ids, the open loops, and the
emission of statements and structured control flow. The instructions' spellings (spirv/ops.py's
`emit` and `convert`) come in at construction as its op table (`Spellings`), so the modules
that spell instructions import this one and not the other way round. The stage's entry code and
the program around it are spirv/render.py's."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

from ...._dtypes import DType
from ...ir import Block, Break, Continue, For, If, Instr, KernelIR, Op, Value, While, walk
from ...types import ArrayType
from .control import Loop
from .enums import SC, Cap, Dec
from .enums import Op as S
from .module import Function, Module

_ARRAY_SLOT = re.compile(r"a\d+_(off|s\d+)$")  # an array's offset or stride slot


class Spellings(NamedTuple):
    """How instructions are written: `emit(ctx, instr)` and `convert(ctx, id, src, dst)`."""

    emit: Any
    convert: Any


class Folder(Protocol):
    """What a stage's workgroup-reduced atomics (blocks.Accumulators) offer the
    statement loop."""

    def fold(self, s: Instr) -> bool:
        """Whether `s` was taken into a workgroup accumulator (nothing else to emit)."""
        ...


class Ctx:
    """One stage module under construction: the writer, the current function, the maps from
    IR values and locals to SPIR-V ids, the open loops."""

    def __init__(self, spell: Spellings, kernel: KernelIR, prog_fields: list[tuple[str, str]],
                 offsets: list[int], push: bool, caps: dict[str, Any], debug: bool,
                 wide: frozenset[int], bound: tuple[int, ...]) -> None:
        self.spell = spell
        self.kernel = kernel
        self.wide = wide
        self.narrow = False  # element offsets in 32 bits (every buffer below 2 GiB)
        self.unit: frozenset[int] = frozenset()  # arrays whose last stride is one element
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
        self.acc: Folder | None = None  # its workgroup-reduced atomics
        self.nest = 0
        self.stage_no = 0
        self.i32 = m.t_int(32, True)
        self.i64 = m.t_int(64, True)
        self.u64 = m.t_int(64, False)
        self.bool = m.t_bool()
        # id -> (variable, dtype, ndim) of each array with a buffer (`bound_arrays`)
        self.arrays: dict[int, tuple[int, DType, int]] = {}
        self.as_bits = _cas_arrays(kernel, caps)
        binding = 0
        for p in kernel.params:
            t = p.value.type
            if isinstance(t, ArrayType) and p.value.id in bound:
                elem = self.storage_of(p.value.id, t.dtype)
                self.arrays[p.value.id] = (self._buffer(elem, binding), t.dtype, t.ndim)
                binding += 1
        self.carry = self._buffer(self.u64, binding)
        self.err = self._buffer(self.i64, binding + 1)
        types = [self.scalar(_dt(dt)) for _, dt in prog_fields]
        block = m.t_struct(types, offsets, block=True)
        sc = SC.PushConstant if push else SC.StorageBuffer
        self.block_sc = sc
        self.block = m.variable(m.t_pointer(sc, block), sc)
        if not push:
            m.decorate(self.block, Dec.DescriptorSet, 0)
            m.decorate(self.block, Dec.Binding, binding + 2)
        self.field_index = {name: k for k, (name, _) in enumerate(prog_fields)}
        self.field_type = {name: _dt(dt) for name, dt in prog_fields}
        # Array offsets and strides held in 32 bits (a narrow program: spirv.block_fields).
        self.narrowed = {name for name, dt in prog_fields
                         if dt == "int32" and _ARRAY_SLOT.match(name)}
        self.f: Function = m.function(m.t_void(), "main")
        self.hoisted: dict[tuple[str, bool], int] = {}  # (slot, bits32) -> its value's id

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

    def hoist_fields(self) -> None:
        """Read every slot of a parameter block in a storage buffer at the top of the entry
        block, in the form its uses take (an array's offset and strides in 32 bits in a
        narrow program), so that `field` returns one value everywhere: an access in a loop
        reloads nothing (a driver cannot move a load of a storage buffer past the stores to
        other buffers). Push constants are left where they are used: drivers read them in
        place (hoisted, they held registers across the whole stage and slowed lavapipe's
        forward of the dynamic-loop kernel by a third)."""
        for name in self.field_index:
            array = _ARRAY_SLOT.match(name)
            bits32 = bool(array) and self.narrow and int(name[1:].split("_")[0]) not in self.wide
            self.hoisted[(name, bits32)] = self._field(name, bits32)

    def field(self, name: str, bits32: bool = False) -> int:
        """The value of a parameter-block slot (its slot type; an array's offset or stride
        as int64, or as int32 with `bits32`: exact modulo 2**32)."""
        found = self.hoisted.get((name, bits32))
        return found if found is not None else self._field(name, bits32)

    def _field(self, name: str, bits32: bool) -> int:
        t = self.field_type[name]
        pointer = self.f.op(S.AccessChain, self.ptr(self.block_sc, self.scalar(t)), self.block,
                            self.m.const(self.i32, self.field_index[name]))
        value = self.f.load(self.scalar(t), pointer)
        if bits32:
            return value if name in self.narrowed else self.f.op(S.SConvert, self.i32, value)
        if name in self.narrowed:
            return self.convert(value, _I32, _I64)
        return value

    def convert(self, x: int, src: DType, dst: DType) -> int:
        """`x` of dtype `src` as dtype `dst` (C casts; bool as 0/1)."""
        return self.spell.convert(self, x, src, dst)  # type: ignore[no-any-return]

    def element(self, mem: Value, idx: tuple[Value, ...]) -> tuple[int, int, DType]:
        """(pointer to the element of array `mem` at `idx`, its storage type, its dtype)."""
        f, n = self.f, f"a{mem.id}"
        last = len(idx) - 1 if mem.id in self.unit else -1  # a stride of one: no multiply
        if self.narrow and mem.id not in self.wide:
            # Modulo 2**32 the offset is exact whatever the terms, and it is below 2**31.
            offset = self.field(f"{n}_off", bits32=True)
            for d, i in enumerate(idx):
                ix = self.convert(self.val(i), _itype(i), _I32)
                if d != last:
                    ix = f.op(S.IMul, self.i32, ix, self.field(f"{n}_s{d}", bits32=True))
                offset = f.op(S.IAdd, self.i32, offset, ix)
            return self._pointer(mem, offset)
        offset = self.field(f"{n}_off")
        for d, i in enumerate(idx):
            ix = self.convert(self.val(i), _itype(i), _I64)
            if d != last:
                ix = f.op(S.IMul, self.i64, ix, self.field(f"{n}_s{d}"))
            offset = f.op(S.IAdd, self.i64, offset, ix)
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
            if self.acc is None or not self.acc.fold(s):
                self.spell.emit(self, s)
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


def bound_arrays(kernel: KernelIR) -> tuple[int, ...]:
    """The ids of the array parameters that get a storage buffer, in parameter order: those
    the kernel reads, writes or updates. A parameter only passed through (an unused field of
    a dataclass, a gradient array a reverse kernel does not touch) or whose shape alone it
    reads (SHAPE reads the parameter block) takes none: a kernel with many array parameters
    stays within the device's storage buffers per stage."""
    used = {a.id for s in walk(kernel.body) if isinstance(s, Instr) and s.op is not Op.SHAPE
            for a in s.args if isinstance(a.type, ArrayType)}
    return tuple(p.value.id for p in kernel.params
                 if isinstance(p.value.type, ArrayType) and p.value.id in used)


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
    from .... import _dtypes

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
