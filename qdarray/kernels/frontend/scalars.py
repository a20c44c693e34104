"""The scalar half of the kernel frontend: operator tables, NumPy 2 promotion with weak
literals (`common`), constant folding, the scalar binary operators (`binop`), loads, stores and
atomic updates of one element, and the scalar-only check. The expression and statement
visitors (exprs.py, stmts.py) and the vector and matrix forms (vectors.py, vector_calls.py)
build on these; this module imports none of them."""

from __future__ import annotations

import ast
import operator
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from .. import types as T
from ..ir import Op, Value
from .builder import Builder
from .values import PY_CONSTANTS, MemRef, PartialIndex, TVal, VecVal, describe, is_const

BINOPS: dict[type, Op] = {
    ast.Add: Op.ADD,
    ast.Sub: Op.SUB,
    ast.Mult: Op.MUL,
    ast.Div: Op.TRUEDIV,
    ast.FloorDiv: Op.FLOORDIV,
    ast.Mod: Op.MOD,
    ast.Pow: Op.POW,
    ast.BitAnd: Op.BIT_AND,
    ast.BitOr: Op.BIT_OR,
    ast.BitXor: Op.BIT_XOR,
    ast.LShift: Op.SHL,
    ast.RShift: Op.SHR,
}
COMPARES: dict[type, Op] = {
    ast.Eq: Op.EQ,
    ast.NotEq: Op.NE,
    ast.Lt: Op.LT,
    ast.LtE: Op.LE,
    ast.Gt: Op.GT,
    ast.GtE: Op.GE,
}
SPELLING: dict[Op, str] = {
    Op.ADD: "+",
    Op.SUB: "-",
    Op.MUL: "*",
    Op.TRUEDIV: "/",
    Op.FLOORDIV: "//",
    Op.MOD: "%",
    Op.POW: "**",
    Op.BIT_AND: "&",
    Op.BIT_OR: "|",
    Op.BIT_XOR: "^",
    Op.SHL: "<<",
    Op.SHR: ">>",
    Op.EQ: "==",
    Op.NE: "!=",
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
    Op.MIN: "min",
    Op.MAX: "max",
}
_PY_FOLD: dict[Op, Any] = {
    Op.ADD: operator.add,
    Op.SUB: operator.sub,
    Op.MUL: operator.mul,
    Op.TRUEDIV: operator.truediv,
    Op.FLOORDIV: operator.floordiv,
    Op.MOD: operator.mod,
    Op.POW: operator.pow,
    Op.BIT_AND: operator.and_,
    Op.BIT_OR: operator.or_,
    Op.BIT_XOR: operator.xor,
    Op.SHL: operator.lshift,
    Op.SHR: operator.rshift,
    Op.EQ: operator.eq,
    Op.NE: operator.ne,
    Op.LT: operator.lt,
    Op.LE: operator.le,
    Op.GT: operator.gt,
    Op.GE: operator.ge,
    Op.MIN: min,
    Op.MAX: max,
}
ARITHMETIC = frozenset(
    {Op.ADD, Op.SUB, Op.MUL, Op.TRUEDIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.MIN, Op.MAX}
)
BITWISE = frozenset({Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR})
SHIFTS = frozenset({Op.SHL, Op.SHR})
COMPARISONS = frozenset(COMPARES.values())


def shape(kb: Builder, ref: MemRef, axis: int) -> TVal:
    v = kb.emit(Op.SHAPE, (ref.value,), (axis,), _dtypes.int64)
    return TVal(v, weak=True)  # type: ignore[arg-type]


def load(kb: Builder, ref: MemRef, indices: tuple[TVal, ...]) -> TVal:
    args = (ref.value,) + tuple(i.value for i in indices)
    return TVal(kb.emit(Op.LOAD, args, (), ref.dtype))  # type: ignore[arg-type]


def require_scalar(kb: Builder, x: Any, node: ast.AST | None) -> None:
    if type(x) is not TVal and type(x) not in PY_CONSTANTS:
        hint = "Use a scalar value."
        if type(x) is VecVal:
            hint = ("Vectors and matrices take + - * / elementwise, @, and the qd.math vector "
                    "functions; index them (v[k], v.x, m[i, j]) for a scalar.")
        if type(x) in (MemRef, PartialIndex):
            hint = (
                "Index the array to get a scalar, e.g. x[i]; whole-array operations "
                "belong outside kernels."
            )
        kb.type_fail(f"Operators in kernels take scalars; got {describe(x)}.", hint, node)


def common(kb: Builder, a: Any, b: Any) -> tuple[DType, bool]:
    """The dtype two operands promote to, and whether the result stays weak."""
    sa = type(a) is TVal and not a.weak
    sb = type(b) is TVal and not b.weak
    if sa and sb:
        return T.promote(a.dtype, b.dtype), False
    if sa or sb:
        strong, other = (a, b) if sa else (b, a)
        kind = type(other) if is_const(other) else T.weak_kind(other.dtype)
        return kb.promote_weak(strong.dtype, kind), False
    kind_a = type(a) if is_const(a) else T.weak_kind(a.dtype)
    kind_b = type(b) if is_const(b) else T.weak_kind(b.dtype)
    return kb.weak_default(T.promote_weak_pair(kind_a, kind_b)), True


def fold(kb: Builder, op: Op, a: Any, b: Any, node: ast.AST | None) -> Any:
    try:
        result = _PY_FOLD[op](a, b)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        kb.fail(
            f"The constant expression {a!r} {SPELLING[op]} {b!r} fails: {exc}.",
            "Fix the constants.",
            node,
        )
    if type(result) not in PY_CONSTANTS:
        kb.type_fail(
            f"{a!r} {SPELLING[op]} {b!r} is not a real number.", "Use real operands.", node
        )
    return result


def binop(kb: Builder, op: Op, a: Any, b: Any, node: ast.AST | None = None) -> Any:
    """`a op b` for scalars, with NumPy 2 promotion and weak literals."""
    require_scalar(kb, a, node)
    require_scalar(kb, b, node)
    if is_const(a) and is_const(b):
        return fold(kb, op, a, b, node)
    dtype, weak = common(kb, a, b)
    if op in ARITHMETIC and dtype.kind == "b":
        kb.type_fail(
            f"Arithmetic ({SPELLING[op]}) on two bool values is not supported.",
            "Use int(x) to count with bools.",
            node,
        )
    if op in (BITWISE | SHIFTS) and dtype.kind == "f":
        kb.type_fail(
            f"The operator {SPELLING[op]} needs integers or bools; got {dtype.name}.",
            "Use int(...) to convert first.",
            node,
        )
    if op in SHIFTS and dtype.kind == "b":
        kb.type_fail(
            f"The operator {SPELLING[op]} needs integers; got bool.",
            "Use int(...) to convert first.",
            node,
        )
    if op is Op.TRUEDIV and dtype.kind != "f":
        dtype = kb.ctx.default_float
    va = kb.cast_to(a, dtype)
    vb = kb.cast_to(b, dtype)
    rtype = _dtypes.bool if op in COMPARISONS else dtype
    return TVal(kb.emit(op, (va.value, vb.value), (), rtype), weak)  # type: ignore


def store(kb: Builder, ref: Any, indices: tuple[TVal, ...], value: Any, node: ast.AST) -> None:
    what = f"An element of {describe(ref)}"
    v = kb.implicit(value, ref.dtype, "same_kind", what)
    kb.emit(Op.STORE, (ref.value,) + tuple(i.value for i in indices) + (v.value,))
    kb.note_write(ref)


def atomic_update(
    kb: Builder, ref: MemRef, indices: tuple[TVal, ...], op: Op, value: Any, node: ast.AST
) -> None:
    """`x[i] += v` / `x[i] -= v` in the parallel loop: one ATOMIC_ADD."""
    require_scalar(kb, value, node)
    dtype = ref.dtype
    if dtype.kind == "b":
        kb.type_fail(
            f"+= and -= on bool array '{ref.name}' are not supported.",
            "Use an integer array.",
            node,
        )
    result, _ = common(kb, TVal(Value(-1, dtype)), value)  # a typed stand-in for x[i]
    if not T.can_cast(result, dtype, "same_kind"):
        kb.type_fail(
            f"An element of {describe(ref)} has type {dtype.name}, but adding "
            f"{describe(value)} gives {result.name}.",
            f"Use qd.{dtype.name}(...) or int(...) to convert the value explicitly.",
            node,
        )
    v = kb.cast_to(value, dtype)
    if op is Op.SUB:
        v = TVal(kb.emit(Op.NEG, (v.value,), (), dtype))  # type: ignore[arg-type]
    kb.emit(Op.ATOMIC_ADD, (ref.value,) + tuple(i.value for i in indices) + (v.value,), (), dtype)
    kb.note_write(ref)
