"""What kernel expressions evaluate to while the frontend builds IR.

- `TVal`: a runtime scalar (an SSA Value); `weak` marks values that behave like Python
  literals in promotion (unannotated Python scalar arguments, shapes, range indices).
- Python `bool` / `int` / `float`: compile-time constants (weak literals).
- `MemRef`: an array or view (a parameter, or a kernel-side subview of a view parameter);
  `PartialIndex`: `x[i]` of a multi-dimensional x.
- `SliceVal`: `a:b` in a subscript; `ViewMethod`: `v.subview` before the call.
- `StructVal`: a dataclass argument, with its fields as frontend values.
- `VecVal`: a vector or matrix value (an SSA Value of a `VectorType`, `frontend/vectors.py`).
- `VarRef`: the binding of a name that is assigned more than once (a mutable local).
- anything else: a compile-time Python object (modules, dtypes, funcs, tuples, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._dtypes import DType
from ..ir import Value, Var
from ..types import ArrayType, ViewType
from ..vector_types import VectorType

PY_CONSTANTS = (bool, int, float)


@dataclass(frozen=True, slots=True)
class TVal:
    value: Value
    weak: bool = False

    @property
    def dtype(self) -> DType:
        return self.value.type  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class VecVal:
    """A vector or matrix value: `value` has a `VectorType`."""

    value: Value

    @property
    def vtype(self) -> VectorType:
        return self.value.type  # type: ignore[return-value]

    @property
    def dtype(self) -> DType:
        return self.vtype.dtype


@dataclass(frozen=True, slots=True)
class MemRef:
    """An array or view; `elem` is the element shape of an array of vectors or matrices
    (its trailing axes, which `x[i]` takes whole), `elem_name` the element type's name."""

    value: Value
    name: str
    elem: tuple[int, ...] = ()
    elem_name: str = ""

    @property
    def is_view(self) -> bool:
        return isinstance(self.value.type, ViewType)

    @property
    def ndim(self) -> int:
        t = self.value.type
        return t.ndim if isinstance(t, ArrayType) else 1

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class PartialIndex:
    ref: MemRef
    indices: tuple[TVal, ...]


@dataclass(frozen=True, slots=True)
class SliceVal:
    """`a:b:c` inside a subscript, with its bounds as frontend values (None when omitted)."""

    lower: Any
    upper: Any
    step: Any


@dataclass(frozen=True, slots=True)
class ViewMethod:
    """`v.subview` before it is called."""

    ref: MemRef
    name: str


@dataclass(frozen=True, slots=True)
class StructVal:
    cls: type
    fields: tuple[tuple[str, Any], ...]

    def field(self, name: str) -> Any:
        for key, value in self.fields:
            if key == name:
                return value
        raise KeyError(name)


class VarRef:
    """One per mutable local; bindings compare by identity when branches merge."""

    __slots__ = ("var", "line")

    def __init__(self, var: Var, line: int) -> None:
        self.var = var
        self.line = line


def is_const(x: Any) -> bool:
    return type(x) in PY_CONSTANTS


def is_scalar_val(x: Any) -> bool:
    return type(x) is TVal or type(x) in PY_CONSTANTS


def describe(x: Any) -> str:
    """How a frontend value is named in messages."""
    if type(x) is TVal:
        return f"a {x.dtype.name} value"
    if type(x) is VecVal:
        return f"a {x.vtype.name} value"
    if type(x) in PY_CONSTANTS:
        return f"the constant {x!r}"
    if type(x) is MemRef:
        return f"{'view' if x.is_view else 'array'} '{x.name}'"
    if type(x) is PartialIndex:
        return f"a partly indexed array '{x.ref.name}'"
    if type(x) is SliceVal:
        return "a slice"
    if type(x) is ViewMethod:
        return f"the method '{x.ref.name}.{x.name}'"
    if type(x) is StructVal:
        return f"a {x.cls.__name__} dataclass"
    if isinstance(x, tuple):
        return "a tuple"
    return f"the Python object {x!r}"
