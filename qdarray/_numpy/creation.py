"""NumPy's creation functions given `like=` a qdarray array (NEP 35): `np.asarray(data,
like=x)`, `np.zeros(n, like=x)`, ... create qdarray arrays on `x`'s device.

Part of the table in `_numpy_functions` (`LIKE_FUNCTIONS`). NumPy removes `like=` from the
arguments it passes on, so each adapter takes the device of the `like=` array first, then the
NumPy function's own parameters. Host data given here moves to that device: asking for an array
like a device array is an explicit request for one.
"""

from __future__ import annotations

from typing import Any

from .. import _creation_functions as cf
from .. import _dtypes
from .._array import Array
from .._devices import Device
from .operands import dtype_of, refuse


def _order(order: Any, func: str) -> None:
    refuse(func, order=None if order in ("K", "A", "C", None) else order)


def _numpy_device(device: Any, func: str) -> None:
    refuse(func, device=None if device in (None, "cpu") else device)


def _default_float(dtype: Any) -> Any:
    return _dtypes.float64 if dtype is None else dtype_of(dtype)


def asarray(like: Device, /, a: Any, dtype: Any = None, order: Any = None, *, device: Any = None,
            copy: Any = None) -> Array:
    _order(order, "asarray")
    _numpy_device(device, "asarray")
    return cf.asarray(a, dtype=dtype_of(dtype), device=like, copy=copy)


def array(like: Device, /, object: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
          subok: Any = False, ndmin: Any = 0, ndmax: Any = 0) -> Array:
    _order(order, "array")
    refuse("array", ndmin=ndmin or None, ndmax=ndmax or None)
    return cf.asarray(object, dtype=dtype_of(dtype), device=like,
                      copy=True if copy else False if copy is False else None)


def zeros(like: Device, /, shape: Any, dtype: Any = None, order: Any = "C", *,
          device: Any = None) -> Array:
    _order(order, "zeros")
    _numpy_device(device, "zeros")
    return cf.zeros(shape, dtype=_default_float(dtype), device=like)


def ones(like: Device, /, shape: Any, dtype: Any = None, order: Any = "C", *,
         device: Any = None) -> Array:
    _order(order, "ones")
    _numpy_device(device, "ones")
    return cf.ones(shape, dtype=_default_float(dtype), device=like)


def empty(like: Device, /, shape: Any, dtype: Any = None, order: Any = "C", *,
          device: Any = None) -> Array:
    _order(order, "empty")
    _numpy_device(device, "empty")
    return cf.empty(shape, dtype=_default_float(dtype), device=like)


def full(like: Device, /, shape: Any, fill_value: Any, dtype: Any = None, order: Any = "C", *,
         device: Any = None) -> Array:
    _order(order, "full")
    _numpy_device(device, "full")
    return cf.full(shape, fill_value, dtype=dtype_of(dtype), device=like)


def arange(like: Device, start_or_stop: Any, /, stop: Any = None, step: Any = 1, *,
           dtype: Any = None, device: Any = None) -> Array:
    _numpy_device(device, "arange")
    return cf.arange(start_or_stop, stop, step, dtype=dtype_of(dtype), device=like)


def eye(like: Device, /, N: Any, M: Any = None, k: Any = 0, dtype: Any = float,
        order: Any = "C", *, device: Any = None) -> Array:
    _order(order, "eye")
    _numpy_device(device, "eye")
    return cf.eye(N, M, k=k, dtype=dtype_of(dtype), device=like)


def identity(like: Device, /, n: Any, dtype: Any = None) -> Array:
    return cf.eye(n, dtype=_default_float(dtype), device=like)
