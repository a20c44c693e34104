"""The exponential-family float functions near 0 in SPIR-V: expm1, log1p and the hyperbolic
functions and their inverses, whose textbook forms cancel for small arguments.

float32 is spelled here from libm.py's exp and log: Kahan's expm1 and
log1p (and the Taylor series below |x| = 2^-10, where a driver's exp is a few ulp off 1),
sinh by its series below 1, tanh from expm1, asinh, acosh and atanh from log1p. Drivers'
own GLSL sinh, tanh, asinh and atanh are (e^x - e^-x) / 2 and the like: 100% off at 1e-8
on lavapipe.
float64 is libm.py's (GLSL.std.450 has 32-bit versions only). Each takes the stage
context and an IR instruction and returns the result's id.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...._dtypes import DType
from ...ir import Instr
from . import libm
from .enums import GLSL
from .enums import Op as S
from .libm import _copysign
from .numerics import _b, _rt, _sel

if TYPE_CHECKING:
    from .ctx import Ctx

_TINY = 2.0 ** -10


def _expm1(ctx: Ctx, t: DType, x: int) -> int:
    """Kahan's expm1: u = exp(x); x if u == 1, -1 if u - 1 == -1, else (u-1) (x / log u);
    x (1 + x/2 + x^2/6 + x^3/24) below 2^-10."""
    f, ty = ctx.f, ctx.scalar(t)
    one = ctx.const(t, 1.0)
    u = libm.exp(ctx, t, x)  # GLSL's exp overflowed from 87 on lavapipe
    um1 = f.op(S.FSub, ty, u, one)
    # (u - 1) (x / log u): (u - 1) x overflowed from x = 84 in float32
    scaled = f.op(S.FMul, ty, um1, f.op(S.FDiv, ty, x, libm.log(ctx, t, u)))
    big = f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, u),
               _b(ctx, S.FOrdEqual, um1, ctx.const(t, -1.0)))
    y = _sel(ctx, ty, _b(ctx, S.FOrdEqual, u, one), x, _sel(ctx, ty, big, um1, scaled))
    series = f.op(S.FMul, ty, x, libm._poly(ctx, t, x, [1.0, 0.5, 1.0 / 6, 1.0 / 24]))
    tiny = _b(ctx, S.FOrdLessThan, f.ext(GLSL.FAbs, ty, x), ctx.const(t, _TINY))
    return _sel(ctx, ty, tiny, series, y)


def _log1p(ctx: Ctx, t: DType, x: int) -> int:
    """Kahan's log1p: u = 1 + x; x if u == 1, log(u) if u - 1 == x (no rounding in u, as
    for every large x, where log(u) x would overflow and NVIDIA's float32 division by u - 1
    past 2^126 gives 0), else log(u) (x / (u - 1))."""
    f, ty = ctx.f, ctx.scalar(t)
    one = ctx.const(t, 1.0)
    u = f.op(S.FAdd, ty, one, x)
    logu = libm.log(ctx, t, u)
    um1 = f.op(S.FSub, ty, u, one)
    scaled = _sel(ctx, ty, _b(ctx, S.FOrdEqual, um1, x), logu,
                  f.op(S.FMul, ty, logu, f.op(S.FDiv, ty, x, um1)))
    return _sel(ctx, ty, _b(ctx, S.FOrdEqual, u, one), x,
                _sel(ctx, ty, f.op(S.IsInf, ctx.bool, u), logu, scaled))


def _sinh(ctx: Ctx, t: DType, x: int) -> int:
    """libm.py's: the Taylor series below |x| = 1, (e^a - e^-a) / 2 from e^(a/2) past it
    (GLSL's sinh overflowed from 89 on lavapipe, where the result is finite up to 89.4)."""
    return libm.sinh(ctx, t, x)


def _tanh(ctx: Ctx, t: DType, x: int) -> int:
    """expm1(2|x|) / (expm1(2|x|) + 2), 1 past |x| = 10, x's sign (NaN kept)."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    e = _expm1(ctx, t, f.op(S.FAdd, ty, a, a))
    y = f.op(S.FDiv, ty, e, f.op(S.FAdd, ty, e, ctx.const(t, 2.0)))
    y = _sel(ctx, ty, _b(ctx, S.FOrdGreaterThan, a, ctx.const(t, 10.0)), ctx.const(t, 1.0), y)
    return _copysign(ctx, t, y, x)


def _asinh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p(a + a^2 / (1 + sqrt(1 + a^2))), log(a) + ln2 past 2^12; x's sign."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    one = ctx.const(t, 1.0)
    a2 = f.op(S.FMul, ty, a, a)
    near = _log1p(ctx, t, f.op(S.FAdd, ty, a, f.op(S.FDiv, ty, a2, f.op(
        S.FAdd, ty, one, f.ext(GLSL.Sqrt, ty, f.op(S.FAdd, ty, one, a2))))))
    far = f.op(S.FAdd, ty, libm.log(ctx, t, a), ctx.const(t, math.log(2)))
    y = _sel(ctx, ty, _b(ctx, S.FOrdGreaterThan, a, ctx.const(t, 4096.0)), far, near)
    return _copysign(ctx, t, y, x)


def _acosh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p((x - 1) + sqrt((x - 1)(x + 1))), log(x) + ln2 past 2^12; NaN below 1."""
    f, ty = ctx.f, ctx.scalar(t)
    one = ctx.const(t, 1.0)
    xm = f.op(S.FSub, ty, x, one)
    near = _log1p(ctx, t, f.op(S.FAdd, ty, xm, f.ext(GLSL.Sqrt, ty, f.op(
        S.FMul, ty, xm, f.op(S.FAdd, ty, x, one)))))
    far = f.op(S.FAdd, ty, libm.log(ctx, t, x), ctx.const(t, math.log(2)))
    y = _sel(ctx, ty, _b(ctx, S.FOrdGreaterThan, x, ctx.const(t, 4096.0)), far, near)
    return _sel(ctx, ty, _b(ctx, S.FOrdLessThan, x, one), ctx.const(t, math.nan), y)


def _atanh(ctx: Ctx, t: DType, x: int) -> int:
    """log1p(2a / (1 - a)) / 2 with x's sign: NaN past 1, inf at 1."""
    f, ty = ctx.f, ctx.scalar(t)
    a = f.ext(GLSL.FAbs, ty, x)
    one = ctx.const(t, 1.0)
    y = f.op(S.FMul, ty, _log1p(ctx, t, f.op(S.FDiv, ty, f.op(S.FAdd, ty, a, a),
                                             f.op(S.FSub, ty, one, a))), ctx.const(t, 0.5))
    y = _sel(ctx, ty, _b(ctx, S.FOrdGreaterThan, a, one), ctx.const(t, math.nan), y)
    return _copysign(ctx, t, y, x)


def _spell(name: str, float32: Any) -> Any:
    def spell(ctx: Ctx, i: Instr) -> int:
        t = _rt(i)
        x = ctx.val(i.args[0])
        if t.itemsize == 8:
            return int(libm.UNARY[name](ctx, t, x))
        return int(float32(ctx, t, x))
    spell.__name__ = name
    return spell


expm1 = _spell("expm1", _expm1)
log1p = _spell("log1p", _log1p)
sinh = _spell("sinh", _sinh)
tanh = _spell("tanh", _tanh)
asinh = _spell("asinh", _asinh)
acosh = _spell("acosh", _acosh)
atanh = _spell("atanh", _atanh)
