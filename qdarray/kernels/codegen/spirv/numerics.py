"""SPIR-V spellings that need more than one instruction: NumPy-exact integer and float floor
division, remainder and power, NaN-propagating min/max, bounded shifts, the float functions
GLSL.std.450 lacks (cbrt, hypot, log10; expm1, log1p and the hyperbolic functions are in
spirv/expfns.py, atomics and the debug index check in spirv/atomics.py). Each takes the
stage context (`spirv.Ctx`) and an IR instruction and returns the SPIR-V id of the result."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...._dtypes import DType, float64
from ...ir import Instr, Op, Value
from . import libm
from .enums import GLSL, SC, Cap
from .enums import Op as S
from .libm import _copysign

if TYPE_CHECKING:
    from .ctx import Ctx


def _rt(i: Instr) -> DType:
    assert i.result is not None and isinstance(i.result.type, DType)
    return i.result.type


def _dt(v: Value) -> DType:
    assert isinstance(v.type, DType)
    return v.type


def _sel(ctx: Ctx, t: int, c: int, a: int, b: int) -> int:
    return ctx.f.op(S.Select, t, c, a, b)


def _b(ctx: Ctx, op: S, a: int, b: int) -> int:
    return ctx.f.op(op, ctx.bool, a, b)


# -- division, remainder, power -----------------------------------------------------------


def _int_divmod(ctx: Ctx, t: DType, a: int, b: int) -> tuple[int, int]:
    """NumPy's (a // b, a % b) for integers: 0 for b == 0, rounding toward -inf, wrapping for
    the minimum // -1. Signed operands go through their magnitudes with OpUDiv / OpUMod: OpSDiv
    and OpSRem of negative operands are not exact on every driver (NVIDIA's differ)."""
    f, ty = ctx.f, ctx.scalar(t)
    zero, one = ctx.const(t, 0), ctx.const(t, 1)
    is_zero = _b(ctx, S.IEqual, b, zero)
    safe = _sel(ctx, ty, is_zero, one, b)
    if t.kind == "u":
        q, r = f.op(S.UDiv, ty, a, safe), f.op(S.UMod, ty, a, safe)
        return _sel(ctx, ty, is_zero, zero, q), _sel(ctx, ty, is_zero, zero, r)
    u = ctx.m.t_int(t.itemsize * 8, False)
    neg_a, neg_b = _b(ctx, S.SLessThan, a, zero), _b(ctx, S.SLessThan, safe, zero)
    mag_a = f.op(S.Bitcast, u, _sel(ctx, ty, neg_a, f.op(S.SNegate, ty, a), a))
    mag_b = f.op(S.Bitcast, u, _sel(ctx, ty, neg_b, f.op(S.SNegate, ty, safe), safe))
    q = f.op(S.Bitcast, ty, f.op(S.UDiv, u, mag_a, mag_b))  # the minimum's magnitude wraps back
    r = f.op(S.Bitcast, ty, f.op(S.UMod, u, mag_a, mag_b))
    q = _sel(ctx, ty, _b(ctx, S.LogicalNotEqual, neg_a, neg_b), f.op(S.SNegate, ty, q), q)
    r = _sel(ctx, ty, neg_a, f.op(S.SNegate, ty, r), r)  # truncated: the sign of a
    # r and b of opposite signs: (r ^ b) < 0 (comparing each sign with 0 goes wrong on
    # lavapipe for a 64-bit b sign-extended from 32 bits)
    fix = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.INotEqual, r, zero),
               _b(ctx, S.SLessThan, f.op(S.BitwiseXor, ty, r, safe), zero))
    q = _sel(ctx, ty, fix, f.op(S.ISub, ty, q, one), q)
    r = _sel(ctx, ty, fix, f.op(S.IAdd, ty, r, safe), r)
    return _sel(ctx, ty, is_zero, zero, q), _sel(ctx, ty, is_zero, zero, r)


def _float_divmod(ctx: Ctx, t: DType, a: int, b: int) -> tuple[int, int]:
    """NumPy's npy_divmod: fmod, the sign fix, floor of the quotient with its rounding fix,
    signed zeros, and a / b (NaN remainder) for b == 0."""
    f, ty = ctx.f, ctx.scalar(t)
    zero, one, half = ctx.const(t, 0.0), ctx.const(t, 1.0), ctx.const(t, 0.5)
    mod = _fmod(ctx, t, a, b)
    div = f.op(S.FDiv, ty, f.op(S.FSub, ty, a, mod), b)
    fix = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.FUnordNotEqual, mod, zero),
               _b(ctx, S.LogicalNotEqual, _b(ctx, S.FOrdLessThan, b, zero),
                  _b(ctx, S.FOrdLessThan, mod, zero)))
    div = _sel(ctx, ty, fix, f.op(S.FSub, ty, div, one), div)
    mod = _sel(ctx, ty, fix, f.op(S.FAdd, ty, mod, b), mod)
    mod = _sel(ctx, ty, _b(ctx, S.FOrdEqual, mod, zero), _copysign(ctx, t, zero, b), mod)
    floor = f.ext(GLSL.Floor, ty, div)
    floor = _sel(ctx, ty, _b(ctx, S.FOrdGreaterThan, f.op(S.FSub, ty, div, floor), half),
                 f.op(S.FAdd, ty, floor, one), floor)
    quotient = f.op(S.FDiv, ty, a, b)
    div = _sel(ctx, ty, _b(ctx, S.FOrdEqual, div, zero), _copysign(ctx, t, zero, quotient),
               floor)
    b_zero = _b(ctx, S.FOrdEqual, b, zero)
    return _sel(ctx, ty, b_zero, quotient, div), mod


def true_divide(ctx: Ctx, i: Instr) -> int:
    """a / b. Vulkan lets OpFDiv be 2.5 ulp off (NVIDIA's float32 division is): a float32
    quotient is computed in float64 where the device has it and rounded once, which is the
    correctly rounded quotient (53 >= 2 * 24 + 2 bits)."""
    t = _rt(i)
    a, b = (ctx.val(x) for x in i.args)
    f, ty = ctx.f, ctx.scalar(t)
    if t.kind in "iu":
        return f.op(S.SDiv if t.kind == "i" else S.UDiv, ty, a, b)
    if t.itemsize == 4 and ctx.caps.get("float64"):
        d = ctx.m.t_float(64)
        ctx.m.capability(Cap.Float64)
        q = f.op(S.FDiv, d, f.op(S.FConvert, d, a), f.op(S.FConvert, d, b))
        return f.op(S.FConvert, ty, q)
    return f.op(S.FDiv, ty, a, b)


def floordiv(ctx: Ctx, i: Instr) -> int:
    t = _rt(i)
    a, b = (ctx.val(x) for x in i.args)
    return (_float_divmod if t.kind == "f" else _int_divmod)(ctx, t, a, b)[0]


def mod(ctx: Ctx, i: Instr) -> int:
    t = _rt(i)
    a, b = (ctx.val(x) for x in i.args)
    return (_float_divmod if t.kind == "f" else _int_divmod)(ctx, t, a, b)[1]


def _fmod(ctx: Ctx, t: DType, a: int, b: int) -> int:
    """C's fmod, exact (OpFRem is x - y * trunc(x / y) on some drivers, off by an ulp):
    long division by subtraction of |b| * 2^k, each step exact (Sterbenz), then a's sign;
    NaN for a = +-inf, b = 0 or NaN operands; a itself when |a| < |b| (b = +-inf too)."""
    f, ty = ctx.f, ctx.scalar(t)
    fv = ctx.ptr(SC.Function, ty)
    half, two = ctx.const(t, 0.5), ctx.const(t, 2.0)
    ax, ay = f.ext(GLSL.FAbs, ty, a), f.ext(GLSL.FAbs, ty, b)
    r = f.var(fv)
    step = f.var(fv)
    f.store(r, ax)
    f.store(step, ay)
    finite = f.op(S.LogicalNot, ctx.bool, f.op(S.LogicalOr, ctx.bool, f.op(
        S.IsInf, ctx.bool, ax), f.op(S.IsNan, ctx.bool, ax)))
    work = f.op(S.LogicalAnd, ctx.bool, finite, _b(ctx, S.FOrdGreaterThanEqual, ax, ay))
    work = f.op(S.LogicalAnd, ctx.bool, work, _b(ctx, S.FOrdGreaterThan, ay, ctx.const(t, 0.0)))
    with f.if_(work):
        with f.loop() as lp:  # the largest |b| * 2^k <= |a|
            tv = f.load(ty, step)
            lp.exit_unless(_b(ctx, S.FOrdLessThanEqual, f.op(S.FMul, ty, tv, two), ax))
            f.store(step, f.op(S.FMul, ty, tv, two))
        with f.loop() as lp:
            tv = f.load(ty, step)
            lp.exit_unless(_b(ctx, S.FOrdGreaterThanEqual, tv, ay))
            rv = f.load(ty, r)
            f.store(r, _sel(ctx, ty, _b(ctx, S.FOrdGreaterThanEqual, rv, tv),
                            f.op(S.FSub, ty, rv, tv), rv))
            f.store(step, f.op(S.FMul, ty, tv, half))
    out = _copysign(ctx, t, f.load(ty, r), a)
    bad = f.op(S.LogicalOr, ctx.bool, f.op(S.LogicalNot, ctx.bool, finite), f.op(
        S.LogicalOr, ctx.bool, _b(ctx, S.FOrdEqual, ay, ctx.const(t, 0.0)),
        f.op(S.IsNan, ctx.bool, b)))
    return _sel(ctx, ty, bad, ctx.const(t, math.nan), out)


def fmod(ctx: Ctx, i: Instr) -> int:
    return _fmod(ctx, _rt(i), *(ctx.val(x) for x in i.args))


def round_even(ctx: Ctx, t: DType, x: int) -> int:
    """Round half to even from Floor (lavapipe's float64 RoundEven rounds -1.5 to -1): the
    floor, one more where the fraction is above a half or a half over an odd floor; the
    operand's sign (a zero result of a negative operand is -0.0). Exact: x - floor(x) is."""
    f, ty = ctx.f, ctx.scalar(t)
    fl = f.ext(GLSL.Floor, ty, x)
    frac = f.op(S.FSub, ty, x, fl)
    half, one = ctx.const(t, 0.5), ctx.const(t, 1.0)
    up = f.op(S.FAdd, ty, fl, one)
    halved = f.op(S.FMul, ty, fl, half)
    odd = _b(ctx, S.FOrdNotEqual, halved, f.ext(GLSL.Floor, ty, halved))
    tie_up = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.FOrdEqual, frac, half), odd)
    go_up = f.op(S.LogicalOr, ctx.bool, _b(ctx, S.FOrdGreaterThan, frac, half), tie_up)
    return _copysign(ctx, t, _sel(ctx, ty, go_up, up, fl), x)


def copysign(ctx: Ctx, i: Instr) -> int:
    return _copysign(ctx, _rt(i), *(ctx.val(x) for x in i.args))


def power(ctx: Ctx, i: Instr) -> int:
    t = _rt(i)
    a, b = (ctx.val(x) for x in i.args)
    return _float_pow(ctx, t, a, b) if t.kind == "f" else _int_pow(ctx, t, a, b)


def _int_pow(ctx: Ctx, t: DType, a: int, n: int) -> int:
    """Square-and-multiply, wrapping; negative exponents as NumPy's: 1 for a == 1, +-1 for
    a == -1, 0 otherwise."""
    f, ty = ctx.f, ctx.scalar(t)
    r = f.var(ctx.ptr(SC.Function, ty), ctx.const(t, 1))
    base = f.var(ctx.ptr(SC.Function, ty))
    e = f.var(ctx.ptr(SC.Function, ty))
    f.store(base, a)
    f.store(e, n)
    one, zero = ctx.const(t, 1), ctx.const(t, 0)
    with f.loop() as lp:
        ev = f.load(ty, e)
        lp.exit_unless(_b(ctx, S.INotEqual, ev, zero))
        odd = _b(ctx, S.INotEqual, f.op(S.BitwiseAnd, ty, ev, one), zero)
        rv = f.load(ty, r)
        f.store(r, _sel(ctx, ty, odd, f.op(S.IMul, ty, rv, f.load(ty, base)), rv))
        bv = f.load(ty, base)
        f.store(base, f.op(S.IMul, ty, bv, bv))
        f.store(e, f.op(S.ShiftRightLogical, ty, ev, one))
    result = f.load(ty, r)
    if t.kind == "u":
        return result
    odd_n = _b(ctx, S.INotEqual, f.op(S.BitwiseAnd, ty, n, one), zero)
    neg_one = _sel(ctx, ty, odd_n, ctx.const(t, -1), one)
    negative = _sel(ctx, ty, _b(ctx, S.IEqual, a, one), one,
                    _sel(ctx, ty, _b(ctx, S.IEqual, a, ctx.const(t, -1)), neg_one, zero))
    return _sel(ctx, ty, _b(ctx, S.SLessThan, n, zero), negative, result)


def _wide(ctx: Ctx, t: DType) -> bool:
    """Whether a float32 function is computed in float64 and rounded once: where the device
    has float64. GLSL's float32 pow and log2 / exp2 lose subnormals (pow(1e-40, 0.5) was
    7.7e-20) and integer powers (5.5 ** 2 was 30.250004, 88 ** 1 88.000015)."""
    if t.itemsize == 4 and ctx.caps.get("float64"):
        ctx.m.capability(Cap.Float64)
        return True
    return False


def _float_pow(ctx: Ctx, t: DType, x: int, y: int) -> int:
    """pow(x, y) as C's: |x|^y by exp(y log|x|) in float64 (float32 too where the device has
    float64, else GLSL's pow), then the sign for negative x and odd integer y, NaN for finite
    negative x and non-integer y and for NaN x or y, 1 for y == 0, x == 1 and x == -1 with
    infinite y."""
    f, ty = ctx.f, ctx.scalar(t)
    zero, one = ctx.const(t, 0.0), ctx.const(t, 1.0)
    ax = f.ext(GLSL.FAbs, ty, x)
    if t.itemsize == 8:  # GLSL's pow is 32-bit only
        mag = libm.exp(ctx, t, f.op(S.FMul, ty, y, libm.log(ctx, t, ax)))
    elif _wide(ctx, t):
        d = ctx.scalar(float64)
        ax64, y64 = f.op(S.FConvert, d, ax), f.op(S.FConvert, d, y)
        mag = f.op(S.FConvert, ty, libm.exp(ctx, float64, f.op(
            S.FMul, d, y64, libm.log(ctx, float64, ax64))))
    else:
        mag = libm.pow32(ctx, t, ax, y)
    integer = _b(ctx, S.FOrdEqual, f.ext(GLSL.Trunc, ty, y), y)
    half = f.op(S.FMul, ty, y, ctx.const(t, 0.5))
    odd = f.op(S.LogicalAnd, ctx.bool, integer,
               _b(ctx, S.FUnordNotEqual, f.ext(GLSL.Trunc, ty, half), half))
    negative = _b(ctx, S.FOrdLessThan, x, zero)
    flip = f.op(S.LogicalAnd, ctx.bool, odd, negative)
    signed = _sel(ctx, ty, flip, f.op(S.FNegate, ty, mag), mag)
    nan = ctx.const(t, math.nan)
    # NaN for a finite negative x and non-integer y; -inf to such a y is |x|^y (+inf or +0)
    finite_negative = f.op(S.LogicalAnd, ctx.bool, negative,
                           f.op(S.LogicalNot, ctx.bool, f.op(S.IsInf, ctx.bool, x)))
    result = _sel(ctx, ty, f.op(S.LogicalAnd, ctx.bool, finite_negative,
                                f.op(S.LogicalNot, ctx.bool, integer)), nan, signed)
    result = _sel(ctx, ty, _b(ctx, S.FOrdEqual, x, zero), _zero_pow(ctx, t, x, y, odd), result)
    # NaN for a NaN y (0 ** nan too) or a NaN x (GLSL's pow need not give NaN: lavapipe's
    # float32 pow gives 0 for a NaN base)
    result = _sel(ctx, ty, f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, y),
                                f.op(S.IsNan, ctx.bool, x)), nan, result)
    trivial = f.op(S.LogicalOr, ctx.bool, _b(ctx, S.FOrdEqual, y, zero),
                   _b(ctx, S.FOrdEqual, x, one))
    # C's pow(-1, +-inf) is 1 (exp(inf * log 1) would be NaN)
    minus_one = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.FOrdEqual, x, ctx.const(t, -1.0)),
                     f.op(S.IsInf, ctx.bool, y))
    trivial = f.op(S.LogicalOr, ctx.bool, trivial, minus_one)
    return _sel(ctx, ty, trivial, one, result)


def _zero_pow(ctx: Ctx, t: DType, x: int, y: int, odd: int) -> int:
    ty = ctx.scalar(t)
    zero = ctx.const(t, 0.0)
    mag = _sel(ctx, ty, _b(ctx, S.FOrdLessThan, y, zero), ctx.const(t, math.inf), zero)
    return _sel(ctx, ty, odd, _copysign(ctx, t, mag, x), mag)


# -- min, max, shifts, sign ----------------------------------------------------------------


def minmax(is_max: bool) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        t = _rt(i)
        f, ty = ctx.f, ctx.scalar(t)
        a, b = (ctx.val(x) for x in i.args)
        if t.kind == "f":
            wins = _b(ctx, S.FOrdGreaterThan if is_max else S.FOrdLessThan, a, b)
            take_a = f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, a), wins)
        else:
            op = {("i", True): S.SGreaterThan, ("i", False): S.SLessThan,
                  ("u", True): S.UGreaterThan, ("u", False): S.ULessThan,
                  ("b", True): S.LogicalAnd, ("b", False): S.LogicalAnd}[(t.kind, is_max)]
            if t.kind == "b":
                return f.op(S.LogicalOr if is_max else S.LogicalAnd, ty, a, b)
            take_a = _b(ctx, op, a, b)
        return _sel(ctx, ty, take_a, a, b)
    return spell


def shift(ctx: Ctx, i: Instr) -> int:
    t = _rt(i)
    f, ty = ctx.f, ctx.scalar(t)
    a, n = (ctx.val(x) for x in i.args)
    bits = t.itemsize * 8
    nt = _dt(i.args[1])
    n64 = ctx.convert(n, nt, _int64u())
    inside = _b(ctx, S.ULessThan, n64, ctx.m.const(ctx.u64, bits))
    amount = _sel(ctx, ty, inside, n, ctx.const(t, 0))
    if i.op is Op.SHL:
        return _sel(ctx, ty, inside, f.op(S.ShiftLeftLogical, ty, a, amount), ctx.const(t, 0))
    if t.kind == "i":
        fill = _sel(ctx, ty, _b(ctx, S.SLessThan, a, ctx.const(t, 0)), ctx.const(t, -1),
                    ctx.const(t, 0))
        return _sel(ctx, ty, inside, f.op(S.ShiftRightArithmetic, ty, a, amount), fill)
    return _sel(ctx, ty, inside, f.op(S.ShiftRightLogical, ty, a, amount), ctx.const(t, 0))


def _int64u() -> DType:
    from .... import _dtypes

    return _dtypes.uint64


def sign(ctx: Ctx, i: Instr) -> int:
    t = _rt(i)
    ty = ctx.scalar(t)
    x = ctx.val(i.args[0])
    zero = ctx.const(t, 0)
    if t.kind == "u":
        return _sel(ctx, ty, _b(ctx, S.INotEqual, x, zero), ctx.const(t, 1), zero)
    lt, gt = (S.FOrdLessThan, S.FOrdGreaterThan) if t.kind == "f" else (S.SLessThan,
                                                                        S.SGreaterThan)
    eq = S.FOrdEqual if t.kind == "f" else S.IEqual
    rest = _sel(ctx, ty, _b(ctx, eq, x, zero), zero, x)  # NaN stays NaN
    return _sel(ctx, ty, _b(ctx, gt, x, zero), ctx.const(t, 1),
                _sel(ctx, ty, _b(ctx, lt, x, zero), ctx.const(t, -1), rest))


# -- float functions GLSL.std.450 does not have --------------------------------------------


def _f32(ctx: Ctx, i: Instr, name: str) -> DType:
    """The result dtype of `i`, a float function spelled here for float32 (float64 ones come
    from libm.py)."""
    return _rt(i)


def log10(ctx: Ctx, i: Instr) -> int:
    return libm.log10(ctx, _rt(i), ctx.val(i.args[0]))


def cbrt(ctx: Ctx, i: Instr) -> int:
    """|x|^(1/3) with x's sign; float32 in float64 where the device has it (_wide)."""
    t = _f32(ctx, i, "cbrt")
    x = ctx.val(i.args[0])
    if _wide(ctx, t):
        f = ctx.f
        y = _cbrt(ctx, float64, f.op(S.FConvert, ctx.scalar(float64), x))
        return f.op(S.FConvert, ctx.scalar(t), y)
    return _cbrt(ctx, t, x)


def _cbrt(ctx: Ctx, t: DType, x: int) -> int:
    """|x|^(1/3) with x's sign, one Newton step (float64: two); 0, inf and NaN pass
    through."""
    f, ty = ctx.f, ctx.scalar(t)
    ax = f.ext(GLSL.FAbs, ty, x)
    third = f.op(S.FMul, ty, ctx.const(t, 1 / 3),
                 libm.log2(ctx, t, ax) if t.itemsize == 8 else f.ext(GLSL.Log2, ty, ax))
    y = libm.exp2(ctx, t, third) if t.itemsize == 8 else f.ext(GLSL.Exp2, ty, third)
    for _ in range(2 if t.itemsize == 8 else 1):  # Newton steps
        # y - (y - |x| / y^2) / 3, not y - (y^3 - |x|) / (3 y^2): y^3 overflows near the
        # largest finite |x|, which made cbrt(1.8e308) inf
        yy = f.op(S.FMul, ty, y, y)
        step = f.op(S.FDiv, ty, f.op(S.FSub, ty, y, f.op(S.FDiv, ty, ax, yy)), ctx.const(t, 3.0))
        y = f.op(S.FSub, ty, y, step)
    special = f.op(S.LogicalOr, ctx.bool, _b(ctx, S.FOrdEqual, ax, ctx.const(t, 0.0)),
                   f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, x),
                        f.op(S.IsNan, ctx.bool, x)))
    return _sel(ctx, ty, special, x, _copysign(ctx, t, y, x))


def hypot(ctx: Ctx, i: Instr) -> int:
    """max * sqrt(1 + (min/max)^2): no overflow for large inputs; inf if either is inf."""
    t = _rt(i)
    f, ty = ctx.f, ctx.scalar(t)
    a, b = (f.ext(GLSL.FAbs, ty, ctx.val(x)) for x in i.args)
    hi, lo = f.ext(GLSL.FMax, ty, a, b), f.ext(GLSL.FMin, ty, a, b)
    ratio = f.op(S.FDiv, ty, lo, hi)
    r = f.op(S.FMul, ty, hi, f.ext(GLSL.Sqrt, ty, f.op(
        S.FAdd, ty, ctx.const(t, 1.0), f.op(S.FMul, ty, ratio, ratio))))
    zero = ctx.const(t, 0.0)
    r = _sel(ctx, ty, _b(ctx, S.FOrdEqual, hi, zero), zero, r)
    nan = f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, a), f.op(S.IsNan, ctx.bool, b))
    r = _sel(ctx, ty, nan, ctx.const(t, math.nan), r)
    inf = f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, a), f.op(S.IsInf, ctx.bool, b))
    return _sel(ctx, ty, inf, ctx.const(t, math.inf), r)
