"""Creation functions of the standard (asarray, zeros, arange, ...), plus `requires_grad`."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes
from ._array import Array
from ._devices import Device, as_device
from ._dtypes import DType


def _native_dtype(dtype: Any, device: Device) -> np.dtype | None:
    d = _dtypes.normalize_dtype(dtype)
    if d is None:
        return None
    if not device.backend.supports_dtype(d._np, device):
        raise TypeError(
            f"Device {device} does not support dtype {d}; use a narrower dtype such as "
            f"float32, or another device."
        )
    return d._np


def _with_grad(x: Array, requires_grad: bool) -> Array:
    if requires_grad:
        if x._dtype not in _dtypes.FLOATING_DTYPES:
            raise TypeError(
                f"requires_grad=True needs a floating-point dtype; got {x._dtype}. "
                "Use dtype=qd.float32 or qd.float64."
            )
        x._grad = zeros_like(x)
    return x


def asarray(obj: Any, /, *, dtype: DType | None = None, device: Any = None,
            copy: bool | None = None, requires_grad: bool = False) -> Array:
    """Convert `obj` (an Array, BufferView, NumPy or DLPack array, scalar or nested sequence).

    Args:
        obj: what to convert.
        dtype: the result's dtype; inferred from `obj` when None.
        device: the result's device; `obj`'s device (or the default device) when None.
        copy: True always copies, False never copies (ValueError if it must), None copies
            only when needed.
        requires_grad: give the result a zero `.grad` companion (floating dtypes only).

    Example::

        x = qd.asarray([1.0, 2.0], dtype=qd.float32)
    """
    from ._interchange import as_native

    target = None if device is None else as_device(device)
    data, src_device, buffer = as_native(obj)
    if data is None:
        target = target or as_device(None)
        np_dtype = _native_dtype(dtype, target)
        if np_dtype is None and _contains_only_python_ints(obj):
            np_dtype = np.dtype(np.int64)
        native = target.backend.asarray(obj, np_dtype, copy, target)
        _check_supported(native, target)
        return _with_grad(Array._new(native, target), requires_grad)
    target = target or src_device
    if target is not src_device:
        if copy is False:
            raise ValueError(
                f"asarray(copy=False) cannot move data from {src_device} to {target}; "
                "use copy=None or copy=True."
            )
        from ._transfer import transfer

        moved = transfer(Array._new(data, src_device, buffer), target, None)
        data, buffer = moved._data, None
        copy = False if copy is None else copy
    np_dtype = _native_dtype(dtype, target)
    native = target.backend.asarray(data, np_dtype, copy, target)
    shares = native is data or (copy is not True and np.dtype(native.dtype) == data.dtype
                                and _shares(native, data))
    result = Array._new(native, target, buffer if shares else None)
    return _with_grad(result, requires_grad)


def _shares(a: Any, b: Any) -> bool:
    base = getattr(a, "base", None)
    return base is b or (base is not None and base is getattr(b, "base", None))


def _contains_only_python_ints(obj: Any) -> bool:
    if type(obj) is int:
        return True
    if isinstance(obj, (list, tuple)) and obj:
        return all(_contains_only_python_ints(o) for o in obj)
    return False


def _check_supported(native: Any, device: Device) -> None:
    _dtypes.from_numpy_dtype(native.dtype)


def _filled(fill: str, shape: Any, dtype: Any, device: Any, requires_grad: bool,
            value: Any = None) -> Array:
    target = as_device(device)
    xp = target.backend.xp
    np_dtype = _native_dtype(dtype, target)
    if fill == "full":
        if np_dtype is None:
            if isinstance(value, Array):
                np_dtype = value._dtype._np
                value = value._data
            elif isinstance(value, bool):
                np_dtype = np.dtype(bool)
            elif isinstance(value, int):
                np_dtype = np.dtype(np.int64)
            elif isinstance(value, complex):
                np_dtype = np.dtype(np.complex128)
            else:
                np_dtype = np.dtype(np.float64)
        native = xp.full(shape, value, dtype=np_dtype, **_device_kw(target))
    else:
        np_dtype = np_dtype if np_dtype is not None else np.dtype(np.float64)
        native = getattr(xp, fill)(shape, dtype=np_dtype, **_device_kw(target))
    return _with_grad(Array._new(target.backend.normalize(native), target), requires_grad)


def _device_kw(device: Device) -> dict[str, Any]:
    return {} if device.kind == "cpu" else {"device": device}


def zeros(shape: Any, *, dtype: DType | None = None, device: Any = None,
          requires_grad: bool = False) -> Array:
    """An array of zeros (float64 by default)."""
    return _filled("zeros", shape, dtype, device, requires_grad)


def ones(shape: Any, *, dtype: DType | None = None, device: Any = None,
         requires_grad: bool = False) -> Array:
    """An array of ones (float64 by default)."""
    return _filled("ones", shape, dtype, device, requires_grad)


def empty(shape: Any, *, dtype: DType | None = None, device: Any = None,
          requires_grad: bool = False) -> Array:
    """An uninitialised array (float64 by default)."""
    return _filled("empty", shape, dtype, device, requires_grad)


def full(shape: Any, fill_value: Any, *, dtype: DType | None = None, device: Any = None,
         requires_grad: bool = False) -> Array:
    """An array filled with `fill_value`; the dtype follows the value when not given."""
    return _filled("full", shape, dtype, device, requires_grad, fill_value)


def _like(x: Any, func: str) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{func} expects a qdarray Array; got {type(x).__name__}.")
    return x


def zeros_like(x: Array, /, *, dtype: DType | None = None, device: Any = None,
               requires_grad: bool = False) -> Array:
    """Zeros with the shape (and, unless given, dtype and device) of `x`."""
    x = _like(x, "zeros_like")
    return zeros(x.shape, dtype=dtype or x._dtype, device=device or x._device,
                 requires_grad=requires_grad)


def ones_like(x: Array, /, *, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Array:
    """Ones with the shape (and, unless given, dtype and device) of `x`."""
    x = _like(x, "ones_like")
    return ones(x.shape, dtype=dtype or x._dtype, device=device or x._device,
                requires_grad=requires_grad)


def empty_like(x: Array, /, *, dtype: DType | None = None, device: Any = None,
               requires_grad: bool = False) -> Array:
    """Uninitialised, with the shape (and, unless given, dtype and device) of `x`."""
    x = _like(x, "empty_like")
    return empty(x.shape, dtype=dtype or x._dtype, device=device or x._device,
                 requires_grad=requires_grad)


def full_like(x: Array, /, fill_value: Any, *, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Array:
    """`fill_value` with the shape (and, unless given, dtype and device) of `x`."""
    x = _like(x, "full_like")
    return full(x.shape, fill_value, dtype=dtype or x._dtype, device=device or x._device,
                requires_grad=requires_grad)
