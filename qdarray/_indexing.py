"""Indexing: `x[key]`, `x[key] = value`, and the standard's `take` / `take_along_axis`.

Keys follow NumPy: integers, slices, `...`, `None`, integer arrays (vectorized indexing, which
contains the standard's 2024.12 integer-array indexing) and boolean arrays. Keys made only of
integers, slices, `...` and `None` select a *view*: the result shares the base's `Buffer`
token, so writes through it count as writes of the base (`generation` bumps), which the adstack
sizing cache relies on. Array keys select a copy.

Every index is bounds-checked here rather than left to the backend, because not every backend
checks (CuPy wraps integer-array indices around). Errors name the index, axis and size.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from . import _autodiff, _dtypes
from ._array import Array
from ._autodiff import TAPES, Scatter, defvjp, record
from ._axis import normalize_axis
from ._creation_functions import arange, asarray, zeros
from ._dispatch import check_integer_range, require_array, same_device
from ._dtypes import DType
from .backends.quiet import quiet

_SCALAR_KINDS = {
    # Python scalar type -> dtype kinds it may be written into (NumPy same-kind casting).
    bool: "buifc",
    int: "iufc",
    float: "fc",
    complex: "c",
}


# -- keys ------------------------------------------------------------------------------------


def _as_int(value: Any) -> int | None:
    try:
        return operator.index(value)
    except TypeError:
        return None


def _slice(s: slice) -> slice:
    parts: list[int | None] = []
    for name, part in (("start", s.start), ("stop", s.stop), ("step", s.step)):
        if part is None:
            parts.append(None)
            continue
        i = _as_int(part)
        if i is None:
            raise IndexError(
                f"Slice {name} must be an integer or None; got {type(part).__name__} "
                f"{part!r}. Use integers in slices, e.g. x[1:5:2]."
            )
        parts.append(i)
    if parts[2] == 0:
        raise ValueError("Slice step cannot be zero; use a positive or negative step.")
    return slice(parts[0], parts[1], parts[2])


def _from_sequence(x: Array, seq: Any) -> Any:
    """A Python list (or a NumPy integer or boolean array) used as an index (NumPy
    semantics) as a native index array on x's device."""
    host = np.asarray(seq)
    if host.size == 0:
        host = host.astype(np.int64)
    if host.dtype.kind not in "biu":
        raise IndexError(
            f"A list used as an index must hold integers or booleans; got {seq!r}. "
            "Use qd.asarray(...) with an integer or boolean dtype."
        )
    return x._device.backend.asarray(host, None, None, x._device)


def _bounds_message(index: int, axis: int, size: int) -> str:
    return (
        f"index {index} is out of bounds for axis {axis} with size {size}; "
        f"use an index in [{-size}, {size})."
    )


def check_index_array(native: Any, size: int, axis: int, xp: Any) -> None:
    """IndexError unless every element of the native integer array lies in [-size, size)."""
    if native.size == 0:
        return
    lo = int(xp.min(native))
    hi = int(xp.max(native))
    if lo < -size:
        raise IndexError(_bounds_message(lo, axis, size))
    if hi >= size:
        raise IndexError(_bounds_message(hi, axis, size))


def _check_int(index: int, axis: int, size: int) -> None:
    if not -size <= index < size:
        raise IndexError(_bounds_message(index, axis, size))


def _classify(x: Array, key: tuple[Any, ...]) -> tuple[list[tuple[str, Any]], int]:
    """Each key element as (kind, normalized value), and the number of axes they consume."""
    items: list[tuple[str, Any]] = []
    consumed = 0
    for k in key:
        tk = type(k)
        if tk is int:
            items.append(("int", k))
            consumed += 1
        elif tk is slice:
            items.append(("slice", _slice(k)))
            consumed += 1
        elif k is None:
            items.append(("none", None))
        elif k is Ellipsis:
            items.append(("ellipsis", None))
        elif tk is bool or isinstance(k, np.bool_):
            # Note: NumPy treats a scalar boolean as a 0-D boolean array index.
            items.append(("bool", builtins_bool(k)))
        elif tk is Array:
            same_device(x, k, "Indexing")
            kind = k._dtype.kind
            if kind == "b":
                items.append(("mask", k._data))
                consumed += k.ndim
            elif kind in "iu":
                items.append(("intarray", k._data))
                consumed += 1
            else:
                raise IndexError(
                    f"Arrays used as indices must have an integer or boolean dtype; got "
                    f"{k._dtype}. Use qd.astype(index, qd.int64) for positions."
                )
        elif tk is list or tk is np.ndarray and k.dtype.kind in "biu":
            # A NumPy index array is taken as a list is (and as CuPy takes one): its values
            # are copied to x's device. (Dask's arg-reductions index chunks with np.ogrid.)
            native = _from_sequence(x, k)
            if native.dtype.kind == "b":
                items.append(("mask", native))
                consumed += native.ndim
            else:
                items.append(("intarray", native))
                consumed += 1
        elif (i := _as_int(k)) is not None:
            items.append(("int", i))
            consumed += 1
        else:
            raise IndexError(
                f"Only integers, slices, ..., None and integer or boolean arrays are valid "
                f"indices; got {type(k).__name__} {k!r}. Use qd.asarray(...) for array indices."
            )
    return items, consumed


def normalize_key(x: Array, key: Any) -> tuple[Any, bool]:
    """The native key for `x._data[...]`, and whether it selects a view (basic indexing).

    Raises:
        IndexError: for out-of-range indices (naming index, axis and size), too many
            indices, more than one ellipsis, mismatched boolean shapes or bad index types.
        DeviceMismatchError: for index arrays on another device than `x`.
    """
    if type(key) is not tuple:
        key = (key,)
    items, consumed = _classify(x, key)
    n_ellipsis = sum(1 for kind, _ in items if kind == "ellipsis")
    if n_ellipsis > 1:
        raise IndexError(f"An index can have only one ellipsis (...); got {n_ellipsis}.")
    shape = x.shape
    if consumed > len(shape):
        raise IndexError(
            f"Too many indices for an array of shape {shape}: the key indexes {consumed} "
            f"dimensions but the array has {len(shape)}."
        )
    advanced = any(kind in ("mask", "intarray", "bool") for kind, _ in items)
    if not advanced:
        return _basic_key(items, shape), True
    if not any(kind == "mask" or (kind == "intarray" and v.ndim > 0) for kind, v in items):
        # Only 0-D integer arrays (and scalar booleans): a 0-D integer array index is the
        # same as an int (the standard), which keeps the view semantics of basic indexing.
        if not any(kind == "bool" for kind, _ in items):
            items = [("int", int(v)) if kind == "intarray" else (kind, v) for kind, v in items]
            return _basic_key(items, shape), True
    return _advanced_key(x, items, shape), False


def _basic_key(items: list[tuple[str, Any]], shape: tuple[int, ...]) -> tuple[Any, ...]:
    native: list[Any] = []
    axis = 0
    has_ellipsis = False
    consumed = sum(1 for kind, _ in items if kind in ("int", "slice"))
    for kind, value in items:
        if kind == "int":
            _check_int(value, axis, shape[axis])
            axis += 1
        elif kind == "slice":
            axis += 1
        elif kind == "ellipsis":
            has_ellipsis = True
            axis += len(shape) - consumed
        native.append(Ellipsis if kind == "ellipsis" else value)
    if not has_ellipsis:
        # A trailing ellipsis makes NumPy return a 0-D view instead of a scalar copy.
        native.append(Ellipsis)
    return tuple(native)


def _advanced_key(x: Array, items: list[tuple[str, Any]],
                  shape: tuple[int, ...]) -> tuple[Any, ...]:
    xp = x._device.backend.xp
    consumed = 0
    for kind, value in items:
        if kind in ("int", "slice", "intarray"):
            consumed += 1
        elif kind == "mask":
            consumed += value.ndim
    native: list[Any] = []
    axis = 0
    for kind, value in items:
        if kind == "int":
            _check_int(value, axis, shape[axis])
            axis += 1
        elif kind == "slice":
            axis += 1
        elif kind == "intarray":
            check_index_array(value, shape[axis], axis, xp)
            axis += 1
        elif kind == "mask":
            _check_mask(value.shape, shape, axis)
            axis += value.ndim
        elif kind == "ellipsis":
            axis += len(shape) - consumed
        native.append(Ellipsis if kind == "ellipsis" else value)
    return tuple(native)


def _check_mask(mask_shape: tuple[int, ...], shape: tuple[int, ...], axis: int) -> None:
    covered = shape[axis:axis + len(mask_shape)]
    # Note: a mask axis of size 0 selects nothing from an axis of any size (the standard
    # allows it, NumPy too).
    if any(m != n and m != 0 for m, n in zip(mask_shape, covered, strict=True)):
        last = axis + len(mask_shape) - 1
        where = f"axis {axis}" if last == axis else f"axes {axis} to {last}"
        raise IndexError(
            f"Boolean index of shape {tuple(mask_shape)} does not match the indexed array's "
            f"dimensions {tuple(covered)} ({where} of shape {shape}); use a mask with the "
            "shape of the axes it selects."
        )


# -- getitem / setitem -----------------------------------------------------------------------


def _simple_key(x: Array, key: Any) -> Any:
    """The native key for the common cases, one slice of ints or a tuple of ints (checked),
    else None; the rest goes through `normalize_key`."""
    shape = x._data.shape
    if type(key) is int:
        key = (key,)
    elif type(key) is slice:
        if shape and (key.start is None or type(key.start) is int) and (
                key.stop is None or type(key.stop) is int) and (
                key.step is None or (type(key.step) is int and key.step != 0)):
            return key
        return None
    elif type(key) is not tuple:
        return None
    if len(key) > len(shape):
        return None
    for axis, k in enumerate(key):
        if type(k) is not int:
            return None
        if not -shape[axis] <= k < shape[axis]:
            raise IndexError(_bounds_message(k, axis, shape[axis]))
    # The trailing ellipsis makes NumPy return a 0-D view instead of a scalar copy.
    return (*key, Ellipsis)


def getitem(x: Array, key: Any) -> Array:
    """`x[key]`: a view for basic keys (sharing `x`'s buffer token), a copy for array keys."""
    device = x._device
    fast = _simple_key(x, key)
    if fast is not None:
        if x._grad is None and x._node is None:
            return Array._new_view(x._data[fast], x)
        return x._view(operator.getitem, fast)  # x[:16].grad is x.grad[:16]
    native_key, view = normalize_key(x, key)
    if view:
        return x._view(operator.getitem, native_key)
    result = Array._new(device.backend.normalize(x._data[native_key]), device)
    if TAPES:
        return record("getitem", result, (x,), {"key": key})  # type: ignore[no-any-return]
    return result


_NARROW_FLOATS = frozenset({_dtypes.float32, _dtypes.complex64})
_quiet_setitem = quiet(operator.setitem)


def setitem(x: Array, key: Any, value: Any) -> None:
    """`x[key] = value`, with the value checked before anything is written.

    The value is an Array on `x`'s device or a Python scalar; its dtype must cast to
    `x.dtype` by NumPy's same-kind rule, and integer values must fit `x.dtype`'s range. A
    value over the target's memory (`x[:-1] = x[1:]`) is read in full before anything is
    written, as in NumPy, on every device. Every write bumps `x`'s buffer generation.
    """
    native_key = _simple_key(x, key)
    if native_key is None:
        native_key = normalize_key(x, key)[0]
    native_value = _native_value(x, value)
    taped = bool(TAPES)
    old = _autodiff.before_write(x, "x[key] = value", native_key) if taped else None
    shared = type(value) is Array and value._buffer is x._buffer
    if shared and type(native_value) is not np.ndarray:
        # The value views the target's memory. NumPy copies an overlapping value before it
        # writes; other backends' assignments (CuPy's among them) can read elements they have
        # already written (x[:-1] = x[1:] on a large GPU array), so the value is copied first.
        native_value = x._device.backend.asarray(native_value, None, True, x._device)
    try:
        if x._dtype in _NARROW_FLOATS:
            # A wider float value can overflow to inf here: IEEE's result, with no NumPy
            # RuntimeWarning, as for arithmetic (see backends/quiet.py).
            _quiet_setitem(x._data, native_key, native_value)
        else:
            x._data[native_key] = native_value
    except ValueError as exc:
        raise _assignment_error(x, native_key, native_value, exc) from None
    x._buffer.generation += 1
    if taped:
        _autodiff.write("x[key] = value", x, key, value, old)


def add_at(x: Array, key: Any, values: Array) -> None:
    """`x[key] += values` where repeated indices accumulate (NumPy's `np.add.at`): the reverse
    of a gather, used by the tape's rules for indexing and `take`. Bumps x's generation."""
    native_key, view = normalize_key(x, key)
    backend = x._device.backend
    if view:
        region = x._data[native_key]
        backend.xp.add(region, values._data, out=region)
    else:
        backend.index_add(x._data, native_key, values._data)
    x._buffer.generation += 1


def _native_value(x: Array, value: Any) -> Any:
    dtype = x._dtype
    if type(value) is Array:
        same_device(x, value, "x[key] = value")
        _check_array_cast(value._dtype, dtype)
        if value._dtype.kind in "iu" and dtype.kind in "iu":
            check_integer_range(value, dtype)
        return value._data
    if isinstance(value, np.generic) and not isinstance(value, (int, float, complex)):
        value = value.item()
    for py_type in (bool, int, float, complex):
        if isinstance(value, py_type):
            if dtype.kind not in _SCALAR_KINDS[py_type]:
                raise TypeError(
                    f"Cannot assign a Python {py_type.__name__} ({value!r}) into an array of "
                    f"dtype {dtype}: that would change the value's kind. Use "
                    f"{_kind_name(dtype)} value instead, or convert explicitly first."
                )
            if type(value) is not bool and isinstance(value, int) and dtype.kind in "iu":
                info = np.iinfo(dtype._np)
                if not info.min <= value <= info.max:
                    raise OverflowError(
                        f"Python integer {value} is out of range for dtype {dtype} "
                        f"([{info.min}, {info.max}]); use an array of a wider dtype."
                    )
            if py_type in (float, complex) and _negative_zero(value):
                # CuPy writes a scalar equal to 0 as zero bytes (ndarray.fill's memset),
                # dropping the sign: a negative zero goes in as a 0-d array of x's dtype.
                return x._device.backend.asarray(np.array(value, dtype._np), None, True,
                                                 x._device)
            return value
    raise TypeError(
        f"x[key] = value expects a qdarray Array or a Python scalar as the value; got "
        f"{type(value).__name__}. Use qd.asarray(value) to convert it first."
    )


def _negative_zero(value: float | complex) -> bool:
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    return any(p == 0 and math.copysign(1.0, p) < 0 for p in parts)


def _kind_name(dtype: DType) -> str:
    return {"b": "a bool", "i": "an integer", "u": "an integer", "f": "a real floating-point",
            "c": "a complex"}[dtype.kind]


def _check_array_cast(src: DType, dst: DType) -> None:
    if not np.can_cast(src._np, dst._np, casting="same_kind"):
        raise TypeError(
            f"Cannot assign an array of dtype {src} into an array of dtype {dst}: only "
            f"same-kind casts are allowed in x[key] = value. Use qd.astype(value, {dst}) "
            "first if the conversion is intended."
        )


def _assignment_error(x: Array, native_key: Any, native_value: Any,
                      exc: ValueError) -> Exception:
    if "read-only" in str(exc):
        return ValueError(
            "Cannot assign into a read-only array (such as a broadcast_to view, whose "
            "elements alias each other); use qd.asarray(x, copy=True) to get a writable copy."
        )
    target = x._data[native_key].shape
    vshape = getattr(native_value, "shape", ())
    return ValueError(
        f"Cannot assign a value of shape {tuple(vshape)} to x[key] of shape {tuple(target)}; "
        "the value must broadcast to the selection's shape."
    )


# -- indexing functions ----------------------------------------------------------------------


def _check_indices(arg: Any, func: str) -> Array:
    indices = require_array(arg, func, "indices")
    if indices._dtype.kind not in "iu":
        raise TypeError(f"Only integer dtypes are allowed in {func} indices; got {indices._dtype}.")
    return indices


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """Elements of `x` at `indices` along `axis` (a copy).

    Args:
        x: the input array.
        indices: a 1-D integer array; negative indices count from the end.
        axis: the axis to select along; may be omitted only when `x` is 1-D.

    Returns:
        An array shaped like `x` except along `axis`, whose size is `indices.size`.

    Raises:
        IndexError: for indices out of [-n, n) (the standard leaves this open; qdarray
            always checks).

    Example::

        qd.take(qd.asarray([10, 20, 30]), qd.asarray([2, 0]))   # [30, 10]
    """
    x = require_array(x, "take")
    _check_indices(indices, "take")
    device = same_device(x, indices, "take")
    if indices.ndim != 1:
        raise ValueError(
            f"take expects 1-D indices; got shape {indices.shape}. Use x[indices] or "
            "take_along_axis for multi-dimensional indices."
        )
    if axis is None:
        if x.ndim != 1:
            raise ValueError(
                f"take needs axis= for an array of {x.ndim} dimensions (shape {x.shape}); "
                "use axis=0 or reshape x to 1-D first."
            )
        axis = 0
    else:
        axis = normalize_axis(axis, x.ndim, "take")
    xp = device.backend.xp
    check_index_array(indices._data, x.shape[axis], axis, xp)
    out = Array._new(device.backend.normalize(xp.take(x._data, indices._data, axis=axis)),
                     device)
    if TAPES:
        return record("take", out, (x,), {"indices": indices, "axis": axis})  # type: ignore[no-any-return]
    return out


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """Elements of `x` at per-position `indices` along `axis`, as produced by `argsort`.

    Args:
        x: the input array.
        indices: an integer array with `x.ndim` dimensions, broadcast-compatible with `x`
            except along `axis`.
        axis: the axis to select along (default the last).

    Example::

        x = qd.asarray([[3, 1, 2]])
        qd.take_along_axis(x, qd.argsort(x, axis=1), axis=1)   # [[1, 2, 3]]
    """
    x = require_array(x, "take_along_axis")
    _check_indices(indices, "take_along_axis")
    device = same_device(x, indices, "take_along_axis")
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis needs indices with as many dimensions as x ({x.ndim}); got "
            f"indices of shape {indices.shape} for x of shape {x.shape}. Use "
            "qd.expand_dims on the indices."
        )
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    for ax, (n, m) in enumerate(zip(x.shape, indices.shape, strict=True)):
        if ax != axis and n != m and n != 1 and m != 1:
            raise ValueError(
                f"take_along_axis cannot broadcast indices of shape {indices.shape} against x "
                f"of shape {x.shape} (axis {ax}: {m} vs {n}); shapes must match or be 1 "
                f"except along axis {axis}."
            )
    xp = device.backend.xp
    check_index_array(indices._data, x.shape[axis], axis, xp)
    result = xp.take_along_axis(x._data, indices._data, axis=axis)
    out = Array._new(device.backend.normalize(result), device)
    if TAPES:
        return record("take_along_axis", out, (x,),  # type: ignore[no-any-return]
                      {"indices": indices, "axis": axis})
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------


def _zero_at(g: Array, key: Any) -> Array | None:
    """`g` with the elements a write replaced set to 0 (their old values had no effect)."""
    if key is Ellipsis:
        return None
    z = asarray(g, copy=True)
    setitem(z, key, 0)
    return z


def _written(g: Array, key: Any) -> Array:
    """The cotangent of the value of `x[key] = value`: `g[key]`, except where a later position
    of the key writes the same element again (repeated integer indices), which gets 0: the
    last write wins, as in the forward. Which write wins is found by running the same write
    on the device, with each position's number as its value, so the gradient follows the
    forward's own order."""
    picked = getitem(g, key)
    native_key, view = normalize_key(g, key)
    if view or not any(getattr(k, "ndim", 0) > 0 and k.dtype.kind in "iu"
                       for k in native_key):
        return picked  # slices, integers and masks select each element once
    from ._elementwise_functions import equal
    from ._manipulation_functions import reshape
    from ._searching_functions import where

    device = g._device
    order = reshape(arange(picked.size, dtype=_dtypes.int64, device=device), picked.shape)
    ids = zeros(g.shape, dtype=_dtypes.int64, device=device)
    setitem(ids, key, order)
    won: Array = where(equal(getitem(ids, key), order), picked,
                       zeros((), dtype=picked._dtype, device=device))
    return won


def along_axis_key(indices: Array, axis: int, shape: tuple[int, ...],
                   out_shape: tuple[int, ...]) -> tuple[Any, ...]:
    """An index key that selects what `take_along_axis(x, indices, axis)` read, for an x of
    `shape` and a result of `out_shape`: `indices` on `axis`, open grids of positions on the
    other axes (all 0 where x has length 1, which broadcast)."""
    device = indices._device
    key: list[Any] = []
    for k, n in enumerate(out_shape):
        if k == axis:
            key.append(indices)
            continue
        where = [1] * len(out_shape)
        where[k] = n
        grid = (zeros(n, dtype=_dtypes.int64, device=device) if shape[k] == 1
                else arange(n, dtype=_dtypes.int64, device=device))
        key.append(_reshaped(grid, where))
    return tuple(key)


def _reshaped(x: Array, shape: list[int]) -> Array:
    return Array._new(x._device.backend.xp.reshape(x._data, tuple(shape)), x._device)


defvjp("getitem", x=lambda g, key: Scatter(key, g))
defvjp("setitem", x=lambda g, key: _zero_at(g, key), value=lambda g, key: _written(g, key))
defvjp("take", x=lambda g, indices, axis: Scatter((slice(None),) * axis + (indices,), g))
defvjp("take_along_axis", x=lambda g, indices, axis, shape: Scatter(
    along_axis_key(indices, axis, shape, g.shape), g))

builtins_bool = bool
