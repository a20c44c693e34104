"""float64 transcendental functions for SPIR-V, which GLSL.std.450 has for 32-bit floats only
(log, log2 and log10 serve float32 too: drivers' are 3e-6 relative off near 1; so do exp,
cosh and sinh: lavapipe's exp is 36 ulp off; `pow32` is float32 pow on devices without
float64).

Each is an argument reduction, a polynomial and a reconstruction, in float64 arithmetic:
exp by k ln2 (ln2 split in two so k ln2 is exact) and a degree-13 Taylor polynomial, log by
frexp and 2 atanh((m - 1) / (m + 1)), sin / cos / tan by n pi/2 (pi/2 split in three,
Cody-Waite) and degree-21 / -20 polynomials, atan by 1/x and the pi/6 rotation to
|x| <= tan(pi/12); the rest from those (expm1 and sinh by their Taylor series near 0, log1p by
Kahan's formula, tanh from expm1, the inverse hyperbolic functions from log1p). The results are
within a few ulp of NumPy's; sin / cos / tan reduce past |x| = 2^20, where the three-part
reduction stops being exact, by Payne and Hanek's method (spirv/pio2.py). Constants come
from 50-digit values computed here (Decimal), not from tables.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from typing import TYPE_CHECKING

from ...._dtypes import DType
from . import pio2
from .enums import GLSL, SC
from .enums import Op as S

if TYPE_CHECKING:
    from .ctx import Ctx

getcontext().prec = 50
_LN2 = Decimal(2).ln()
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")


def _split(value: Decimal, parts: int, bits: int = 33) -> list[float]:
    """`value` as `parts` doubles of at most `bits` significant bits each (the last full),
    so that n * part is exact for |n| < 2^(53 - bits)."""
    out: list[float] = []
    rest = value
    for k in range(parts):
        if k == parts - 1:
            out.append(float(rest))
            break
        m, e = math.frexp(float(rest))
        part = math.ldexp(math.floor(math.ldexp(m, bits)), e - bits)
        out.append(part)
        rest -= Decimal(part)
    return out


LN2_HI, LN2_LO = _split(_LN2, 2)
LN2_F32 = _split(_LN2, 2, 12)  # e * hi exact in float32 for |e| < 2^12
PIO2 = _split(_PI / 2, 3)


def _c(ctx: Ctx, t: DType, v: float) -> int:
    return ctx.const(t, v)


def _poly(ctx: Ctx, t: DType, x: int, coeffs: list[float]) -> int:
    """sum(coeffs[k] * x^k) by Horner's rule."""
    f, ty = ctx.f, ctx.scalar(t)
    acc = _c(ctx, t, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = f.op(S.FAdd, ty, f.op(S.FMul, ty, acc, x), _c(ctx, t, c))
    return acc


def _sel(ctx: Ctx, c: int, a: int, b: int, t: DType) -> int:
    return ctx.f.op(S.Select, ctx.scalar(t), c, a, b)


def _cmp(ctx: Ctx, op: S, a: int, b: int) -> int:
    return ctx.f.op(op, ctx.bool, a, b)


_EXP_TAYLOR = [1.0 / math.factorial(k) for k in range(14)]


# exp's overflow and underflow thresholds: the largest x with a finite result, the largest x
# whose result rounds to 0 (float32: 88.72283, -103.97208)
_EXP_LIMITS = {8: (709.782712893384, -745.1332191019412),
               4: (88.72283172607422, -103.97207641601562)}


def exp(ctx: Ctx, t: DType, x: int) -> int:
    """float32 too: drivers' GLSL exp is up to 36 ulp off (lavapipe's, over [-87, 88])."""
    f, ty = ctx.f, ctx.scalar(t)
    wide = t.itemsize == 8
    hi, lo = (LN2_HI, LN2_LO) if wide else LN2_F32
    k = f.ext(GLSL.RoundEven, ty, f.op(S.FMul, ty, x, _c(ctx, t, 1 / math.log(2))))
    r = f.op(S.FSub, ty, f.op(S.FSub, ty, x, f.op(S.FMul, ty, k, _c(ctx, t, hi))),
             f.op(S.FMul, ty, k, _c(ctx, t, lo)))
    poly = _poly(ctx, t, r, _EXP_TAYLOR if wide else _EXP_TAYLOR[:9])
    return _scale(ctx, t, poly, k, x, *_EXP_LIMITS[t.itemsize])


def exp2(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    k = f.ext(GLSL.RoundEven, ty, x)
    r = f.op(S.FMul, ty, f.op(S.FSub, ty, x, k), _c(ctx, t, math.log(2)))
    return _scale(ctx, t, _poly(ctx, t, r, _EXP_TAYLOR), k, x, 1024.0, -1075.0)


def _scale(ctx: Ctx, t: DType, p: int, k: int, x: int, over: float, under: float) -> int:
    """p * 2^k, with inf past `over`, 0 below `under` and NaN kept."""
    f, ty = ctx.f, ctx.scalar(t)
    i32 = ctx.i32
    kc = f.ext(GLSL.FClamp, ty, k, _c(ctx, t, -1100.0), _c(ctx, t, 1100.0))
    ki = f.op(S.ConvertFToS, i32, kc)
    half = f.op(S.SDiv, i32, ki, ctx.m.const(i32, 2))  # two steps: 2^k may not be a double
    y = f.ext(GLSL.Ldexp, ty, f.ext(GLSL.Ldexp, ty, p, half),
              f.op(S.ISub, i32, ki, half))
    y = _sel(ctx, _cmp(ctx, S.FOrdGreaterThan, x, _c(ctx, t, over)), _c(ctx, t, math.inf), y, t)
    y = _sel(ctx, _cmp(ctx, S.FOrdLessThan, x, _c(ctx, t, under)), _c(ctx, t, 0.0), y, t)
    return _sel(ctx, f.op(S.IsNan, ctx.bool, x), x, y, t)


_ATANH_SERIES = [0.0 if k % 2 == 0 else 2.0 / k for k in range(24)]  # 2 atanh(f)


def _log_parts(ctx: Ctx, t: DType, x: int) -> tuple[int, int]:
    """(e, s) with x = 2^e * m, m in [sqrt(1/2), sqrt(2)), s = log(m); x > 0 finite."""
    f, ty = ctx.f, ctx.scalar(t)
    i32 = ctx.i32
    wide = t.itemsize == 8
    below, scale = (-1000, 54) if wide else (-100, 24)  # subnormals scaled to normal first
    tiny = _cmp(ctx, S.FOrdLessThan, x, _c(ctx, t, 2.0 ** below))
    xs = _sel(ctx, tiny, f.op(S.FMul, ty, x, _c(ctx, t, 2.0 ** scale)), x, t)
    e_var = f.var(ctx.ptr(SC.Function, i32))
    m = f.ext(GLSL.Frexp, ty, xs, e_var)
    e = f.op(S.ConvertSToF, ty, f.load(i32, e_var))
    e = _sel(ctx, tiny, f.op(S.FSub, ty, e, _c(ctx, t, float(scale))), e, t)
    low = _cmp(ctx, S.FOrdLessThan, m, _c(ctx, t, math.sqrt(0.5)))
    m = _sel(ctx, low, f.op(S.FMul, ty, m, _c(ctx, t, 2.0)), m, t)
    e = _sel(ctx, low, f.op(S.FSub, ty, e, _c(ctx, t, 1.0)), e, t)
    one = _c(ctx, t, 1.0)
    g = f.op(S.FDiv, ty, f.op(S.FSub, ty, m, one), f.op(S.FAdd, ty, m, one))
    return e, _poly(ctx, t, g, _ATANH_SERIES if wide else _ATANH_SERIES[:12])


def _log_special(ctx: Ctx, t: DType, x: int, y: int) -> int:
    """y, except NaN for x < 0 or NaN, -inf for x == 0, inf for x == inf."""
    f = ctx.f
    y = _sel(ctx, f.op(S.IsInf, ctx.bool, x), x, y, t)
    y = _sel(ctx, _cmp(ctx, S.FOrdEqual, x, _c(ctx, t, 0.0)), _c(ctx, t, -math.inf), y, t)
    bad = f.op(S.LogicalOr, ctx.bool, _cmp(ctx, S.FOrdLessThan, x, _c(ctx, t, 0.0)),
               f.op(S.IsNan, ctx.bool, x))
    return _sel(ctx, bad, _c(ctx, t, math.nan), y, t)


def log(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    e, s = _log_parts(ctx, t, x)
    hi, lo = (LN2_HI, LN2_LO) if t.itemsize == 8 else LN2_F32
    y = f.op(S.FAdd, ty, f.op(S.FMul, ty, e, _c(ctx, t, hi)),
             f.op(S.FAdd, ty, s, f.op(S.FMul, ty, e, _c(ctx, t, lo))))
    return _log_special(ctx, t, x, y)


def log2(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    e, s = _log_parts(ctx, t, x)
    y = f.op(S.FAdd, ty, e, f.op(S.FMul, ty, s, _c(ctx, t, 1 / math.log(2))))
    return _log_special(ctx, t, x, y)


def log10(ctx: Ctx, t: DType, x: int) -> int:
    return ctx.f.op(S.FMul, ctx.scalar(t), log(ctx, t, x), _c(ctx, t, 1 / math.log(10)))


def expm1(ctx: Ctx, t: DType, x: int) -> int:
    """The Taylor series for |x| < 1/2, exp(x) - 1 elsewhere."""
    f, ty = ctx.f, ctx.scalar(t)
    series = f.op(S.FMul, ty, x, _poly(ctx, t, x, [1.0 / math.factorial(k + 1)
                                                   for k in range(19)]))
    big = f.op(S.FSub, ty, exp(ctx, t, x), _c(ctx, t, 1.0))
    near = _cmp(ctx, S.FOrdLessThan, f.ext(GLSL.FAbs, ty, x), _c(ctx, t, 0.5))
    return _sel(ctx, near, series, big, t)


def log1p(ctx: Ctx, t: DType, x: int) -> int:
    """Kahan: u = 1 + x; x if u == 1, else log(u) (x / (u - 1)) (not (log(u) x) / (u - 1),
    which overflowed from x = 1e306)."""
    f, ty = ctx.f, ctx.scalar(t)
    one = _c(ctx, t, 1.0)
    u = f.op(S.FAdd, ty, one, x)
    lu = log(ctx, t, u)
    scaled = f.op(S.FMul, ty, lu, f.op(S.FDiv, ty, x, f.op(S.FSub, ty, u, one)))
    exact = f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, u),
                 _cmp(ctx, S.FOrdLessThanEqual, u, _c(ctx, t, 0.0)))
    return _sel(ctx, _cmp(ctx, S.FOrdEqual, u, one), x, _sel(ctx, exact, lu, scaled, t), t)


_SIN = [0.0 if k % 2 == 0 else (-1.0) ** (k // 2) / math.factorial(k) for k in range(24)]
_COS = [0.0 if k % 2 else (-1.0) ** (k // 2) / math.factorial(k) for k in range(23)]


def _reduce_pio2(ctx: Ctx, t: DType, x: int) -> tuple[int, int, int]:
    """(r, sin(r), cos(r)) and the quadrant n mod 4 as an int32: x = n pi/2 + r."""
    f, ty = ctx.f, ctx.scalar(t)
    n = f.ext(GLSL.RoundEven, ty, f.op(S.FMul, ty, x, _c(ctx, t, 2 / math.pi)))
    r = x
    for part in PIO2:
        r = f.op(S.FSub, ty, r, f.op(S.FMul, ty, n, _c(ctx, t, part)))
    # past 2^20 n pi/2 is no longer exact in three parts: Payne and Hanek's reduction
    fv = ctx.ptr(SC.Function, ty)
    r_var, n_var = f.var(fv), f.var(fv)
    f.store(r_var, r)
    f.store(n_var, n)
    large = _cmp(ctx, S.FOrdGreaterThanEqual, f.ext(GLSL.FAbs, ty, x),
                 _c(ctx, t, pio2.THRESHOLD[8]))
    with f.if_(f.op(S.LogicalAnd, ctx.bool, large, f.op(S.LogicalNot, ctx.bool,
                                                       f.op(S.IsInf, ctx.bool, x)))):
        big_r, big_n = pio2.reduce_large(ctx, t, x)
        f.store(r_var, big_r)
        f.store(n_var, big_n)
    r, n = f.load(ty, r_var), f.load(ty, n_var)
    r2 = f.op(S.FMul, ty, r, r)
    s = f.op(S.FMul, ty, r, _poly(ctx, t, r2, _SIN[1::2]))
    c = _poly(ctx, t, r2, _COS[0::2])
    i64 = ctx.i64
    quadrant = f.op(S.BitwiseAnd, i64, f.op(S.ConvertFToS, i64, n), ctx.m.const(i64, 3))
    return s, c, quadrant


def _trig(ctx: Ctx, t: DType, x: int, which: str) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    s, c, q = _reduce_pio2(ctx, t, x)
    i64 = ctx.i64

    def is_q(k: int) -> int:
        return f.op(S.IEqual, ctx.bool, q, ctx.m.const(i64, k))

    ns, nc = f.op(S.FNegate, ty, s), f.op(S.FNegate, ty, c)
    if which == "sin":
        y = _sel(ctx, is_q(0), s, _sel(ctx, is_q(1), c, _sel(ctx, is_q(2), ns, nc, t), t), t)
    elif which == "cos":
        y = _sel(ctx, is_q(0), c, _sel(ctx, is_q(1), ns, _sel(ctx, is_q(2), nc, s, t), t), t)
    else:
        odd = f.op(S.INotEqual, ctx.bool, f.op(S.BitwiseAnd, i64, q, ctx.m.const(i64, 1)),
                   ctx.m.const(i64, 0))
        y = _sel(ctx, odd, f.op(S.FDiv, ty, nc, s), f.op(S.FDiv, ty, s, c), t)
    if which != "cos":  # sin(-0) and tan(-0) are -0 (the reduction's r is +0 there)
        y = _sel(ctx, _cmp(ctx, S.FOrdEqual, x, _c(ctx, t, 0.0)), x, y, t)
    bad = f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, x), f.op(S.IsNan, ctx.bool, x))
    return _sel(ctx, bad, _c(ctx, t, math.nan), y, t)


def sin(ctx: Ctx, t: DType, x: int) -> int:
    return _trig(ctx, t, x, "sin")


def cos(ctx: Ctx, t: DType, x: int) -> int:
    return _trig(ctx, t, x, "cos")


def tan(ctx: Ctx, t: DType, x: int) -> int:
    return _trig(ctx, t, x, "tan")


_ATAN = [0.0 if k % 2 == 0 else (-1.0) ** (k // 2) / k for k in range(30)]


def atan(ctx: Ctx, t: DType, x: int) -> int:
    """atan of |x| reduced by 1/|x| past 1 and the pi/6 rotation past tan(pi/12)."""
    f, ty = ctx.f, ctx.scalar(t)
    one = _c(ctx, t, 1.0)
    a = f.ext(GLSL.FAbs, ty, x)
    inv = _cmp(ctx, S.FOrdGreaterThan, a, one)
    a = _sel(ctx, inv, f.op(S.FDiv, ty, one, a), a, t)
    rot = _cmp(ctx, S.FOrdGreaterThan, a, _c(ctx, t, 2 - math.sqrt(3)))
    sq3 = _c(ctx, t, math.sqrt(3))
    turned = f.op(S.FDiv, ty, f.op(S.FSub, ty, f.op(S.FMul, ty, a, sq3), one),
                  f.op(S.FAdd, ty, a, sq3))
    a = _sel(ctx, rot, turned, a, t)
    y = f.op(S.FMul, ty, a, _poly(ctx, t, f.op(S.FMul, ty, a, a), _ATAN[1::2]))
    y = _sel(ctx, rot, f.op(S.FAdd, ty, y, _c(ctx, t, math.pi / 6)), y, t)
    y = _sel(ctx, inv, f.op(S.FSub, ty, _c(ctx, t, math.pi / 2), y), y, t)
    y = _sel(ctx, f.op(S.IsNan, ctx.bool, x), x, y, t)
    return _copysign(ctx, t, y, x)


def sinh(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    half = exp(ctx, t, f.op(S.FMul, ty, a, _c(ctx, t, 0.5)))  # e^(a/2): no early overflow
    ea = f.op(S.FMul, ty, half, half)
    big = f.op(S.FMul, ty, f.op(S.FSub, ty, ea, f.op(S.FDiv, ty, _c(ctx, t, 1.0), ea)),
               _c(ctx, t, 0.5))
    huge = f.op(S.FMul, ty, f.op(S.FMul, ty, half, _c(ctx, t, 0.5)), half)
    big = _sel(ctx, f.op(S.IsInf, ctx.bool, ea), huge, big, t)
    x2 = f.op(S.FMul, ty, a, a)
    series = f.op(S.FMul, ty, a, _poly(ctx, t, x2, [1.0 / math.factorial(2 * k + 1)
                                                     for k in range(12)]))
    y = _sel(ctx, _cmp(ctx, S.FOrdLessThan, a, _c(ctx, t, 1.0)), series, big, t)
    return _copysign(ctx, t, y, x)


def cosh(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    half = exp(ctx, t, f.op(S.FMul, ty, a, _c(ctx, t, 0.5)))
    ea = f.op(S.FMul, ty, half, half)
    y = f.op(S.FMul, ty, f.op(S.FAdd, ty, ea, f.op(S.FDiv, ty, _c(ctx, t, 1.0), ea)),
             _c(ctx, t, 0.5))
    huge = f.op(S.FMul, ty, f.op(S.FMul, ty, half, _c(ctx, t, 0.5)), half)
    return _sel(ctx, f.op(S.IsInf, ctx.bool, ea), huge, y, t)


def tanh(ctx: Ctx, t: DType, x: int) -> int:
    """expm1(2|x|) / (expm1(2|x|) + 2), 1 past |x| = 20, x's sign."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    e = expm1(ctx, t, f.op(S.FMul, ty, a, _c(ctx, t, 2.0)))
    y = f.op(S.FDiv, ty, e, f.op(S.FAdd, ty, e, _c(ctx, t, 2.0)))
    y = _sel(ctx, _cmp(ctx, S.FOrdGreaterThan, a, _c(ctx, t, 20.0)), _c(ctx, t, 1.0), y, t)
    return _copysign(ctx, t, y, x)


def asinh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p(a + a^2 / (1 + sqrt(1 + a^2))), log(a) + ln2 past 1e8; x's sign."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    one = _c(ctx, t, 1.0)
    a2 = f.op(S.FMul, ty, a, a)
    near = log1p(ctx, t, f.op(S.FAdd, ty, a, f.op(S.FDiv, ty, a2, f.op(
        S.FAdd, ty, one, f.ext(GLSL.Sqrt, ty, f.op(S.FAdd, ty, one, a2))))))
    far = f.op(S.FAdd, ty, log(ctx, t, a), _c(ctx, t, math.log(2)))
    y = _sel(ctx, _cmp(ctx, S.FOrdGreaterThan, a, _c(ctx, t, 1e8)), far, near, t)
    return _copysign(ctx, t, y, x)


def acosh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p((x - 1) + sqrt((x - 1)(x + 1))), log(x) + ln2 past 1e8; NaN below 1."""
    f, ty = ctx.f, ctx.scalar(t)
    one = _c(ctx, t, 1.0)
    xm = f.op(S.FSub, ty, x, one)
    near = log1p(ctx, t, f.op(S.FAdd, ty, xm, f.ext(GLSL.Sqrt, ty, f.op(
        S.FMul, ty, xm, f.op(S.FAdd, ty, x, one)))))
    far = f.op(S.FAdd, ty, log(ctx, t, x), _c(ctx, t, math.log(2)))
    y = _sel(ctx, _cmp(ctx, S.FOrdGreaterThan, x, _c(ctx, t, 1e8)), far, near, t)
    return _sel(ctx, _cmp(ctx, S.FOrdLessThan, x, one), _c(ctx, t, math.nan), y, t)


def atanh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p(2a / (1 - a)) / 2 with x's sign: NaN past 1, inf at 1."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    one = _c(ctx, t, 1.0)
    y = f.op(S.FMul, ty, log1p(ctx, t, f.op(S.FDiv, ty, f.op(S.FAdd, ty, a, a),
                                            f.op(S.FSub, ty, one, a))), _c(ctx, t, 0.5))
    y = _sel(ctx, _cmp(ctx, S.FOrdGreaterThan, a, one), _c(ctx, t, math.nan), y, t)
    return _copysign(ctx, t, y, x)


def pow32(ctx: Ctx, t: DType, ax: int, y: int) -> int:
    """|x|^y for float32 without float64: GLSL's pow, of a subnormal |x| scaled by 2^24 first
    (then times 2^(-24 y)), and by multiplication for y in {1, 2, 3, -1, -2}, which GLSL's
    pow misses (88 ** 1 was 88.000015)."""
    f, ty = ctx.f, ctx.scalar(t)
    small = _cmp(ctx, S.FOrdLessThan, ax, ctx.const(t, 2.0 ** -126))
    scaled = _sel(ctx, small, f.op(S.FMul, ty, ax, ctx.const(t, 2.0 ** 24)), ax, t)
    mag = f.ext(GLSL.Pow, ty, scaled, y)  # GLSL's pow, defined for ax > 0
    back = f.ext(GLSL.Exp2, ty, f.op(S.FMul, ty, y, ctx.const(t, -24.0)))
    mag = _sel(ctx, small, f.op(S.FMul, ty, mag, back), mag, t)
    sq = f.op(S.FMul, ty, ax, ax)
    one = ctx.const(t, 1.0)
    for k, exact in ((1, ax), (2, sq), (3, f.op(S.FMul, ty, sq, ax)),
                     (-1, f.op(S.FDiv, ty, one, ax)), (-2, f.op(S.FDiv, ty, one, sq))):
        mag = _sel(ctx, _cmp(ctx, S.FOrdEqual, y, ctx.const(t, float(k))), exact, mag, t)
    return mag


def _bits(ctx: Ctx, t: DType) -> tuple[int, int]:
    """(unsigned type of t's width, the sign bit constant)."""
    width = t.itemsize * 8
    u = ctx.m.t_int(width, False)
    return u, ctx.m.const(u, 1 << (width - 1))


def _copysign(ctx: Ctx, t: DType, x: int, y: int) -> int:
    f = ctx.f
    u, sign = _bits(ctx, t)
    mag = f.op(S.BitwiseAnd, u, f.op(S.Bitcast, u, x), f.op(S.Not, u, sign))
    sgn = f.op(S.BitwiseAnd, u, f.op(S.Bitcast, u, y), sign)
    return f.op(S.Bitcast, ctx.scalar(t), f.op(S.BitwiseOr, u, mag, sgn))


UNARY = {"sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
         "asinh": asinh, "acosh": acosh, "atanh": atanh, "exp": exp, "exp2": exp2,
         "log": log, "log2": log2, "log10": log10, "expm1": expm1, "log1p": log1p,
         "atan": atan}
