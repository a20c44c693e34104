"""Expressions: constants, names, attributes, subscripts, operators, comparisons, ternaries."""

from __future__ import annotations

import ast
import builtins
import operator
from typing import Any, NoReturn

from ... import _dtypes
from ..ir import If, Instr, Op, Stmt
from ..ops import OPS
from . import scalars, vector_calls, vectors, views
from .builder import Builder, Visit
from .scalars import BINOPS, COMPARES, common, load, require_scalar, shape
from .values import (
    PY_CONSTANTS,
    MemRef,
    PartialIndex,
    SliceVal,
    StructVal,
    TVal,
    VecVal,
    describe,
    is_const,
)


def visit_Constant(kb: Builder, node: ast.Constant) -> Any:
    if isinstance(node.value, complex):
        kb.type_fail("Complex numbers are not supported in kernels.", "Use two real values.")
    return node.value


def visit_Name(kb: Builder, node: ast.Name) -> Any:
    return kb.lookup(node.id, node)


def visit_Tuple(kb: Builder, node: ast.Tuple) -> Any:
    return tuple(kb.expr(e) for e in node.elts)


def visit_Attribute(kb: Builder, node: ast.Attribute) -> Any:
    base = kb.expr(node.value)
    name = node.attr
    if type(base) is MemRef:
        return memory_attribute(kb, base, name, node)
    if type(base) is StructVal:
        return kb.struct_field(base, name, node)
    if type(base) is VecVal:
        return vectors.attribute(kb, base, name, node)
    if type(base) is TVal:
        if name == "dtype":
            return base.dtype
        kb.fail(
            f"Scalar values have no attribute '{name}' in kernels.",
            "Use qd.math functions and operators on scalars.",
            node,
        )
    if type(base) in PY_CONSTANTS or type(base) is PartialIndex:
        kb.fail(
            f"{describe(base)} has no attribute '{name}' in kernels.",
            "Use qd.math functions and operators on scalars.",
            node,
        )
    try:
        value = getattr(base, name)
    except AttributeError:
        hint = vector_calls.MISSING_NAMES.get(name, "Check the spelling.")
        kb.fail(f"{describe(base)} has no attribute '{name}'.", hint, node)
    if kb.recorder is not None:
        value = kb.recorder.attribute(base, name, value)
    return kb.python_value(value, f"'{ast.unparse(node)}'", node)


def memory_attribute(kb: Builder, ref: MemRef, name: str, node: ast.AST) -> Any:
    if name == "shape":
        return tuple(shape(kb, ref, k) for k in range(ref.ndim))
    if name == "ndim":
        return ref.ndim
    if name == "dtype":
        return ref.dtype
    if name == "size":
        sizes = [shape(kb, ref, k) for k in range(ref.ndim)]
        if not sizes:
            return 1
        total = sizes[0]
        for s in sizes[1:]:
            total = binop(kb, Op.MUL, total, s)
        return total
    if name in views.VIEW_METHODS:
        return views.view_method(kb, ref, name, node)
    methods = ", v.subview(offset, size) or v[a:b]" if ref.is_view else ""
    kb.fail(
        f"{describe(ref)} has no attribute '{name}' in kernels.",
        f"Use x.shape[k], x.size, x.ndim or x.dtype{methods}.",
        node,
    )


def visit_Slice(kb: Builder, node: ast.Slice) -> SliceVal:
    def bound(n: ast.expr | None) -> Any:
        return None if n is None else kb.expr(n)

    return SliceVal(bound(node.lower), bound(node.upper), bound(node.step))


def visit_Subscript(kb: Builder, node: ast.Subscript) -> Any:
    base = kb.expr(node.value)
    index = kb.expr(node.slice)
    if type(index) is SliceVal or (
        isinstance(index, tuple) and any(type(p) is SliceVal for p in index)
    ):
        return views.slice_view(kb, base, index, node)
    if type(base) is VecVal:
        return vectors.subscript(kb, base, index, node.slice)
    if type(base) in (MemRef, PartialIndex):
        ref, indices = kb.subscript_memory(base, index, node.slice)
        if vectors.is_element(ref, indices):
            return vectors.load(kb, ref, indices)
        if len(indices) < ref.ndim:
            return PartialIndex(ref, indices)
        return load(kb, ref, indices)
    if isinstance(base, tuple):
        if type(index) is not int:
            kb.fail(
                f"Tuples are indexed with integer constants; got {describe(index)}.",
                "Use qd.static(...) or a constant index (a qd.static loop variable, for k in "
                "qd.static(range(n))), or pass the values as an array argument.",
                node.slice,
            )
        try:
            return base[index]
        except IndexError:
            kb.fail(
                f"Index {index} is out of range for a tuple of {len(base)}.",
                f"Use an index in [0, {len(base)}).",
                node.slice,
            )
    if isinstance(base, list):
        list_index(kb, base, index, node)
    kb.fail(
        f"{describe(base)} cannot be indexed in kernels.",
        "Index array arguments, e.g. x[i, j].",
        node,
    )


def list_index(kb: Builder, base: list[Any], index: Any, node: ast.Subscript) -> NoReturn:
    """A Python list read by a kernel (a module-level `COEFFS = [...]`): kernels index tuples
    of constants (with constants or qd.static loop variables) and arrays, never lists."""
    name = ast.unparse(node.value)
    shown = ", ".join(repr(v) for v in base[:4]) + (", ..." if len(base) > 4 else "")
    as_tuple = f"{name} = ({shown})"
    if is_const(index):
        kb.fail(f"'{name}' is a Python list; kernels do not index lists.",
                f"Use a tuple ({as_tuple}): a tuple of constants is indexed with constant "
                f"indices and qd.static loop variables (for k in qd.static(range({len(base)}))).",
                node)
    kb.fail(f"'{name}' is a Python list, indexed with a value computed when the kernel runs; "
            "kernels do not index lists.",
            f"Use an array argument (pass qd.asarray({name}) and index it), or a tuple "
            f"({as_tuple}) indexed with a qd.static loop variable "
            f"(for k in qd.static(range({len(base)}))).", node)


def visit_BinOp(kb: Builder, node: ast.BinOp) -> Any:
    # A long sum such as `a + b + c + ...` nests to the left: its chain is walked in a loop,
    # not by recursion, so a 900-term expression builds like a short one.
    chain = [node]
    while type(chain[-1].left) is ast.BinOp:
        chain.append(chain[-1].left)
    acc = kb.expr(chain[-1].left)
    for n in reversed(chain):
        op = BINOPS.get(type(n.op))
        saved = kb.node
        kb.node = n
        try:
            if op is None:  # @
                acc = vectors.matmul(kb, acc, kb.expr(n.right), n)
                continue
            acc = binop(kb, op, acc, kb.expr(n.right), n)
        finally:
            kb.node = saved
    return acc


def binop(kb: Builder, op: Op, a: Any, b: Any, node: ast.AST | None = None) -> Any:
    """`a op b`: elementwise for vectors and matrices (`vectors.binop`), else the scalar
    operation (`scalars.binop`: NumPy 2 promotion, weak literals)."""
    if type(a) is VecVal or type(b) is VecVal:
        return vectors.binop(kb, op, a, b, node)
    return scalars.binop(kb, op, a, b, node)


def visit_UnaryOp(kb: Builder, node: ast.UnaryOp) -> Any:
    x = kb.expr(node.operand)
    if isinstance(node.op, ast.Not):
        c = kb.to_bool(x, node.operand)
        if is_const(c):
            return not c
        return TVal(kb.emit(Op.NOT, (c.value,), (), _dtypes.bool), c.weak)  # type: ignore
    if type(x) is VecVal:
        return vectors.unary(kb, node, x)
    require_scalar(kb, x, node)
    if is_const(x):
        fold: Any = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[
            type(node.op)
        ]
        return fold(x)
    if isinstance(node.op, ast.UAdd):
        return x
    if isinstance(node.op, ast.USub):
        if x.dtype.kind == "b":
            kb.type_fail("Negation of a bool is not supported.", "Use `not x`, or -int(x).", node)
        return TVal(kb.emit(Op.NEG, (x.value,), (), x.dtype), x.weak)  # type: ignore
    if x.dtype.kind == "f":
        kb.type_fail(
            f"The operator ~ needs integers or bools; got {x.dtype.name}.",
            "Use int(...) to convert first.",
            node,
        )
    op = Op.NOT if x.dtype.kind == "b" else Op.BIT_NOT
    return TVal(kb.emit(op, (x.value,), (), x.dtype), x.weak)  # type: ignore


def visit_Compare(kb: Builder, node: ast.Compare) -> Any:
    left = kb.expr(node.left)
    result: Any = True
    for cmp, comparator in zip(node.ops, node.comparators, strict=True):
        op = COMPARES.get(type(cmp))
        if op is None:
            kb.fail(
                f"The comparison '{type(cmp).__name__}' is not supported in kernels.",
                "Use ==, !=, <, <=, > or >= on scalars.",
                node,
            )
        right = kb.expr(comparator)
        part = binop(kb, op, left, right, node)
        result = part if result is True else logical_and(kb, result, part)
        left = right
    return result


def logical_and(kb: Builder, a: Any, b: Any) -> Any:
    if is_const(a):
        return b if a else False
    if is_const(b):
        return a if b else False
    return TVal(kb.emit(Op.BIT_AND, (a.value, b.value), (), _dtypes.bool))  # type: ignore


def bool_operand(kb: Builder, node: ast.AST) -> Any:
    x = kb.expr(node)
    if type(x) is builtins.bool or (type(x) is TVal and x.dtype.kind == "b"):
        return x
    kb.type_fail(
        f"`and` / `or` take bool operands in kernels; got {describe(x)}.",
        "Use a comparison such as (x != 0).",
        node,
    )


def all_pure(stmts: list[Stmt]) -> bool:
    return all(type(s) is Instr and OPS[s.op].pure for s in stmts)


def visit_BoolOp(kb: Builder, node: ast.BoolOp) -> Any:
    is_and = isinstance(node.op, ast.And)
    left = bool_operand(kb, node.values[0])
    for value_node in node.values[1:]:
        if is_const(left):
            if left is not is_and:
                return left
            left = bool_operand(kb, value_node)
            continue
        with kb.region() as stmts:
            right = bool_operand(kb, value_node)
        if is_const(right) and not stmts:
            left = left if right is is_and else right
            continue
        if is_const(right):
            with kb.reopen(stmts):
                right = kb.const(right, _dtypes.bool)
        if all_pure(stmts):
            kb.splice(stmts)
            op = Op.BIT_AND if is_and else Op.BIT_OR
            left = TVal(kb.emit(op, (left.value, right.value), (), _dtypes.bool))  # type: ignore
            continue
        left = conditional_value(kb, left, stmts, right, is_and)
    return left


def conditional_value(
    kb: Builder, left: TVal, stmts: list[Stmt], right: TVal, is_and: bool
) -> TVal:
    """`left and right` / `left or right` evaluating right's statements only if needed."""
    var = kb.new_var("and" if is_and else "or", _dtypes.bool)
    kb.emit(Op.STORE_VAR, (left.value,), (var,))
    cond = left
    if not is_and:
        cond = TVal(kb.emit(Op.NOT, (left.value,), (), _dtypes.bool))  # type: ignore
    with kb.reopen(stmts):
        kb.emit(Op.STORE_VAR, (right.value,), (var,))
    kb.emit_stmt(If(cond.value, kb.block(stmts), kb.block([]), kb.loc()))
    return TVal(kb.emit(Op.LOAD_VAR, (), (var,), _dtypes.bool))  # type: ignore


def visit_IfExp(kb: Builder, node: ast.IfExp) -> Any:
    cond = kb.to_bool(kb.expr(node.test), node.test)
    if is_const(cond):
        return kb.expr(node.body if cond else node.orelse)
    with kb.region() as then_stmts:
        a = kb.expr(node.body)
    with kb.region() as else_stmts:
        b = kb.expr(node.orelse)
    if type(a) is VecVal or type(b) is VecVal:
        return vectors.ifexp(kb, cond, (then_stmts, a), (else_stmts, b), node)
    require_scalar(kb, a, node.body)
    require_scalar(kb, b, node.orelse)
    dtype, weak = common(kb, a, b)
    with kb.reopen(then_stmts):
        va = kb.cast_to(a, dtype)
    with kb.reopen(else_stmts):
        vb = kb.cast_to(b, dtype)
    if all_pure(then_stmts) and all_pure(else_stmts):
        kb.splice(then_stmts)
        kb.splice(else_stmts)
        v = kb.emit(Op.SELECT, (cond.value, va.value, vb.value), (), dtype)
        return TVal(v, weak)  # type: ignore[arg-type]
    var = kb.new_var("ifexp", dtype)
    with kb.reopen(then_stmts):
        kb.emit(Op.STORE_VAR, (va.value,), (var,))
    with kb.reopen(else_stmts):
        kb.emit(Op.STORE_VAR, (vb.value,), (var,))
    kb.emit_stmt(If(cond.value, kb.block(then_stmts), kb.block(else_stmts), kb.loc()))
    return TVal(kb.emit(Op.LOAD_VAR, (), (var,), dtype), weak)  # type: ignore[arg-type]


# The helper of each construct this module builds (Builder.visitors).
VISITORS: dict[type, Visit] = {
    ast.Constant: visit_Constant,
    ast.Name: visit_Name,
    ast.Tuple: visit_Tuple,
    ast.Attribute: visit_Attribute,
    ast.Slice: visit_Slice,
    ast.Subscript: visit_Subscript,
    ast.BinOp: visit_BinOp,
    ast.UnaryOp: visit_UnaryOp,
    ast.Compare: visit_Compare,
    ast.BoolOp: visit_BoolOp,
    ast.IfExp: visit_IfExp,
}
