"""The SPIR-V spelling of every IR op: `TABLE[op](ctx, instr) -> result id | None`.

Spellings follow NumPy where SPIR-V's own instructions differ: integer division and modulo by
zero give 0 and round toward negative infinity (spirv/numerics.py), float floor division and
remainder are NumPy's divmod, min/max propagate NaN, shifts past the width give 0 (or -1 for
negative signed values), and casts between integers wrap. Transcendental functions are
GLSL.std.450's where drivers' are accurate (float32 exp, exp2, cosh, and sin / cos / tan of
moderate arguments); the rest are qdarray's own: every float64 function and float32 logs in
spirv/libm.py, expm1, log1p and the hyperbolic functions in spirv/expfns.py, the inverse
trigonometric functions and large-argument reduction in spirv/trig.py and spirv/pio2.py, a
single-rounding fma in spirv/fma.py. Atomics (spirv/atomics.py) on 32- and 64-bit integers
are native (64-bit ones need shaderBufferInt64Atomics), float add is native where
VK_EXT_shader_atomic_float is present and a compare-and-swap loop elsewhere, as are float
min/max.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...._dtypes import DType
from ...ir import Instr, Op, Value
from ...ops.complex import part_dtype
from ...ops.math import BINARY, PREDICATES, UNARY
from ...types import ArrayType
from . import atomics, expfns, libm, trig
from . import numerics as num
from .enums import GLSL, SC, Cap, Scope
from .enums import Op as S
from .fma import exact_fma

if TYPE_CHECKING:
    from .ctx import Ctx

_GLSL_UNARY = {
    Op.SIN: GLSL.Sin, Op.COS: GLSL.Cos, Op.TAN: GLSL.Tan, Op.ASIN: GLSL.Asin,
    Op.ACOS: GLSL.Acos, Op.ATAN: GLSL.Atan, Op.SINH: GLSL.Sinh, Op.COSH: GLSL.Cosh,
    Op.TANH: GLSL.Tanh, Op.ASINH: GLSL.Asinh, Op.ACOSH: GLSL.Acosh, Op.ATANH: GLSL.Atanh,
    Op.EXP: GLSL.Exp, Op.EXP2: GLSL.Exp2, Op.LOG: GLSL.Log, Op.LOG2: GLSL.Log2,
    Op.SQRT: GLSL.Sqrt, Op.FLOOR: GLSL.Floor, Op.CEIL: GLSL.Ceil, Op.TRUNC: GLSL.Trunc,
    Op.ROUND: GLSL.RoundEven,
}
# GLSL.std.450 instructions that take float64 too.
_ANY_WIDTH = {GLSL.Sqrt, GLSL.Floor, GLSL.Ceil, GLSL.Trunc, GLSL.RoundEven, GLSL.FAbs,
              GLSL.InverseSqrt, GLSL.FMin, GLSL.FMax}


def rt(i: Instr) -> DType:
    t = i.result.type if i.result is not None else None
    assert isinstance(t, DType), i
    return t


def dt(v: Value) -> DType:
    assert isinstance(v.type, DType), v
    return v.type


def elem(v: Value) -> DType:
    assert isinstance(v.type, ArrayType), v
    return v.type.dtype


def _part(t: DType) -> DType:
    found: DType = part_dtype(t)
    return found


def _complex_convert(ctx: Ctx, x: int, src: DType, dst: DType) -> int:
    """Conversions to and from complex: precision by FConvert of the 2-vector, a real value
    with imaginary part 0, to bool by either part, to a real dtype by the real part (as
    NumPy's cast)."""
    f = ctx.f
    if src.kind == "c" and dst.kind == "c":
        return f.op(S.FConvert, ctx.scalar(dst), x)
    if src.kind == "c":
        ps = _part(src)
        re = f.op(S.CompositeExtract, ctx.scalar(ps), x, 0)
        if dst.kind == "b":
            im = f.op(S.CompositeExtract, ctx.scalar(ps), x, 1)
            return f.op(S.LogicalOr, ctx.bool, convert(ctx, re, ps, dst),
                        convert(ctx, im, ps, dst))
        return convert(ctx, re, ps, dst)
    pd = _part(dst)
    return f.op(S.CompositeConstruct, ctx.scalar(dst), convert(ctx, x, src, pd),
                ctx.const(pd, 0.0))


def convert(ctx: Ctx, x: int, src: DType, dst: DType) -> int:
    """C's conversion of `x` from `src` to `dst` (integers wrap; bool is 0 / 1)."""
    f = ctx.f
    if src is dst:
        return x
    if src.kind == "c" or dst.kind == "c":
        return _complex_convert(ctx, x, src, dst)
    to = ctx.scalar(dst)
    if dst.kind == "b":
        zero = ctx.const(src, 0)
        return f.op(S.FUnordNotEqual if src.kind == "f" else S.INotEqual, to, x, zero)
    if src.kind == "b":
        return f.op(S.Select, to, x, ctx.const(dst, 1), ctx.const(dst, 0))
    if src.kind == "f":
        if dst.kind == "f":
            return f.op(S.FConvert, to, x)
        return f.op(S.ConvertFToS if dst.kind == "i" else S.ConvertFToU, to, x)
    if dst.kind == "f":
        return f.op(S.ConvertSToF if src.kind == "i" else S.ConvertUToF, to, x)
    if src.itemsize == dst.itemsize:
        return f.op(S.Bitcast, to, x)
    if src.kind == "i" and dst.itemsize == 8:
        return _sign_extend_64(ctx, x, src, dst)
    same_sign = ctx.scalar(_int(dst.itemsize, src.kind == "i"))
    op = S.SConvert if src.kind == "i" else S.UConvert
    resized = f.op(op, same_sign, x)
    return resized if same_sign == to else f.op(S.Bitcast, to, resized)


def _sign_extend_64(ctx: Ctx, x: int, src: DType, dst: DType) -> int:
    """`x`, a signed integer narrower than 64 bits, sign-extended to the 64-bit `dst`: zero-
    extended (OpUConvert), shifted up to the top of the 64 bits and arithmetically back down,
    three instructions where OpSConvert is one.

    Mesa 22.3's llvmpipe (lavapipe, the CI's Vulkan device) miscompiles uses of an int64 made
    by OpSConvert from an int32 (any int32: loaded, computed or a push constant): its signed
    comparisons against constants come out constant (c > 0 and c > -1 are true, c < 5 is
    false, for c = 0 and c = -3 alike), so max(c, 0), min(c, 0) and the sign tests of floor
    division are wrong too, while the same value compared against a runtime operand, or
    through a product, is right (tests/vulkan/test_vulkan_int_widening.py). The shift pair
    computes the same value by the SPIR-V spec on every driver; lavapipe computes it right,
    and LLVM, at the end of lavapipe's pipeline and of most drivers', folds it back into one
    sign extension. int8 and int16 sources, and widenings to 32 bits, measured right with
    OpSConvert; every signed widening to 64 bits takes this one form all the same."""
    f, m = ctx.f, ctx.m
    i64 = ctx.scalar(_int(8, True))
    amount = m.const(i64, 64 - 8 * src.itemsize)
    up = f.op(S.ShiftLeftLogical, i64, f.op(S.UConvert, ctx.u64, x), amount)
    wide = f.op(S.ShiftRightArithmetic, i64, up, amount)
    return wide if dst.kind == "i" else f.op(S.Bitcast, ctx.scalar(dst), wide)


def _int(itemsize: int, signed: bool) -> DType:
    from .... import _dtypes

    found: DType = getattr(_dtypes, f"{'' if signed else 'u'}int{itemsize * 8}")
    return found


def _const(ctx: Ctx, i: Instr) -> int:
    value, t = i.attrs
    return ctx.const(t, value)


def _cast(ctx: Ctx, i: Instr) -> int:
    return convert(ctx, ctx.val(i.args[0]), dt(i.args[0]), i.attrs[0])


def _typed(ints: S, uints: S, floats: S, bools: S | None = None) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        t = dt(i.args[0])
        op = {"i": ints, "u": uints, "f": floats, "b": bools}[t.kind]
        assert op is not None, i
        return ctx.f.op(op, ctx.scalar(rt(i)), *(ctx.val(a) for a in i.args))
    return spell


def _ordered(ints: S, uints: S, floats: S, strict: bool, less: bool) -> Any:
    """An order comparison; on bools False < True, as NumPy orders them: a < b is
    `not a and b`, a <= b is `not a or b` (a > b and a >= b swap the operands)."""
    numeric = _typed(ints, uints, floats)

    def spell(ctx: Ctx, i: Instr) -> int:
        if dt(i.args[0]).kind != "b":
            return int(numeric(ctx, i))
        a, b = (ctx.val(x) for x in i.args)
        if not less:
            a, b = b, a
        f = ctx.f
        return f.op(S.LogicalAnd if strict else S.LogicalOr, ctx.bool,
                    f.op(S.LogicalNot, ctx.bool, a), b)
    return spell


# Roundings whose result has the sign of the operand; lavapipe's float64 Trunc and RoundEven
# give +0.0 for -0.0 and -5e-324, so float64 results take the operand's sign bit.
_SIGNED_ROUNDING = {GLSL.Floor, GLSL.Ceil, GLSL.Trunc, GLSL.RoundEven}


def _glsl(inst: GLSL) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        t = rt(i)
        if t.itemsize == 8 and inst not in _ANY_WIDTH:  # GLSL's are 32-bit only
            return libm.UNARY[i.op.name.lower()](ctx, t, ctx.val(i.args[0]))
        if t.itemsize == 8 and inst is GLSL.RoundEven:
            return num.round_even(ctx, t, ctx.val(i.args[0]))
        r = ctx.f.ext(inst, ctx.scalar(t), *(ctx.val(a) for a in i.args))
        if t.itemsize == 8 and inst in _SIGNED_ROUNDING:
            return libm._copysign(ctx, t, r, ctx.val(i.args[0]))
        return r
    return spell


def _select(ctx: Ctx, i: Instr) -> int:
    c, a, b = (ctx.val(x) for x in i.args)
    t = rt(i)
    if t.kind == "c":  # part by part: a scalar condition selects vectors from SPIR-V 1.4 only
        part = ctx.scalar(_part(t))
        re, im = (ctx.f.op(S.Select, part, c, ctx.f.op(S.CompositeExtract, part, a, k),
                           ctx.f.op(S.CompositeExtract, part, b, k)) for k in (0, 1))
        return ctx.f.op(S.CompositeConstruct, ctx.scalar(t), re, im)
    return ctx.f.op(S.Select, ctx.scalar(t), c, a, b)


def _complex(ctx: Ctx, i: Instr) -> int:
    return ctx.f.op(S.CompositeConstruct, ctx.scalar(rt(i)), *(ctx.val(a) for a in i.args))


def _component(k: int) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        return ctx.f.op(S.CompositeExtract, ctx.scalar(rt(i)), ctx.val(i.args[0]), k)
    return spell


def _fma(ctx: Ctx, i: Instr) -> int:
    """a * b + c rounded once: GLSL.std.450's Fma where the driver fuses it (caps
    "fused_fma", probed per device), else emulated (spirv/fma.py; Vulkan lets a driver
    round the product first, and lavapipe does)."""
    args = [ctx.val(a) for a in i.args]
    if ctx.caps.get("fused_fma", True):
        return ctx.f.ext(GLSL.Fma, ctx.scalar(rt(i)), *args)
    return exact_fma(ctx, rt(i), *args)


def _nextafter(ctx: Ctx, i: Instr) -> int:
    """The float next to x toward y, on the bits: one step away from zero when y lies
    beyond x on x's side, else one step toward it; from zero the smallest subnormal with
    y's sign; y where x == y; NaN when either is NaN."""
    t = rt(i)
    f, ty = ctx.f, ctx.scalar(t)
    bits = _int(t.itemsize, False)
    ity = ctx.scalar(bits)
    x, y = (ctx.val(a) for a in i.args)
    xb, yb = f.op(S.Bitcast, ity, x), f.op(S.Bitcast, ity, y)
    zero, one = ctx.const(t, 0.0), ctx.const(bits, 1)
    away = f.op(S.LogicalEqual, ctx.bool, f.op(S.FOrdGreaterThan, ctx.bool, y, x),
                f.op(S.FOrdGreaterThan, ctx.bool, x, zero))
    step = f.op(S.Select, ity, away, f.op(S.IAdd, ity, xb, one), f.op(S.ISub, ity, xb, one))
    sign = ctx.const(bits, 1 << (t.itemsize * 8 - 1))
    tiny = f.op(S.BitwiseOr, ity, f.op(S.BitwiseAnd, ity, yb, sign), one)
    r = f.op(S.Bitcast, ty, step)
    r = f.op(S.Select, ty, f.op(S.FOrdEqual, ctx.bool, x, zero), f.op(S.Bitcast, ty, tiny), r)
    r = f.op(S.Select, ty, f.op(S.FOrdEqual, ctx.bool, x, y), y, r)
    nan = f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, x), f.op(S.IsNan, ctx.bool, y))
    return f.op(S.Select, ty, nan, f.op(S.FAdd, ty, x, y), r)


def _neg(ctx: Ctx, i: Instr) -> int:
    t = rt(i)
    op = S.FNegate if t.kind == "f" else S.SNegate
    return ctx.f.op(op, ctx.scalar(t), ctx.val(i.args[0]))


def _abs(ctx: Ctx, i: Instr) -> int:
    t = rt(i)
    x = ctx.val(i.args[0])
    if t.kind == "u" or t.kind == "b":
        return x
    inst = GLSL.FAbs if t.kind == "f" else GLSL.SAbs
    return ctx.f.ext(inst, ctx.scalar(t), x)


def _load(ctx: Ctx, i: Instr) -> int:
    pointer, storage, dtype = ctx.element(i.args[0], i.args[1:])
    return ctx.load_element(pointer, storage, dtype)


def _store(ctx: Ctx, i: Instr) -> None:
    pointer, storage, dtype = ctx.element(i.args[0], i.args[1:-1])
    ctx.store_element(pointer, storage, dtype, ctx.val(i.args[-1]))


def _shape(ctx: Ctx, i: Instr) -> int:
    return convert(ctx, ctx.field(f"a{i.args[0].id}_n{i.attrs[0]}"), _int(8, True), rt(i))


def _load_var(ctx: Ctx, i: Instr) -> int:
    var = i.attrs[0]
    return ctx.f.load(ctx.scalar(var.dtype), ctx.vars[var.id])


def _store_var(ctx: Ctx, i: Instr) -> None:
    ctx.f.store(ctx.vars[i.attrs[0].id], ctx.val(i.args[0]))


def _rsqrt(ctx: Ctx, i: Instr) -> int:
    t = rt(i)
    root = ctx.f.ext(GLSL.Sqrt, ctx.scalar(t), ctx.val(i.args[0]))
    return ctx.f.op(S.FDiv, ctx.scalar(t), ctx.const(t, 1.0), root)


def _predicate(op: Op) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        f, x = ctx.f, ctx.val(i.args[0])
        if op is Op.ISNAN:
            return f.op(S.IsNan, ctx.bool, x)
        if op is Op.ISINF:
            return f.op(S.IsInf, ctx.bool, x)
        bad = f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, x), f.op(S.IsInf, ctx.bool, x))
        return f.op(S.LogicalNot, ctx.bool, bad)
    return spell


def _unsupported(ctx: Ctx, i: Instr) -> int:
    raise TypeError(f"{i.op.name.lower()} is not available in kernels on "
                    f"{ctx.caps['device']} yet (line {i.loc.line}). Use another device.")


def _stmt(ctx: Ctx, i: Instr) -> None:
    raise AssertionError("structured statements are emitted by the Ctx")


TABLE: dict[Op, Any] = {
    Op.CONST: _const, Op.CAST: _cast, Op.SELECT: _select,
    Op.ADD: _typed(S.IAdd, S.IAdd, S.FAdd), Op.SUB: _typed(S.ISub, S.ISub, S.FSub),
    Op.MUL: _typed(S.IMul, S.IMul, S.FMul), Op.TRUEDIV: num.true_divide,
    Op.FLOORDIV: num.floordiv, Op.MOD: num.mod, Op.POW: num.power, Op.NEG: _neg,
    Op.ABS: _abs, Op.MIN: num.minmax(False), Op.MAX: num.minmax(True),
    Op.BIT_AND: _typed(S.BitwiseAnd, S.BitwiseAnd, S.BitwiseAnd, S.LogicalAnd),
    Op.BIT_OR: _typed(S.BitwiseOr, S.BitwiseOr, S.BitwiseOr, S.LogicalOr),
    Op.BIT_XOR: _typed(S.BitwiseXor, S.BitwiseXor, S.BitwiseXor, S.LogicalNotEqual),
    Op.BIT_NOT: _typed(S.Not, S.Not, S.Not, S.LogicalNot),
    Op.SHL: num.shift, Op.SHR: num.shift,
    Op.NOT: lambda ctx, i: ctx.f.op(S.LogicalNot, ctx.bool, ctx.val(i.args[0])),
    Op.EQ: _typed(S.IEqual, S.IEqual, S.FOrdEqual, S.LogicalEqual),
    Op.NE: _typed(S.INotEqual, S.INotEqual, S.FUnordNotEqual, S.LogicalNotEqual),
    Op.LT: _ordered(S.SLessThan, S.ULessThan, S.FOrdLessThan, True, True),
    Op.LE: _ordered(S.SLessThanEqual, S.ULessThanEqual, S.FOrdLessThanEqual, False, True),
    Op.GT: _ordered(S.SGreaterThan, S.UGreaterThan, S.FOrdGreaterThan, True, False),
    Op.GE: _ordered(S.SGreaterThanEqual, S.UGreaterThanEqual, S.FOrdGreaterThanEqual, False,
                    False),
    Op.COMPLEX: _complex, Op.REAL: _component(0), Op.IMAG: _component(1),
    Op.FMA: _fma, Op.NEXTAFTER: _nextafter,
    Op.LOAD: _load, Op.STORE: _store, Op.SHAPE: _shape,
    Op.LOAD_VAR: _load_var, Op.STORE_VAR: _store_var,
    Op.CHECK_INDEX: atomics.check_index,
    Op.ATOMIC_ADD: atomics.atomic("add"), Op.ATOMIC_MIN: atomics.atomic("min"),
    Op.ATOMIC_MAX: atomics.atomic("max"),
    Op.IF: _stmt, Op.FOR: _stmt, Op.WHILE: _stmt, Op.BREAK: _stmt, Op.CONTINUE: _stmt,
    Op.RSQRT: _rsqrt, Op.SIGN: num.sign, Op.FMOD: num.fmod, Op.COPYSIGN: num.copysign,
    Op.HYPOT: num.hypot, Op.ATAN2: trig.atan2, Op.ATAN: trig.atan, Op.ASIN: trig.asin,
    Op.ACOS: trig.acos, Op.SIN: trig.sin, Op.COS: trig.cos, Op.TAN: trig.tan,
    Op.EXPM1: expfns.expm1, Op.LOG1P: expfns.log1p,
    Op.SINH: expfns.sinh, Op.TANH: expfns.tanh, Op.ASINH: expfns.asinh,
    Op.ATANH: expfns.atanh, Op.ACOSH: expfns.acosh, Op.LOG10: num.log10, Op.CBRT: num.cbrt,
    Op.LOG: lambda ctx, i: libm.log(ctx, rt(i), ctx.val(i.args[0])),
    Op.EXP: lambda ctx, i: libm.exp(ctx, rt(i), ctx.val(i.args[0])),
    Op.COSH: lambda ctx, i: libm.cosh(ctx, rt(i), ctx.val(i.args[0])),
    Op.LOG2: lambda ctx, i: libm.log2(ctx, rt(i), ctx.val(i.args[0])),
}
for _op, _inst in _GLSL_UNARY.items():
    TABLE.setdefault(_op, _glsl(_inst))
for _op in PREDICATES:
    TABLE[_op] = _predicate(_op)
assert set(UNARY) | set(BINARY) <= set(TABLE), set(UNARY) | set(BINARY) - set(TABLE)


def emit(ctx: Ctx, i: Instr) -> None:
    """Emit one instruction; its result (if any) becomes the SPIR-V id of its IR value."""
    result = TABLE[i.op](ctx, i)
    if i.result is not None:
        assert result is not None, i
        ctx.vals[i.result.id] = result


__all__ = ["TABLE", "emit", "convert", "Cap", "SC", "Scope"]
