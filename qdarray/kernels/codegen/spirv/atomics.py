"""SPIR-V atomics and the debug index check: native integer atomics (64-bit ones where the
device has shaderBufferInt64Atomics), native float add where VK_EXT_shader_atomic_float has
it, compare-and-swap loops for the rest; the bounds check that writes the error record. Each
takes the stage context (`spirv.Ctx`) and an IR instruction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...._dtypes import DType
from ... import error_record as R
from ...ir import Instr
from .enums import SC, Cap, Scope
from .enums import Op as S
from .numerics import _b, _dt

if TYPE_CHECKING:
    from .ctx import Ctx


def _scope(ctx: Ctx) -> tuple[int, int]:
    u32 = ctx.m.t_int(32, False)
    return ctx.m.const(u32, Scope.Device), ctx.m.const(u32, 0)


def atomic_at(ctx: Ctx, kind: str, pointer: int, storage: int, dtype: DType, v: int) -> int:
    """Atomically update `*pointer` (element dtype `dtype`, declared in the buffer as
    `storage`) with `v`; returns the old value."""
    f, m = ctx.f, ctx.m
    scope, sem = _scope(ctx)
    device = ctx.caps.get("device", "the device")
    if dtype.itemsize == 8 and not ctx.caps.get("int64_atomics", False):
        raise TypeError(f"Atomic {kind} on {dtype.name} needs 64-bit atomics "
                        f"(shaderBufferInt64Atomics), which {device} does not have. Try "
                        "float32 or int32 data for the atomically updated array.")
    if dtype.itemsize == 8:
        m.capability(Cap.Int64Atomics)
    if dtype.itemsize < 4:
        raise TypeError(f"Atomic {kind} on {dtype.name} is not available on {device} yet; "
                        "use an int32 array for the atomically updated values.")
    ty = ctx.scalar(dtype)
    if dtype.kind in "iu":
        op = {"add": S.AtomicIAdd, "min": S.AtomicSMin if dtype.kind == "i" else S.AtomicUMin,
              "max": S.AtomicSMax if dtype.kind == "i" else S.AtomicUMax}[kind]
        return f.op(op, ty, pointer, scope, sem, v)
    native = ctx.caps.get(f"float{dtype.itemsize * 8}_atomic_add", False)
    if kind == "add" and native and storage == ty:
        m.capability(Cap.AtomicFloat32AddEXT if dtype.itemsize == 4 else
                     Cap.AtomicFloat64AddEXT)
        m.extension("SPV_EXT_shader_atomic_float_add")
        return f.op(S.AtomicFAddEXT, ty, pointer, scope, sem, v)
    # A compare-and-swap loop on the bits (the array is declared with integer elements).
    old = f.var(ctx.ptr(SC.Function, storage))
    f.store(old, f.load(storage, pointer, *ctx.memory(pointer)))
    with f.loop() as lp:
        bits = f.load(storage, old)
        cur = f.op(S.Bitcast, ty, bits)
        if kind != "add":
            lp.exit_unless(_b(ctx, S.FOrdLessThan if kind == "min" else S.FOrdGreaterThan,
                              v, cur))
        new = f.op(S.FAdd, ty, cur, v) if kind == "add" else v
        prev = f.op(S.AtomicCompareExchange, storage, pointer, scope, sem, sem,
                    f.op(S.Bitcast, storage, new), bits)
        with f.if_(_b(ctx, S.IEqual, prev, bits)):
            lp.break_()
        f.store(old, prev)
    return f.op(S.Bitcast, ty, f.load(storage, old))


def atomic(kind: str) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        pointer, storage, dtype = ctx.element(i.args[0], i.args[1:-1])
        return atomic_at(ctx, kind, pointer, storage, dtype, ctx.val(i.args[-1]))
    return spell


def _int64() -> DType:
    from .... import _dtypes

    return _dtypes.int64


def check_index(ctx: Ctx, i: Instr) -> None:
    """Debug mode: when an index is outside [0, n), the first failing thread writes the error
    record (the CPU target's layout) and every failing thread returns."""
    pairs = list(zip(i.args[0::2], i.args[1::2], strict=True))
    if not pairs:
        return
    if not ctx.caps.get("int64_atomics", False):
        raise TypeError(f"debug mode records errors with 64-bit atomics "
                        f"(shaderBufferInt64Atomics), which {ctx.caps.get('device')} does not "
                        "have. Run debug mode on another device.")
    ctx.m.capability(Cap.Int64Atomics)
    f, i64 = ctx.f, ctx.i64
    ok = ctx.m.const_bool(True)
    for a, n in pairs:
        av = ctx.convert(ctx.val(a), _dt(a), _int64())
        nv = ctx.convert(ctx.val(n), _dt(n), _int64())
        inside = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.SGreaterThanEqual, av,
                                                  ctx.m.const(i64, 0)),
                      _b(ctx, S.SLessThan, av, nv))
        ok = f.op(S.LogicalAnd, ctx.bool, ok, inside)
    with f.if_(f.op(S.LogicalNot, ctx.bool, ok)):
        scope, sem = _scope(ctx)
        first = ctx.buffer_slot(ctx.err, i64, ctx.m.const(ctx.i32, R.SITE))
        prev = f.op(S.AtomicCompareExchange, i64, first, scope, sem, sem,
                    ctx.m.const(i64, i.attrs[0] + 1), ctx.m.const(i64, 0))
        with f.if_(_b(ctx, S.IEqual, prev, ctx.m.const(i64, 0))):
            def put(k: int, value: int) -> None:
                f.store(ctx.buffer_slot(ctx.err, i64, ctx.m.const(ctx.i32, k)), value)
            put(R.DEPTH, ctx.m.const(i64, ctx.nest))
            for d in range(ctx.nest):
                put(R.THREAD + d, ctx.vals[-1 - d])
            put(R.COUNT, ctx.m.const(i64, len(i.args)))
            put(R.STAGE, ctx.m.const(i64, ctx.stage_no + 1))
            for k, a in enumerate(i.args):
                put(R.VALUES + k, ctx.convert(ctx.val(a), _dt(a), _int64()))
        f.ret_void()
