"""Vector and matrix values in kernels (`qd.vec3(a, b, c)`, `m @ v`, `v.x`, `x[i]` of an
array of vectors, ...).

A vector or matrix value is a `VecVal`: an SSA Value of a `VectorType`, made by VEC_PACK from
its components and read by VEC_ELEM (`ops/vector.py`). Every operation here is written on the
components with the scalar helpers of the frontend (`scalars.binop`, ...), so promotion and
errors are those of scalars, and the result is packed again; `passes/scalarize.py` then
removes the packing, leaving scalar code. Vector locals are Vars of the vector type (split
per component by the same pass), so loops, branches and funcs need nothing of their own.
Arrays of vectors (`qd.Array[qd.vec2, 1]`) are arrays with trailing axes of the element's
shape: `x[i]` loads each component, `x[i] = v` stores each, `x[i] += v` updates each (one
atomic add per component in the parallel loop).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from .. import types as T
from .. import vector_types
from ..ir import If, Op, Stmt, Value
from ..vector_types import VectorType
from . import scalars
from .builder import Builder
from .values import PY_CONSTANTS, MemRef, PartialIndex, TVal, VecVal, describe, is_const

_SWIZZLE = "xyzw"
_ELEMENTWISE = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.TRUEDIV, Op.FLOORDIV, Op.MOD, Op.POW,
                          Op.MIN, Op.MAX})
_ARITH_HINT = ("Vectors and matrices take + - * / // % ** elementwise (with each other when "
               "their shapes match, or with scalars) and @ for products.")


# -- components and packing -----------------------------------------------------------------


def parts(kb: Builder, v: VecVal) -> list[TVal]:
    """The components of `v`, row-major."""
    vt = v.vtype
    return [TVal(kb.emit(Op.VEC_ELEM, (v.value,), (k,), vt.dtype))  # type: ignore[arg-type]
            for k in range(vt.size)]


def pack(kb: Builder, comps: Sequence[Any], shape: tuple[int, ...],
         dtype: DType | None = None) -> VecVal:
    """A vector of `shape` from scalar components (converted to `dtype`, or to the dtype
    they promote to)."""
    if dtype is None:
        dtype = common_dtype(kb, comps)
    vals = tuple(kb.cast_to(c, dtype).value for c in comps)
    vt = vector_types.of(shape, dtype)
    return VecVal(kb.emit(Op.VEC_PACK, vals, (vt,), vt))  # type: ignore[arg-type]


def common_dtype(kb: Builder, comps: Sequence[Any]) -> DType:
    """The dtype scalar components promote to (as in `a + b + ...`)."""
    def stand_in(c: Any) -> TVal:
        return c if type(c) is TVal else TVal(Value(-1, T.WEAK_DEFAULT[type(c)]), True)

    acc = stand_in(comps[0])
    for c in comps[1:]:
        dtype, weak = scalars.common(kb, acc, stand_in(c))
        acc = TVal(Value(-1, dtype), weak)
    return acc.dtype


def rows(kb: Builder, m: VecVal) -> list[list[TVal]]:
    n, k = m.vtype.shape
    flat = parts(kb, m)
    return [flat[i * k:(i + 1) * k] for i in range(n)]


def from_rows(kb: Builder, table: Sequence[Sequence[Any]], dtype: DType | None = None
              ) -> VecVal:
    return pack(kb, [c for row in table for c in row], (len(table), len(table[0])), dtype)


# -- construction ---------------------------------------------------------------------------


def construct(kb: Builder, vt: VectorType, node: ast.Call) -> VecVal:
    """`qd.vec3(a, b, c)`, `qd.vec3(s)` (every component s), `qd.vec3(v)` (a conversion),
    `qd.mat2(a, b, c, d)` (row-major), `qd.mat2((a, b), (c, d))` or `qd.mat2(row0, row1)`."""
    if node.keywords:
        kb.fail(f"{vt.name}(...) takes its components by position.",
                f"Use {vt.name}({', '.join('abcdefgh'[:min(vt.size, 8)])}).", node)
    args = [kb.expr(a) for a in node.args]
    flat: list[Any] = []
    if len(args) == 1 and type(args[0]) is VecVal:
        src = args[0]
        if src.vtype.shape != vt.shape:
            kb.type_fail(f"Cannot convert {describe(src)} to {vt.name}: the shapes "
                         f"{src.vtype.shape} and {vt.shape} differ.",
                         f"Use a {vt.name} value, or build one from components.", node)
        flat = list(parts(kb, src))
    elif len(args) == 1 and (type(args[0]) is TVal or is_const(args[0])):
        flat = [args[0]] * vt.size
    elif vt.is_matrix and len(args) == vt.shape[0] and all(
            isinstance(a, tuple) or type(a) is VecVal for a in args):
        for r, a in enumerate(args):
            row = list(a) if isinstance(a, tuple) else (
                parts(kb, a) if a.vtype.shape == (vt.shape[1],) else None)
            if row is None or len(row) != vt.shape[1]:
                kb.type_fail(f"Row {r} of {vt.name} needs {vt.shape[1]} components; got "
                             f"{describe(a)}.", f"Give {vt.shape[0]} rows of {vt.shape[1]}.",
                             node.args[r])
            flat += row
    else:
        flat = args
    if len(flat) != vt.size:
        kb.type_fail(f"{vt.name}(...) needs {vt.size} components (or one scalar for all of "
                     f"them); got {len(args)} argument{'s' * (len(args) != 1)}.",
                     f"Use {vt.name}({', '.join(['x'] * vt.size)}).", node)
    for c, a in zip(flat, _arg_nodes(node, len(flat)), strict=True):
        if type(c) is not TVal and not is_const(c):
            kb.type_fail(f"The components of {vt.name} are scalars; got {describe(c)}.",
                         "Use scalar expressions.", a)
        if type(c) is bool or (type(c) is TVal and c.dtype.kind == "b"):
            kb.type_fail(f"The components of {vt.name} are numbers; got a bool.",
                         "Use int(x) or a number.", a)
    return pack(kb, flat, vt.shape, vt.dtype)


def _arg_nodes(node: ast.Call, n: int) -> list[ast.AST]:
    return list(node.args) if len(node.args) == n else [node] * n


def implicit(kb: Builder, value: Any, vt: VectorType, what: str) -> VecVal:
    """`value` as a `vt` for an assignment (locals, func parameters and results): the same
    shape, each component converted as a scalar local would be."""
    if type(value) is not VecVal:
        kb.type_fail(f"{what} holds {vt.name} values; got {describe(value)}.",
                     f"Use a {vt.name} value, e.g. {vt.name}(...).")
    if value.vtype == vt:
        return value
    if value.vtype.shape != vt.shape:
        kb.type_fail(f"{what} holds {vt.name} values; got {describe(value)} (shape "
                     f"{value.vtype.shape}, not {vt.shape}).", "Use a new name for the value.")
    comps = [kb.implicit(c, vt.dtype, "safe", what) for c in parts(kb, value)]
    return pack(kb, comps, vt.shape, vt.dtype)


# -- attributes and components --------------------------------------------------------------


def attribute(kb: Builder, v: VecVal, name: str, node: ast.AST) -> Any:
    vt = v.vtype
    if name == "dtype":
        return vt.dtype
    if name == "shape":
        return vt.shape
    if name == "T" and vt.is_matrix:
        return transpose(kb, v)
    if len(name) == 1 and name in _SWIZZLE and not vt.is_matrix:
        k = _SWIZZLE.index(name)
        if k < vt.shape[0]:
            return parts(kb, v)[k]
    if not vt.is_matrix and len(name) > 1 and set(name) <= set(_SWIZZLE[:vt.shape[0]]):
        comps = parts(kb, v)
        return pack(kb, [comps[_SWIZZLE.index(c)] for c in name], (len(name),), vt.dtype)
    names = "m.T, m[i, j], m[i]" if vt.is_matrix else f"{', '.join(_SWIZZLE[:vt.shape[0]])}"
    kb.fail(f"{describe(v)} has no attribute '{name}'.",
            f"Use {names}, .shape or .dtype, or the qd.math functions.", node)


def _const_index(kb: Builder, x: Any, extent: int, v: VecVal, node: ast.AST) -> int:
    if type(x) is not int:
        what = "a value computed when the kernel runs" if type(x) is TVal else describe(x)
        kb.fail(f"Components of {describe(v)} are indexed with integer constants; got {what}.",
                "Use a constant, or a qd.static(range(n)) loop whose variable is one.", node)
    if not 0 <= x < extent:
        kb.fail(f"Index {x} is out of range for {describe(v)} (extent {extent}).",
                f"Use an index in [0, {extent}).", node)
    return x


def flat_index(kb: Builder, v: VecVal, index: Any, node: ast.AST) -> int | tuple[int, ...]:
    """The flat component of `v[index]`, or for `m[i]` the flat components of row i."""
    vt = v.vtype
    idx = index if isinstance(index, tuple) else (index,)
    if len(idx) > len(vt.shape):
        kb.fail(f"{describe(v)} has {len(vt.shape)} ax{'is' if len(vt.shape) == 1 else 'es'} "
                f"but is indexed with {len(idx)} indices.",
                "Use v[k] for vectors and m[i, j] for matrices.", node)
    ks = [_const_index(kb, x, vt.shape[a], v, node) for a, x in enumerate(idx)]
    if len(ks) == 2:
        return ks[0] * vt.shape[1] + ks[1]
    if vt.is_matrix:
        return tuple(ks[0] * vt.shape[1] + j for j in range(vt.shape[1]))
    return ks[0]


def subscript(kb: Builder, v: VecVal, index: Any, node: ast.AST) -> Any:
    k = flat_index(kb, v, index, node)
    comps = parts(kb, v)
    if isinstance(k, tuple):
        return pack(kb, [comps[j] for j in k], (len(k),), v.dtype)
    return comps[k]


def with_component(kb: Builder, v: VecVal, index: Any, value: Any, node: ast.AST) -> VecVal:
    """`v` with component `v[index]` (or row `m[i]`) replaced by `value`."""
    k = flat_index(kb, v, index, node)
    comps: list[Any] = list(parts(kb, v))
    what = f"A component of {describe(v)}"
    if isinstance(k, tuple):
        row = implicit(kb, value, vector_types.of((len(k),), v.dtype), f"Row of {describe(v)}")
        for j, c in zip(k, parts(kb, row), strict=True):
            comps[j] = c
    else:
        comps[k] = kb.implicit(value, v.dtype, "same_kind", what)
    return pack(kb, comps, v.vtype.shape, v.dtype)


# -- arithmetic -----------------------------------------------------------------------------


def binop(kb: Builder, op: Op, a: Any, b: Any, node: ast.AST | None) -> VecVal:
    """`a op b` elementwise; one side may be a scalar."""
    spelled = scalars.SPELLING.get(op, op.name)
    for x in (a, b):
        if type(x) is not VecVal and type(x) is not TVal and type(x) not in PY_CONSTANTS:
            kb.type_fail(f"The operator {spelled} takes vectors, matrices and scalars; got "
                         f"{describe(x)}.", _ARITH_HINT, node)
    if op not in _ELEMENTWISE:
        kb.type_fail(f"The operator {spelled} is not defined on vectors and matrices "
                     f"({describe(a)}, {describe(b)}).",
                     "Compare or combine the components, e.g. v.x < w.x.", node)
    if type(a) is VecVal and type(b) is VecVal and a.vtype.shape != b.vtype.shape:
        kb.type_fail(f"The shapes of {describe(a)} {a.vtype.shape} and {describe(b)} "
                     f"{b.vtype.shape} do not match for {spelled}.",
                     "Use operands of the same shape, or a scalar on one side.", node)
    shape = (a if type(a) is VecVal else b).vtype.shape
    n = (a if type(a) is VecVal else b).vtype.size
    ca = parts(kb, a) if type(a) is VecVal else [a] * n
    cb = parts(kb, b) if type(b) is VecVal else [b] * n
    out = [scalars.binop(kb, op, x, y, node) for x, y in zip(ca, cb, strict=True)]
    return pack(kb, out, shape)


def unary(kb: Builder, node: ast.UnaryOp, v: VecVal) -> VecVal:
    if isinstance(node.op, ast.UAdd):
        return v
    if isinstance(node.op, ast.USub):
        comps = [TVal(kb.emit(Op.NEG, (c.value,), (), c.dtype))  # type: ignore[arg-type]
                 for c in parts(kb, v)]
        return pack(kb, comps, v.vtype.shape, v.dtype)
    kb.type_fail(f"The operator {type(node.op).__name__} is not defined on {describe(v)}.",
                 "Use unary - or +, or work on the components.", node)


def componentwise(kb: Builder, fn: Any, vals: Sequence[Any], node: ast.AST) -> VecVal:
    """`fn` of the components of vectors of one shape (scalars are broadcast): `abs(v)`,
    `qd.math.sqrt(v)`, `min(v, w)`, `qd.math.atan2(v, 1.0)`, ..."""
    vecs = [v for v in vals if type(v) is VecVal]
    shape = vecs[0].vtype.shape
    for v in vecs[1:]:
        if v.vtype.shape != shape:
            kb.type_fail(f"The shapes of {describe(vecs[0])} {shape} and {describe(v)} "
                         f"{v.vtype.shape} do not match.", "Use vectors of the same shape.",
                         node)
    n = vecs[0].vtype.size
    cols = [parts(kb, v) if type(v) is VecVal else [v] * n for v in vals]
    out = [fn(*(col[k] for col in cols)) for k in range(n)]
    return pack(kb, out, shape)


def ifexp(kb: Builder, cond: TVal, then: tuple[list[Stmt], Any], orelse: tuple[list[Stmt], Any],
          node: ast.IfExp) -> VecVal:
    """`a if cond else b` of vectors or matrices of one shape (only the taken side runs)."""
    (then_stmts, a), (else_stmts, b) = then, orelse
    if type(a) is not VecVal or type(b) is not VecVal or a.vtype.shape != b.vtype.shape:
        kb.type_fail(f"Both sides of `a if c else b` must be vectors or matrices of one shape; "
                     f"got {describe(a)} and {describe(b)}.", "Use values of the same shape.",
                     node)
    vt = vector_types.of(a.vtype.shape, T.promote(a.dtype, b.dtype))
    var = kb.new_var("ifexp", vt)  # type: ignore[arg-type]
    with kb.reopen(then_stmts):
        kb.emit(Op.STORE_VAR, (implicit(kb, a, vt, "A side of `a if c else b`").value,), (var,))
    with kb.reopen(else_stmts):
        kb.emit(Op.STORE_VAR, (implicit(kb, b, vt, "A side of `a if c else b`").value,), (var,))
    kb.emit_stmt(If(cond.value, kb.block(then_stmts), kb.block(else_stmts), kb.loc()))
    out = kb.load_var(var)
    assert type(out) is VecVal
    return out


def transpose(kb: Builder, m: VecVal) -> VecVal:
    r = rows(kb, m)
    n, k = m.vtype.shape
    return from_rows(kb, [[r[i][j] for i in range(n)] for j in range(k)], m.dtype)


def _sum_products(kb: Builder, xs: Sequence[Any], ys: Sequence[Any], node: ast.AST | None
                  ) -> Any:
    acc = scalars.binop(kb, Op.MUL, xs[0], ys[0], node)
    for x, y in zip(xs[1:], ys[1:], strict=True):
        acc = scalars.binop(kb, Op.ADD, acc, scalars.binop(kb, Op.MUL, x, y, node), node)
    return acc


def matmul(kb: Builder, a: Any, b: Any, node: ast.AST) -> Any:
    """`a @ b`: matrix-matrix, matrix-vector, vector-matrix (a row vector) and vector-vector
    (the dot product), as NumPy's matmul."""
    if type(a) is not VecVal or type(b) is not VecVal:
        bad = a if type(a) is not VecVal else b
        kb.fail(f"The @ operator takes vectors and matrices in kernels; got {describe(bad)}.",
                "Use * for scalars; build vectors and matrices with qd.vec3(...), qd.mat3(...) "
                "(see docs/vectors.md).", node)
    sa, sb = a.vtype.shape, b.vtype.shape
    inner_a, inner_b = sa[-1], sb[0]
    if inner_a != inner_b:
        kb.type_fail(f"The shapes of {describe(a)} {sa} and {describe(b)} {sb} do not match "
                     f"for @ ({inner_a} columns against {inner_b} rows).",
                     "Use operands whose inner dimensions agree (m.T @ v transposes).", node)
    ra = rows(kb, a) if a.vtype.is_matrix else [parts(kb, a)]
    if b.vtype.is_matrix:
        rb = rows(kb, b)
        cols = [[rb[i][j] for i in range(sb[0])] for j in range(sb[1])]
    else:
        cols = [parts(kb, b)]
    table = [[_sum_products(kb, r, c, node) for c in cols] for r in ra]
    if a.vtype.is_matrix and b.vtype.is_matrix:
        return from_rows(kb, table)
    flat = [x for row in table for x in row]
    if len(flat) == 1 and not a.vtype.is_matrix and not b.vtype.is_matrix:
        return flat[0]
    return pack(kb, flat, (len(flat),))


def select(kb: Builder, cond: Any, a: Any, b: Any, node: ast.AST) -> VecVal:
    """`qd.select(cond, a, b)` of vectors (a scalar condition): componentwise."""
    if type(a) is not VecVal or type(b) is not VecVal or a.vtype.shape != b.vtype.shape:
        kb.type_fail(f"qd.select of {describe(a)} and {describe(b)} needs two vectors or "
                     "matrices of one shape.", "Use operands of the same shape.", node)
    if is_const(cond):
        return a if cond else b
    out = []
    dtype = T.promote(a.dtype, b.dtype)
    for x, y in zip(parts(kb, a), parts(kb, b), strict=True):
        vx, vy = kb.cast_to(x, dtype), kb.cast_to(y, dtype)
        out.append(TVal(kb.emit(Op.SELECT, (cond.value, vx.value, vy.value), (),  # type: ignore
                                dtype)))
    return pack(kb, out, a.vtype.shape, dtype)


# -- arrays of vectors ----------------------------------------------------------------------


def element_indices(kb: Builder, ref: MemRef, indices: tuple[TVal, ...]
                    ) -> list[tuple[TVal, ...]]:
    """The full index of each component of the element `ref[indices]`, row-major."""
    out: list[tuple[TVal, ...]] = [indices]
    for extent in ref.elem:
        out = [idx + (kb.const(k, _dtypes.int64),) for idx in out for k in range(extent)]
    return out


def is_element(ref: Any, indices: tuple[TVal, ...]) -> bool:
    """Whether `ref[indices]` is a whole element of an array of vectors or matrices."""
    return type(ref) is MemRef and bool(ref.elem) and len(indices) == ref.ndim - len(ref.elem)


def load(kb: Builder, ref: MemRef, indices: tuple[TVal, ...]) -> VecVal:
    comps = [scalars.load(kb, ref, idx) for idx in element_indices(kb, ref, indices)]
    return pack(kb, comps, ref.elem, ref.dtype)


def _element_value(kb: Builder, ref: MemRef, value: Any, node: ast.AST) -> list[Any]:
    if type(value) is VecVal:
        if value.vtype.shape != ref.elem:
            kb.type_fail(f"An element of {describe(ref)} is a {ref.elem_name}; got "
                         f"{describe(value)}.", f"Use a {ref.elem_name} value.", node)
        return list(parts(kb, value))
    if type(value) is TVal or is_const(value):
        return [value] * math.prod(ref.elem)
    kb.type_fail(f"An element of {describe(ref)} is a {ref.elem_name}; got {describe(value)}.",
                 f"Use a {ref.elem_name} value.", node)


def store(kb: Builder, ref: MemRef, indices: tuple[TVal, ...], value: Any, node: ast.AST
          ) -> None:
    comps = _element_value(kb, ref, value, node)
    for idx, c in zip(element_indices(kb, ref, indices), comps, strict=True):
        scalars.store(kb, ref, idx, c, node)


def update(kb: Builder, ref: MemRef, indices: tuple[TVal, ...], op: Op, value: Any,
           node: ast.AST) -> None:
    """`x[i] op= v` of an array of vectors: per component, atomic for += / -= in the
    parallel loop (as for scalars)."""
    comps = _element_value(kb, ref, value, node)
    for idx, c in zip(element_indices(kb, ref, indices), comps, strict=True):
        if op in (Op.ADD, Op.SUB) and kb.in_parallel:
            scalars.atomic_update(kb, ref, idx, op, c, node)
        else:
            old = scalars.load(kb, ref, idx)
            scalars.store(kb, ref, idx, scalars.binop(kb, op, old, c, node), node)


def atomic(kb: Builder, op: Op, ref: MemRef, indices: tuple[TVal, ...], value: Any,
           node: ast.AST) -> VecVal:
    """`qd.atomic_add(x[i], v)` (min, max) of an array of vectors: one atomic per component;
    the old element as a vector."""
    name = op.name.lower()
    old = []
    for idx, c in zip(element_indices(kb, ref, indices), _element_value(kb, ref, value, node),
                      strict=True):
        v = kb.implicit(c, ref.dtype, "same_kind", f"The value of qd.{name}")
        kb.node = node
        args = (ref.value,) + tuple(i.value for i in idx) + (v.value,)
        old.append(TVal(kb.emit(op, args, (), ref.dtype)))  # type: ignore[arg-type]
    kb.note_write(ref)
    return pack(kb, old, ref.elem, ref.dtype)


def memory_target(kb: Builder, base: Any, index: Any, node: ast.AST
                  ) -> tuple[MemRef, tuple[TVal, ...]] | None:
    """(array, index) when `base[index]` is a whole element of an array of vectors."""
    if type(base) not in (MemRef, PartialIndex):
        return None
    ref = base if type(base) is MemRef else base.ref
    if not ref.elem:
        return None
    ref, indices = kb.subscript_memory(base, index, node)
    return (ref, indices) if is_element(ref, indices) else None
