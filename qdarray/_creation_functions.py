"""Creation functions of the standard (asarray, zeros, arange, ...), plus `requires_grad`."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._data_type_functions import astype
from ._devices import CPU, Device, as_device
from ._dtypes import DType
from ._errors import DeviceMismatchError


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
        if x._grad is None:  # a view of an array with a gradient keeps that one's view
            x._grad = zeros_like(x)
    return x


def asarray(obj: Any, /, *, dtype: DType | None = None, device: Any = None,
            copy: bool | None = None, requires_grad: bool = False) -> Array:
    """Convert `obj` (an Array, BufferView, NumPy or DLPack array, scalar or nested sequence).

    Args:
        obj: what to convert.
        dtype: the result's dtype; inferred from `obj` when None.
        device: the result's device. When None: an Array's (or BufferView's) own device, a
            DLPack producer's device for device data, and the default device for host data
            (NumPy arrays, scalars, sequences).
        copy: True always copies, False never copies (ValueError if it must), None copies
            only when needed.
        requires_grad: give the result a zero `.grad` companion (floating dtypes only).

    Example::

        x = qd.asarray([1.0, 2.0], dtype=qd.float32)
    """
    from ._interchange import as_array, as_native
    from ._memory import token_for

    target = None if device is None else as_device(device)
    source = as_array(obj)  # the Array `obj` is (or a BufferView's window), else None
    data, src_device, buffer = (as_native(obj) if source is None else
                                (source._data, source._device, source._buffer))
    if data is None:
        if copy is False:
            raise ValueError(
                f"asarray(copy=False) cannot make an array from a {type(obj).__name__} without "
                "copying its values; use copy=None or copy=True."
            )
        target = target or as_device(None)
        np_dtype = _native_dtype(dtype, target)
        if np_dtype is None and _contains_only_python_ints(obj):
            np_dtype = np.dtype(np.int64)
        try:
            native = target.backend.asarray(obj, np_dtype, copy, target)
        except OverflowError as exc:
            name = "int64 (the default integer dtype)" if dtype is None else str(dtype)
            raise OverflowError(
                f"asarray: a Python int in the data does not fit in {name} ({exc}); "
                "use dtype=qd.uint64 for values up to 2**64 - 1, or a float dtype."
            ) from None
        _check_supported(native, target)
        return _with_grad(Array._new(native, target), requires_grad)
    assert src_device is not None  # as_native gives a device with every native array
    if target is None:
        # Host data (no buffer token) goes to the default device; arrays stay where they are.
        target = as_device(None) if buffer is None and src_device is CPU else src_device
    never_copy = copy is False  # (a transfer below sets copy=False: the moved data is new)
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
    if never_copy and np_dtype is not None and np.dtype(np_dtype) != data.dtype:
        raise ValueError(
            f"asarray(copy=False) cannot convert an array of dtype {data.dtype} to "
            f"{np.dtype(np_dtype)} without a copy; use copy=None or copy=True, or "
            "qd.astype(x, dtype)."
        )
    native = target.backend.asarray(data, np_dtype, copy, target)
    shares = native is data or (copy is not True and np.dtype(native.dtype) == data.dtype
                                and _shares(native, data))
    if shares and source is not None and native is source._data:
        # The same memory: the same buffer token, and the same gradient companion.
        return _with_grad(source._view(_same), requires_grad)
    if shares and buffer is None:
        buffer = token_for(native)  # NumPy memory: one token however often it is wrapped
    result = Array._new(native, target, buffer if shares else None)
    if TAPES and type(obj) is Array and not requires_grad:
        return record("asarray", result, (obj,), {"src": obj._device})  # type: ignore[no-any-return]
    return _with_grad(result, requires_grad)


def _same(data: Any) -> Any:
    return data


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
    _check_shape(shape, fill)
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
            elif isinstance(value, (complex, np.complexfloating)):
                np_dtype = np.dtype(np.complex128)
            else:
                np_dtype = np.dtype(np.float64)
        else:
            _check_fill(value, np_dtype)
        native = xp.full(shape, value, dtype=np_dtype, **_device_kw(target))
    else:
        np_dtype = np_dtype if np_dtype is not None else np.dtype(np.float64)
        native = getattr(xp, fill)(shape, dtype=np_dtype, **_device_kw(target))
    return _with_grad(Array._new(target.backend.normalize(native), target), requires_grad)


def _check_shape(shape: Any, func: str) -> None:
    """NumPy's ValueError for a negative dimension, on every device: the Vulkan device made
    arrays of shape (-1,) and OpenCL's allocator raised a TypeError of its own."""
    for d in shape if isinstance(shape, tuple | list) else (shape,):
        if isinstance(d, int | np.integer) and not isinstance(d, bool) and d < 0:
            raise ValueError(f"negative dimensions are not allowed: {func}(shape={shape!r}).")


# The dtype kinds a fill value of each kind may fill (x[key] = value's rule: same-kind
# casts; a float into an integer dtype, a complex into a real one would truncate silently).
_FILL_KINDS = {"b": "buifc", "i": "iufc", "u": "iufc", "f": "fc", "c": "c"}


def _check_fill(value: Any, np_dtype: np.dtype) -> None:
    kind: str
    if isinstance(value, np.generic):
        kind = value.dtype.kind
    elif isinstance(value, bool | int | float | complex):
        kind = {bool: "b", int: "i", float: "f", complex: "c"}[
            next(t for t in (bool, int, float, complex) if isinstance(value, t))]
    else:
        return
    if np_dtype.kind not in _FILL_KINDS.get(kind, np_dtype.kind):
        dtype = _dtypes.from_numpy_dtype(np_dtype)
        raise TypeError(
            f"full's fill value {value!r} ({type(value).__name__}) cannot fill an array of "
            f"dtype {dtype}: that would change the value's kind (NumPy would truncate it). "
            f"Use a value of dtype {dtype}'s kind, or qd.astype(qd.full(shape, value), "
            f"{dtype}) to convert explicitly."
        )


def _device_kw(device: Device) -> dict[str, Any]:
    return device.backend.placement(device)


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


# -- ranges, grids and triangles -----------------------------------------------------------


def _real_arg(value: Any, func: str, name: str) -> int | float:
    """A Python int or float from an int/float argument (NumPy scalars and 0-d arrays too)."""
    if type(value) is Array and value.ndim == 0 and value._dtype.kind in "iuf":
        value = value._host().item()
    elif isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if type(value) is int or type(value) is float:
        return value
    raise TypeError(
        f"{func} expects an int or float for {name}; got {type(value).__name__} {value!r}."
    )


def _count(value: Any, func: str, name: str) -> int:
    """A non-negative int argument such as a length."""
    if type(value) is bool:
        raise TypeError(f"{func} expects a non-negative integer {name}; got bool {value!r}.")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{func} expects a non-negative integer {name}; got {type(value).__name__} "
            f"{value!r}."
        ) from None
    if n < 0:
        raise ValueError(f"{func} expects a non-negative integer {name}; got {n}.")
    return n


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: DType | None = None, device: Any = None) -> Array:
    """Evenly spaced values in the half-open interval [start, stop).

    Args:
        start: the first value; the interval's end when `stop` is None (start is then 0).
        stop: the end of the interval (excluded).
        step: the spacing; must not be zero.
        dtype: the result dtype; int64 when start, stop and step are all ints, else float64.
        device: the result's device.

    Returns:
        a 1-D array of ceil((stop - start) / step) elements (none when that is negative).

    Raises:
        ValueError: for step 0.
        TypeError: for an integer dtype with a float argument (the values would be
            truncated), or a bool dtype.
        OverflowError: when an integer dtype cannot hold the first or last value.

    Example::

        qd.arange(5)             # [0, 1, 2, 3, 4]
        qd.arange(0.0, 1.0, 0.25)   # [0.0, 0.25, 0.5, 0.75]
        qd.arange(3, dtype=qd.complex64)   # [0j, 1+0j, 2+0j], as NumPy
    """
    if stop is None:
        start, stop = 0, start
    args = {name: _real_arg(v, "arange", name)
            for name, v in (("start", start), ("stop", stop), ("step", step))}
    if args["step"] == 0:
        raise ValueError("arange needs a non-zero step; got step=0.")
    target = as_device(device)
    d = _dtypes.normalize_dtype(dtype)
    all_ints = all(type(v) is int for v in args.values())
    if d is None:
        d = _dtypes.int64 if all_ints else _dtypes.float64
    if d.kind == "b":
        raise TypeError(
            f"arange produces numbers; got dtype {d}. Use a numeric dtype, and qd.astype "
            "afterwards if needed."
        )
    if d.kind == "c":  # real values with a zero imaginary part, as NumPy's
        part = _dtypes.float32 if d is _dtypes.complex64 else _dtypes.float64
        return astype(arange(start, stop, step, dtype=part, device=target), d)
    if d.kind in "iu":
        if not all_ints:
            floats = ", ".join(f"{k}={v!r}" for k, v in args.items() if type(v) is float)
            raise TypeError(
                f"arange with integer dtype {d} needs integer start, stop and step; got "
                f"{floats}. Use integer arguments, or a float dtype."
            )
        _check_int_range(int(args["start"]), int(args["stop"]), int(args["step"]), d)
    np_dtype = _native_dtype(d, target)
    native = target.backend.xp.arange(args["start"], args["stop"], args["step"],
                                      dtype=np_dtype, **_device_kw(target))
    return Array._new(target.backend.normalize(native), target)


def _check_int_range(start: int, stop: int, step: int, d: DType) -> None:
    n = len(range(start, stop, step))
    if n == 0:
        return
    last = start + (n - 1) * step
    info = np.iinfo(d._np)
    for value in (start, last):
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"arange({start}, {stop}, {step}) reaches {value}, outside the range of "
                f"{d} [{info.min}, {info.max}]; use a wider dtype such as qd.int64."
            )


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0,
        dtype: DType | None = None, device: Any = None) -> Array:
    """A 2-D array with ones on the `k`-th diagonal and zeros elsewhere.

    Args:
        n_rows: the number of rows.
        n_cols: the number of columns; `n_rows` when None.
        k: the diagonal: 0 the main one, positive above it, negative below.
        dtype: the result dtype (float64 by default).
        device: the result's device.

    Returns:
        an array of shape (n_rows, n_cols).

    Example::

        qd.eye(2, 3, k=1)   # [[0, 1, 0], [0, 0, 1]]
    """
    rows = _count(n_rows, "eye", "n_rows")
    cols = rows if n_cols is None else _count(n_cols, "eye", "n_cols")
    if type(k) is bool:
        raise TypeError(f"eye expects an integer k; got bool {k!r}.")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"eye expects an integer k; got {type(k).__name__} {k!r}.") from None
    target = as_device(device)
    np_dtype = _native_dtype(dtype, target)
    if np_dtype is None:
        np_dtype = np.dtype(np.float64)
    native = target.backend.xp.eye(rows, cols, k=k, dtype=np_dtype, **_device_kw(target))
    return Array._new(target.backend.normalize(native), target)


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: DType | None = None, device: Any = None, endpoint: bool = True) -> Array:
    """`num` evenly spaced values from `start` to `stop`.

    Args:
        start: the first value.
        stop: the last value (with endpoint=True) or the end of the interval.
        num: the number of values (non-negative).
        dtype: the result dtype; float64 by default, complex128 when start or stop is
            complex. The values are computed in float64 (complex128) and then cast, so
            float32 results are correctly rounded; an integer dtype rounds toward -inf, as in
            NumPy.
        device: the result's device.
        endpoint: include `stop` (spacing (stop - start) / (num - 1)) or not
            (spacing (stop - start) / num).

    Returns:
        a 1-D array of `num` elements.

    Example::

        qd.linspace(0, 1, 5)   # [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    bounds = {}
    for name, value in (("start", start), ("stop", stop)):
        if type(value) is complex or isinstance(value, np.complexfloating):
            bounds[name] = complex(value)
        else:
            bounds[name] = _real_arg(value, "linspace", name)
    n = _count(num, "linspace", "num")
    if type(endpoint) is not bool:
        raise TypeError(f"linspace expects a bool for endpoint; got {type(endpoint).__name__}.")
    is_complex = any(type(v) is complex for v in bounds.values())
    d = _dtypes.normalize_dtype(dtype)
    if d is None:
        d = _dtypes.complex128 if is_complex else _dtypes.float64
    if is_complex and d.kind != "c":
        raise TypeError(
            f"linspace with a complex start or stop needs a complex dtype; got {d}. Use "
            "dtype=qd.complex128, or real bounds."
        )
    if d.kind == "b":
        raise TypeError("linspace produces numbers; got dtype qdarray.bool. Use a numeric dtype.")
    target = as_device(device)
    np_dtype = _native_dtype(d, target)
    native = target.backend.xp.linspace(bounds["start"], bounds["stop"], n, dtype=np_dtype,
                                        endpoint=endpoint, **_device_kw(target))
    return Array._new(target.backend.normalize(native), target)


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...]:
    """Coordinate grids from 1-D coordinate arrays.

    Args:
        arrays: N 1-D arrays (0-d arrays count as length 1; higher ones are flattened, as in
            NumPy) of lengths n1, ..., nN.
        indexing: 'xy' (Cartesian: the first two output axes swapped, shape (n2, n1, ...))
            or 'ij' (matrix: shape (n1, n2, ...)).

    Returns:
        a tuple of N arrays of the grid's shape, each with its input's dtype (new arrays,
        not views). A tuple since the 2025.12 revision of the standard (a list before).

    Example::

        xs, ys = qd.meshgrid(qd.arange(3), qd.arange(2))   # shapes (2, 3)
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid's indexing must be 'xy' or 'ij'; got {indexing!r}.")
    if not arrays:
        return ()
    for i, a in enumerate(arrays):
        if type(a) is not Array:
            raise TypeError(
                f"meshgrid expects qdarray Arrays; got {type(a).__name__} for arrays[{i}]. "
                "Use qd.asarray(...) to convert it."
            )
        if a._device is not arrays[0]._device:
            raise DeviceMismatchError(
                f"meshgrid got arrays on two devices, {arrays[0]._device} and {a._device} "
                f"(arrays[{i}]); move them with x.to_device('{arrays[0]._device}') first."
            )
    device = arrays[0]._device
    grids = device.backend.xp.meshgrid(*(a._data for a in arrays), indexing=indexing)
    outs = tuple(Array._new(device.backend.normalize(g), device) for g in grids)
    if TAPES:
        # Output i varies along one axis only (the first two swap for 'xy').
        axes = [1, 0] + list(range(2, len(arrays))) if indexing == "xy" and len(arrays) > 1 \
            else list(range(len(arrays)))
        return tuple(record("meshgrid", o, (a,), {"axis": ax})
                     for o, a, ax in zip(outs, arrays, axes, strict=True))
    return outs


def _triangle(func: str, x: Array, k: Any) -> Array:
    if type(x) is not Array:
        raise TypeError(f"{func} expects a qdarray Array; got {type(x).__name__}.")
    if x.ndim < 2:
        raise ValueError(
            f"{func} needs an array of at least 2 dimensions; got shape {x.shape}. "
            "Use qd.reshape to make it a matrix first."
        )
    if type(k) is bool:
        raise TypeError(f"{func} expects an integer k; got bool {k!r}.")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"{func} expects an integer k; got {type(k).__name__} {k!r}.") from None
    device = x._device
    out = Array._new(device.backend.normalize(getattr(device.backend.xp, func)(x._data, k=k)),
                     device)
    if TAPES:
        return record(func, out, (x,), {"k": k})  # type: ignore[no-any-return]
    return out


def tril(x: Array, /, *, k: int = 0) -> Array:
    """The lower triangle of each matrix in `x` (the last two axes); zeros above it.

    Args:
        x: an array with at least 2 dimensions.
        k: the diagonal above which to zero: 0 the main one, positive above, negative below.

    Returns:
        a new array of `x`'s shape and dtype.
    """
    return _triangle("tril", x, k)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """The upper triangle of each matrix in `x` (the last two axes); zeros below it.

    Args:
        x: an array with at least 2 dimensions.
        k: the diagonal below which to zero: 0 the main one, positive above, negative below.

    Returns:
        a new array of `x`'s shape and dtype.
    """
    return _triangle("triu", x, k)


def diag(v: Array, /, k: int = 0) -> Array:
    """NumPy's `diag`: a 2-D array with the 1-D `v` on its `k`-th diagonal, or the `k`-th
    diagonal of the 2-D `v`. Not in the standard (which has `linalg.diagonal` and `eye`), but
    in NumPy, CuPy and PyTorch, and SciPy calls it on the namespace (`RBFInterpolator`).

    Args:
        v: a 1-D array (the diagonal to place) or a 2-D array (the matrix to read).
        k: the diagonal: 0 the main one, positive above it, negative below.

    Returns:
        an `(n + |k|, n + |k|)` array of `v`'s dtype and device for a 1-D `v` of `n`
        elements; the diagonal of a 2-D `v` as a read-only view, as NumPy's.

    Raises:
        ValueError: for a `v` of another number of dimensions.

    Example::

        qd.diag(qd.asarray([1.0, 2.0]))   # [[1.0, 0.0], [0.0, 2.0]]
    """
    from ._manipulation_functions import concat
    from ._searching_functions import where
    from .linalg import diagonal

    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError(f"diag takes a 1-D or 2-D array; got shape {v.shape}. Use "
                         "qd.linalg.diagonal for stacks of matrices.")
    pad = zeros(abs(k), dtype=v.dtype, device=v.device)
    row = concat([pad, v] if k > 0 else [v, pad])  # row[j]: the value of column j
    n = row.shape[0]
    mask = eye(n, k=k, dtype=_dtypes.bool, device=v.device)
    out: Array = where(mask, row, zeros((), dtype=v.dtype, device=v.device))
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------


def _meshgrid_rule(g: Array, axis: int, shape: tuple[int, ...]) -> Array:
    from ._manipulation_functions import reshape
    from ._statistical_functions import sum as total

    others = tuple(i for i in range(g.ndim) if i != axis)
    return reshape(total(g, axis=others), shape)


defvjp("asarray", x=lambda g, src: g if g.device is src else g.to_device(src))
defvjp("meshgrid", x=_meshgrid_rule)
defvjp("tril", x=lambda g, k: tril(g, k=k))
defvjp("triu", x=lambda g, k: triu(g, k=k))
