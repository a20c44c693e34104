"""A binary SPIR-V module writer: types, constants, decorations, functions and structured
control flow, assembled into the words a Vulkan driver loads.

The writer knows SPIR-V's layout and its structured-control-flow rules, not qdarray's IR: the
SPIR-V renderer drives it. Types and constants are interned (one id per distinct type or
value), function-scope variables are hoisted to the entry block, and control flow is built
only through `Function.if_` and `Function.loop`, which place `OpSelectionMerge` /
`OpLoopMerge` where the rules require them; `Loop.break_` and `Loop.continue_` are structured
exits (branches to the loop's merge block and continue target). Every module the test suite
builds is checked by `spirv-val` (tests/vulkan/test_spirv_module.py).

Example::

    m = Module()
    m.capability(Cap.Shader)
    f = m.function(m.t_void(), "main")
    ...
    words = m.assemble()
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .control import Loop, LoopGuard, Selection
from .enums import SC, Cap, Dec, Op

MAGIC = 0x07230203
_FLOAT_ARITH = frozenset({Op.FAdd, Op.FSub, Op.FMul, Op.FDiv, Op.FRem, Op.FMod, Op.FNegate})
_GLSL_FMA = 50  # GLSL.std.450's Fma
GENERATOR = 0  # no registered generator id
GLSL_STD_450 = "GLSL.std.450"


def _string_words(s: str) -> list[int]:
    data = s.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _instr(opcode: int, operands: list[int]) -> list[int]:
    return [((len(operands) + 1) << 16) | opcode, *operands]


class Module:
    """One SPIR-V module under construction (see the module docstring)."""

    def __init__(self, version: tuple[int, int] = (1, 3)) -> None:
        self.version = version
        self._bound = 1
        self._caps: list[int] = []
        self._exts: list[str] = []
        self._imports: dict[str, int] = {}
        self._entries: list[list[int]] = []
        self._modes: list[list[int]] = []
        self._names: list[list[int]] = []
        self._decorations: list[list[int]] = []
        self._globals: list[list[int]] = []  # types, constants, global variables, in order
        self._functions: list[Function] = []
        self._types: dict[tuple[Any, ...], int] = {}
        self._consts: dict[tuple[Any, ...], int] = {}
        self.type_of: dict[int, tuple[Any, ...]] = {}  # type id -> its interning key
        self.exact = True  # float arithmetic decorated NoContraction (Function.op)

    def new_id(self) -> int:
        n = self._bound
        self._bound += 1
        return n

    # -- module-level declarations -----------------------------------------------------------

    def capability(self, cap: Cap) -> None:
        if cap not in self._caps:
            self._caps.append(cap)

    def extension(self, name: str) -> None:
        if name not in self._exts:
            self._exts.append(name)

    def ext_import(self, name: str = GLSL_STD_450) -> int:
        if name not in self._imports:
            self._imports[name] = self.new_id()
        return self._imports[name]

    def name(self, target: int, text: str) -> None:
        self._names.append(_instr(Op.Name, [target, *_string_words(text)]))

    def decorate(self, target: int, decoration: Dec, *literals: int) -> None:
        self._decorations.append(_instr(Op.Decorate, [target, decoration, *literals]))

    def member_decorate(self, struct_id: int, member: int, decoration: Dec,
                        *literals: int) -> None:
        self._decorations.append(
            _instr(Op.MemberDecorate, [struct_id, member, decoration, *literals]))

    def entry_point(self, fn: Function, name: str, interface: list[int],
                    local_size: tuple[int, int, int]) -> None:
        """A GLCompute entry point with its workgroup size (execution mode LocalSize)."""
        self._entries.append(_instr(Op.EntryPoint, [5, fn.id, *_string_words(name),
                                                    *interface]))
        self._modes.append(_instr(Op.ExecutionMode, [fn.id, 17, *local_size]))

    # -- types (interned) --------------------------------------------------------------------

    def _type(self, key: tuple[Any, ...], opcode: int, operands: list[int]) -> int:
        found = self._types.get(key)
        if found is not None:
            return found
        tid = self.new_id()
        self._globals.append(_instr(opcode, [tid, *operands]))
        self._types[key] = tid
        self.type_of[tid] = key
        return tid

    def t_void(self) -> int:
        return self._type(("void",), Op.TypeVoid, [])

    def t_bool(self) -> int:
        return self._type(("bool",), Op.TypeBool, [])

    def t_int(self, width: int, signed: bool) -> int:
        return self._type(("int", width, signed), Op.TypeInt, [width, int(signed)])

    def t_float(self, width: int) -> int:
        return self._type(("float", width), Op.TypeFloat, [width])

    def t_vector(self, elem: int, count: int) -> int:
        return self._type(("vec", elem, count), Op.TypeVector, [elem, count])

    def t_array(self, elem: int, length: int, stride: int | None = None) -> int:
        key = ("array", elem, length, stride)
        fresh = key not in self._types
        tid = self._type(key, Op.TypeArray, [elem, self.const(self.t_int(32, False), length)])
        if fresh and stride is not None:
            self.decorate(tid, Dec.ArrayStride, stride)
        return tid

    def t_runtime_array(self, elem: int, stride: int) -> int:
        key = ("rtarray", elem, stride)
        fresh = key not in self._types
        tid = self._type(key, Op.TypeRuntimeArray, [elem])
        if fresh:
            self.decorate(tid, Dec.ArrayStride, stride)
        return tid

    def t_struct(self, members: list[int], offsets: list[int] | None = None,
                 block: bool = False) -> int:
        """A struct; with `offsets` its members get Offset decorations, with `block` the
        struct is a Block (the interface type of a storage buffer or push constant block)."""
        key = ("struct", tuple(members), tuple(offsets or ()), block)
        fresh = key not in self._types
        tid = self._type(key, Op.TypeStruct, list(members))
        if fresh:
            for i, off in enumerate(offsets or ()):
                self.member_decorate(tid, i, Dec.Offset, off)
            if block:
                self.decorate(tid, Dec.Block)
        return tid

    def t_pointer(self, storage: SC, elem: int) -> int:
        return self._type(("ptr", storage, elem), Op.TypePointer, [storage, elem])

    def t_function(self, ret: int, params: list[int]) -> int:
        return self._type(("fn", ret, tuple(params)), Op.TypeFunction, [ret, *params])

    # -- constants (interned) ----------------------------------------------------------------

    def const(self, type_id: int, value: int | float) -> int:
        """A scalar constant of an int or float type (64-bit values take two words)."""
        key = self.type_of[type_id]
        if key[0] == "bool":
            return self.const_bool(bool(value))
        if key[0] == "float":
            width = key[1]
            fmt = {16: "<e", 32: "<f", 64: "<d"}[width]
            raw = struct.pack(fmt, float(value))
        else:
            width, signed = key[1], key[2]
            v = int(value) & ((1 << width) - 1)  # wrapped to the width
            if signed and v >> (width - 1):
                v -= 1 << width
            # Narrow types take one word, sign-extended for signed types.
            raw = v.to_bytes(max(width, 32) // 8, "little", signed=signed)
        raw += b"\0" * (-len(raw) % 4)
        words = list(struct.unpack(f"<{len(raw) // 4}I", raw))
        ckey = ("const", type_id, tuple(words))
        found = self._consts.get(ckey)
        if found is None:
            found = self.new_id()
            self._globals.append(_instr(Op.Constant, [type_id, found, *words]))
            self._consts[ckey] = found
        return found

    def const_bool(self, value: bool) -> int:
        ckey = ("bool", value)
        found = self._consts.get(ckey)
        if found is None:
            found = self.new_id()
            opcode = Op.ConstantTrue if value else Op.ConstantFalse
            self._globals.append(_instr(opcode, [self.t_bool(), found]))
            self._consts[ckey] = found
        return found

    def const_null(self, type_id: int) -> int:
        ckey = ("null", type_id)
        found = self._consts.get(ckey)
        if found is None:
            found = self.new_id()
            self._globals.append(_instr(Op.ConstantNull, [type_id, found]))
            self._consts[ckey] = found
        return found

    def const_composite(self, type_id: int, parts: list[int]) -> int:
        ckey = ("composite", type_id, tuple(parts))
        found = self._consts.get(ckey)
        if found is None:
            found = self.new_id()
            self._globals.append(_instr(Op.ConstantComposite, [type_id, found, *parts]))
            self._consts[ckey] = found
        return found

    # -- global variables and functions ------------------------------------------------------

    def variable(self, pointer_type: int, storage: SC) -> int:
        vid = self.new_id()
        self._globals.append(_instr(Op.Variable, [pointer_type, vid, storage]))
        return vid

    def function(self, ret: int, name: str = "", params: list[int] | None = None) -> Function:
        fn = Function(self, ret, params or [])
        if name:
            self.name(fn.id, name)
        self._functions.append(fn)
        return fn

    # -- assembly ----------------------------------------------------------------------------

    def assemble(self) -> bytes:
        """The module as little-endian SPIR-V words."""
        body: list[int] = []
        for cap in self._caps:
            body += _instr(Op.Capability, [cap])
        for ext in self._exts:
            body += _instr(Op.Extension, _string_words(ext))
        for ext_name, eid in self._imports.items():
            body += _instr(Op.ExtInstImport, [eid, *_string_words(ext_name)])
        body += _instr(Op.MemoryModel, [self._addressing(), 1])  # GLSL450
        for section in (self._entries, self._modes, self._names, self._decorations,
                        self._globals):
            for words in section:
                body += words
        for fn in self._functions:
            body += fn.words()
        major, minor = self.version
        header = [MAGIC, (major << 16) | (minor << 8), GENERATOR, self._bound, 0]
        return struct.pack(f"<{len(header) + len(body)}I", *header, *body)

    def _addressing(self) -> int:
        return 5348 if Cap.PhysicalStorageBufferAddresses in self._caps else 0


class Function:
    """A function body: blocks of instructions, with hoisted function-scope variables."""

    def __init__(self, module: Module, ret: int, params: list[int]) -> None:
        self.m = module
        self.id = module.new_id()
        self.ret = ret
        self.fn_type = module.t_function(ret, params)
        self.params = [module.new_id() for _ in params]
        self._param_types = params
        self._vars: list[list[int]] = []
        self._blocks: list[list[int]] = []  # the instructions of each block, label first
        self._open = True  # the current block has no terminator yet
        self.guard: LoopGuard | None = None  # reports loops a driver ended early
        self.loops = 0  # loop constructs opened so far
        self.label(module.new_id())

    # -- blocks ------------------------------------------------------------------------------

    def label(self, label_id: int) -> None:
        """Start a new block (the current one must be terminated)."""
        self._blocks.append(_instr(Op.Label, [label_id]))
        self._open = True

    @property
    def open(self) -> bool:
        """Whether the current block still takes instructions (no branch or return yet)."""
        return self._open

    def _emit(self, opcode: int, operands: list[int]) -> None:
        if not self._open:  # code after a break, continue or return: an unreachable block
            self.label(self.m.new_id())
        self._blocks[-1] += _instr(opcode, operands)

    def _terminate(self, opcode: int, operands: list[int]) -> None:
        self._emit(opcode, operands)
        self._open = False

    # -- instructions ------------------------------------------------------------------------

    def var(self, pointer_type: int, initializer: int | None = None) -> int:
        """A Function-storage variable, declared at the top of the entry block."""
        vid = self.m.new_id()
        extra = [] if initializer is None else [initializer]
        self._vars.append(_instr(Op.Variable, [pointer_type, vid, SC.Function, *extra]))
        return vid

    def op(self, opcode: int, result_type: int, *operands: int) -> int:
        """An instruction with a result; returns the result id. Float arithmetic is decorated
        NoContraction (`Module.exact`): each operation rounds on its own, as in NumPy, and
        the driver neither fuses nor reassociates it (which would undo the compensated
        sums of exact remainders and Kahan's log1p)."""
        rid = self.m.new_id()
        self._emit(opcode, [result_type, rid, *operands])
        if self.m.exact and opcode in _FLOAT_ARITH:
            self.m.decorate(rid, Dec.NoContraction)
        return rid

    def op_void(self, opcode: int, *operands: int) -> None:
        """An instruction without a result (OpStore, barriers, ...)."""
        self._emit(opcode, list(operands))

    def ext(self, instruction: int, result_type: int, *operands: int) -> int:
        """A GLSL.std.450 extended instruction; decorated NoContraction as float arithmetic
        is (`op`), so that drivers keep it as written: lavapipe folds log(exp(x)) to x
        otherwise, which undoes Kahan's expm1."""
        rid = self.op(Op.ExtInst, result_type, self.m.ext_import(), instruction, *operands)
        if self.m.exact and instruction != _GLSL_FMA:  # an exact Fma may be split in two
            self.m.decorate(rid, Dec.NoContraction)
        return rid

    def load(self, result_type: int, pointer: int, *memory: int) -> int:
        """OpLoad; `memory`: memory operands (e.g. 2, 4 = Aligned 4, which loads through
        PhysicalStorageBuffer pointers need)."""
        return self.op(Op.Load, result_type, pointer, *memory)

    def store(self, pointer: int, value: int, *memory: int) -> None:
        self.op_void(Op.Store, pointer, value, *memory)

    def branch(self, target: int) -> None:
        self._terminate(Op.Branch, [target])

    def ret_void(self) -> None:
        self._terminate(Op.Return, [])

    def ret_value(self, value: int) -> None:
        self._terminate(Op.ReturnValue, [value])

    # -- structured control flow -------------------------------------------------------------

    @contextmanager
    def if_(self, cond: int) -> Iterator[Selection]:
        """`if cond: <then> [else: <else>]` as a selection construct::

            with f.if_(c) as sel:
                ...            # then
                sel.otherwise()
                ...            # else
        """
        sel = Selection(self, cond)
        yield sel
        sel.close()

    @contextmanager
    def loop(self) -> Iterator[Loop]:
        """A loop construct; the body decides when to leave::

            with f.loop() as lp:
                lp.exit_unless(cond)   # a while-loop's test
                ...                    # body, with lp.break_() / lp.continue_()
                lp.continuing()        # then the continue block (i += 1)
                ...
        """
        self.loops += 1
        lp = Loop(self)
        yield lp
        lp.close()

    def words(self) -> list[int]:
        out = _instr(Op.Function, [self.ret, self.id, 0, self.fn_type])
        for pid, ptype in zip(self.params, self._param_types, strict=True):
            out += _instr(Op.FunctionParameter, [ptype, pid])
        for i, block in enumerate(self._blocks):
            if i == 0:
                out += block[:2]  # the entry label, then the hoisted variables
                for v in self._vars:
                    out += v
                out += block[2:]
            else:
                out += block
        if self._open:
            raise ValueError("SPIR-V function ends in a block without a terminator")
        out += _instr(Op.FunctionEnd, [])
        return out
