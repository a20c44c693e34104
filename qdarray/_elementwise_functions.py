"""Elementwise functions of the standard (`sin`, `add`, `clip`, ...).

Each function checks its inputs through `_dispatch` and calls the function of the same name in
the array's backend namespace (`array_api_compat.numpy` on the CPU), so special cases (signed
zeros, NaN and infinity handling) are the backend's, which follow the standard.

Scalars: one of the two operands of a binary function may be a Python scalar. Scalars are
weak, as in NumPy 2 and the standard: `float32_array * 2.0` is float32, `int8_array + 1` is
int8. Integer arrays with Python floats give the default float dtype (float64), as in NumPy.

Where the standard only says an input "should" have some dtype, qdarray follows NumPy:
floating-point functions (`sin`, `sqrt`, `atan2`, ...) accept integer and boolean arrays and
compute in float (float32 for bool, int8, uint8, int16 and uint16; float64 for wider integers,
where NumPy would use float16 for the smallest ones, which qdarray does not have); `divide` of
integers gives float64; the logical functions take any dtype by truthiness.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dispatch
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._dispatch import CATEGORIES, binary, check_kind, float_binary, float_unary, unary
from ._searching_functions import where

_UnaryFunc = Callable[[Array], Array]
_BinaryFunc = Callable[[Any, Any], Array]


def _unary(name: str, summary: str, *, in_float: bool = False) -> _UnaryFunc:
    category = CATEGORIES[name]
    if in_float:
        def func(x: Array, /) -> Array:
            return float_unary(name, x, category)
        returns = ("a new array; floating-point input keeps its dtype, integer and boolean "
                   "input is computed in float32 (8- and 16-bit) or float64.")
    else:
        def func(x: Array, /) -> Array:
            return unary(name, x, category)
        returns = "a new array with the result for each element."
    func.__name__ = func.__qualname__ = name
    func.__doc__ = (
        f"{summary}\n\nArgs:\n    x: input array ({category} dtypes).\n\n"
        f"Returns:\n    {returns}\n\nRaises:\n    TypeError: for a dtype outside "
        f"{category}.\n"
    )
    return func


def _binary(name: str, summary: str, *, in_float: bool = False) -> _BinaryFunc:
    category = CATEGORIES[name]
    if in_float:
        def func(x1: Any, x2: Any, /) -> Array:
            return float_binary(name, x1, x2, category)
    else:
        def func(x1: Any, x2: Any, /) -> Array:
            return binary(name, x1, x2, category)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = (
        f"{summary}\n\nArgs:\n    x1: first operand: an array ({category} dtypes) or a "
        f"Python scalar.\n    x2: second operand, likewise; at least one of x1, x2 must be "
        f"an array.\n\nReturns:\n    a new array of the broadcast shape and the promoted "
        f"dtype.\n\nRaises:\n    TypeError: for a dtype outside {category}, or two scalars.\n"
        f"    ValueError: for shapes that do not broadcast or arrays on two devices.\n"
    )
    return func


# -- arithmetic ----------------------------------------------------------------------------

abs = _unary("abs", "Absolute value of each element; |z| (real) for complex input.")  # noqa: A001
add = _binary("add", "Sum of each pair of elements, x1 + x2.")
divide = _binary("divide", "True division x1 / x2; integer operands give float64.")
floor_divide = _binary("floor_divide", "Floor division x1 // x2 (rounds toward -inf).")
multiply = _binary("multiply", "Product of each pair of elements, x1 * x2.")
negative = _unary("negative", "Negation of each element, -x.")
positive = _unary("positive", "Each element unchanged, +x (a new array).")
pow = _binary("pow", "x1 raised to the power x2, elementwise.")  # noqa: A001
reciprocal = _unary("reciprocal", "1 / x for each element.", in_float=True)
remainder = _binary("remainder", "Remainder of floor division; has the sign of x2.")
square = _unary("square", "x * x for each element.")
subtract = _binary("subtract", "Difference of each pair of elements, x1 - x2.")
sign = _unary("sign", "Sign of each element: -1, 0 or 1 (x / |x| for complex, 0 at 0).")

# -- exponentials, logarithms, powers ------------------------------------------------------

exp = _unary("exp", "e raised to each element.", in_float=True)
expm1 = _unary("expm1", "exp(x) - 1, accurate for small x.", in_float=True)
log = _unary("log", "Natural logarithm of each element.", in_float=True)
log1p = _unary("log1p", "log(1 + x), accurate for small x.", in_float=True)
log2 = _unary("log2", "Base-2 logarithm of each element.", in_float=True)
log10 = _unary("log10", "Base-10 logarithm of each element.", in_float=True)
logaddexp = _binary("logaddexp", "log(exp(x1) + exp(x2)) without overflow.", in_float=True)
sqrt = _unary("sqrt", "Principal square root of each element.", in_float=True)
hypot = _binary("hypot", "sqrt(x1**2 + x2**2) without undue overflow.", in_float=True)

# -- trigonometric and hyperbolic ----------------------------------------------------------

sin = _unary("sin", "Sine of each element (radians).", in_float=True)
cos = _unary("cos", "Cosine of each element (radians).", in_float=True)
tan = _unary("tan", "Tangent of each element (radians).", in_float=True)
asin = _unary("asin", "Inverse sine of each element.", in_float=True)
acos = _unary("acos", "Inverse cosine of each element.", in_float=True)
atan = _unary("atan", "Inverse tangent of each element.", in_float=True)
atan2 = _binary("atan2", "Angle of the point (x2, x1) in radians, in [-pi, pi].",
                in_float=True)
sinh = _unary("sinh", "Hyperbolic sine of each element.", in_float=True)
cosh = _unary("cosh", "Hyperbolic cosine of each element.", in_float=True)
tanh = _unary("tanh", "Hyperbolic tangent of each element.", in_float=True)
asinh = _unary("asinh", "Inverse hyperbolic sine of each element.", in_float=True)
acosh = _unary("acosh", "Inverse hyperbolic cosine of each element.", in_float=True)
atanh = _unary("atanh", "Inverse hyperbolic tangent of each element.", in_float=True)

# -- rounding and floating-point structure -------------------------------------------------

ceil = _unary("ceil", "Smallest integer-valued number >= each element (same dtype).")
floor = _unary("floor", "Largest integer-valued number <= each element (same dtype).")
trunc = _unary("trunc", "Each element rounded toward zero (same dtype).")
round = _unary("round", "Each element rounded to the nearest integer, halves to even.")  # noqa: A001
copysign = _binary("copysign", "|x1| with the sign of x2.", in_float=True)
nextafter = _binary("nextafter", "The next representable value after x1 toward x2.",
                    in_float=True)
signbit = _unary("signbit", "Whether the sign bit of each element is set (True for -0.0).")
isfinite = _unary("isfinite", "Whether each element is finite (not NaN or infinite).")
isinf = _unary("isinf", "Whether each element is +inf or -inf (either part for complex).")
isnan = _unary("isnan", "Whether each element is NaN (either part for complex).")

# -- comparisons ---------------------------------------------------------------------------

equal = _binary("equal", "x1 == x2 for each pair of elements.")
not_equal = _binary("not_equal", "x1 != x2 for each pair of elements.")
less = _binary("less", "x1 < x2 for each pair of elements.")
less_equal = _binary("less_equal", "x1 <= x2 for each pair of elements.")
greater = _binary("greater", "x1 > x2 for each pair of elements.")
greater_equal = _binary("greater_equal", "x1 >= x2 for each pair of elements.")
maximum = _binary("maximum", "The larger of each pair of elements; NaN if either is NaN.")
minimum = _binary("minimum", "The smaller of each pair of elements; NaN if either is NaN.")

# -- logical (any dtype, by truthiness) ----------------------------------------------------

logical_and = _binary("logical_and", "x1 and x2 for each pair of elements (as booleans).")
logical_or = _binary("logical_or", "x1 or x2 for each pair of elements (as booleans).")
logical_xor = _binary("logical_xor", "x1 xor x2 for each pair of elements (as booleans).")
logical_not = _unary("logical_not", "not x for each element (as a boolean).")

# -- bitwise -------------------------------------------------------------------------------

bitwise_and = _binary("bitwise_and", "Bitwise AND, x1 & x2.")
bitwise_or = _binary("bitwise_or", "Bitwise OR, x1 | x2.")
bitwise_xor = _binary("bitwise_xor", "Bitwise XOR, x1 ^ x2.")
bitwise_invert = _unary("bitwise_invert", "Bitwise NOT, ~x (logical NOT for booleans).")
bitwise_left_shift = _binary("bitwise_left_shift", "x1 << x2; x2 must be non-negative.")
bitwise_right_shift = _binary("bitwise_right_shift", "x1 >> x2 (arithmetic for signed ints).")

# -- complex -------------------------------------------------------------------------------

conj = _unary("conj", "Complex conjugate of each element (real input: a copy).")


def real(x: Array, /) -> Array:
    """The real part of each element.

    For a complex array the result is a view, as in NumPy: writes to it change `x`. For real
    input it is a copy of `x`.

    Args:
        x: input array (numeric dtypes).

    Returns:
        an array of the real floating dtype of the same precision (complex64 -> float32),
        or of `x`'s dtype for real input.
    """
    return _part("real", x)


def imag(x: Array, /) -> Array:
    """The imaginary part of each element.

    For a complex array the result is a view, as in NumPy: writes to it change `x`. For real
    input it is a new array of zeros.

    Args:
        x: input array (numeric dtypes).

    Returns:
        an array of the real floating dtype of the same precision (complex64 -> float32),
        or zeros of `x`'s dtype for real input.
    """
    return _part("imag", x)


def _part(name: str, x: Array) -> Array:
    x = _dispatch.require_array(x, name)
    check_kind(x, CATEGORIES[name], name)
    device = x._device
    xp = device.backend.xp
    if x._dtype.kind == "c":
        out = Array._new_view(getattr(xp, name)(x._data), x)
    elif name == "real":
        out = Array._new(xp.asarray(x._data, copy=True), device)
    else:
        out = Array._new(xp.zeros_like(x._data), device)
    if TAPES:
        return record(name, out, (x,))  # type: ignore[no-any-return]
    return out


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002
    """Each element of `x` limited to the range [min, max].

    Args:
        x: input array (real numeric dtypes).
        min: lower bound: None (no bound), a Python int or float, or an array that broadcasts
            with `x` and whose dtype casts to `x`'s without loss.
        max: upper bound, likewise.

    Returns:
        a new array of `x`'s dtype and the broadcast shape of `x`, `min` and `max`. Where
        min > max the result is max, as in NumPy.

    Raises:
        TypeError: for a float bound with an integer `x`, or a bound whose dtype would lose
            values in `x`'s dtype (such as a float64 bound for a float32 `x`).

    Example::

        qd.clip(qd.asarray([-2.0, 0.5, 3.0]), 0.0, 1.0)   # [0.0, 0.5, 1.0]
    """
    x = _dispatch.require_array(x, "clip")
    check_kind(x, "real numeric", "clip")
    lo = _clip_bound(x, min, "min")
    hi = _clip_bound(x, max, "max")
    device = x._device
    out = _dispatch.wrap(device.backend.xp.clip(x._data, lo, hi), device)
    if TAPES:
        return record("clip", out, (x, min, max))  # type: ignore[no-any-return]
    return out


def _clip_bound(x: Array, bound: Any, name: str) -> Any:
    if bound is None:
        return None
    if type(bound) is Array:
        _dispatch.same_device(x, bound, "clip")
        check_kind(bound, "real numeric", "clip")
        if bound._dtype is not x._dtype and not _can_cast(bound._dtype._np, x._dtype._np):
            raise TypeError(
                f"clip's {name} has dtype {bound._dtype}, which does not cast to x's dtype "
                f"{x._dtype} without loss; use qd.astype({name}, {x._dtype}) if its values "
                "fit, or cast x to a wider dtype."
            )
        return bound._data
    if type(bound) is int:
        if x._dtype.kind in "iu":
            info = np.iinfo(x._dtype._np)
            if bound < info.min or bound > info.max:
                return _int_bound_outside(x, bound, name, info)
        return bound
    if type(bound) is float:
        if x._dtype.kind in "iu":
            raise TypeError(
                f"clip of an integer array ({x._dtype}) got a float {name}={bound!r}; use an "
                f"integer bound, or cast x with qd.astype(x, qd.float64) first."
            )
        return bound
    raise TypeError(
        f"clip expects None, a Python int or float, or an Array for {name}; got "
        f"{type(bound).__name__} {bound!r}."
    )


def _int_bound_outside(x: Array, bound: int, name: str, info: Any) -> None:
    # A bound beyond the dtype's range either changes nothing (min below it, max above it) or
    # would set every element to a value the dtype cannot hold.
    if (name == "min") == (bound < info.min):
        return None
    raise OverflowError(
        f"clip's {name}={bound} is outside the range of x's dtype {x._dtype} "
        f"[{info.min}, {info.max}], so every element would become {bound}; use a bound "
        f"inside the range, or cast x to a wider dtype first."
    )


def _can_cast(src: Any, dst: Any) -> bool:
    # Dtype metadata only (no array data), so NumPy's casting table serves every backend.
    return bool(np.can_cast(src, dst))


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------
# Complex values follow JAX's convention: a rule is the transpose of the derivative, without
# conjugation (holomorphic functions multiply by f'(z)); `conj`, `real`, `imag` and `abs`
# are where conjugates appear.


def _balanced(g: Array, x: Any, z: Array, y: Any) -> Any:
    """`g` where `x` alone equals `z`, half of it where `y` equals `z` too (a tie), else 0:
    how JAX splits the gradient of max and min between equal operands."""
    return where(equal(x, z), where(equal(y, z), g * 0.5, g), 0.0)


def _abs_rule(g: Array, x: Array, out: Array) -> Any:
    if x._dtype.kind == "c":
        return where(equal(out, 0.0), 0.0, g * conj(x) / out)
    return g * sign(x)


def _pow_x1(g: Array, x1: Array, x2: Any) -> Any:
    if type(x2) is not Array:
        return g * (x2 * x1 ** (x2 - 1)) if x2 != 0 else g * 0.0
    return g * where(equal(x2, 0), 0.0, x2 * x1 ** (x2 - 1))


def _pow_x2(g: Array, x1: Any, out: Array) -> Any:
    if type(x1) is not Array:
        return g * out * (0.0 if x1 == 0 else (math.log(x1) if type(x1) is not complex
                                               else complex(np.log(x1))))
    return g * out * log(where(equal(x1, 0), 1.0, x1))


def _sign_of(x: Any) -> Any:
    if type(x) is Array:
        return where(signbit(x), -1.0, 1.0)
    return -1.0 if math.copysign(1.0, x) < 0 else 1.0


def _clip_lo(x: Array, lo: Any) -> Any:
    return x if lo is None else maximum(x, lo)


def _clip_x(g: Array, x: Array, lo: Any, hi: Any, out: Array) -> Array:
    y1 = _clip_lo(x, lo)
    g1 = g if hi is None else _balanced(g, y1, out, hi)
    return g1 if lo is None else _balanced(g1, x, y1, lo)


def _clip_lo_rule(g: Array, x: Array, lo: Any, hi: Any, out: Array) -> Any:
    if type(lo) is not Array:
        return None
    y1 = maximum(x, lo)
    g1 = g if hi is None else _balanced(g, y1, out, hi)
    return _balanced(g1, lo, y1, x)


def _clip_hi_rule(g: Array, x: Array, lo: Any, hi: Any, out: Array) -> Any:
    if type(hi) is not Array:
        return None
    return _balanced(g, hi, out, _clip_lo(x, lo))


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

defvjp("abs", x=_abs_rule)
defvjp("add", x1=lambda g: g, x2=lambda g: g)
defvjp("subtract", x1=lambda g: g, x2=lambda g: negative(g))
defvjp("multiply", x1=lambda g, x2: g * x2, x2=lambda g, x1: g * x1)
defvjp("divide", x1=lambda g, x2: g / x2, x2=lambda g, out, x2: negative(g) * out / x2)
defvjp("negative", x=lambda g: negative(g))
defvjp("positive", x=lambda g: g)
defvjp("pow", x1=_pow_x1, x2=_pow_x2)
defvjp("reciprocal", x=lambda g, out: negative(g) * out * out)
defvjp("remainder", x1=lambda g: g, x2=lambda g, x1, x2: negative(g) * floor(x1 / x2))
defvjp("square", x=lambda g, x: g * (x * 2.0))
defvjp("exp", x=lambda g, out: g * out)
defvjp("expm1", x=lambda g, out: g * (out + 1.0))
defvjp("log", x=lambda g, x: g / x)
defvjp("log1p", x=lambda g, x: g / (x + 1.0))
defvjp("log2", x=lambda g, x: g / (x * _LN2))
defvjp("log10", x=lambda g, x: g / (x * _LN10))
defvjp("logaddexp", x1=lambda g, x1, out: g * exp(x1 - out),
       x2=lambda g, x2, out: g * exp(x2 - out))
defvjp("sqrt", x=lambda g, out: g / (out * 2.0))
defvjp("hypot", x1=lambda g, x1, out: where(equal(out, 0.0), 0.0, g * x1 / out),
       x2=lambda g, x2, out: where(equal(out, 0.0), 0.0, g * x2 / out))
defvjp("sin", x=lambda g, x: g * cos(x))
defvjp("cos", x=lambda g, x: negative(g) * sin(x))
defvjp("tan", x=lambda g, out: g * (out * out + 1.0))
defvjp("asin", x=lambda g, x: g / sqrt(1.0 - x * x))
defvjp("acos", x=lambda g, x: negative(g) / sqrt(1.0 - x * x))
defvjp("atan", x=lambda g, x: g / (x * x + 1.0))
defvjp("atan2", x1=lambda g, x1, x2: g * x2 / (x1 * x1 + x2 * x2),
       x2=lambda g, x1, x2: negative(g) * x1 / (x1 * x1 + x2 * x2))
defvjp("sinh", x=lambda g, x: g * cosh(x))
defvjp("cosh", x=lambda g, x: g * sinh(x))
defvjp("tanh", x=lambda g, out: g * (1.0 - out * out))
defvjp("asinh", x=lambda g, x: g / sqrt(x * x + 1.0))
defvjp("acosh", x=lambda g, x: g / sqrt(x * x - 1.0))
defvjp("atanh", x=lambda g, x: g / (1.0 - x * x))
defvjp("copysign", x1=lambda g, x1, x2: g * sign(x1) * _sign_of(x2), x2=lambda g: None)
defvjp("maximum", x1=lambda g, x1, x2, out: _balanced(g, x1, out, x2),
       x2=lambda g, x1, x2, out: _balanced(g, x2, out, x1))
defvjp("minimum", x1=lambda g, x1, x2, out: _balanced(g, x1, out, x2),
       x2=lambda g, x1, x2, out: _balanced(g, x2, out, x1))
defvjp("conj", x=lambda g: conj(g))
defvjp("real", x=lambda g: g)
defvjp("imag", x=lambda g, dtype: g * -1j if dtype.kind == "c" else None)
defvjp("clip", x=_clip_x, lo=_clip_lo_rule, hi=_clip_hi_rule)
# Piecewise constant: the derivative is 0 wherever it exists (JAX gives 0 too).
for _name in ("ceil", "floor", "round", "sign", "trunc", "floor_divide"):
    defvjp(_name)
# x1 moved by one ulp: 1 for x1 and 0 for x2, as the kernel op's adjoint (JAX and PyTorch
# define no rule; it is not piecewise constant in x1).
defvjp("nextafter", x1=lambda g: g, x2=lambda g: None)
