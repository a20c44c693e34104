"""`qd.math`: elementary functions of floating-point scalars (float32 or float64).

The frontend converts integer arguments to float64 first, so every op here takes floats and
returns the same float dtype (ISNAN, ISINF and ISFINITE return bool). Semantics are NumPy's
ufuncs of the same name; RSQRT is 1 / sqrt(x); ROUND rounds half to even.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir import Op
from .rules import same
from .table import defop


def _unary(fn: Any) -> Any:
    return lambda rt, attrs, a: rt._np.type(fn(a))


def _binary(fn: Any) -> Any:
    return lambda rt, attrs, a, b: rt._np.type(fn(a, b))


def _rsqrt(a: Any) -> Any:
    return a.dtype.type(1) / np.sqrt(a)


UNARY: dict[Op, Any] = {
    Op.SIN: np.sin, Op.COS: np.cos, Op.TAN: np.tan,
    Op.ASIN: np.arcsin, Op.ACOS: np.arccos, Op.ATAN: np.arctan,
    Op.SINH: np.sinh, Op.COSH: np.cosh, Op.TANH: np.tanh,
    Op.ASINH: np.arcsinh, Op.ACOSH: np.arccosh, Op.ATANH: np.arctanh,
    Op.EXP: np.exp, Op.EXP2: np.exp2, Op.EXPM1: np.expm1,
    Op.LOG: np.log, Op.LOG2: np.log2, Op.LOG10: np.log10, Op.LOG1P: np.log1p,
    Op.SQRT: np.sqrt, Op.RSQRT: _rsqrt, Op.CBRT: np.cbrt,
    Op.FLOOR: np.floor, Op.CEIL: np.ceil, Op.TRUNC: np.trunc, Op.ROUND: np.rint,
    Op.SIGN: np.sign,
}
PREDICATES: dict[Op, Any] = {Op.ISNAN: np.isnan, Op.ISINF: np.isinf, Op.ISFINITE: np.isfinite}
BINARY: dict[Op, Any] = {
    Op.ATAN2: np.arctan2, Op.HYPOT: np.hypot, Op.COPYSIGN: np.copysign, Op.FMOD: np.fmod,
    Op.NEXTAFTER: np.nextafter,
}

# -- derivatives (reverse mode: qdarray/ad/transform/adjoint.py) -----------------------------
# d(b, x, y): the derivative of each unary op at x, where y is its result; the rule multiplies
# it by the result's adjoint. Piecewise-constant ops have derivative 0 wherever it exists.


def _k(b: Any, c: float, like: Any) -> Any:
    return b.const(c, like)


def _inv_sqrt(b: Any, v: Any) -> Any:
    return b.op(Op.RSQRT, v)


DERIVATIVES: dict[Op, Any] = {
    Op.SIN: lambda b, x, y: b.op(Op.COS, x),
    Op.COS: lambda b, x, y: b.neg(b.op(Op.SIN, x)),
    Op.TAN: lambda b, x, y: b.add(_k(b, 1.0, x), b.mul(y, y)),
    Op.ASIN: lambda b, x, y: _inv_sqrt(b, b.sub(_k(b, 1.0, x), b.mul(x, x))),
    Op.ACOS: lambda b, x, y: b.neg(_inv_sqrt(b, b.sub(_k(b, 1.0, x), b.mul(x, x)))),
    Op.ATAN: lambda b, x, y: b.div(_k(b, 1.0, x), b.add(_k(b, 1.0, x), b.mul(x, x))),
    Op.SINH: lambda b, x, y: b.op(Op.COSH, x),
    Op.COSH: lambda b, x, y: b.op(Op.SINH, x),
    Op.TANH: lambda b, x, y: b.sub(_k(b, 1.0, x), b.mul(y, y)),
    Op.ASINH: lambda b, x, y: _inv_sqrt(b, b.add(b.mul(x, x), _k(b, 1.0, x))),
    Op.ACOSH: lambda b, x, y: _inv_sqrt(b, b.sub(b.mul(x, x), _k(b, 1.0, x))),
    Op.ATANH: lambda b, x, y: b.div(_k(b, 1.0, x), b.sub(_k(b, 1.0, x), b.mul(x, x))),
    Op.EXP: lambda b, x, y: y,
    Op.EXP2: lambda b, x, y: b.mul(y, _k(b, np.log(2.0), x)),
    Op.EXPM1: lambda b, x, y: b.add(y, _k(b, 1.0, x)),
    Op.LOG: lambda b, x, y: b.div(_k(b, 1.0, x), x),
    Op.LOG2: lambda b, x, y: b.div(_k(b, 1.0, x), b.mul(x, _k(b, np.log(2.0), x))),
    Op.LOG10: lambda b, x, y: b.div(_k(b, 1.0, x), b.mul(x, _k(b, np.log(10.0), x))),
    Op.LOG1P: lambda b, x, y: b.div(_k(b, 1.0, x), b.add(x, _k(b, 1.0, x))),
    Op.SQRT: lambda b, x, y: b.div(_k(b, 0.5, x), y),
    Op.RSQRT: lambda b, x, y: b.div(b.mul(_k(b, -0.5, x), y), x),
    Op.CBRT: lambda b, x, y: b.div(_k(b, 1.0, x), b.mul(_k(b, 3.0, x), b.mul(y, y))),
    Op.FLOOR: None, Op.CEIL: None, Op.TRUNC: None, Op.ROUND: None, Op.SIGN: None,
}


def _chain(d: Any) -> Any:
    def rule(b: Any, instr: Any, g: Any) -> None:
        if d is not None:
            b.accum(0, b.mul(g, d(b, b.x(0), b.y())))
    return rule


def _atan2_adj(b: Any, instr: Any, g: Any) -> None:
    y, x = b.x(0), b.x(1)
    scale = b.div(g, b.add(b.mul(x, x), b.mul(y, y)))
    b.accum(0, b.mul(scale, x))
    b.accum(1, b.neg(b.mul(scale, y)))


def _hypot_adj(b: Any, instr: Any, g: Any) -> None:
    r = b.y()
    zero = b.const(0.0, r)
    safe = b.select(b.op(Op.EQ, r, zero), b.const(1.0, r), r)  # 0 at the origin, as JAX does
    b.accum(0, b.div(b.mul(g, b.x(0)), safe))
    b.accum(1, b.div(b.mul(g, b.x(1)), safe))


def _copysign_adj(b: Any, instr: Any, g: Any) -> None:
    one = b.const(1.0, g)
    flip = b.mul(b.op(Op.COPYSIGN, one, b.x(0)), b.op(Op.COPYSIGN, one, b.x(1)))
    b.accum(0, b.mul(g, flip))  # the sign of b only flips the result: nothing flows to b


def _fmod_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, g)  # fmod(a, b) = a - trunc(a / b) * b
    b.accum(1, b.neg(b.mul(g, b.op(Op.TRUNC, b.div(b.x(0), b.x(1))))))


def _nextafter_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, g)  # one ulp from a: locally a itself; b only picks the direction


BINARY_ADJOINTS: dict[Op, Any] = {
    Op.ATAN2: _atan2_adj, Op.HYPOT: _hypot_adj, Op.COPYSIGN: _copysign_adj, Op.FMOD: _fmod_adj,
    Op.NEXTAFTER: _nextafter_adj,
}

# C99's names (OpenCL C's, CUDA libdevice's) where they differ from the op's; RSQRT and SIGN
# have none (C's sign functions do not propagate NaN as NumPy's does).
_C_NAMES: dict[Op, str | None] = {Op.ROUND: "rint", Op.RSQRT: None, Op.SIGN: None}


def _np_name(fn: Any) -> str | None:
    return fn.__name__ if isinstance(fn, np.ufunc) else None


_F32_OVERFLOW = Fraction(2**128 - 2**103)  # from here float32 rounds to infinity


def _round32(exact: Fraction) -> Any:
    """The float32 nearest to `exact` (ties to even): float64 first, then the neighbours
    checked, since rounding twice can miss by one."""
    if abs(exact) >= _F32_OVERFLOW:
        return np.float32(math.inf if exact > 0 else -math.inf)
    r = np.float32(float(exact))
    if not np.isfinite(r):
        return np.float32((1.0 if exact > 0 else -1.0) * float(np.finfo(np.float32).max))
    cands = [v for v in (r, np.nextafter(r, np.float32(-np.inf)),
                         np.nextafter(r, np.float32(np.inf))) if np.isfinite(v)]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.asarray(v).view(np.uint32)) & 1))


def fma_value(rt: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once to `rt` (float32 or float64), as C's fma: computed exactly."""
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b)):
        return rt._np.type(a * b + c)  # an infinite or NaN product: IEEE's product and sum
    if not math.isfinite(c):
        return rt._np.type(c)  # a finite product does not change an infinite or NaN addend
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE's signed zeros: an exact zero product keeps its sign rules
        return rt._np.type(a * b + c if a == 0 or b == 0 else 0.0)
    if rt.name == "float32":
        return _round32(exact)
    try:
        return np.float64(float(exact))
    except OverflowError:
        return np.float64(math.inf if exact > 0 else -math.inf)


def _fma_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, b.mul(g, b.x(1)))
    b.accum(1, b.mul(g, b.x(0)))
    b.accum(2, g)


defop(Op.FMA, "math", 3, same("float"), lambda rt, attrs, a, b, c: fma_value(rt, a, b, c),
      adjoint=_fma_adj, doc="a * b + c with one rounding (C's fma)", c_name="fma")
for _op, _fn in UNARY.items():
    defop(_op, "math", 1, same("float"), _unary(_fn), adjoint=_chain(DERIVATIVES[_op]),
          doc=f"numpy.{_fn.__name__}", np_name=_np_name(_fn),
          c_name=_C_NAMES.get(_op, _op.name.lower()))
for _op, _fn in PREDICATES.items():
    defop(_op, "math", 1, same("float", result="bool"), _unary(_fn), doc=f"numpy.{_fn.__name__}",
          np_name=_np_name(_fn), c_name=_op.name.lower())
for _op, _fn in BINARY.items():
    defop(_op, "math", 2, same("float"), _binary(_fn), adjoint=BINARY_ADJOINTS[_op],
          doc=f"numpy.{_fn.__name__}", np_name=_np_name(_fn), c_name=_op.name.lower())
