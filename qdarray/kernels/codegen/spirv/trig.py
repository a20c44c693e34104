"""Trigonometric functions in SPIR-V: sin, cos and tan with Payne and Hanek's reduction for
large float32 arguments (spirv/pio2.py); atan by Cephes' atanf in float32 (drivers' own
are as coarse as 4e-4 relative) and libm.py's in float64, atan2 from atan with C's signed
zeros and infinities, asin and acos from atan2."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...._dtypes import DType, float64
from ...ir import Instr
from . import libm, pio2
from .enums import GLSL, SC
from .enums import Op as S
from .libm import _bits, _copysign
from .numerics import _b, _f32, _sel

if TYPE_CHECKING:
    from .ctx import Ctx

_TAN_3PI_8 = 2.414213562373095
_TAN_PI_8 = 0.41421356237309503


def _atan(ctx: Ctx, t: DType, x: int) -> int:
    """atan(x) by Cephes' atanf: the argument reduced to |x| <= tan(pi/8) around 0, pi/4 or
    pi/2, then an odd polynomial (relative error about 2e-7); float64 from libm.py."""
    if t.itemsize == 8:
        return libm.atan(ctx, t, x)
    f, ty = ctx.f, ctx.scalar(t)
    c = ctx.const
    ax = f.ext(GLSL.FAbs, ty, x)
    big = _b(ctx, S.FOrdGreaterThan, ax, c(t, _TAN_3PI_8))
    mid = _b(ctx, S.FOrdGreaterThan, ax, c(t, _TAN_PI_8))
    r_big = f.op(S.FNegate, ty, f.op(S.FDiv, ty, c(t, 1.0), ax))
    r_mid = f.op(S.FDiv, ty, f.op(S.FSub, ty, ax, c(t, 1.0)), f.op(S.FAdd, ty, ax, c(t, 1.0)))
    r = _sel(ctx, ty, big, r_big, _sel(ctx, ty, mid, r_mid, ax))
    y0 = _sel(ctx, ty, big, c(t, math.pi / 2), _sel(ctx, ty, mid, c(t, math.pi / 4),
                                                     c(t, 0.0)))
    z = f.op(S.FMul, ty, r, r)
    p = c(t, 8.05374449538e-2)
    for k in (-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1):
        p = f.op(S.FAdd, ty, f.op(S.FMul, ty, p, z), c(t, k))
    y = f.op(S.FAdd, ty, y0, f.op(S.FAdd, ty, f.op(S.FMul, ty, f.op(S.FMul, ty, p, z), r), r))
    return _copysign(ctx, t, y, x)


def _atan2(ctx: Ctx, t: DType, y: int, x: int) -> int:
    """atan2(y, x) with C's signed zeros and infinities, from `_atan` of |y| / |x|."""
    f, ty = ctx.f, ctx.scalar(t)
    c = ctx.const
    ax, ay = f.ext(GLSL.FAbs, ty, x), f.ext(GLSL.FAbs, ty, y)
    q = f.op(S.FDiv, ty, ay, ax)
    zeros = f.op(S.LogicalAnd, ctx.bool, _b(ctx, S.FOrdEqual, ax, c(t, 0.0)),
                 _b(ctx, S.FOrdEqual, ay, c(t, 0.0)))
    infs = f.op(S.LogicalAnd, ctx.bool, f.op(S.IsInf, ctx.bool, ax),
                f.op(S.IsInf, ctx.bool, ay))
    q = _sel(ctx, ty, zeros, c(t, 0.0), _sel(ctx, ty, infs, c(t, 1.0), q))
    a = _atan(ctx, t, q)
    u, sign = _bits(ctx, t)
    negative_x = f.op(S.INotEqual, ctx.bool, f.op(S.BitwiseAnd, u, f.op(S.Bitcast, u, x), sign),
                      ctx.m.const(u, 0))
    a = _sel(ctx, ty, negative_x, f.op(S.FSub, ty, c(t, math.pi), a), a)
    nan = f.op(S.LogicalOr, ctx.bool, f.op(S.IsNan, ctx.bool, x), f.op(S.IsNan, ctx.bool, y))
    return _sel(ctx, ty, nan, c(t, math.nan), _copysign(ctx, t, a, y))


def atan(ctx: Ctx, i: Instr) -> int:
    return _atan(ctx, _f32(ctx, i, "atan"), ctx.val(i.args[0]))


def atan2(ctx: Ctx, i: Instr) -> int:
    t = _f32(ctx, i, "atan2")
    return _atan2(ctx, t, *(ctx.val(a) for a in i.args))


def _root_one_minus_square(ctx: Ctx, t: DType, x: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    one = ctx.const(t, 1.0)
    return f.ext(GLSL.Sqrt, ty, f.op(S.FMul, ty, f.op(S.FSub, ty, one, x),
                                     f.op(S.FAdd, ty, one, x)))


def asin(ctx: Ctx, i: Instr) -> int:
    """asin(x) = atan2(x, sqrt((1 - x)(1 + x))): NaN past +-1."""
    t = _f32(ctx, i, "asin")
    x = ctx.val(i.args[0])
    return _atan2(ctx, t, x, _root_one_minus_square(ctx, t, x))


def acos(ctx: Ctx, i: Instr) -> int:
    """acos(x) = atan2(sqrt((1 - x)(1 + x)), x): NaN past +-1."""
    t = _f32(ctx, i, "acos")
    x = ctx.val(i.args[0])
    return _atan2(ctx, t, _root_one_minus_square(ctx, t, x), x)


def _circular(which: str) -> Any:
    """sin, cos or tan: float64 from libm.py; float32 through float64 where the device has
    it, else by GLSL.std.450's on |x| below
    2^16 and on the remainder of Payne and Hanek's reduction past it (drivers' own reduce
    with too few bits of pi: lavapipe's sin(1e8) is wrong in the first digit)."""

    def spell(ctx: Ctx, i: Instr) -> int:
        t = _f32(ctx, i, which)
        x = ctx.val(i.args[0])
        if t.itemsize == 8:
            return int(libm.UNARY[which](ctx, t, x))
        f, ty = ctx.f, ctx.scalar(t)
        if ctx.caps.get("float64"):
            # Vulkan leaves float32 sin/cos/tan's precision to the driver, and NVIDIA's are
            # coarse (absolute 2^-21: sin(1e-30) is 0, sin(72) 2e-5 off): through float64
            # and rounded once, as exact as NumPy's
            d = ctx.scalar(float64)
            wide = libm.UNARY[which](ctx, float64, f.op(S.FConvert, d, x))
            return f.op(S.FConvert, ty, wide)
        fv = ctx.ptr(SC.Function, ty)
        r_var, n_var = f.var(fv), f.var(fv)
        f.store(r_var, x)
        f.store(n_var, ctx.const(t, 0.0))
        large = _b(ctx, S.FOrdGreaterThanEqual, f.ext(GLSL.FAbs, ty, x),
                   ctx.const(t, pio2.THRESHOLD[4]))
        with f.if_(f.op(S.LogicalAnd, ctx.bool, large,
                        f.op(S.LogicalNot, ctx.bool, f.op(S.IsInf, ctx.bool, x)))):
            r, n = pio2.reduce_large(ctx, t, x)
            f.store(r_var, r)
            f.store(n_var, n)
        r = f.load(ty, r_var)
        i64 = ctx.i64
        q = f.op(S.BitwiseAnd, i64, f.op(S.ConvertFToS, i64, f.load(ty, n_var)),
                 ctx.m.const(i64, 3))
        s, c = f.ext(GLSL.Sin, ty, r), f.ext(GLSL.Cos, ty, r)

        def is_q(k: int) -> int:
            return f.op(S.IEqual, ctx.bool, q, ctx.m.const(i64, k))

        ns, nc = f.op(S.FNegate, ty, s), f.op(S.FNegate, ty, c)
        if which == "sin":
            return _sel(ctx, ty, is_q(0), s, _sel(ctx, ty, is_q(1), c,
                                                  _sel(ctx, ty, is_q(2), ns, nc)))
        if which == "cos":
            return _sel(ctx, ty, is_q(0), c, _sel(ctx, ty, is_q(1), ns,
                                                  _sel(ctx, ty, is_q(2), nc, s)))
        odd = f.op(S.INotEqual, ctx.bool, f.op(S.BitwiseAnd, i64, q, ctx.m.const(i64, 1)),
                   ctx.m.const(i64, 0))
        return _sel(ctx, ty, odd, f.op(S.FDiv, ty, nc, s), f.ext(GLSL.Tan, ty, r))
    return spell


sin, cos, tan = _circular("sin"), _circular("cos"), _circular("tan")
