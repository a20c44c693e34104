"""Argument checks and backend dispatch shared by the namespace functions and Array operators.

Every elementwise function and operator goes through `unary` / `binary` / `inplace`: check the
inputs (type, device, dtype category), call the backend's native function, wrap the result.
These sit on the hot path of every small-array operation, so they do only what they must.
"""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._array import Array
from ._devices import Device
from ._dtypes import DType
from ._errors import DeviceMismatchError

PY_SCALARS = (bool, int, float, complex)

# Which Python scalar types may meet an array of a given dtype kind (NumPy's weak scalars).
_SCALAR_OK = {
    "b": (bool,),
    "i": (bool, int),
    "u": (bool, int),
    "f": (bool, int, float),
    "c": (bool, int, float, complex),
}
# NumPy promotes int arrays with Python floats to float64, which NumPy-style code relies on.
_SCALAR_OK_NUMPY = {
    "b": (bool, int, float, complex),
    "i": (bool, int, float, complex),
    "u": (bool, int, float, complex),
    "f": (bool, int, float, complex),
    "c": (bool, int, float, complex),
}


def wrap(data: Any, device: Device) -> Array:
    """Wrap what a backend function returned as a new Array on `device`."""
    return Array._new(device.backend.normalize(data), device)


def require_array(x: Any, func: str, name: str = "x") -> Array:
    """Raise a TypeError unless `x` is an Array."""
    if type(x) is not Array:
        raise TypeError(
            f"{func} expects a qdarray Array for {name}; got {type(x).__name__}. "
            "Use qd.asarray(...) to convert it."
        )
    return x


def same_device(x1: Array, x2: Array, func: str) -> Device:
    """The common device of two arrays; a ValueError naming both when they differ."""
    if x1._device is not x2._device:
        raise DeviceMismatchError(
            f"{func} got arrays on two devices, {x1._device} and {x2._device}; "
            f"move one with x.to_device('{x1._device}') first."
        )
    return x1._device


def unary(name: str, x: Any, category: str) -> Array:
    """Apply the backend's elementwise function `name` to one array."""
    if type(x) is not Array:
        require_array(x, name)
    if category != "all" and x._dtype not in _dtypes.DTYPE_CATEGORIES[category]:
        raise TypeError(f"Only {category} dtypes are allowed in {name}; got {x._dtype}.")
    device = x._device
    backend = device.backend
    return Array._new(backend.normalize(getattr(backend.xp, name)(x._data)), device)


def _check_scalar(value: Any, dtype: DType, func: str) -> None:
    if type(value) not in _SCALAR_OK_NUMPY[dtype.kind]:
        raise TypeError(
            f"{func} cannot combine a Python {type(value).__name__} with an array of "
            f"dtype {dtype}; use qd.asarray(value) with an explicit dtype."
        )


def operands(x1: Any, x2: Any, func: str) -> tuple[Any, Any, Device]:
    """Native operands of a binary function, after type and device checks.

    Python scalars stay Python scalars, so the backend applies NumPy's weak-scalar promotion:
    `float32_array * 2.0` stays float32.
    """
    t1 = type(x1)
    t2 = type(x2)
    if t1 is Array:
        if t2 is Array:
            if x1._device is not x2._device:
                same_device(x1, x2, func)
            return x1._data, x2._data, x1._device
        if t2 in PY_SCALARS:
            _check_scalar(x2, x1._dtype, func)
            return x1._data, x2, x1._device
        require_array(x2, func, "x2")
    if t2 is Array and t1 in PY_SCALARS:
        _check_scalar(x1, x2._dtype, func)
        return x1, x2._data, x2._device
    require_array(x1, func, "x1")
    raise AssertionError("unreachable")


def binary(name: str, x1: Any, x2: Any, category: str) -> Array:
    """Apply the backend's elementwise function `name` to two arrays (or array and scalar)."""
    d1, d2, device = operands(x1, x2, name)
    if category != "all":
        _check_binary_category(name, x1, x2, category)
    backend = device.backend
    return Array._new(backend.normalize(getattr(backend.xp, name)(d1, d2)), device)


def _check_binary_category(name: str, x1: Any, x2: Any, category: str) -> None:
    allowed = _dtypes.DTYPE_CATEGORIES[category]
    for x in (x1, x2):
        if type(x) is Array and x._dtype not in allowed:
            raise TypeError(f"Only {category} dtypes are allowed in {name}; got {x._dtype}.")
        if type(x) is float and category in ("integer", "integer or boolean"):
            raise TypeError(f"Only {category} values are allowed in {name}; got float {x!r}.")


def inplace(name: str, x1: Array, x2: Any, category: str) -> Array:
    """`x1 op= x2`: compute, check the result keeps x1's dtype and shape, write into x1."""
    result = binary(name, x1, x2, category)
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
    x1._data[...] = result._data
    x1._buffer.generation += 1
    return x1


_OPERATOR_SPELLING = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
    "remainder": "%", "pow": "**", "bitwise_and": "&", "bitwise_or": "|",
    "bitwise_xor": "^", "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
    "matmul": "@",
}
