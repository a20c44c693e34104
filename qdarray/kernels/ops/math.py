"""`qd.math`: elementary functions of floating-point scalars (float32 or float64).

The frontend converts integer arguments to float64 first, so every op here takes floats and
returns the same float dtype (ISNAN, ISINF and ISFINITE return bool). Semantics are NumPy's
ufuncs of the same name; RSQRT is 1 / sqrt(x); ROUND rounds half to even.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Op
from . import defop
from .rules import same


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
}

for _op, _fn in UNARY.items():
    defop(_op, "math", 1, same("float"), _unary(_fn), doc=f"numpy.{_fn.__name__}")
for _op, _fn in PREDICATES.items():
    defop(_op, "math", 1, same("float", result="bool"), _unary(_fn), doc=f"numpy.{_fn.__name__}")
for _op, _fn in BINARY.items():
    defop(_op, "math", 2, same("float"), _binary(_fn), doc=f"numpy.{_fn.__name__}")
