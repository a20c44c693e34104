"""a * b + c rounded once, in SPIR-V, on drivers whose GLSL.std.450 Fma rounds the product
first (Vulkan allows it; lavapipe does).

The product is split exactly (Dekker's TwoProduct: Veltkamp halves, each partial product
exact), the addend added by Knuth's TwoSum, and the two low parts summed with rounding to
odd before the last, nearest-even, rounding: Boldo and Melquiond's emulation, correctly
rounded whenever the product neither overflows nor falls into the subnormals. Operands
whose halves would overflow are scaled by a power of two first (exact); a non-finite or
zero product, or a non-finite addend, give a * b + c as IEEE rounds it, or the addend when
it is infinite and the factors finite (as fma, bar a product that overflows before a
finite cancelling addend brings it back).
Every operation is NoContraction (the module's default), so no driver fuses them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...._dtypes import DType
from .enums import GLSL
from .enums import Op as S

if TYPE_CHECKING:
    from .ctx import Ctx

# (Veltkamp's splitter 2^s + 1, |x| past which it overflows, the scale that prevents it)
_SPLIT = {8: (2.0 ** 27 + 1, 2.0 ** 995, 2.0 ** -60), 4: (2.0 ** 12 + 1, 2.0 ** 115, 2.0 ** -30)}


def exact_fma(ctx: Ctx, t: DType, a: int, b: int, c: int) -> int:
    f, ty = ctx.f, ctx.scalar(t)
    splitter, big, scale = _SPLIT[t.itemsize]
    k = ctx.const

    def op(code: S, x: int, y: int) -> int:
        return f.op(code, ty, x, y)

    def sel(cond: int, x: int, y: int) -> int:
        return f.op(S.Select, ty, cond, x, y)

    def gt(x: int, y: int) -> int:
        return f.op(S.FOrdGreaterThan, ctx.bool, x, y)

    # an infinite addend and finite factors: the exact product is finite, whatever p is
    keep_c = f.op(S.LogicalAnd, ctx.bool, f.op(S.IsInf, ctx.bool, c),
                  f.op(S.LogicalAnd, ctx.bool, _finite(ctx, a), _finite(ctx, b)))
    # a scaled down and b up (or the other way) where a half would overflow: a * b unchanged
    # (unless both are that large: then the product overflows, and is not used)
    down = gt(f.ext(GLSL.FAbs, ty, a), k(t, big))
    a = sel(down, op(S.FMul, a, k(t, scale)), a)
    b = sel(down, op(S.FMul, b, k(t, 1 / scale)), b)
    down = gt(f.ext(GLSL.FAbs, ty, b), k(t, big))
    b = sel(down, op(S.FMul, b, k(t, scale)), b)
    a = sel(down, op(S.FMul, a, k(t, 1 / scale)), a)

    def halves(x: int) -> tuple[int, int]:
        g = op(S.FMul, x, k(t, splitter))
        hi = op(S.FSub, g, op(S.FSub, g, x))
        return hi, op(S.FSub, x, hi)

    def two_sum(x: int, y: int) -> tuple[int, int]:
        s = op(S.FAdd, x, y)
        bb = op(S.FSub, s, x)
        return s, op(S.FAdd, op(S.FSub, x, op(S.FSub, s, bb)), op(S.FSub, y, bb))

    p = op(S.FMul, a, b)
    ah, al = halves(a)
    bh, bl = halves(b)
    pl = op(S.FAdd, op(S.FAdd, op(S.FAdd, op(S.FSub, op(S.FMul, ah, bh), p),
                                  op(S.FMul, ah, bl)), op(S.FMul, al, bh)), op(S.FMul, al, bl))
    th, tl = two_sum(c, p)
    v, e = two_sum(tl, pl)
    # v rounded to odd: an inexact v with an even last bit moves one ulp toward the error
    bits_t = ctx.m.t_int(8 * t.itemsize, False)
    vb = f.op(S.Bitcast, bits_t, v)
    one = ctx.m.const(bits_t, 1)
    zero = k(t, 0.0)
    even = f.op(S.IEqual, ctx.bool, f.op(S.BitwiseAnd, bits_t, vb, one), ctx.m.const(bits_t, 0))
    inexact = f.op(S.FUnordNotEqual, ctx.bool, e, zero)
    away = f.op(S.LogicalEqual, ctx.bool, gt(e, zero), gt(v, zero))
    moved = f.op(S.Select, bits_t, away, f.op(S.IAdd, bits_t, vb, one),
                 f.op(S.ISub, bits_t, vb, one))
    odd = f.op(S.Select, bits_t, f.op(S.LogicalAnd, ctx.bool, even, inexact), moved, vb)
    y = op(S.FAdd, th, f.op(S.Bitcast, ty, odd))
    y = sel(f.op(S.IsInf, ctx.bool, th), th, y)
    plain = op(S.FAdd, p, c)
    plain = sel(keep_c, c, plain)
    special = f.op(S.LogicalOr, ctx.bool, f.op(S.FOrdEqual, ctx.bool, p, zero),
                   f.op(S.LogicalNot, ctx.bool, _finite(ctx, p)))
    special = f.op(S.LogicalOr, ctx.bool, special, f.op(S.LogicalNot, ctx.bool, _finite(ctx, c)))
    return sel(special, plain, y)


def _finite(ctx: Ctx, x: int) -> int:
    f = ctx.f
    return f.op(S.LogicalNot, ctx.bool, f.op(S.LogicalOr, ctx.bool, f.op(S.IsInf, ctx.bool, x),
                                             f.op(S.IsNan, ctx.bool, x)))
