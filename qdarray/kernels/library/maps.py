"""Strided maps: `out[i] = f(x0[i], x1[i], ...)` for every index `i` of `out`.

`map_kernel(spec)` builds the IR of one map signature (`MapSpec`): parameters `out` (an array
of `spec.ndim` dimensions), then one per operand, an array of the same number of dimensions
(any strides: broadcasting is stride 0) or a scalar; the body is a parallel nest over `out`'s
shape whose innermost statement loads each operand, converts it to its compute dtype, applies
`f` and stores the result converted to `out`'s dtype. With `spec.unroll > 1` (one dimension),
each of `W` work-items (the last parameter) handles elements `w, w + W, ...`: several
independent loads in flight, which a GPU needs to reach its memory bandwidth on flat maps.

`f` is an elementwise function of `elementwise.BODIES`, or one of the bodies below that also
see the index (creation formulas: `arange`, `linspace`, `eye`, `tri`), or `where` / `clip`.
Every kernel is built once per signature (`functools.cache`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from ..emit import Emitter, KernelBuilder, block
from ..ir import For, If, KernelIR, Op, Value
from ..types import ArrayType
from . import complex_math, elementwise

IndexBody = Callable[[Emitter, DType, list[Value], list[Value]], Value]


@dataclass(frozen=True)
class Operand:
    """One operand of a map: an array (`array`) or a scalar parameter of dtype `dtype`, whose
    values the body sees converted to `compute`."""

    array: bool
    dtype: DType
    compute: DType


@dataclass(frozen=True)
class MapSpec:
    """The signature of one map kernel (see the module docstring)."""

    body: str
    compute: DType
    out: DType
    operands: tuple[Operand, ...]
    ndim: int
    unroll: int = 1


def _copy(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
    return v[0]


def _where(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
    return em.emit(Op.SELECT, *v)  # type: ignore[no-any-return]


def _clip(lo: bool, hi: bool) -> IndexBody:
    """NumPy's clip: minimum(maximum(x, lo), hi), NaN-propagating, hi winning over lo."""
    def body(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
        x = v[0]
        k = 1
        if lo:
            x = _max(em, t, x, v[k])
            k += 1
        if hi:
            x = _min(em, t, x, v[k])
        return x
    return body


def _max(em: Emitter, t: DType, a: Value, b: Value) -> Value:
    return elementwise.body("maximum")(em, t, [a, b])


def _min(em: Emitter, t: DType, a: Value, b: Value) -> Value:
    return elementwise.body("minimum")(em, t, [a, b])


def _add(em: Emitter, t: DType, a: Value, b: Value) -> Value:
    return elementwise.body("add")(em, t, [a, b])


def _mul(em: Emitter, t: DType, a: Value, b: Value) -> Value:
    return elementwise.body("multiply")(em, t, [a, b])


def _arange(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
    """start + step * i in the compute dtype (int64 / uint64 for integer results; for float
    results start and the first step are rounded as NumPy does, by the caller)."""
    return _add(em, t, v[0], _mul(em, t, v[1], em.cast(idx[0], t)))


def _linspace(endpoint: bool, floor: bool) -> IndexBody:
    """start + i * step (stop itself at the last index when `endpoint`); floored for integer
    results, as NumPy's linspace does before its cast."""
    def body(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
        start, step, stop, last = v
        x = _add(em, t, _mul(em, t, em.cast(idx[0], t), step), start)
        if endpoint:
            x = em.emit(Op.SELECT, em.emit(Op.EQ, idx[0], last), stop, x)
        return em.emit(Op.FLOOR, x) if floor else x
    return body


def _eye(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
    """1 on the k-th diagonal (k the only operand), 0 elsewhere."""
    on = em.emit(Op.EQ, em.emit(Op.SUB, idx[-1], idx[-2]), v[0])
    if t.kind == "c":
        one, zero = complex_math.constant(em, 1, t), complex_math.constant(em, 0, t)
        return em.emit(Op.SELECT, on, one, zero)  # type: ignore[no-any-return]
    return em.cast(on, t)


def _tri(upper: bool) -> IndexBody:
    """x where the element is on or above (`upper`) / below the k-th diagonal, else 0."""
    def body(em: Emitter, t: DType, v: list[Value], idx: list[Value]) -> Value:
        d = em.emit(Op.SUB, idx[-1], idx[-2])
        keep = em.emit(Op.GE if upper else Op.LE, d, v[1])
        return em.emit(Op.SELECT, keep, v[0],  # type: ignore[no-any-return]
                       complex_math.constant(em, 0, t))
    return body


INDEX_BODIES: dict[str, IndexBody] = {
    "copy": _copy, "where": _where, "arange": _arange, "eye": _eye,
    "clip_lo": _clip(True, False), "clip_hi": _clip(False, True), "clip": _clip(True, True),
    "linspace": _linspace(False, False), "linspace_end": _linspace(True, False),
    "linspace_floor": _linspace(False, True), "linspace_end_floor": _linspace(True, True),
    "triu": _tri(True), "tril": _tri(False),
}


def _apply(em: Emitter, spec: MapSpec, vals: list[Value], idx: list[Value]) -> Value:
    index_body = INDEX_BODIES.get(spec.body)
    if index_body is not None:
        return index_body(em, spec.compute, vals, idx)
    return elementwise.body(spec.body)(em, spec.compute, vals)


class _Map(KernelBuilder):
    def __init__(self, spec: MapSpec) -> None:
        super().__init__()
        self.spec = spec
        self.out = self.param("out", ArrayType(spec.out, spec.ndim))
        self.operands = [self.param(f"x{j}", ArrayType(o.dtype, spec.ndim) if o.array
                                    else o.dtype)
                         for j, o in enumerate(spec.operands)]

    def element(self, idx: list[Value]) -> None:
        """out[idx] = f(operands at idx)."""
        em, spec = self.em, self.spec
        vals = []
        for o, v in zip(spec.operands, self.operands, strict=True):
            x = em.emit(Op.LOAD, v, *idx) if o.array else v
            vals.append(em.cast(x, o.compute))
        em.emit(Op.STORE, self.out, *idx, em.cast(_apply(em, spec, vals, idx), spec.out))

    def each(self) -> list[Any]:
        """One work-item per element of `out`."""
        with self.em.region() as top:
            self.nest([self.shape(self.out, d) for d in range(self.spec.ndim)], self.element)
        return top

    def unrolled(self) -> list[Any]:
        """One dimension, `unroll` elements per work-item, `W` work-items."""
        em, u = self.em, self.spec.unroll
        workers = self.param("@workers", _dtypes.int64)
        with em.region() as top:
            n = em.emit(Op.SHAPE, self.out, attrs=(0,))
            w, k = em.value(_dtypes.int64), em.value(_dtypes.int64)
            with em.region() as step:
                i = em.emit(Op.ADD, w, em.emit(Op.MUL, k, workers))
                with em.region() as then:
                    self.element([i])
                em.stmt(If(em.emit(Op.LT, i, n), block(then), block([])))
            with em.region() as par:
                em.stmt(For(k, em.i64(0), em.i64(u), block(step), False))
            em.stmt(For(w, em.i64(0), workers, block(par), True))
        return top

    def kernel(self) -> KernelIR:
        stmts = self.unrolled() if self.spec.unroll > 1 else self.each()
        return KernelIR(f"qd_map_{self.spec.body}", tuple(self.params), block(stmts))


@functools.cache
def map_kernel(spec: MapSpec) -> KernelIR:
    """The IR of the map `spec` (module docstring)."""
    return _Map(spec).kernel()


def supported(body: str, compute: DType) -> bool:
    """Whether `body` exists for compute dtype `compute`."""
    if body in INDEX_BODIES:
        return True
    return elementwise.supported(body, compute)
