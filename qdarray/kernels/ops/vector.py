"""Vector and matrix values (`vector_types.VectorType`), as the frontend emits them.

VEC_PACK(*components) builds a vector or matrix of type `attrs[0]` from its components in
row-major order; VEC_ELEM(v) reads component `attrs[0]` (a flat, row-major index) of `v`.
Everything else about vectors (arithmetic, `@`, `qd.math`) the frontend writes as scalar ops
on the components. `passes/scalarize.py`, the first pass of every compile, replaces both ops
and the vector-typed locals by scalars, so no other pass, no code generator and no reverse
mode meets them (they have no adjoint for that reason).
"""

from __future__ import annotations

from typing import Any

from .. import types as T
from ..ir import Op
from ..vector_types import VectorType
from .table import defop


def _pack_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    (vt,) = attrs
    if not isinstance(vt, VectorType):
        raise TypeError(f"VEC_PACK needs a vector type; got {vt!r}")
    if len(types) != vt.size:
        raise TypeError(f"VEC_PACK of {vt.name} takes {vt.size} components; got {len(types)}")
    for t in types:
        if t is not vt.dtype:
            raise TypeError(f"VEC_PACK of {vt.name} takes {vt.dtype.name} components; got "
                            f"{T.type_str(t)}")
    return vt


def _elem_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    (vt,) = types
    (k,) = attrs
    if not isinstance(vt, VectorType):
        raise TypeError(f"VEC_ELEM needs a vector; got {T.type_str(vt)}")
    if not 0 <= k < vt.size:
        raise TypeError(f"VEC_ELEM index {k} out of range for {vt.name}")
    return vt.dtype


def _pack(rt: Any, attrs: Any, *components: Any) -> tuple[Any, ...]:
    return tuple(components)


def _elem(rt: Any, attrs: Any, v: Any) -> Any:
    return v[attrs[0]]


defop(Op.VEC_PACK, "vector", None, _pack_rule, _pack,
      doc="a vector or matrix of type attrs[0] from its row-major components")
defop(Op.VEC_ELEM, "vector", 1, _elem_rule, _elem,
      doc="component attrs[0] (flat, row-major) of a vector or matrix")
