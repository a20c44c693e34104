"""Data types of the namespace: one `DType` object per standard dtype, categories and promotion.

A `DType` wraps the NumPy dtype that describes its memory layout on every device (CuPy and
pyopencl use NumPy dtypes too), so the backends can map to and from it with a dict lookup.
Type promotion follows NumPy 2 (NEP 50), which is the standard's table inside each kind plus
NumPy's documented cross-kind rules (int + float -> float) that NumPy-style code relies on.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class DType:
    """A dtype of the namespace, such as `qdarray.float32`.

    Compare dtypes with `==`; they are singletons, so `is` works as well.
    """

    __slots__ = ("name", "_np", "kind", "__weakref__")

    # 'b' bool, 'i' signed, 'u' unsigned, 'f' real float, 'c' complex float (NumPy's kind,
    # stored: the namespace checks it on every call).
    kind: str

    def __init__(self, name: str) -> None:
        self.name = name
        self._np = np.dtype(name)
        self.kind = self._np.kind

    def __repr__(self) -> str:
        return f"qdarray.{self.name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return self is other
        if isinstance(other, np.dtype) or isinstance(other, type) and issubclass(
                other, np.generic):
            # NumPy habits: `x.dtype == np.float32` and `x.dtype == a.dtype` for an ndarray a.
            return builtins.bool(self._np == other)
        if isinstance(other, str):
            # ... and `x.dtype == "float32"` (or "f4"), as NumPy's dtypes compare: NumPy's
            # comparison is False for any string that names no dtype (it never raises). (Not
            # Python's types, which NumPy's dtypes equal too: `qd.int64 == int` would confuse
            # annotations, where `int` is the weak kernel type.)
            return builtins.bool(self._np == other)
        return NotImplemented

    def __ne__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return self is not other
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the same layout, so that `np.dtype(qd.float32)` and NumPy
        functions taking `dtype=qd.float32` work."""
        return self._np

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> str:
        return self.name

    @property
    def type(self) -> type[np.generic]:
        """The NumPy scalar type (`np.float32`, ...), as NumPy's dtypes give it: code written
        for NumPy dtypes (`issubclass(x.dtype.type, np.floating)`) reads it."""
        return self._np.type

    @property
    def itemsize(self) -> int:
        """Size of one element in bytes."""
        return self._np.itemsize

    # More of NumPy's dtype attributes that array code reads from `x.dtype` (Dask reads
    # `hasobject` and `fields` of its chunks' dtype): those of the NumPy dtype of the layout.

    @property
    def char(self) -> str:
        """NumPy's one-character code (`'f'` for float32)."""
        return self._np.char

    @property
    def str(self) -> builtins.str:
        """NumPy's array-protocol type string (`'<f4'` for float32)."""
        return self._np.str

    @property
    def hasobject(self) -> builtins.bool:
        """False: no dtype of the namespace holds Python objects."""
        return False

    @property
    def fields(self) -> None:
        """None: no dtype of the namespace is structured."""
        return None

    @property
    def names(self) -> None:
        """None: no dtype of the namespace is structured."""
        return None


bool = DType("bool")  # noqa: A001 - the standard names it `bool`
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
float32 = DType("float32")
float64 = DType("float64")
complex64 = DType("complex64")
complex128 = DType("complex128")

ALL_DTYPES: tuple[DType, ...] = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
)
BOOLEAN_DTYPES = (bool,)
SIGNED_INTEGER_DTYPES = (int8, int16, int32, int64)
UNSIGNED_INTEGER_DTYPES = (uint8, uint16, uint32, uint64)
INTEGER_DTYPES = SIGNED_INTEGER_DTYPES + UNSIGNED_INTEGER_DTYPES
REAL_FLOATING_DTYPES = (float32, float64)
COMPLEX_FLOATING_DTYPES = (complex64, complex128)
FLOATING_DTYPES = REAL_FLOATING_DTYPES + COMPLEX_FLOATING_DTYPES
REAL_NUMERIC_DTYPES = INTEGER_DTYPES + REAL_FLOATING_DTYPES
NUMERIC_DTYPES = REAL_NUMERIC_DTYPES + COMPLEX_FLOATING_DTYPES
INTEGER_OR_BOOLEAN_DTYPES = BOOLEAN_DTYPES + INTEGER_DTYPES

# Category names as the standard's `isdtype` spells them, and the names used in error messages.
DTYPE_CATEGORIES: dict[str, tuple[DType, ...]] = {
    "bool": BOOLEAN_DTYPES,
    "signed integer": SIGNED_INTEGER_DTYPES,
    "unsigned integer": UNSIGNED_INTEGER_DTYPES,
    "integral": INTEGER_DTYPES,
    "real floating": REAL_FLOATING_DTYPES,
    "complex floating": COMPLEX_FLOATING_DTYPES,
    "numeric": NUMERIC_DTYPES,
    # Used by error messages and checks only (not part of isdtype's vocabulary).
    "all": ALL_DTYPES,
    "integer": INTEGER_DTYPES,
    "integer or boolean": INTEGER_OR_BOOLEAN_DTYPES,
    "floating-point": FLOATING_DTYPES,
    "real numeric": REAL_NUMERIC_DTYPES,
    "boolean": BOOLEAN_DTYPES,
}

_BY_NUMPY: dict[Any, DType] = {d._np: d for d in ALL_DTYPES}
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}


def from_numpy_dtype(np_dtype: Any) -> DType:
    """Map a NumPy dtype (or anything `np.dtype` accepts) to the namespace's DType.

    Raises:
        TypeError: for dtypes outside the standard (strings, objects, float16, datetimes, ...).
    """
    try:
        return _BY_NUMPY[np_dtype]
    except (KeyError, TypeError):
        pass
    try:
        nd = np.dtype(np_dtype)
    except TypeError:
        nd = None
    if nd is not None and nd.isnative and nd in _BY_NUMPY:
        return _BY_NUMPY[nd]
    if nd is not None and not nd.isnative and nd.newbyteorder("=") in _BY_NUMPY:
        return _BY_NUMPY[nd.newbyteorder("=")]
    raise TypeError(
        f"Unsupported dtype: dtype {np_dtype!r} is not supported by qdarray; "
        f"use one of {', '.join(d.name for d in ALL_DTYPES)}."
    )


def normalize_dtype(dtype: Any) -> DType | None:
    """Accept a DType, a dtype name, a NumPy dtype or a Python type; None stays None."""
    if dtype is None or isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    if dtype is builtins_bool:
        return bool
    if dtype is int:
        return int64
    if dtype is float:
        return float64
    if dtype is complex:
        return complex128
    return from_numpy_dtype(dtype)


builtins_bool = builtins.bool


def result_type(*dtypes: DType) -> DType:
    """Promote dtypes by NumPy 2 rules (the standard's table plus NumPy's cross-kind rules)."""
    if len(dtypes) == 1:
        return dtypes[0]
    return _promote_cached(dtypes)


_PROMOTION_CACHE: dict[tuple[DType, ...], DType] = {}


def _promote_cached(dtypes: tuple[DType, ...]) -> DType:
    try:
        return _PROMOTION_CACHE[dtypes]
    except KeyError:
        res = _BY_NUMPY[np.result_type(*(d._np for d in dtypes))]
        _PROMOTION_CACHE[dtypes] = res
        return res


def check_category(dtype: DType, category: str, func: str) -> None:
    """Raise the namespace's standard TypeError when `dtype` is not in `category`."""
    if dtype not in DTYPE_CATEGORIES[category]:
        raise TypeError(f"Only {category} dtypes are allowed in {func}; got {dtype}.")
