"""Types of the kernel language and its promotion rules.

Scalars are qdarray's own DType singletons (bool, the integers, float32, float64); complex
numbers are not part of the kernel language (the IR has complex64 and complex128 scalars for
the namespace's own kernels: `ops/complex.py`). Memory is typed by `ArrayType(dtype, ndim)` (a
strided n-dimensional array) and `ViewType(dtype)` (a 1-D `(base, offset, size)` window, which
a pass lowers to loads and stores of `base[offset + i]`).

Promotion follows NumPy 2 (NEP 50): typed values promote by `result_type`, and Python literals
are *weak*: `float32_value * 2.0` stays float32, `int8_value + 1` stays int8, and a literal that
does not fit the other operand's dtype is an error rather than a silent wrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .. import _dtypes
from .._array import register_annotations
from .._dtypes import DType
from .vector_types import VectorType

KERNEL_DTYPES: tuple[DType, ...] = _dtypes.BOOLEAN_DTYPES + _dtypes.REAL_NUMERIC_DTYPES
INT_DTYPES = _dtypes.INTEGER_DTYPES
FLOAT_DTYPES = _dtypes.REAL_FLOATING_DTYPES


@dataclass(frozen=True, slots=True)
class ArrayType:
    """An n-dimensional strided array of `dtype` (a kernel parameter)."""

    dtype: DType
    ndim: int

    def __str__(self) -> str:
        return f"Array[{self.dtype.name}, {self.ndim}]"


@dataclass(frozen=True, slots=True)
class ViewType:
    """A 1-D contiguous window `(base, offset, size)` on a buffer of `dtype`."""

    dtype: DType

    def __str__(self) -> str:
        return f"BufferView[{self.dtype.name}]"


Type = DType | ArrayType | ViewType


def type_str(t: Any) -> str:
    """The spelling of a type in messages: `float32`, `Array[float32, 1]`, `vec3`, ..."""
    return t.name if isinstance(t, (DType, VectorType)) else str(t)


def scalar_type(t: Type) -> DType:
    """`t`, where the IR holds a scalar (instruction results other than views, loop indices,
    parameters once views are lowered to arrays); the narrowing code generators rely on."""
    assert isinstance(t, DType), f"expected a scalar type; got {type_str(t)}"
    return t


def is_scalar(t: Any) -> bool:
    return isinstance(t, DType)


def is_memory(t: Any) -> bool:
    return isinstance(t, (ArrayType, ViewType))


def is_int(t: Any) -> bool:
    return isinstance(t, DType) and t.kind in "iu"


def is_float(t: Any) -> bool:
    return isinstance(t, DType) and t.kind == "f"


def is_complex(t: Any) -> bool:
    return isinstance(t, DType) and t.kind == "c"


def is_bool(t: Any) -> bool:
    return t is _dtypes.bool


def is_numeric(t: Any) -> bool:
    return isinstance(t, DType) and t.kind in "iuf"


# -- promotion ------------------------------------------------------------------------------

# The dtype a lone Python literal (or an unannotated Python scalar argument) takes.
WEAK_DEFAULT: dict[type, DType] = {
    bool: _dtypes.bool, int: _dtypes.int64, float: _dtypes.float64,
}
_WEAK_SAMPLE: dict[type, Any] = {bool: False, int: 0, float: 0.0}


def promote(a: DType, b: DType) -> DType:
    """NumPy 2 promotion of two typed scalars."""
    if a is b:
        return a
    return _dtypes.result_type(a, b)


_WEAK_CACHE: dict[tuple[DType, type], DType] = {}


def promote_weak(strong: DType, kind: type) -> DType:
    """The dtype of `strong op literal` where the literal is a Python `kind` (bool/int/float)."""
    key = (strong, kind)
    try:
        return _WEAK_CACHE[key]
    except KeyError:
        pass
    res = _dtypes.from_numpy_dtype(np.result_type(strong._np, _WEAK_SAMPLE[kind]))
    _WEAK_CACHE[key] = res
    return res


def weak_kind(dtype: DType) -> type:
    """The Python type a weak value of `dtype` stands for (bool, int or float)."""
    return bool if dtype.kind == "b" else int if dtype.kind in "iu" else float


def promote_weak_pair(a: type, b: type) -> type:
    """Python's own promotion of two weak kinds: bool < int < float."""
    order = (bool, int, float)
    return order[max(order.index(a), order.index(b))]


def literal_fits(value: Any, dtype: DType) -> bool:
    """Whether a Python literal is exactly representable in `dtype` (ints), or in range."""
    if dtype.kind in "iu":
        if isinstance(value, float):
            return False
        info = np.iinfo(dtype._np)
        return info.min <= int(value) <= info.max
    return True


def can_cast(src: DType, dst: DType, rule: Literal["safe", "same_kind"]) -> bool:
    """NumPy's `can_cast` with rule "safe" or "same_kind"."""
    return bool(np.can_cast(src._np, dst._np, rule))


def scalar_dtype_of(value: Any) -> DType | None:
    """The kernel dtype of a NumPy scalar, or None for anything else."""
    if isinstance(value, np.generic):
        try:
            dt = _dtypes.from_numpy_dtype(value.dtype)
        except TypeError:
            return None
        return dt if dt in KERNEL_DTYPES else None
    return None


# -- annotations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArrayAnnotation:
    """`qd.Array[dtype, ndim]` in a kernel signature (either part may be left out).

    `elem` is the element shape of an array of vectors or matrices (`qd.Array[qd.vec2, 1]`:
    dtype float32, ndim 1, elem (2,)): the array has `ndim + len(elem)` axes, the trailing
    ones of exactly these extents, and `x[i]` is a vector value in the kernel."""

    dtype: DType | None
    ndim: int | None
    elem: tuple[int, ...] = ()
    elem_name: str = ""

    def __repr__(self) -> str:
        dt = self.elem_name or ("" if self.dtype is None else self.dtype.name)
        nd = "" if self.ndim is None else f", {self.ndim}"
        return f"qd.Array[{dt}{nd}]" if dt else "qd.Array"

    def accepts(self, t: Any) -> bool:
        return (isinstance(t, ArrayType)
                and (self.dtype is None or t.dtype is self.dtype)
                and (t.ndim >= len(self.elem))
                and (self.ndim is None or t.ndim == self.ndim + len(self.elem)))


@dataclass(frozen=True, slots=True)
class ViewAnnotation:
    """`qd.BufferView[dtype]` in a kernel signature."""

    dtype: DType | None

    def __repr__(self) -> str:
        return "qd.BufferView" if self.dtype is None else f"qd.BufferView[{self.dtype.name}]"

    def accepts(self, t: Any) -> bool:
        return isinstance(t, ViewType) and (self.dtype is None or t.dtype is self.dtype)


def _annotation_dtype(value: Any, what: str) -> DType:
    if isinstance(value, DType) and value in KERNEL_DTYPES:
        return value
    raise TypeError(
        f"{what} needs a real or boolean qdarray dtype such as qd.float32; got {value!r}."
    )


def array_annotation(params: Any) -> ArrayAnnotation:
    """`qd.Array[dtype, ndim]`, `qd.Array[dtype]`: the object kernel signatures use."""
    if not isinstance(params, tuple):
        params = (params,)
    if len(params) > 2:
        raise TypeError(f"qd.Array[dtype, ndim] takes at most two parameters; got {params!r}.")
    if isinstance(params[0], VectorType):
        vt = params[0]
        ndim = None
        if len(params) == 2:
            ndim = params[1]
            if type(ndim) is not int or ndim < 0:
                raise TypeError(f"qd.Array[{vt.name}, ndim] needs an int ndim >= 0; got "
                                f"{ndim!r}.")
        return ArrayAnnotation(vt.dtype, ndim, vt.shape, vt.name)
    dtype = _annotation_dtype(params[0], "qd.Array[...]")
    ndim = None
    if len(params) == 2:
        ndim = params[1]
        if type(ndim) is not int or ndim < 0:
            raise TypeError(f"qd.Array[dtype, ndim] needs an int ndim >= 0; got {ndim!r}.")
    return ArrayAnnotation(dtype, ndim)


def view_annotation(params: Any) -> ViewAnnotation:
    """`qd.BufferView[dtype]`: the object kernel signatures use."""
    if isinstance(params, tuple):
        raise TypeError(f"qd.BufferView[dtype] takes one parameter; got {params!r}.")
    return ViewAnnotation(_annotation_dtype(params, "qd.BufferView[...]"))


# `qd.Array[...]` and `qd.BufferView[...]` make their annotations here (the array layer, below
# the kernel compiler, imports nothing of it).
register_annotations(Array=array_annotation, BufferView=view_annotation)
