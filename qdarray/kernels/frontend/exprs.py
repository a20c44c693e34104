"""Expressions: constants, names, attributes, subscripts, operators, comparisons, ternaries."""

from __future__ import annotations

import ast
import builtins
import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from .. import types as T
from ..ir import If, Instr, Op, Stmt
from ..ops import OPS
from .values import (
    PY_CONSTANTS,
    MemRef,
    PartialIndex,
    SliceVal,
    StructVal,
    TVal,
    describe,
    is_const,
)
from .views import VIEW_METHODS, ViewBuilder

BINOPS: dict[type, Op] = {
    ast.Add: Op.ADD, ast.Sub: Op.SUB, ast.Mult: Op.MUL, ast.Div: Op.TRUEDIV,
    ast.FloorDiv: Op.FLOORDIV, ast.Mod: Op.MOD, ast.Pow: Op.POW, ast.BitAnd: Op.BIT_AND,
    ast.BitOr: Op.BIT_OR, ast.BitXor: Op.BIT_XOR, ast.LShift: Op.SHL, ast.RShift: Op.SHR,
}
COMPARES: dict[type, Op] = {
    ast.Eq: Op.EQ, ast.NotEq: Op.NE, ast.Lt: Op.LT, ast.LtE: Op.LE, ast.Gt: Op.GT,
    ast.GtE: Op.GE,
}
SPELLING: dict[Op, str] = {
    Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.TRUEDIV: "/", Op.FLOORDIV: "//", Op.MOD: "%",
    Op.POW: "**", Op.BIT_AND: "&", Op.BIT_OR: "|", Op.BIT_XOR: "^", Op.SHL: "<<",
    Op.SHR: ">>", Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=",
    Op.MIN: "min", Op.MAX: "max",
}
_PY_FOLD: dict[Op, Any] = {
    Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul,
    Op.TRUEDIV: operator.truediv, Op.FLOORDIV: operator.floordiv, Op.MOD: operator.mod,
    Op.POW: operator.pow, Op.BIT_AND: operator.and_, Op.BIT_OR: operator.or_,
    Op.BIT_XOR: operator.xor, Op.SHL: operator.lshift, Op.SHR: operator.rshift,
    Op.EQ: operator.eq, Op.NE: operator.ne, Op.LT: operator.lt, Op.LE: operator.le,
    Op.GT: operator.gt, Op.GE: operator.ge, Op.MIN: min, Op.MAX: max,
}
ARITHMETIC = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.TRUEDIV, Op.FLOORDIV, Op.MOD, Op.POW,
                        Op.MIN, Op.MAX})
BITWISE = frozenset({Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR})
SHIFTS = frozenset({Op.SHL, Op.SHR})
COMPARISONS = frozenset(COMPARES.values())

_UNSUPPORTED_EXPR: dict[str, str] = {
    "List": "Use a tuple (a, b) for compile-time sequences; kernels have no lists.",
    "Dict": "Pass values as separate arguments or a frozen dataclass.",
    "Set": "Use a tuple (a, b) for compile-time sequences.",
    "ListComp": "Use a for loop.",
    "SetComp": "Use a for loop.",
    "DictComp": "Use a for loop.",
    "GeneratorExp": "Use a for loop.",
    "Lambda": "Define the helper at module level with @qd.func.",
    "JoinedStr": "Kernels have no strings; write numbers to an output array instead.",
    "Starred": "Pass arguments one by one.",
    "NamedExpr": "Assign with = on its own line.",
    "Await": "Kernels are not coroutines.",
}


class ExprVisitor(ViewBuilder):
    """`visit_<Node>` for expressions; `expr(node)` evaluates one."""

    def expr(self, node: ast.AST) -> Any:
        saved = self.node
        self.node = node
        try:
            method: Any = getattr(self, f"visit_{type(node).__name__}", None)
            if method is None or not isinstance(node, ast.expr):
                name = type(node).__name__
                hint = _UNSUPPORTED_EXPR.get(name, "Use the kernel language's scalar "
                                             "expressions (see docs/kernels.md).")
                self.fail(f"{name} expressions are not supported in kernels.", hint)
            return method(node)
        finally:
            self.node = saved

    # -- leaves ---------------------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, complex):
            self.type_fail("Complex numbers are not supported in kernels.",
                           "Use two real values.")
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        name = node.attr
        if type(base) is MemRef:
            return self.memory_attribute(base, name, node)
        if type(base) is StructVal:
            return self.struct_field(base, name, node)
        if type(base) is TVal:
            if name == "dtype":
                return base.dtype
            self.fail(f"Scalar values have no attribute '{name}' in kernels.",
                      "Use qd.math functions and operators on scalars.", node)
        if type(base) in PY_CONSTANTS or type(base) is PartialIndex:
            self.fail(f"{describe(base)} has no attribute '{name}' in kernels.",
                      "Use qd.math functions and operators on scalars.", node)
        try:
            value = getattr(base, name)
        except AttributeError:
            self.fail(f"{describe(base)} has no attribute '{name}'.",
                      "Check the spelling.", node)
        if self.recorder is not None:
            self.recorder.attribute(base, name, value)
        return self.python_value(value, f"'{ast.unparse(node)}'", node)

    def memory_attribute(self, ref: MemRef, name: str, node: ast.AST) -> Any:
        if name == "shape":
            return tuple(self.shape(ref, k) for k in range(ref.ndim))
        if name == "ndim":
            return ref.ndim
        if name == "dtype":
            return ref.dtype
        if name == "size":
            sizes = [self.shape(ref, k) for k in range(ref.ndim)]
            if not sizes:
                return 1
            total = sizes[0]
            for s in sizes[1:]:
                total = self.binop(Op.MUL, total, s)
            return total
        if name in VIEW_METHODS:
            return self.view_method(ref, name, node)
        views = ", v.subview(offset, size) or v[a:b]" if ref.is_view else ""
        self.fail(f"{describe(ref)} has no attribute '{name}' in kernels.",
                  f"Use x.shape[k], x.size, x.ndim or x.dtype{views}.", node)

    def shape(self, ref: MemRef, axis: int) -> TVal:
        v = self.emit(Op.SHAPE, (ref.value,), (axis,), _dtypes.int64)
        return TVal(v, weak=True)  # type: ignore[arg-type]

    def visit_Slice(self, node: ast.Slice) -> SliceVal:
        def bound(n: ast.expr | None) -> Any:
            return None if n is None else self.expr(n)
        return SliceVal(bound(node.lower), bound(node.upper), bound(node.step))

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        index = self.expr(node.slice)
        if type(index) is SliceVal or (isinstance(index, tuple)
                                       and any(type(p) is SliceVal for p in index)):
            return self.slice_view(base, index, node)
        if type(base) in (MemRef, PartialIndex):
            ref, indices = self.subscript_memory(base, index, node.slice)
            if len(indices) < ref.ndim:
                return PartialIndex(ref, indices)
            return self.load(ref, indices)
        if isinstance(base, tuple):
            if type(index) is not int:
                self.fail(f"Tuples are indexed with integer constants; got {describe(index)}.",
                          "Use qd.static(...) or a constant index.", node.slice)
            try:
                return base[index]
            except IndexError:
                self.fail(f"Index {index} is out of range for a tuple of {len(base)}.",
                          f"Use an index in [0, {len(base)}).", node.slice)
        self.fail(f"{describe(base)} cannot be indexed in kernels.",
                  "Index array arguments, e.g. x[i, j].", node)

    def load(self, ref: MemRef, indices: tuple[TVal, ...]) -> TVal:
        args = (ref.value,) + tuple(i.value for i in indices)
        return TVal(self.emit(Op.LOAD, args, (), ref.dtype))  # type: ignore[arg-type]

    # -- operators ----------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = BINOPS.get(type(node.op))
        if op is None:
            self.fail("The @ operator is not supported in kernels.",
                      "Use loops over the elements, or qd.matmul outside kernels.", node)
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def require_scalar(self, x: Any, node: ast.AST | None) -> None:
        if type(x) is not TVal and type(x) not in PY_CONSTANTS:
            hint = "Use a scalar value."
            if type(x) in (MemRef, PartialIndex):
                hint = "Index the array to get a scalar, e.g. x[i]; whole-array operations " \
                       "belong outside kernels."
            self.type_fail(f"Operators in kernels take scalars; got {describe(x)}.", hint, node)

    def common(self, a: Any, b: Any) -> tuple[DType, bool]:
        """The dtype two operands promote to, and whether the result stays weak."""
        sa = type(a) is TVal and not a.weak
        sb = type(b) is TVal and not b.weak
        if sa and sb:
            return T.promote(a.dtype, b.dtype), False
        if sa or sb:
            strong, other = (a, b) if sa else (b, a)
            kind = type(other) if is_const(other) else T.weak_kind(other.dtype)
            return T.promote_weak(strong.dtype, kind), False
        ka = type(a) if is_const(a) else T.weak_kind(a.dtype)
        kb = type(b) if is_const(b) else T.weak_kind(b.dtype)
        return T.WEAK_DEFAULT[T.promote_weak_pair(ka, kb)], True

    def fold(self, op: Op, a: Any, b: Any, node: ast.AST | None) -> Any:
        try:
            result = _PY_FOLD[op](a, b)
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            self.fail(f"The constant expression {a!r} {SPELLING[op]} {b!r} fails: {exc}.",
                      "Fix the constants.", node)
        if type(result) not in PY_CONSTANTS:
            self.type_fail(f"{a!r} {SPELLING[op]} {b!r} is not a real number.",
                           "Use real operands.", node)
        return result

    def binop(self, op: Op, a: Any, b: Any, node: ast.AST | None = None) -> Any:
        """`a op b` for scalars, with NumPy 2 promotion and weak literals."""
        self.require_scalar(a, node)
        self.require_scalar(b, node)
        if is_const(a) and is_const(b):
            return self.fold(op, a, b, node)
        dtype, weak = self.common(a, b)
        if op in ARITHMETIC and dtype.kind == "b":
            self.type_fail(f"Arithmetic ({SPELLING[op]}) on two bool values is not supported.",
                           "Use int(x) to count with bools.", node)
        if op in (BITWISE | SHIFTS) and dtype.kind == "f":
            self.type_fail(f"The operator {SPELLING[op]} needs integers or bools; got "
                           f"{dtype.name}.", "Use int(...) to convert first.", node)
        if op in SHIFTS and dtype.kind == "b":
            self.type_fail(f"The operator {SPELLING[op]} needs integers; got bool.",
                           "Use int(...) to convert first.", node)
        if op is Op.TRUEDIV and dtype.kind != "f":
            dtype = _dtypes.float64
        va = self.cast_to(a, dtype)
        vb = self.cast_to(b, dtype)
        rtype = _dtypes.bool if op in COMPARISONS else dtype
        return TVal(self.emit(op, (va.value, vb.value), (), rtype), weak)  # type: ignore

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        x = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            c = self.to_bool(x, node.operand)
            if is_const(c):
                return not c
            return TVal(self.emit(Op.NOT, (c.value,), (), _dtypes.bool), c.weak)  # type: ignore
        self.require_scalar(x, node)
        if is_const(x):
            fold: Any = {ast.USub: operator.neg, ast.UAdd: operator.pos,
                         ast.Invert: operator.invert}[type(node.op)]
            return fold(x)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.USub):
            if x.dtype.kind == "b":
                self.type_fail("Negation of a bool is not supported.",
                               "Use `not x`, or -int(x).", node)
            return TVal(self.emit(Op.NEG, (x.value,), (), x.dtype), x.weak)  # type: ignore
        if x.dtype.kind == "f":
            self.type_fail(f"The operator ~ needs integers or bools; got {x.dtype.name}.",
                           "Use int(...) to convert first.", node)
        op = Op.NOT if x.dtype.kind == "b" else Op.BIT_NOT
        return TVal(self.emit(op, (x.value,), (), x.dtype), x.weak)  # type: ignore

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = True
        for cmp, comparator in zip(node.ops, node.comparators, strict=True):
            op = COMPARES.get(type(cmp))
            if op is None:
                self.fail(f"The comparison '{type(cmp).__name__}' is not supported in kernels.",
                          "Use ==, !=, <, <=, > or >= on scalars.", node)
            right = self.expr(comparator)
            part = self.binop(op, left, right, node)
            result = part if result is True else self.logical_and(result, part)
            left = right
        return result

    def logical_and(self, a: Any, b: Any) -> Any:
        if is_const(a):
            return b if a else False
        if is_const(b):
            return a if b else False
        return TVal(self.emit(Op.BIT_AND, (a.value, b.value), (), _dtypes.bool))  # type: ignore

    # -- short-circuit and ternary ----------------------------------------------------------

    def bool_operand(self, node: ast.AST) -> Any:
        x = self.expr(node)
        if type(x) is builtins.bool or (type(x) is TVal and x.dtype.kind == "b"):
            return x
        self.type_fail(f"`and` / `or` take bool operands in kernels; got {describe(x)}.",
                       "Use a comparison such as (x != 0).", node)

    @staticmethod
    def all_pure(stmts: list[Stmt]) -> bool:
        return all(type(s) is Instr and OPS[s.op].pure for s in stmts)

    @contextmanager
    def reopen(self, stmts: list[Stmt]) -> Iterator[None]:
        self._blocks.append(stmts)
        try:
            yield
        finally:
            self._blocks.pop()

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        left = self.bool_operand(node.values[0])
        for value_node in node.values[1:]:
            if is_const(left):
                if left is not is_and:
                    return left
                left = self.bool_operand(value_node)
                continue
            with self.region() as stmts:
                right = self.bool_operand(value_node)
            if is_const(right) and not stmts:
                left = left if right is is_and else right
                continue
            if is_const(right):
                with self.reopen(stmts):
                    right = self.const(right, _dtypes.bool)
            if self.all_pure(stmts):
                self.splice(stmts)
                op = Op.BIT_AND if is_and else Op.BIT_OR
                left = TVal(self.emit(op, (left.value, right.value), (), _dtypes.bool))  # type: ignore
                continue
            left = self.conditional_value(left, stmts, right, is_and)
        return left

    def conditional_value(self, left: TVal, stmts: list[Stmt], right: TVal, is_and: bool
                          ) -> TVal:
        """`left and right` / `left or right` evaluating right's statements only if needed."""
        var = self.new_var("and" if is_and else "or", _dtypes.bool)
        self.emit(Op.STORE_VAR, (left.value,), (var,))
        cond = left
        if not is_and:
            cond = TVal(self.emit(Op.NOT, (left.value,), (), _dtypes.bool))  # type: ignore
        with self.reopen(stmts):
            self.emit(Op.STORE_VAR, (right.value,), (var,))
        self.emit_stmt(If(cond.value, self.block(stmts), self.block([]), self.loc()))
        return TVal(self.emit(Op.LOAD_VAR, (), (var,), _dtypes.bool))  # type: ignore

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.to_bool(self.expr(node.test), node.test)
        if is_const(cond):
            return self.expr(node.body if cond else node.orelse)
        with self.region() as then_stmts:
            a = self.expr(node.body)
        with self.region() as else_stmts:
            b = self.expr(node.orelse)
        self.require_scalar(a, node.body)
        self.require_scalar(b, node.orelse)
        dtype, weak = self.common(a, b)
        with self.reopen(then_stmts):
            va = self.cast_to(a, dtype)
        with self.reopen(else_stmts):
            vb = self.cast_to(b, dtype)
        if self.all_pure(then_stmts) and self.all_pure(else_stmts):
            self.splice(then_stmts)
            self.splice(else_stmts)
            v = self.emit(Op.SELECT, (cond.value, va.value, vb.value), (), dtype)
            return TVal(v, weak)  # type: ignore[arg-type]
        var = self.new_var("ifexp", dtype)
        with self.reopen(then_stmts):
            self.emit(Op.STORE_VAR, (va.value,), (var,))
        with self.reopen(else_stmts):
            self.emit(Op.STORE_VAR, (vb.value,), (var,))
        self.emit_stmt(If(cond.value, self.block(then_stmts), self.block(else_stmts), self.loc()))
        return TVal(self.emit(Op.LOAD_VAR, (), (var,), dtype), weak)  # type: ignore[arg-type]
