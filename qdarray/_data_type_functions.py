"""Data type functions of the standard: `astype`, `can_cast`, `finfo`, `iinfo`, `isdtype`,
`result_type`.

These work on dtype metadata, which is the same on every device (a qdarray DType wraps the
NumPy dtype describing its memory layout), so NumPy's tables answer for all backends.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._devices import as_device
from ._dispatch import PY_SCALARS, require_array, wrap
from ._dtypes import DType

# `isdtype`'s vocabulary (the standard's kind names).
_KIND_NAMES = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
               "complex floating", "numeric")


@dataclass(frozen=True)
class FInfo:
    """Machine limits of a floating-point dtype, as returned by `finfo`.

    Attributes:
        bits: the number of bits of one real value.
        eps: the difference between 1.0 and the next larger representable number.
        max: the largest finite value.
        min: the smallest (most negative) finite value.
        smallest_normal: the smallest positive normal value.
        dtype: the real floating dtype described (float32 for complex64).
    """

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class IInfo:
    """Limits of an integer dtype, as returned by `iinfo`.

    Attributes:
        bits: the number of bits.
        max: the largest value.
        min: the smallest value.
        dtype: the integer dtype described.
    """

    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(value: Any, func: str) -> DType:
    if type(value) is Array:
        return value._dtype
    if isinstance(value, DType):
        return value
    try:
        d = _dtypes.normalize_dtype(value)
    except TypeError:
        d = None
    if d is None:
        raise TypeError(
            f"{func} expects a qdarray dtype (such as qd.float32) or an Array; got "
            f"{type(value).__name__} {value!r}."
        )
    return d


def finfo(type: DType | Array, /) -> FInfo:  # noqa: A002 - the standard's parameter name
    """Machine limits of a floating-point dtype (complex dtypes: of their real part).

    Args:
        type: a floating-point dtype, or an array of one.

    Returns:
        an `FInfo` with bits, eps, max, min, smallest_normal and dtype.

    Example::

        qd.finfo(qd.float32).eps   # 1.1920928955078125e-07
    """
    d = _dtype_of(type, "finfo")
    if d.kind not in "fc":
        raise TypeError(
            f"Only floating-point dtypes are allowed in finfo; got {d}. "
            "Use qd.iinfo for integer dtypes."
        )
    info = np.finfo(d._np)
    return FInfo(
        bits=int(info.bits),
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=_dtypes._BY_NUMPY[np.dtype(info.dtype)],
    )


def iinfo(type: DType | Array, /) -> IInfo:  # noqa: A002 - the standard's parameter name
    """Limits of an integer dtype.

    Args:
        type: an integer dtype, or an array of one.

    Returns:
        an `IInfo` with bits, max, min and dtype.

    Example::

        qd.iinfo(qd.int8).min   # -128
    """
    d = _dtype_of(type, "iinfo")
    if d.kind not in "iu":
        raise TypeError(
            f"Only integer dtypes are allowed in iinfo; got {d}. "
            "Use qd.finfo for floating-point dtypes."
        )
    info = np.iinfo(d._np)
    return IInfo(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=d)


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> bool:
    """Whether `dtype` is of the given kind.

    Args:
        dtype: a qdarray dtype.
        kind: a dtype (compared for identity), one of the kind names 'bool',
            'signed integer', 'unsigned integer', 'integral', 'real floating',
            'complex floating', 'numeric', or a tuple of these (true if any matches).

    Returns:
        True or False.

    Example::

        qd.isdtype(qd.int8, ("integral", "real floating"))   # True
    """
    if not isinstance(dtype, DType):
        raise TypeError(
            f"isdtype expects a qdarray dtype as its first argument; got "
            f"{builtins.type(dtype).__name__} {dtype!r}. Use x.dtype for an array x."
        )
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:  # validate every kind, so a typo fails even after an earlier match
        if isinstance(k, str):
            if k not in _KIND_NAMES:
                raise ValueError(
                    f"isdtype got an unknown kind {k!r}; use a dtype or one of "
                    f"{', '.join(repr(n) for n in _KIND_NAMES)}."
                )
        elif not isinstance(k, DType):
            raise TypeError(
                f"isdtype expects a dtype, a kind name or a tuple of them for kind; got "
                f"{builtins.type(k).__name__} {k!r}."
            )
    return builtins.any(
        k is dtype if isinstance(k, DType) else dtype in _dtypes.DTYPE_CATEGORIES[k]
        for k in kinds
    )


def result_type(*arrays_and_dtypes: Array | DType | bool | int | float | complex) -> DType:
    """The dtype that type promotion gives for the arguments.

    Arrays and dtypes promote by the standard's table plus NumPy's cross-kind rules (an
    integer with a float gives a float); Python scalars are weak, as in an operation with
    them: `result_type(qd.float32, 1.0)` is float32, `result_type(qd.int8, 1.0)` is float64.

    Args:
        arrays_and_dtypes: arrays, dtypes and Python scalars; at least one array or dtype.

    Returns:
        the promoted dtype.

    Example::

        qd.result_type(qd.int8, qd.uint8)   # qdarray.int16
    """
    dtypes: list[DType] = []
    scalars: list[Any] = []
    for a in arrays_and_dtypes:
        if type(a) is Array:
            dtypes.append(a._dtype)
        elif isinstance(a, DType):
            dtypes.append(a)
        elif builtins.type(a) in PY_SCALARS:
            scalars.append(a)
        else:
            raise TypeError(
                f"result_type expects arrays, qdarray dtypes or Python scalars; got "
                f"{builtins.type(a).__name__} {a!r}. Use qd.asarray(...) or a dtype such "
                "as qd.float32."
            )
    if not dtypes:
        raise ValueError(
            "result_type needs at least one array or dtype"
            + (f"; got only Python scalars {tuple(scalars)!r}." if scalars else "; got none.")
            + " Scalars alone have no dtype: use qd.asarray(value).dtype."
        )
    # NumPy promotes many dtypes jointly (int8, uint16 and float32 give float32, where pairwise
    # promotion would pass through int32 to float64); the standard's table agrees either way.
    result = _dtypes.result_type(*dtypes)
    if scalars:
        # NEP 50 weak scalars: they count only where their kind is above the arrays' kind.
        result = _dtypes._BY_NUMPY[np.result_type(result._np, *scalars)]
    return result


def can_cast(from_: DType | Array, to: DType, /) -> bool:
    """Whether `from_` casts to `to` without loss, i.e. `result_type(from_, to) == to`.

    Args:
        from_: a dtype or an array.
        to: the dtype to cast to.

    Returns:
        True when every value of `from_` is exactly representable in `to`.

    Example::

        qd.can_cast(qd.int16, qd.float32), qd.can_cast(qd.float64, qd.float32)   # True, False
    """
    src = _dtype_of(from_, "can_cast")
    if not isinstance(to, DType):
        raise TypeError(
            f"can_cast expects a qdarray dtype for to; got {builtins.type(to).__name__} {to!r}."
        )
    return bool(np.can_cast(src._np, to._np))


def astype(x: Array, dtype: DType, /, *, copy: bool = True, device: Any = None) -> Array:
    """`x` converted to `dtype` (and moved to `device` when given).

    Casts follow NumPy: float to integer truncates toward zero, integer casts wrap, and
    out-of-range float to integer casts are undefined (NumPy warns). Complex to real casts
    are refused, since they would drop the imaginary part.

    Args:
        x: the array to convert.
        dtype: the target dtype.
        copy: True always returns a new array; False returns `x` itself when nothing changes.
        device: the target device; `x`'s device when None.

    Returns:
        an array of `dtype` on the target device.

    Raises:
        TypeError: for a complex `x` and a real `dtype`, or a dtype the device lacks.

    Example::

        qd.astype(qd.asarray([1.7, -1.7]), qd.int32)   # [1, -1]
    """
    x = require_array(x, "astype")
    target_dtype = _dtypes.normalize_dtype(dtype)
    if target_dtype is None:
        raise TypeError("astype needs a dtype, such as qd.float32; got None.")
    if type(copy) is not bool:
        raise TypeError(f"astype expects a bool for copy; got {builtins.type(copy).__name__}.")
    if x._dtype.kind == "c" and target_dtype.kind != "c":
        raise TypeError(
            f"astype from {x._dtype} to {target_dtype} would drop the imaginary part; use "
            "qd.real(x), qd.imag(x) or qd.abs(x) first, then astype."
        )
    src = x._device
    dst = src if device is None else as_device(device)
    if not dst.backend.supports_dtype(target_dtype._np, dst):
        raise TypeError(
            f"Device {dst} does not support dtype {target_dtype}; use a narrower dtype such "
            "as float32, or another device."
        )
    if dst is not src:
        if src.backend.supports_dtype(target_dtype._np, src):
            return astype(x, target_dtype, copy=False).to_device(dst)
        return astype(x.to_device(dst), target_dtype, copy=False)
    if not copy and target_dtype is x._dtype:
        return x
    out = wrap(src.backend.xp.astype(x._data, target_dtype._np, copy=True), src)
    if TAPES:
        return record("astype", out, (x,))  # type: ignore[no-any-return]
    return out


# The tape casts a cotangent back to its input's dtype (the real part for a real input).
defvjp("astype", x=lambda g: g)
