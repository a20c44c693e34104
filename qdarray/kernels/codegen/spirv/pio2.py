"""Argument reduction by pi/2 for large arguments in SPIR-V (Payne and Hanek's): x = n pi/2 + r
for |x| up to the largest float, r correct to about an ulp (float32: where |r| is not
within 2^-20 of a multiple of pi/2).

float64: |x| = X 2^E with X a 53-bit integer, split exactly in X1 2^26 + X0. 2/pi is a table
of 24-bit chunks c_j (weights 2^(-24(j+1)), 48 of them: 1152 bits, computed here with
integers, not copied from a table). x 2/pi mod 8 is the sum over a window of eight chunks of
the exact products X1 c_j and X0 c_j (51 bits each), each scaled by its power of two and
reduced mod 8 exactly: chunks before the window only add multiples of 8, those after it less
than 2^-80. The sum is compensated (TwoSum), n is its nearest integer and r = (sum - n)
pi/2 with the product's rounding error kept (Dekker's TwoProduct). float32 is the same with
12-bit halves and chunks (16 of them, a window of nine).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...._dtypes import DType
from .enums import GLSL, SC
from .enums import Op as S

if TYPE_CHECKING:
    from .ctx import Ctx



class _Layout:
    """mantissa bits P, the halves' split h, chunk bits B, the window K, the chunks."""

    def __init__(self, p: int, h: int, b: int, k: int, chunks: int, pio2_hi: float) -> None:
        self.p, self.h, self.b, self.k = p, h, b, k
        self.table = _two_over_pi(chunks, b)
        self.splitter = 2.0 ** (p - p // 2) + 1  # Veltkamp's
        self.pio2_hi = pio2_hi
        self.pio2_lo = float(_PI2 - Fraction(pio2_hi))


def _two_over_pi(n: int, b: int) -> list[int]:
    """2/pi in n b-bit chunks: floor(2^(b n) 2/pi) by Machin's formula on integers."""
    bits = b * n + 64
    one = 1 << bits

    def arctan_inv(k: int) -> int:  # arctan(1/k) * 2^bits
        total, term, i, sign = 0, one // k, 1, 1
        while term:
            total += sign * (term // i)
            term //= k * k
            i += 2
            sign = -sign
        return total

    pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    v = (2 * one * one // pi) >> 64
    return [(v >> (b * (n - 1 - j))) & ((1 << b) - 1) for j in range(n)]


def _pi_over_2() -> Fraction:
    bits = 256
    words = _two_over_pi(bits // 16, 16)
    two_over_pi = Fraction(sum(w << (16 * (len(words) - 1 - j)) for j, w in enumerate(words)),
                           1 << bits)
    return 1 / two_over_pi


_PI2 = _pi_over_2()
LAYOUTS = {8: _Layout(53, 26, 24, 8, 48, math.pi / 2),
           4: _Layout(24, 12, 12, 9, 16, float(np.float32(math.pi / 2)))}
# |x| from which the large reduction runs: float64's three-part Cody-Waite reduction is exact
# below 2^20; drivers' float32 sin and cos are 1e-7 absolute off to 2^16, garbage past 1e7
THRESHOLD = {8: 2.0 ** 20, 4: 2.0 ** 16}


def reduce_large(ctx: Ctx, t: DType, x: int) -> tuple[int, int]:
    """(r, n) as float ids with x = n pi/2 + r, |r| <= about pi/4; for |x| >= THRESHOLD."""
    lay = LAYOUTS[t.itemsize]
    m, f = ctx.m, ctx.f
    ty = ctx.scalar(t)
    i32 = ctx.i32

    def k(v: float) -> int:
        return ctx.const(t, v)

    def op(code: S, a: int, b: int) -> int:
        return f.op(code, ty, a, b)

    def iop(code: S, a: int, b: int) -> int:
        return f.op(code, i32, a, b)

    def ic(v: int) -> int:
        return m.const(i32, v)

    def two_sum(a: int, b: int) -> tuple[int, int]:
        s = op(S.FAdd, a, b)
        bb = op(S.FSub, s, a)
        return s, op(S.FAdd, op(S.FSub, a, op(S.FSub, s, bb)), op(S.FSub, b, bb))

    ax = f.ext(GLSL.FAbs, ty, x)
    e_var = f.var(ctx.ptr(SC.Function, i32))
    frac = f.ext(GLSL.Frexp, ty, ax, e_var)  # ax = frac 2^e, frac in [1/2, 1)
    big_e = iop(S.ISub, f.load(i32, e_var), ic(lay.p))  # ax = X 2^E
    xi = f.ext(GLSL.Ldexp, ty, frac, ic(lay.p))
    x1 = f.ext(GLSL.Floor, ty, op(S.FMul, xi, k(2.0 ** -lay.h)))
    x0 = op(S.FSub, xi, op(S.FMul, x1, k(2.0 ** lay.h)))
    # the first chunk whose products are not all multiples of 8
    j0 = f.ext(GLSL.SMax, i32, iop(S.SDiv, iop(S.ISub, big_e, ic(3 + lay.b)), ic(lay.b)),
               ic(0))
    arr_t = m.t_array(ty, len(lay.table))
    table = f.var(ctx.ptr(SC.Function, arr_t),
                  m.const_composite(arr_t, [k(float(c)) for c in lay.table]))
    hi, lo = k(0.0), k(0.0)
    for step in range(lay.k):
        j = iop(S.IAdd, j0, ic(step))
        cj = f.load(ty, f.op(S.AccessChain, ctx.ptr(SC.Function, ty), table, j))
        at = iop(S.IMul, j, ic(lay.b))
        for part, shift in ((x1, lay.h - lay.b), (x0, -lay.b)):
            term = f.ext(GLSL.Ldexp, ty, op(S.FMul, part, cj),
                         iop(S.ISub, iop(S.IAdd, big_e, ic(shift)), at))
            term = op(S.FSub, term, op(S.FMul, f.ext(GLSL.Floor, ty, op(
                S.FMul, term, k(0.125))), k(8.0)))  # exact: term mod 8
            hi, err = two_sum(hi, term)
            lo = op(S.FAdd, lo, err)
    n = f.ext(GLSL.RoundEven, ty, hi)
    rest, rest_lo = two_sum(op(S.FSub, hi, n), lo)
    # r = rest * pi/2, the product's rounding error kept (Veltkamp halves)
    p = op(S.FMul, rest, k(lay.pio2_hi))

    def halves(v: int) -> tuple[int, int]:
        g = op(S.FMul, v, k(lay.splitter))
        h = op(S.FSub, g, op(S.FSub, g, v))
        return h, op(S.FSub, v, h)

    ah, al = halves(rest)
    bh, bl = halves(k(lay.pio2_hi))
    err = op(S.FAdd, op(S.FAdd, op(S.FAdd, op(S.FSub, op(S.FMul, ah, bh), p),
                                   op(S.FMul, ah, bl)), op(S.FMul, al, bh)), op(S.FMul, al, bl))
    tail = op(S.FAdd, err, op(S.FAdd, op(S.FMul, rest, k(lay.pio2_lo)),
                              op(S.FMul, rest_lo, k(lay.pio2_hi))))
    r = op(S.FAdd, p, tail)
    neg = f.op(S.FOrdLessThan, ctx.bool, x, k(0.0))
    r = f.op(S.Select, ty, neg, f.op(S.FNegate, ty, r), r)
    n = f.op(S.Select, ty, neg, f.op(S.FNegate, ty, n), n)
    return r, n
