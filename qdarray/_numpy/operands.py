"""NumPy data as operands of qdarray operations: zero-copy on the CPU, copied to other devices.

On the CPU an Array's storage is a NumPy array, so a NumPy array given to an operator or to a
NumPy function alongside qdarray arrays is wrapped as an Array without a copy. On other devices
it is copied to the arrays' device, the same host copy (the other way) that `np.asarray(x)`
makes: the host-export rule of docs/numpy.md, which scikit-learn and SciPy rely on. NumPy and
Python scalars are values, not arrays: they mix into operations on every device.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import Array
from .._creation_functions import asarray
from .._data_type_functions import astype
from .._devices import CPU, Device

_PY_SCALARS = (bool, int, float, complex)
NO_VALUE = np._NoValue  # NumPy's "argument not given" default


class NotInNamespace(Exception):
    """A NumPy call the namespace cannot express (an `out=` argument, a NumPy-only dtype such
    as float16, an object NumPy knows and qdarray does not). The message says what; the caller
    runs NumPy's own function instead (on host copies of arrays on other devices)."""


def device_of(objs: Iterable[Any]) -> Device | None:
    """The device of the first Array (or BufferView) among `objs` and the lists and tuples
    directly inside them; None when there is none."""
    for obj in objs:
        if type(obj) is Array:
            return obj._device
        if type(obj) in (list, tuple):
            found = device_of(obj)
            if found is not None:
                return found
        elif hasattr(obj, "_as_array"):  # BufferView
            return obj.device  # type: ignore[no-any-return]
    return None


def host_operand(obj: Any, device: Device, func: str) -> Array:
    """NumPy data (an ndarray, or a list or tuple of values) as an Array on `device`: the
    ndarray itself (no copy) on the CPU, a copy on other devices (as `np.asarray(x)` copies
    the other way). NotInNamespace for a dtype qdarray lacks (float16, strings, objects)."""
    if type(obj) is np.ndarray:
        try:
            wrapped = Array._new(obj, CPU)
        except TypeError as exc:  # a dtype outside the standard's
            raise NotInNamespace(str(exc)) from None
        return wrapped if device is CPU else asarray(wrapped, device=device)
    if type(obj) is list or type(obj) is tuple:
        try:
            return asarray(obj, device=device)
        except (TypeError, ValueError) as exc:
            raise NotInNamespace(str(exc)) from None
    raise NotInNamespace(f"{func} got a {type(obj).__name__}, which qdarray does not convert")


def operand(obj: Any, device: Device, func: str) -> Any:
    """An argument of a namespace function: Arrays, BufferViews and scalars (Python and NumPy)
    as they are, NumPy arrays and sequences through `host_operand`, anything else
    NotInNamespace."""
    kind = type(obj)
    if kind is Array or kind in _PY_SCALARS or isinstance(obj, np.generic):
        return obj
    if hasattr(obj, "_as_array"):  # BufferView
        return obj._as_array()
    return host_operand(obj, device, func)


def array_operand(obj: Any, device: Device, func: str) -> Array:
    """`operand`, with scalars made 0-d Arrays on `device` (for functions that take arrays)."""
    value = operand(obj, device, func)
    if type(value) is Array:
        return value
    return asarray(value, device=device)


# -- arguments of NumPy functions, for the adapters of _numpy_functions -------------------------


def given(value: Any) -> bool:
    """Whether a NumPy argument was given (not None, not NumPy's no-value default)."""
    return value is not None and value is not NO_VALUE


def refuse(func: str, **arguments: Any) -> None:
    """NotInNamespace for the first of `arguments` that is given (not None or NumPy's no-value)."""
    for name, value in arguments.items():
        if given(value):
            raise NotInNamespace(f"numpy.{func} with {name}= has no namespace equivalent")


def flag(value: Any) -> bool:
    """A NumPy boolean option (`keepdims=`), False when not given."""
    return False if value is NO_VALUE else builtins.bool(value)


def mask(where: Any) -> Any:
    """`where=`: True (or not given) selects everything, as if it were not given."""
    return None if where is True or where is NO_VALUE else where


def one_array(a: Any, func: str) -> Array:
    """The array argument of a one-array function (an Array or a BufferView's window)."""
    if type(a) is Array:
        return a
    if hasattr(a, "_as_array"):
        return a._as_array()  # type: ignore[no-any-return]
    raise NotInNamespace(f"numpy.{func} got a {type(a).__name__} where qdarray needs an array")


def arrays_of(objs: Any, func: str) -> list[Array]:
    """Array arguments of one device (NumPy data joins them on the CPU; scalars become 0-d)."""
    items = list(objs)
    device = device_of(items)
    if device is None:
        raise NotInNamespace(f"numpy.{func} got no qdarray array")
    return [array_operand(o, device, func) for o in items]


def dtype_of(dtype: Any) -> _dtypes.DType | None:
    """A `dtype=` argument as a DType (None stays None); NotInNamespace for NumPy-only ones."""
    try:
        return _dtypes.normalize_dtype(dtype)
    except TypeError as exc:
        raise NotInNamespace(str(exc)) from None


def cast(x: Array, dtype: Any) -> Array:
    """`x` in `dtype` (itself when None or the same)."""
    d = dtype_of(dtype)
    return x if d is None or d is x._dtype else astype(x, d)


def inexact(x: Array) -> Array:
    """Integer and boolean input as float64, as NumPy's linalg and fft compute it."""
    return astype(x, _dtypes.float64) if x._dtype.kind in "biu" else x


def complex_of(x: Array) -> Array:
    """`x` as complex (complex64 for float32, complex128 otherwise), as NumPy's fft takes it."""
    kind = x._dtype.kind
    if kind == "c":
        return x
    wide = kind != "f" or x._dtype is _dtypes.float64
    return astype(x, _dtypes.complex128 if wide else _dtypes.complex64)


def shape_tuple(shape: Any) -> tuple[int, ...]:
    """A NumPy shape argument (an int or a sequence) as a tuple."""
    return (int(shape),) if isinstance(shape, int | np.integer) else tuple(shape)
