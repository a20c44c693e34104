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

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dispatch
from ._array import Array
from ._dispatch import CATEGORIES, binary, check_kind, float_binary, float_unary, unary

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
        return Array._new(getattr(xp, name)(x._data), device, x._buffer)
    if name == "real":
        return Array._new(xp.asarray(x._data, copy=True), device)
    return Array._new(xp.zeros_like(x._data), device)


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
    return _dispatch.wrap(device.backend.xp.clip(x._data, lo, hi), device)


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
