"""Argument checks and backend dispatch shared by the namespace functions and Array operators.

Every elementwise function and operator goes through `unary` / `binary` / `inplace`: check the
inputs (type, device, dtype category), call the backend's native function, wrap the result.
These sit on the hot path of every small-array operation, so they do only what they must:
dtype categories are checked as NumPy kind characters ('b', 'i', 'u', 'f', 'c', stored as
`DType.kind`) against a string, which costs a few tens of nanoseconds, and two arrays of one
device take a path with no further branching.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _autodiff, _dtypes
from ._array import Array
from ._autodiff import TAPES, record
from ._devices import Device
from ._dtypes import DType
from ._errors import DeviceMismatchError

PY_SCALARS = (bool, int, float, complex)

# The dtype kinds each category admits. The names are the ones error messages use.
KINDS: dict[str, str] = {
    "all": "biufc",
    "boolean": "b",
    "integer": "iu",
    "integer or boolean": "biu",
    "real numeric": "iuf",
    "real-valued": "biuf",
    "numeric": "iufc",
    "numeric or boolean": "biufc",
    "floating-point": "fc",
    "real floating-point": "f",
    "complex floating-point": "c",
}

# The category of every elementwise function (operators use the same table, so `x / y` and
# `qd.divide(x, y)` accept the same dtypes). Where the standard only says "should have",
# the category follows NumPy (ints in `divide`, any dtype in the logical functions, booleans
# in arithmetic: `mask * x`; True + True is True, `*` of booleans is logical and; NumPy
# refuses `-` of booleans, and so does `subtract`).
CATEGORIES: dict[str, str] = {
    "abs": "numeric", "acos": "all", "acosh": "all", "add": "numeric or boolean", "asin": "all",
    "asinh": "all", "atan": "all", "atan2": "real-valued", "atanh": "all",
    "bitwise_and": "integer or boolean", "bitwise_left_shift": "integer",
    "bitwise_invert": "integer or boolean", "bitwise_or": "integer or boolean",
    "bitwise_right_shift": "integer", "bitwise_xor": "integer or boolean",
    "ceil": "real numeric", "clip": "real numeric", "conj": "numeric",
    "copysign": "real-valued", "cos": "all", "cosh": "all", "divide": "numeric or boolean",
    "equal": "all", "exp": "all", "expm1": "all", "floor": "real numeric",
    "floor_divide": "real-valued", "greater": "real numeric", "greater_equal": "real numeric",
    "hypot": "real-valued", "imag": "numeric", "isfinite": "all", "isinf": "all",
    "isnan": "all", "less": "real numeric", "less_equal": "real numeric", "log": "all",
    "log1p": "all", "log2": "all", "log10": "all", "logaddexp": "real-valued",
    "logical_and": "all", "logical_not": "all", "logical_or": "all", "logical_xor": "all",
    "maximum": "real numeric", "minimum": "real numeric", "multiply": "numeric or boolean",
    "negative": "numeric", "nextafter": "real-valued", "not_equal": "all",
    "positive": "numeric", "pow": "numeric or boolean", "real": "numeric", "reciprocal": "numeric",
    "remainder": "real-valued", "round": "numeric", "sign": "numeric",
    "signbit": "real numeric", "sin": "all", "sinh": "all", "square": "numeric",
    "sqrt": "all", "subtract": "numeric", "tan": "all", "tanh": "all",
    "trunc": "real numeric", "matmul": "numeric",
}

# Floating-point functions given integer or boolean input compute in the float dtype NumPy
# would pick, except that NumPy's float16 (for bool, int8, uint8) becomes float32: qdarray
# has no float16, and float32 holds those values exactly.
_FLOAT_FOR = {
    "bool": _dtypes.float32, "int8": _dtypes.float32, "uint8": _dtypes.float32,
    "int16": _dtypes.float32, "uint16": _dtypes.float32, "int32": _dtypes.float64,
    "uint32": _dtypes.float64, "int64": _dtypes.float64, "uint64": _dtypes.float64,
}

# Ranks for the in-place fast path: a Python scalar of rank <= the array's kind keeps its dtype.
_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
_SCALAR_RANK = {bool: 0, int: 1, float: 2, complex: 3}
# Operators whose backend functions take `out=` and cannot fail half-way for same-dtype input.
_INPLACE_DIRECT = frozenset({
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
})


def wrap(data: Any, device: Device) -> Array:
    """Wrap what a backend function returned as a new Array on `device`."""
    return Array._new(device.backend.normalize(data), device)


def require_array(x: Any, func: str, name: str = "x") -> Array:
    """`x` as an Array: Arrays pass, a BufferView gives the Array sharing its window's memory,
    anything else raises a TypeError saying how to convert it."""
    if type(x) is not Array:
        as_array = getattr(x, "_as_array", None)
        if as_array is not None:  # BufferView: the namespace reads and writes its window
            return as_array()  # type: ignore[no-any-return]
        raise TypeError(f"{func} expects a qdarray Array for {name}; got {type(x).__name__}. "
                        "Use qd.asarray(...) to convert it.")
    return x


def same_device(x1: Array, x2: Array, func: str) -> Device:
    """The common device of two arrays; a ValueError naming both when they differ."""
    if x1._device is not x2._device:
        raise DeviceMismatchError(
            f"{func} got arrays on two devices, {x1._device} and {x2._device}; "
            f"move one with x.to_device('{x1._device}') first."
        )
    return x1._device


def category_error(func: str, category: str, dtype: DType) -> TypeError:
    """The namespace's TypeError for a dtype outside a function's category, with a way out."""
    kind = dtype.kind
    if kind == "b":
        hint = ("Use qd.astype(x, qd.int64) first, or a logical function "
                "(qd.logical_and, qd.logical_or, qd.logical_not) for booleans.")
    elif kind == "c":
        hint = "Use qd.real(x), qd.imag(x) or qd.abs(x) first."
    elif kind == "f":
        hint = "Use qd.astype(x, qd.int64) first if the values are whole numbers."
    else:
        hint = "Use qd.astype(x, qd.float64) first."
    return TypeError(f"Only {category} dtypes are allowed in {func}; got {dtype}. {hint}")


def check_kind(x: Array, category: str, func: str) -> None:
    """Raise `category_error` unless `x`'s dtype is in `category`."""
    if x._dtype.kind not in KINDS[category]:
        raise category_error(func, category, x._dtype)


def unary(name: str, x: Any, category: str | None = None) -> Array:
    """Apply the backend's elementwise function `name` to one array."""
    if type(x) is not Array:
        x = require_array(x, name)
    if category is None:
        category = CATEGORIES[name]
    if x._dtype.kind not in KINDS[category]:
        raise category_error(name, category, x._dtype)
    device = x._device
    backend = device.backend
    out = Array._new(backend.normalize(getattr(backend.xp, name)(x._data)), device)
    if TAPES:
        return record(name, out, (x,))  # type: ignore[no-any-return]
    return out


def float_unary(name: str, x: Any, category: str) -> Array:
    """`unary` for a floating-point function: integer and boolean input is computed in float."""
    if type(x) is not Array:
        x = require_array(x, name)
    kind = x._dtype.kind
    if kind not in KINDS[category]:
        raise category_error(name, category, x._dtype)
    device = x._device
    backend = device.backend
    data = x._data
    if kind in "biu":
        data = to_float(data, x._dtype, device, name)
    out = Array._new(backend.normalize(getattr(backend.xp, name)(data)), device)
    if TAPES:
        return record(name, out, (x,))  # type: ignore[no-any-return]
    return out


def to_float(data: Any, dtype: DType, device: Device, func: str) -> Any:
    """Native `data` of an integer or boolean dtype, cast to the float dtype `func` computes in."""
    target = _FLOAT_FOR[dtype.name]
    backend = device.backend
    if not backend.supports_dtype(target._np, device):
        raise TypeError(
            f"{func} computes {dtype} input in {target}, which device {device} does not "
            "support; use qd.astype(x, qd.float32) first."
        )
    return backend.xp.astype(data, target._np)


def _scalar_error(func: str, category: str, value: Any) -> TypeError:
    kind = type(value).__name__
    hint = ("Use a real value, such as value.real." if kind == "complex"
            else "Use an integer value, such as int(value), if it is a whole number.")
    return TypeError(
        f"Only {category} values are allowed in {func}; got {kind} {value!r}. {hint}"
    )


def _foreign(x: Any, other: Any, func: str, name: str) -> Any:
    """A NumPy scalar as a 0-d Array on `other`'s device (NumPy treats them as typed values)."""
    if type(x) is Array or type(x) in PY_SCALARS:
        return x
    if hasattr(x, "_as_array"):  # BufferView
        return x._as_array()
    if isinstance(x, np.generic) and x.dtype in _dtypes._BY_NUMPY and type(other) is Array:
        device = other._device
        return Array._new(device.backend.asarray(x, None, None, device), device)
    raise TypeError(
        f"{func} expects a qdarray Array or a Python scalar for {name}; got "
        f"{type(x).__name__}. Use qd.asarray(...) to convert it."
    )


def coerce(x1: Any, x2: Any, func: str) -> tuple[Any, Any]:
    """The operands with NumPy scalars made 0-d Arrays; a TypeError for other foreign types."""
    if type(x1) is not Array and type(x1) not in PY_SCALARS:
        x1 = _foreign(x1, x2, func, "x1")
    if type(x2) is not Array and type(x2) not in PY_SCALARS:
        x2 = _foreign(x2, x1, func, "x2")
    return x1, x2


def operands(x1: Any, x2: Any, func: str, category: str = "all") -> tuple[Any, Any, Device]:
    """Native operands of a binary function, after type, device and dtype-category checks.

    Python scalars stay Python scalars, so the backend applies NumPy's weak-scalar promotion:
    `float32_array * 2.0` stays float32. At least one operand must be an Array.
    """
    t1 = type(x1)
    t2 = type(x2)
    if t1 is not Array and t1 not in PY_SCALARS or t2 is not Array and t2 not in PY_SCALARS:
        x1, x2 = coerce(x1, x2, func)
        t1 = type(x1)
        t2 = type(x2)
    kinds = KINDS[category]
    if t1 is Array:
        if x1._dtype.kind not in kinds:
            raise category_error(func, category, x1._dtype)
        if t2 is Array:
            if x1._device is not x2._device:
                same_device(x1, x2, func)
            if x2._dtype.kind not in kinds:
                raise category_error(func, category, x2._dtype)
            return x1._data, x2._data, x1._device
        if (t2 is float and "f" not in kinds) or (t2 is complex and "c" not in kinds):
            raise _scalar_error(func, category, x2)
        return x1._data, x2, x1._device
    if t2 is Array:
        if x2._dtype.kind not in kinds:
            raise category_error(func, category, x2._dtype)
        if (t1 is float and "f" not in kinds) or (t1 is complex and "c" not in kinds):
            raise _scalar_error(func, category, x1)
        return x1, x2._data, x2._device
    raise TypeError(
        f"{func} needs at least one Array operand; got {type(x1).__name__} and "
        f"{type(x2).__name__}. Use qd.asarray(x1) to make one of them an array."
    )


def binary(name: str, x1: Any, x2: Any, category: str | None = None) -> Array:
    """Apply the backend's elementwise function `name` to two arrays (or array and scalar)."""
    if category is None:
        category = CATEGORIES[name]
    if type(x1) is Array:  # the common cases (two arrays, an array and a scalar) inline
        t2 = type(x2)
        if t2 is Array:
            device = x1._device
            kinds = KINDS[category]
            if x2._device is not device:
                same_device(x1, x2, name)
            if x1._dtype.kind not in kinds:
                raise category_error(name, category, x1._dtype)
            if x2._dtype.kind not in kinds:
                raise category_error(name, category, x2._dtype)
            backend = device.backend
            out = Array._new(backend.normalize(getattr(backend.xp, name)(x1._data, x2._data)),
                             device)
            if TAPES:
                return record(name, out, (x1, x2))  # type: ignore[no-any-return]
            return out
        if t2 is float or t2 is int:
            kinds = KINDS[category]
            if x1._dtype.kind not in kinds:
                raise category_error(name, category, x1._dtype)
            if t2 is float and "f" not in kinds:
                raise _scalar_error(name, category, x2)
            device = x1._device
            backend = device.backend
            out = Array._new(backend.normalize(getattr(backend.xp, name)(x1._data, x2)), device)
            if TAPES:
                return record(name, out, (x1, x2))  # type: ignore[no-any-return]
            return out
    d1, d2, device = operands(x1, x2, name, category)
    backend = device.backend
    out = Array._new(backend.normalize(getattr(backend.xp, name)(d1, d2)), device)
    if TAPES:
        return record(name, out, (x1, x2))  # type: ignore[no-any-return]
    return out


def float_binary(name: str, x1: Any, x2: Any, category: str) -> Array:
    """`binary` for a floating-point function: with no float operand, compute in float."""
    x1, x2 = coerce(x1, x2, name)
    d1, d2, device = operands(x1, x2, name, category)
    k1 = x1._dtype.kind if type(x1) is Array else "b" if type(x1) is bool else "i"
    k2 = x2._dtype.kind if type(x2) is Array else "b" if type(x2) is bool else "i"
    if type(x1) is not float and type(x2) is not float and k1 in "biu" and k2 in "biu":
        dts = [x._dtype for x in (x1, x2) if type(x) is Array]
        common = _dtypes.result_type(*dts)
        if common.kind in "biu":
            if type(x1) is Array:
                d1 = to_float(d1, common, device, name)
            if type(x2) is Array:
                d2 = to_float(d2, common, device, name)
    backend = device.backend
    out = Array._new(backend.normalize(getattr(backend.xp, name)(d1, d2)), device)
    if TAPES:
        return record(name, out, (x1, x2))  # type: ignore[no-any-return]
    return out


def inplace(name: str, x1: Array, x2: Any, category: str | None = None) -> Array:
    """`x1 op= x2`: check the result keeps x1's dtype and shape, then write into x1.

    When the dtype and shape are known to be kept (same-dtype operand of x1's shape or 0-d, or
    a Python scalar of no higher kind), the backend writes into x1 directly; otherwise the
    result is computed first and checked, so a refused update leaves x1 untouched.
    """
    if category is None:
        category = CATEGORIES[name]
    if TAPES and (taped := _autodiff.inplace(name, x1, x2, category)) is not None:
        return taped
    kind = x1._dtype.kind
    t2 = type(x2)
    if name in _INPLACE_DIRECT and not (name == "pow" and kind in "biu") and not (
            name == "divide" and kind in "biu") and not (
            kind == "b" and name in ("floor_divide", "remainder")):  # booleans give int8
        if t2 is Array:
            shape = x2._data.shape
            direct = (x2._dtype is x1._dtype and x2._device is x1._device
                      and (shape == x1._data.shape or shape == ()))
        else:
            direct = t2 in _SCALAR_RANK and _SCALAR_RANK[t2] <= _KIND_RANK[kind]
        if direct:
            kinds = KINDS[category]
            if kind not in kinds:
                raise category_error(name, category, x1._dtype)
            if t2 is float and "f" not in kinds or t2 is complex and "c" not in kinds:
                raise _scalar_error(name, category, x2)
            d2 = x2._data if t2 is Array else x2
            data = x1._data
            getattr(x1._device.backend.xp, name)(data, d2, out=data)
            x1._buffer.generation += 1
            return x1
    result = binary(name, x1, x2, category)
    check_inplace_result(name, x1, result)
    data = result._data
    if result._dtype is not x1._dtype:  # a wider integer whose values fit x1's dtype
        data = x1._device.backend.xp.astype(data, x1._data.dtype)
    x1._data[...] = data
    x1._buffer.generation += 1
    return x1


def check_integer_range(value: Array, dtype: DType) -> None:
    """Raise an OverflowError naming the first bad value unless every value of the integer
    array `value` fits the integer dtype `dtype` (checked on the device, by its min and max)."""
    src = np.iinfo(value._dtype._np)
    dst = np.iinfo(dtype._np)
    if dst.min <= src.min and src.max <= dst.max or value.size == 0:
        return
    xp = value._device.backend.xp
    lo = int(xp.min(value._data))
    hi = int(xp.max(value._data))
    if lo < dst.min or hi > dst.max:
        bad = lo if lo < dst.min else hi
        raise OverflowError(
            f"Value {bad} (dtype {value._dtype}) is out of range for dtype {dtype} "
            f"([{dst.min}, {dst.max}]); nothing was written. Use an array of a wider dtype."
        )


def check_inplace_result(name: str, x1: Array, result: Array) -> None:
    """Raise unless `x1 op= x2` can store `result` in x1: the same shape, and the same dtype or,
    between integer dtypes, values that fit x1's (as `x1[...] = result` would store them).

    Note: NumPy, CuPy and PyTorch store a wider integer result in place by casting (so
    `nfev += counts` of int32 and int64 works; SciPy's `nsum` relies on it); qdarray does too,
    but checks the range first rather than wrapping, as its assignments do. A float or
    complex result of higher precision or kind is refused: the cast would round silently.
    """
    if result._dtype is not x1._dtype and x1._dtype.kind in "iu" and \
            result._dtype.kind in "iu" and result.shape == x1.shape:
        check_integer_range(result, x1._dtype)
        return
    if result._dtype is not x1._dtype:
        raise TypeError(
            f"In-place {name} would change dtype {x1._dtype} to {result._dtype}; "
            f"use x = x {_OPERATOR_SPELLING.get(name, name)} y to get a new array instead."
        )
    if result.shape != x1.shape:
        raise ValueError(
            f"In-place {name} cannot broadcast shape {x1.shape} to {result.shape}; "
            "the left operand's shape must not change."
        )


_OPERATOR_SPELLING = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
    "remainder": "%", "pow": "**", "bitwise_and": "&", "bitwise_or": "|",
    "bitwise_xor": "^", "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
    "matmul": "@",
}
