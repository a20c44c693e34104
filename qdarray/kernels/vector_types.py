"""Vector and matrix types of the kernel language: `qd.types.vector(n, dtype)`,
`qd.types.matrix(n, m, dtype)` and the shorthands `qd.vec2` ... `qd.mat4d`.

A `VectorType` is a small fixed-shape value type: `shape` is `(n,)` for a vector and
`(n, m)` for a matrix (row-major), `dtype` a kernel scalar type. Inside kernels the frontend
builds such values (`frontend/vectors.py`); in the IR they are Values of this type made by
VEC_PACK and read by VEC_ELEM, and `passes/scalarize.py`, the first pass of every compile,
turns them into scalars, so no later pass, no code generator and no reverse-mode pass meets
them.

As an array element type, `qd.Array[qd.vec2, 1]` is a float32 array of shape `(N, 2)`: a
vector adds one trailing axis of its length, a matrix two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .. import _dtypes
from .._dtypes import DType


@dataclass(frozen=True, slots=True)
class VectorType:
    """A vector (`shape == (n,)`) or matrix (`shape == (n, m)`) of `dtype` scalars."""

    shape: tuple[int, ...]
    dtype: DType

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def is_matrix(self) -> bool:
        return len(self.shape) == 2

    @property
    def name(self) -> str:
        """The type's spelling: `vec3`, `mat2d`, `vector(5, float32)`, `matrix(2, 3, int32)`."""
        short = _SHORT.get(self)
        if short is not None:
            return short
        dims = ", ".join(map(str, self.shape))
        return f"{'matrix' if self.is_matrix else 'vector'}({dims}, {self.dtype.name})"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"qd.{self.name}" if self in _SHORT else f"qd.types.{self.name}"

    def __call__(self, *args: Any) -> Any:
        raise TypeError(
            f"{self!r}(...) builds a value inside @qd.kernel and @qd.func code only. Outside "
            f"kernels, use an array: qd.asarray([...], dtype=qd.{self.dtype.name}).")


_INTERNED: dict[tuple[tuple[int, ...], DType], VectorType] = {}


def of(shape: tuple[int, ...], dtype: DType) -> VectorType:
    """The one `VectorType` of `shape` and `dtype` (interned: the IR verifier compares the
    types of a local and of the value stored into it by identity, as it does dtypes)."""
    key = (shape, dtype)
    vt = _INTERNED.get(key)
    if vt is None:
        vt = _INTERNED[key] = VectorType(shape, dtype)
    return vt


def _check(n: int, what: str) -> None:
    if type(n) is not int or not 1 <= n <= 16:
        raise TypeError(f"{what} must be an int in [1, 16]; got {n!r}.")


def _dtype(dtype: Any) -> DType:
    dt = dtype if isinstance(dtype, DType) else _dtypes.normalize_dtype(dtype)
    if dt not in _dtypes.REAL_NUMERIC_DTYPES:  # the kernel dtypes but bool
        raise TypeError(f"Vector and matrix elements must be an integer or float dtype such "
                        f"as qd.float32; got {dtype!r}.")
    return dt


def vector(n: int, dtype: Any) -> VectorType:
    """The type of `n`-vectors of `dtype`.

    Args:
        n: the length, 1 to 16.
        dtype: a kernel scalar dtype (qd.float32, qd.float64, an integer dtype).

    Returns:
        A `VectorType`; call it in a kernel to build a value (`vec3(a, b, c)`), or use it as
        an array element type (`qd.Array[vec3, 1]`).

    Example::

        vec5 = qd.types.vector(5, qd.float32)
    """
    _check(n, "The length of a vector")
    return of((n,), _dtype(dtype))


def matrix(n: int, m: int, dtype: Any) -> VectorType:
    """The type of `n` x `m` matrices of `dtype` (row-major).

    Example::

        mat23 = qd.types.matrix(2, 3, qd.float32)
    """
    _check(n, "The number of rows of a matrix")
    _check(m, "The number of columns of a matrix")
    return of((n, m), _dtype(dtype))


_F32 = _dtypes.float32
_F64 = _dtypes.float64
vec2, vec3, vec4 = (of((n,), _F32) for n in (2, 3, 4))
mat2, mat3, mat4 = (of((n, n), _F32) for n in (2, 3, 4))
vec2d, vec3d, vec4d = (of((n,), _F64) for n in (2, 3, 4))
mat2d, mat3d, mat4d = (of((n, n), _F64) for n in (2, 3, 4))

_SHORT: dict[VectorType, str] = {
    vec2: "vec2", vec3: "vec3", vec4: "vec4", mat2: "mat2", mat3: "mat3", mat4: "mat4",
    vec2d: "vec2d", vec3d: "vec3d", vec4d: "vec4d", mat2d: "mat2d", mat3d: "mat3d",
    mat4d: "mat4d",
}
