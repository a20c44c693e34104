"""Complex arithmetic spelled in real IR ops, with NumPy's formulas.

Each body takes complex operand Values (the IR's complex scalars, `ops/complex.py`), takes
them apart with REAL / IMAG, computes the parts as NumPy's complex loops do and puts the
result together with COMPLEX. The formulas are NumPy's (numpy/_core/src/umath/loops.c.src):
the schoolbook product (fused as NumPy's SIMD loops fuse it), Smith's quotient with NumPy's
zero-divisor branch, `hypot` for the
absolute value, `sign` as z / |z| (the standard's definition, which array-api-compat
follows; NumPy's own differs for infinite parts). Transcendental functions of complex arguments
are not here: the namespace computes them on the host (docs/opencl.md lists them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._dtypes import DType
from ..emit import Emitter
from ..ir import Op, Value
from ..ops.complex import part_dtype


def parts(em: Emitter, z: Value) -> tuple[Value, Value]:
    return em.emit(Op.REAL, z), em.emit(Op.IMAG, z)


def make(em: Emitter, re: Value, im: Value) -> Value:
    return em.emit(Op.COMPLEX, re, im)  # type: ignore[no-any-return]


def constant(em: Emitter, value: Any, t: DType) -> Value:
    """The constant `value` of dtype `t` (complex ones made of their parts)."""
    if t.kind == "c":
        p = part_dtype(t)
        c = complex(value)
        return make(em, em.const(c.real, p), em.const(c.imag, p))
    return em.const(value, t)


def _f(em: Emitter, op: Op, *args: Value) -> Value:
    return em.emit(op, *args)  # type: ignore[no-any-return]


def add(em: Emitter, t: DType, a: list[Value]) -> Value:
    (ar, ai), (br, bi) = parts(em, a[0]), parts(em, a[1])
    return make(em, _f(em, Op.ADD, ar, br), _f(em, Op.ADD, ai, bi))


def sub(em: Emitter, t: DType, a: list[Value]) -> Value:
    (ar, ai), (br, bi) = parts(em, a[0]), parts(em, a[1])
    return make(em, _f(em, Op.SUB, ar, br), _f(em, Op.SUB, ai, bi))


def product(em: Emitter, ar: Value, ai: Value, br: Value, bi: Value) -> tuple[Value, Value]:
    """(ar + ai j)(br + bi j) as NumPy's complex loops multiply where the CPU has fused
    multiply-add (x86-64 with FMA3, ARM64): fma(ar, br, -(ai bi)), fma(ar, bi, ai br). (Built
    without FMA, NumPy rounds each product: results differ in the last bit, and where a
    product overflows, as in (3e300 + 3e300j)**2, whose real part is -inf here and NaN there.)"""
    re = _f(em, Op.FMA, ar, br, _f(em, Op.NEG, _f(em, Op.MUL, ai, bi)))
    im = _f(em, Op.FMA, ar, bi, _f(em, Op.MUL, ai, br))
    return re, im


def mul(em: Emitter, t: DType, a: list[Value]) -> Value:
    (ar, ai), (br, bi) = parts(em, a[0]), parts(em, a[1])
    return make(em, *product(em, ar, ai, br, bi))


def mul_self(em: Emitter, t: DType, a: list[Value]) -> Value:
    return mul(em, t, [a[0], a[0]])


def quotient(em: Emitter, ar: Value, ai: Value, br: Value, bi: Value) -> tuple[Value, Value]:
    """(ar + ai j) / (br + bi j) by Smith's method, as NumPy divides: scaled by the larger
    part of the divisor; a zero divisor divides each part by |br| (inf or NaN parts)."""
    t = ar.type
    one, zero = em.const(1.0, t), em.const(0.0, t)
    abr, abi = _f(em, Op.ABS, br), _f(em, Op.ABS, bi)
    # |br| >= |bi|: rat = bi / br, scl = 1 / (br + bi rat)
    rat1 = _f(em, Op.TRUEDIV, bi, br)
    scl1 = _f(em, Op.TRUEDIV, one, _f(em, Op.ADD, br, _f(em, Op.MUL, bi, rat1)))
    re1 = _f(em, Op.MUL, _f(em, Op.ADD, ar, _f(em, Op.MUL, ai, rat1)), scl1)
    im1 = _f(em, Op.MUL, _f(em, Op.SUB, ai, _f(em, Op.MUL, ar, rat1)), scl1)
    # zero divisor
    both_zero = _f(em, Op.BIT_AND, _f(em, Op.EQ, abr, zero), _f(em, Op.EQ, abi, zero))
    re1 = _f(em, Op.SELECT, both_zero, _f(em, Op.TRUEDIV, ar, abr), re1)
    im1 = _f(em, Op.SELECT, both_zero, _f(em, Op.TRUEDIV, ai, abr), im1)
    # |br| < |bi|: rat = br / bi, scl = 1 / (bi + br rat)
    rat2 = _f(em, Op.TRUEDIV, br, bi)
    scl2 = _f(em, Op.TRUEDIV, one, _f(em, Op.ADD, bi, _f(em, Op.MUL, br, rat2)))
    re2 = _f(em, Op.MUL, _f(em, Op.ADD, _f(em, Op.MUL, ar, rat2), ai), scl2)
    im2 = _f(em, Op.MUL, _f(em, Op.SUB, _f(em, Op.MUL, ai, rat2), ar), scl2)
    first = _f(em, Op.GE, abr, abi)
    return _f(em, Op.SELECT, first, re1, re2), _f(em, Op.SELECT, first, im1, im2)


def div(em: Emitter, t: DType, a: list[Value]) -> Value:
    (ar, ai), (br, bi) = parts(em, a[0]), parts(em, a[1])
    return make(em, *quotient(em, ar, ai, br, bi))


def reciprocal(em: Emitter, t: DType, a: list[Value]) -> Value:
    """NumPy's complex reciprocal: 1 / z scaled by the larger part of z."""
    zr, zi = parts(em, a[0])
    one = em.const(1.0, zr.type)
    small_im = _f(em, Op.LE, _f(em, Op.ABS, zi), _f(em, Op.ABS, zr))
    r1 = _f(em, Op.TRUEDIV, zi, zr)  # |zi| <= |zr|
    d1 = _f(em, Op.ADD, zr, _f(em, Op.MUL, zi, r1))
    re1, im1 = _f(em, Op.TRUEDIV, one, d1), _f(em, Op.NEG, _f(em, Op.TRUEDIV, r1, d1))
    r2 = _f(em, Op.TRUEDIV, zr, zi)
    d2 = _f(em, Op.ADD, _f(em, Op.MUL, zr, r2), zi)
    re2, im2 = _f(em, Op.TRUEDIV, r2, d2), _f(em, Op.NEG, _f(em, Op.TRUEDIV, one, d2))
    return make(em, _f(em, Op.SELECT, small_im, re1, re2), _f(em, Op.SELECT, small_im, im1, im2))


def neg(em: Emitter, t: DType, a: list[Value]) -> Value:
    re, im = parts(em, a[0])
    return make(em, _f(em, Op.NEG, re), _f(em, Op.NEG, im))


def conj(em: Emitter, t: DType, a: list[Value]) -> Value:
    re, im = parts(em, a[0])
    return make(em, re, _f(em, Op.NEG, im))


def real(em: Emitter, t: DType, a: list[Value]) -> Value:
    return _f(em, Op.REAL, a[0])


def imag(em: Emitter, t: DType, a: list[Value]) -> Value:
    return _f(em, Op.IMAG, a[0])


def abs_(em: Emitter, t: DType, a: list[Value]) -> Value:
    re, im = parts(em, a[0])
    return _f(em, Op.HYPOT, re, im)


def _either(op: Op, combine: Op) -> Any:
    def body(em: Emitter, t: DType, a: list[Value]) -> Value:
        re, im = parts(em, a[0])
        return _f(em, combine, _f(em, op, re), _f(em, op, im))
    return body


isnan = _either(Op.ISNAN, Op.BIT_OR)
isinf = _either(Op.ISINF, Op.BIT_OR)
isfinite = _either(Op.ISFINITE, Op.BIT_AND)


def compare(op: Op) -> Any:
    """equal: both parts equal; not_equal: either part differs."""
    def body(em: Emitter, t: DType, a: list[Value]) -> Value:
        (ar, ai), (br, bi) = parts(em, a[0]), parts(em, a[1])
        combine = Op.BIT_AND if op is Op.EQ else Op.BIT_OR
        return _f(em, combine, _f(em, op, ar, br), _f(em, op, ai, bi))
    return body


def sign(em: Emitter, t: DType, a: list[Value]) -> Value:
    """z / |z| (each part over |z|, as NumPy's sign), 0 at 0, NaN + NaN j for a NaN part; z is
    scaled by its larger part first where |z| would lose bits (subnormal) or overflow. Infinite
    parts as NumPy 2's sign: one gives +-1 there and +0 in the other part, two give NaN."""
    z_re, z_im = parts(em, a[0])
    pt = part_dtype(t)
    zero, one = em.const(0.0, pt), em.const(1.0, pt)
    scale = _f(em, Op.MAX, _f(em, Op.ABS, z_re), _f(em, Op.ABS, z_im))
    info = np.finfo(pt._np)
    low = em.const(float(info.smallest_normal), pt)
    high = em.const(float(info.max) / 2, pt)
    # scaled only where |z| would lose bits (subnormal) or overflow: NumPy's values elsewhere
    outside = _f(em, Op.BIT_OR, _f(em, Op.LT, scale, low), _f(em, Op.GT, scale, high))
    usable = _f(em, Op.BIT_AND, _f(em, Op.BIT_AND, _f(em, Op.ISFINITE, scale),
                                   _f(em, Op.GT, scale, zero)), outside)
    scale = _f(em, Op.SELECT, usable, scale, one)
    re, im = _f(em, Op.TRUEDIV, z_re, scale), _f(em, Op.TRUEDIV, z_im, scale)
    norm = _f(em, Op.HYPOT, re, im)
    at_zero = _f(em, Op.EQ, norm, zero)
    norm = _f(em, Op.SELECT, at_zero, one, norm)
    qr, qi = _f(em, Op.TRUEDIV, re, norm), _f(em, Op.TRUEDIV, im, norm)  # NumPy's: parts / |z|
    qr, qi = _f(em, Op.SELECT, at_zero, zero, qr), _f(em, Op.SELECT, at_zero, zero, qi)
    inf_re, inf_im = _f(em, Op.ISINF, z_re), _f(em, Op.ISINF, z_im)
    one_re = _f(em, Op.BIT_AND, inf_re, _f(em, Op.NOT, inf_im))
    one_im = _f(em, Op.BIT_AND, inf_im, _f(em, Op.NOT, inf_re))
    nan = em.const(float("nan"), pt)
    both = _f(em, Op.BIT_AND, inf_re, inf_im)
    qr = _f(em, Op.SELECT, one_re, _f(em, Op.COPYSIGN, one, z_re),
            _f(em, Op.SELECT, one_im, zero, _f(em, Op.SELECT, both, nan, qr)))
    qi = _f(em, Op.SELECT, one_im, _f(em, Op.COPYSIGN, one, z_im),
            _f(em, Op.SELECT, one_re, zero, _f(em, Op.SELECT, both, nan, qi)))
    return make(em, qr, qi)


def _round(em: Emitter, t: DType, a: list[Value]) -> Value:
    re, im = parts(em, a[0])
    return make(em, _f(em, Op.ROUND, re), _f(em, Op.ROUND, im))


# Functions whose real body lives in `elementwise` and gains a complex one here.
FUNCTIONS: dict[str, Any] = {"round": _round}
