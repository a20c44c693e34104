"""`qd.math`: scalar math functions for kernels.

Inside kernels each call compiles to one IR op (integer arguments are converted to float64
first; float32 stays float32). Outside kernels the same functions work on Python and NumPy
scalars, computed by NumPy.

Example::

    @qd.kernel
    def wave(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            y[i] = qd.math.sin(x[i]) * qd.math.exp(-x[i])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ir import Op
from .vecmath import (
    cross,
    determinant,
    diag,
    dot,
    eye,
    inverse,
    norm,
    normalize,
    outer,
    polar_decompose,
    svd,
    sym_eig,
    trace,
)

# The vector and matrix functions (vecmath.py; the frontend compiles them in kernels).
VECTOR_FUNCTIONS = (cross, determinant, diag, dot, eye, inverse, norm, normalize, outer,
                    polar_decompose, svd, sym_eig, trace)


def sin(x: Any) -> Any:
    """Sine."""
    return np.sin(x)

def cos(x: Any) -> Any:
    """Cosine."""
    return np.cos(x)

def tan(x: Any) -> Any:
    """Tangent."""
    return np.tan(x)

def asin(x: Any) -> Any:
    """Inverse sine."""
    return np.arcsin(x)

def acos(x: Any) -> Any:
    """Inverse cosine."""
    return np.arccos(x)

def atan(x: Any) -> Any:
    """Inverse tangent."""
    return np.arctan(x)

def sinh(x: Any) -> Any:
    """Hyperbolic sine."""
    return np.sinh(x)

def cosh(x: Any) -> Any:
    """Hyperbolic cosine."""
    return np.cosh(x)

def tanh(x: Any) -> Any:
    """Hyperbolic tangent."""
    return np.tanh(x)

def asinh(x: Any) -> Any:
    """Inverse hyperbolic sine."""
    return np.arcsinh(x)

def acosh(x: Any) -> Any:
    """Inverse hyperbolic cosine."""
    return np.arccosh(x)

def atanh(x: Any) -> Any:
    """Inverse hyperbolic tangent."""
    return np.arctanh(x)

def exp(x: Any) -> Any:
    """e ** x."""
    return np.exp(x)

def exp2(x: Any) -> Any:
    """2 ** x."""
    return np.exp2(x)

def expm1(x: Any) -> Any:
    """e ** x - 1, accurate near 0."""
    return np.expm1(x)

def log(x: Any) -> Any:
    """Natural logarithm."""
    return np.log(x)

def log2(x: Any) -> Any:
    """Base-2 logarithm."""
    return np.log2(x)

def log10(x: Any) -> Any:
    """Base-10 logarithm."""
    return np.log10(x)

def log1p(x: Any) -> Any:
    """log(1 + x), accurate near 0."""
    return np.log1p(x)

def sqrt(x: Any) -> Any:
    """Square root."""
    return np.sqrt(x)

def rsqrt(x: Any) -> Any:
    """1 / sqrt(x)."""
    return 1 / np.sqrt(x)

def cbrt(x: Any) -> Any:
    """Cube root."""
    return np.cbrt(x)

def floor(x: Any) -> Any:
    """Largest integer <= x (as a float)."""
    return np.floor(x)

def ceil(x: Any) -> Any:
    """Smallest integer >= x (as a float)."""
    return np.ceil(x)

def trunc(x: Any) -> Any:
    """x rounded toward zero (as a float)."""
    return np.trunc(x)

def round(x: Any) -> Any:
    """x rounded to the nearest integer, halves to even (as a float)."""
    return np.rint(x)

def sign(x: Any) -> Any:
    """-1, 0 or 1 with the sign of x (NaN for NaN)."""
    return np.sign(x)

def isnan(x: Any) -> Any:
    """Whether x is NaN."""
    return np.isnan(x)

def isinf(x: Any) -> Any:
    """Whether x is infinite."""
    return np.isinf(x)

def isfinite(x: Any) -> Any:
    """Whether x is neither infinite nor NaN."""
    return np.isfinite(x)

def atan2(x1: Any, x2: Any) -> Any:
    """Angle of the point (x2, x1): atan(x1 / x2) in the right quadrant."""
    return np.arctan2(x1, x2)

def hypot(x1: Any, x2: Any) -> Any:
    """sqrt(x1 ** 2 + x2 ** 2) without overflow."""
    return np.hypot(x1, x2)

def copysign(x1: Any, x2: Any) -> Any:
    """|x1| with the sign of x2."""
    return np.copysign(x1, x2)

def fmod(x1: Any, x2: Any) -> Any:
    """C's fmod: remainder with the sign of x1."""
    return np.fmod(x1, x2)

def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable float after x1 in the direction of x2."""
    return np.nextafter(x1, x2)


def pow(x1: Any, x2: Any) -> Any:  # noqa: A001 - the math name
    """x1 ** x2 (integers stay integers; a negative integer power truncates toward 0)."""
    return np.power(x1, x2)


def abs(x: Any) -> Any:  # noqa: A001 - the math name
    """|x| (integers stay integers)."""
    return np.abs(x)


def min(x1: Any, x2: Any) -> Any:  # noqa: A001 - the math name
    """The smaller of x1 and x2; NaN if either is NaN."""
    return np.minimum(x1, x2)


def max(x1: Any, x2: Any) -> Any:  # noqa: A001 - the math name
    """The larger of x1 and x2; NaN if either is NaN."""
    return np.maximum(x1, x2)


def clip(x: Any, lo: Any, hi: Any) -> Any:
    """min(max(x, lo), hi)."""
    return np.minimum(np.maximum(x, lo), hi)


pi = float(np.pi)
e = float(np.e)
inf = float("inf")
nan = float("nan")

# The op each function compiles to (clip is min(max(...)) in the frontend).
OPS: dict[Any, Op] = {
    sin: Op.SIN, cos: Op.COS, tan: Op.TAN, asin: Op.ASIN, acos: Op.ACOS, atan: Op.ATAN,
    sinh: Op.SINH, cosh: Op.COSH, tanh: Op.TANH, asinh: Op.ASINH, acosh: Op.ACOSH, atanh: Op.ATANH,
    exp: Op.EXP, exp2: Op.EXP2, expm1: Op.EXPM1, log: Op.LOG, log2: Op.LOG2, log10: Op.LOG10,
    log1p: Op.LOG1P, sqrt: Op.SQRT, rsqrt: Op.RSQRT, cbrt: Op.CBRT, floor: Op.FLOOR, ceil: Op.CEIL,
    trunc: Op.TRUNC, round: Op.ROUND, sign: Op.SIGN, isnan: Op.ISNAN, isinf: Op.ISINF,
    isfinite: Op.ISFINITE, atan2: Op.ATAN2, hypot: Op.HYPOT, copysign: Op.COPYSIGN, fmod: Op.FMOD,
    nextafter: Op.NEXTAFTER,
    pow: Op.POW, abs: Op.ABS, min: Op.MIN, max: Op.MAX,
}
