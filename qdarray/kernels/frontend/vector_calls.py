"""Calls of the `qd.math` vector and matrix functions in kernels (`vecmath.py`).

The algorithms of `vecmath.py` are scalar code over a kit; here they run with `Scalar`s, which
emit IR for each operator and function through the frontend's scalar helpers, on the
components of the arguments, and the results are packed into vector values again. So a call
inlines straight-line scalar code: no new op, and reverse mode differentiates it as it is.
This module checks the shapes of the arguments and raises the compile errors.
"""

from __future__ import annotations

import ast
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from .. import vecmath
from ..ir import Op
from ..vector_types import VectorType
from . import scalars, vectors
from .builder import Builder
from .values import TVal, VecVal, describe, is_const


class Scalar:
    """A frontend scalar (TVal or Python constant) whose operators emit IR."""

    __slots__ = ("kb", "v")

    def __init__(self, kb: Builder, v: Any) -> None:
        self.kb = kb
        self.v = v

    def _op(self, op: Op, other: Any, reverse: bool = False) -> Any:
        o = other.v if type(other) is Scalar else other
        if type(o) is float and o in (0.0, 1.0) and type(self.v) is TVal:
            # Structural zeros and ones of the algorithms (identity starts, zeroed entries)
            # emit nothing: x * 0 is taken as exactly 0, as the maths has it.
            if op is Op.MUL:
                return self if o == 1.0 else 0.0
            if op is Op.ADD and o == 0.0:
                return self
            if op is Op.SUB and o == 0.0 and not reverse:
                return self
        a, b = (o, self.v) if reverse else (self.v, o)
        return Scalar(self.kb, scalars.binop(self.kb, op, a, b, self.kb.node))

    def __add__(self, o: Any) -> Any:
        return self._op(Op.ADD, o)

    def __radd__(self, o: Any) -> Any:
        return self._op(Op.ADD, o, True)

    def __sub__(self, o: Any) -> Any:
        return self._op(Op.SUB, o)

    def __rsub__(self, o: Any) -> Any:
        return self._op(Op.SUB, o, True)

    def __mul__(self, o: Any) -> Any:
        return self._op(Op.MUL, o)

    def __rmul__(self, o: Any) -> Any:
        return self._op(Op.MUL, o, True)

    def __truediv__(self, o: Any) -> Any:
        return self._op(Op.TRUEDIV, o)

    def __rtruediv__(self, o: Any) -> Any:
        return self._op(Op.TRUEDIV, o, True)

    def __lt__(self, o: Any) -> Any:
        return self._op(Op.LT, o)

    def __gt__(self, o: Any) -> Any:
        return self._op(Op.GT, o)

    def __neg__(self) -> Scalar:
        v = self.v
        if type(v) is not TVal:
            return Scalar(self.kb, -v)
        return Scalar(self.kb, TVal(self.kb.emit(Op.NEG, (v.value,), (), v.dtype)))  # type: ignore


class FrontendKit:
    """The kit of `vecmath`'s algorithms inside a kernel: IR for each function."""

    def __init__(self, kb: Builder, dtype: DType) -> None:
        self.kb = kb
        self.dtype = dtype
        self.itemsize = dtype.itemsize

    def wrap(self, x: Any) -> Scalar:
        return x if type(x) is Scalar else Scalar(self.kb, x)

    def _math(self, op: Op, *xs: Any) -> Scalar:
        vals = [self.kb.cast_to(self.wrap(x).v, self.dtype).value for x in xs]
        return Scalar(self.kb, TVal(self.kb.emit(op, tuple(vals), (), self.dtype)))  # type: ignore

    def sqrt(self, x: Any) -> Scalar:
        return self._math(Op.SQRT, x)

    def atan2(self, y: Any, x: Any) -> Scalar:
        return self._math(Op.ATAN2, y, x)

    def sin(self, x: Any) -> Scalar:
        return self._math(Op.SIN, x)

    def cos(self, x: Any) -> Scalar:
        return self._math(Op.COS, x)

    def abs(self, x: Any) -> Scalar:
        return self._math(Op.ABS, x)

    def select(self, cond: Any, a: Any, b: Any) -> Scalar:
        c = self.wrap(cond).v
        if is_const(c):
            return self.wrap(a if c else b)
        va = self.kb.cast_to(self.wrap(a).v, self.dtype)
        vb = self.kb.cast_to(self.wrap(b).v, self.dtype)
        out = self.kb.emit(Op.SELECT, (c.value, va.value, vb.value), (), self.dtype)
        return Scalar(self.kb, TVal(out))  # type: ignore[arg-type]


# -- argument checks ------------------------------------------------------------------------


def _name(fn: Any) -> str:
    return f"qd.math.{fn.__name__}"


def _vector(kb: Builder, fn: Any, x: Any, node: ast.AST, sizes: tuple[int, ...] = ()
            ) -> VecVal:
    if type(x) is not VecVal or x.vtype.is_matrix or (sizes and x.vtype.shape[0] not in sizes):
        want = " or ".join(f"{n}-vector" for n in sizes) if sizes else "vector"
        kb.type_fail(f"{_name(fn)} takes a {want}; got {describe(x)}.",
                     f"Use a {want}, e.g. qd.vec{sizes[0] if sizes else 3}(...).", node)
    return x


def _square(kb: Builder, fn: Any, x: Any, node: ast.AST, sizes: tuple[int, ...]) -> VecVal:
    if type(x) is not VecVal or not x.vtype.is_matrix or x.vtype.shape[0] != x.vtype.shape[1] \
            or x.vtype.shape[0] not in sizes:
        want = " or ".join(f"{n}x{n}" for n in sizes)
        kb.type_fail(f"{_name(fn)} takes a {want} matrix; got {describe(x)}.",
                     f"Use a {want} matrix, e.g. qd.mat{sizes[-1]}(...).", node)
    return x


def _same_shape(kb: Builder, fn: Any, a: VecVal, b: VecVal, node: ast.AST) -> None:
    if a.vtype.shape != b.vtype.shape:
        kb.type_fail(f"{_name(fn)} takes two vectors of one length; got {describe(a)} and "
                     f"{describe(b)}.", "Use vectors of the same length.", node)


def _float_dtype(*xs: VecVal) -> DType:
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = _dtypes.result_type(dtype, x.dtype)
    return dtype if dtype.kind == "f" else _dtypes.float64


# -- conversions between vector values and the algorithms' lists ----------------------------


def _list(kb: Builder, v: VecVal, kit: FrontendKit) -> list[Any]:
    return [kit.wrap(kb.cast_to(c, kit.dtype)) for c in vectors.parts(kb, v)]


def _table(kb: Builder, m: VecVal, kit: FrontendKit) -> list[list[Any]]:
    flat = _list(kb, m, kit)
    n, k = m.vtype.shape
    return [flat[i * k:(i + 1) * k] for i in range(n)]


def _scalar(x: Any) -> Any:
    return x.v if type(x) is Scalar else x


def _pack_vec(kb: Builder, xs: list[Any], dtype: DType) -> VecVal:
    return vectors.pack(kb, [_scalar(x) for x in xs], (len(xs),), dtype)


def _pack_mat(kb: Builder, rows: list[list[Any]], dtype: DType) -> VecVal:
    return vectors.from_rows(kb, [[_scalar(x) for x in r] for r in rows], dtype)


# -- the calls ------------------------------------------------------------------------------


def _const_int(kb: Builder, x: Any, what: str, node: ast.AST) -> int:
    if type(x) is not int or not 1 <= x <= 16:
        kb.fail(f"{what} must be an integer constant in [1, 16]; got {describe(x)}.",
                "Use a constant such as 3.", node)
    return x


def _eye(kb: Builder, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> VecVal:
    if not 1 <= len(args) <= 2:
        kb.fail("qd.math.eye takes (n) or (n, dtype).", "Use qd.math.eye(3).", node)
    n = _const_int(kb, args[0], "The size of qd.math.eye", node)
    dtype = args[1] if len(args) == 2 else kwargs.get("dtype", _dtypes.float32)
    if not isinstance(dtype, DType):
        kb.type_fail(f"The dtype of qd.math.eye must be a dtype; got {describe(dtype)}.",
                     "Use qd.float32 or qd.float64.", node)
    one, zero = 1.0 if dtype.kind == "f" else 1, 0.0 if dtype.kind == "f" else 0
    return vectors.from_rows(kb, [[one if i == j else zero for j in range(n)]
                                  for i in range(n)], dtype)


def call(kb: Builder, fn: Any, node: ast.Call) -> Any:
    """Compile a call of one of `vecmath.FUNCTIONS`."""
    args = [kb.expr(a) for a in node.args]
    kwargs = {k.arg: kb.expr(k.value) for k in node.keywords if k.arg is not None}
    kb.node = node
    if fn is vecmath.eye:
        return _eye(kb, node, args, kwargs)
    allowed = {vecmath.normalize: ("eps",)}.get(fn, ())
    extra = [k for k in kwargs if k not in allowed]
    if extra:
        kb.fail(f"{_name(fn)} has no keyword argument '{extra[0]}'.",
                "Pass the arguments by position.", node)
    arity = {vecmath.dot: 2, vecmath.cross: 2, vecmath.outer: 2}.get(fn, 1)
    if fn is vecmath.normalize:
        if "eps" in kwargs:
            args.append(kwargs["eps"])
        arity = len(args) if len(args) in (1, 2) else 1
    if len(args) != arity:
        kb.fail(f"{_name(fn)} takes {arity} argument{'s' * (arity != 1)}; got {len(args)}.",
                "Check the call's arguments.", node)
    if fn in (vecmath.dot, vecmath.cross, vecmath.outer):
        lengths = (2, 3) if fn is vecmath.cross else ()
        a, b = (_vector(kb, fn, x, node, lengths) for x in args)
        if fn is not vecmath.outer:
            _same_shape(kb, fn, a, b, node)
        dtype = _dtypes.result_type(a.dtype, b.dtype)
        kit = FrontendKit(kb, dtype)
        la, lb = _list(kb, a, kit), _list(kb, b, kit)
        if fn is vecmath.dot:
            return _scalar(vecmath.dot_(la, lb))
        if fn is vecmath.outer:
            return _pack_mat(kb, vecmath.outer_(la, lb), dtype)
        out = vecmath.cross_(la, lb)
        return _pack_vec(kb, out, dtype) if isinstance(out, list) else _scalar(out)
    if fn in (vecmath.norm, vecmath.normalize, vecmath.diag):
        v = _vector(kb, fn, args[0], node)
        if fn is vecmath.diag:
            comps = vectors.parts(kb, v)
            n = len(comps)
            zero: Any = 0.0 if v.dtype.kind == "f" else 0
            return vectors.from_rows(kb, [[comps[i] if i == j else zero for j in range(n)]
                                          for i in range(n)], v.dtype)
        kit = FrontendKit(kb, _float_dtype(v))
        if fn is vecmath.norm:
            return _scalar(vecmath.norm_(kit, _list(kb, v, kit)))
        eps = args[1] if len(args) == 2 else 0.0
        scalars.require_scalar(kb, eps, node)
        return _pack_vec(kb, vecmath.normalize_(kit, _list(kb, v, kit), kit.wrap(eps)),
                         kit.dtype)
    sizes: tuple[int, ...] = {vecmath.trace: tuple(range(1, 17)),
                              vecmath.determinant: (1, 2, 3, 4),
                              vecmath.inverse: (1, 2, 3, 4)}.get(fn, (2, 3))
    m = _square(kb, fn, args[0], node, sizes)
    if fn is vecmath.trace:
        kit = FrontendKit(kb, m.dtype)
        return _scalar(vecmath.trace_(_table(kb, m, kit)))
    kit = FrontendKit(kb, _float_dtype(m) if fn is not vecmath.determinant else m.dtype)
    table = _table(kb, m, kit)
    if fn is vecmath.determinant:
        return _scalar(vecmath.determinant_(table))
    if fn is vecmath.inverse:
        return _pack_mat(kb, vecmath.inverse_(table), kit.dtype)
    if fn is vecmath.sym_eig:
        w, q = vecmath.sym_eig_(kit, table)
        return (_pack_vec(kb, w, kit.dtype), _pack_mat(kb, q, kit.dtype))
    if fn is vecmath.polar_decompose:
        r, s = vecmath.polar_(kit, table)
        return (_pack_mat(kb, r, kit.dtype), _pack_mat(kb, s, kit.dtype))
    assert fn is vecmath.svd
    return tuple(_pack_mat(kb, x, kit.dtype) for x in vecmath.svd_(kit, table))


def type_call(kb: Builder, maker: Any, node: ast.Call) -> VectorType:
    """`qd.types.vector(n, dtype)` / `qd.types.matrix(n, m, dtype)` in a kernel: the type,
    made when the kernel compiles (its arguments must be constants)."""
    args = [kb.expr(a) for a in node.args]
    try:
        return maker(*args)  # type: ignore[no-any-return]
    except TypeError as exc:
        kb.type_fail(f"qd.types.{maker.__name__}(...) needs constants: {exc}",
                     "Use integer constants and a dtype such as qd.float32.", node)


_FUNCTIONS = frozenset(id(f) for f in vecmath.FUNCTIONS)


def is_vector_function(callee: Any) -> bool:
    return id(callee) in _FUNCTIONS and any(callee is f for f in vecmath.FUNCTIONS)


# What Taichi and Warp users write, and what to write instead.
MISSING_NAMES: dict[str, str] = {
    "Vector": "Use qd.types.vector(n, dtype) or qd.vec2 / qd.vec3 / qd.vec4 (float32) and "
              "qd.vec3d ... (float64); qd.vec3(a, b, c) builds a value.",
    "Matrix": "Use qd.types.matrix(n, m, dtype) or qd.mat2 / qd.mat3 / qd.mat4 (float32) and "
              "qd.mat3d ... (float64); qd.mat2(a, b, c, d) builds a value (row-major).",
    "vec": "Use qd.types.vector(n, dtype) or qd.vec2 / qd.vec3 / qd.vec4.",
    "mat": "Use qd.types.matrix(n, m, dtype) or qd.mat2 / qd.mat3 / qd.mat4.",
}
