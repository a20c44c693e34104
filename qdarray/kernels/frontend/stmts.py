"""Statements: assignments, augmented assignments, if, break/continue, return, expressions.

Loops live in `loops.py`. `body(stmts)` builds a statement list; in a func with returns
that are not a single final `return`, it also lowers `return` to structured exits: the
result goes to a local, a `returned` flag is set, loops of the func are left with `break`,
and the statements after a statement that may have returned run under `if not returned`.
"""

from __future__ import annotations

import ast
from typing import Any

from ... import _dtypes
from .. import types as T
from ..ir import Break, Continue, If, Op
from ..vector_types import VectorType
from . import exprs, scalars, vectors
from .builder import Builder, Visit
from .scalars import BINOPS, atomic_update, store
from .scope import MISSING, merge
from .values import TVal, VarRef, VecVal, describe, is_const


def visit_Pass(kb: Builder, node: ast.Pass) -> None:
    return None


def visit_Expr(kb: Builder, node: ast.Expr) -> None:
    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return None  # a docstring
    kb.expr(node.value)


def visit_Assign(kb: Builder, node: ast.Assign) -> None:
    value = kb.expr(node.value)
    for target in node.targets:
        assign(kb, target, value)


def visit_AnnAssign(kb: Builder, node: ast.AnnAssign) -> None:
    if node.value is None:
        kb.fail(
            "A declaration without a value is not supported in kernels.",
            "Assign a value: x: qd.float32 = 0.0.",
            node,
        )
    if not isinstance(node.target, ast.Name):
        kb.fail("Only plain names can be annotated in kernels.", "Use x: qd.float32 = value.", node)
    dtype = kb.static_eval(node.annotation)
    value = kb.expr(node.value)
    if isinstance(dtype, _dtypes.DType):
        if dtype not in T.KERNEL_DTYPES:
            kb.type_fail(
                f"{dtype.name} is not a kernel scalar type.",
                "Use bool, an integer type, float32 or float64.",
                node,
            )
        value = kb.implicit(value, dtype, "same_kind", f"Local '{node.target.id}'")
    elif isinstance(dtype, VectorType):
        value = vectors.implicit(kb, value, dtype, f"Local '{node.target.id}'")
    assign(kb, node.target, value)


def assign(kb: Builder, target: ast.AST, value: Any) -> None:
    kb.node = target
    if isinstance(target, ast.Name):
        assign_name(kb, target.id, value, target)
    elif isinstance(target, ast.Subscript):
        base = kb.expr(target.value)
        index = kb.expr(target.slice)
        if type(base) is VecVal:
            assign_component(kb, target, base, index, value)
            return
        element = vectors.memory_target(kb, base, index, target.slice)
        if element is not None:
            vectors.store(kb, *element, value, target)
            return
        ref, indices = kb.memory_access(base, index, target.slice)
        store(kb, ref, indices, value, target)
    elif isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, tuple) or len(value) != len(target.elts):
            n = len(value) if isinstance(value, tuple) else "a non-tuple"
            kb.fail(
                f"Cannot unpack {n} values into {len(target.elts)} names.",
                "Use a tuple of the same length on the right.",
                target,
            )
        for t, v in zip(target.elts, value, strict=True):
            assign(kb, t, v)
    elif isinstance(target, ast.Attribute):
        field = vector_field(kb, target)
        if field is not None:
            assign_component(kb, target, field[0], field[1], value)
            return
        kb.fail(
            "Fields of dataclass arguments are read-only in kernels.",
            "Use a local variable, or store into an array field: p.x[i] = v.",
            target,
        )
    else:
        kb.fail(
            f"Cannot assign to {type(target).__name__} in kernels.",
            "Assign to a name or an array element.",
            target,
        )


def assign_component(kb: Builder, target: ast.Subscript | ast.Attribute, base: VecVal,
                     index: Any, value: Any) -> None:
    """`v[k] = s`, `v.x = s`, `m[i, j] = s`, `m[i] = row` on a local vector or matrix `v`."""
    if not isinstance(target.value, ast.Name):
        kb.fail("Only components of a local vector or matrix can be assigned, as v[k] = s or "
                "m[i, j] = s.", "Use m[i, j] = s for a local matrix, or x[i, k] = s to store one "
                "component of an element of an array of vectors.", target)
    where = target.slice if isinstance(target, ast.Subscript) else target
    updated = vectors.with_component(kb, base, index, value, where)
    assign_name(kb, target.value.id, updated, target)


def vector_field(kb: Builder, target: ast.Attribute) -> tuple[VecVal, int] | None:
    """(vector, component) when `target` is `v.x` / `.y` / `.z` / `.w` of a vector."""
    base = kb.expr(target.value)
    if type(base) is not VecVal:
        return None
    name = target.attr
    if base.vtype.is_matrix or len(name) != 1 or name not in "xyzw":
        kb.fail(f"Only v.x, v.y, v.z and v.w of a vector can be assigned; got '{name}'.",
                "Use v[k] = s, or m[i, j] = s for matrices.", target)
    return base, "xyzw".index(name)


def assign_name(kb: Builder, name: str, value: Any, node: ast.AST) -> None:
    ctx = kb.ctx
    for loop in ctx.loops:
        if name in loop.names:
            kb.fail(
                f"'{name}' is the variable of the loop at line {loop.line}; it "
                "cannot be assigned in the loop body.",
                "Try a new local name for the value.",
                node,
            )
    if not ctx.is_mutable(name, type(value) is VecVal):
        ctx.scope.bind(name, value)
        return
    if type(value) is not TVal and type(value) is not VecVal and not is_const(value):
        kb.type_fail(
            f"'{name}' is assigned more than once, so it must hold a scalar, a vector or a "
            f"matrix; got {describe(value)}.",
            "Use a different name for each array or compile-time value.",
            node,
        )
    ref = ctx.vars.get(name)
    bound = ctx.scope.names.get(name, MISSING) is ref
    if ref is not None and kb.in_parallel and ref.var.id in kb.outer_vars:
        if bound:
            kb.fail(
                f"'{name}' is defined outside the parallel loop, so threads cannot "
                "assign it (the threads run in no particular order).",
                "Use a new local inside the loop, or accumulate into an array "
                "element with += (atomic), e.g. out[0] += v.",
                node,
            )
        ref = None  # not bound here: this is a fresh local of each thread
    if ref is None:
        dtype: Any = value.vtype if type(value) is VecVal else kb.local_dtype(value)
        ref = VarRef(kb.new_var(name, dtype), getattr(node, "lineno", 0))
        ctx.vars[name] = ref
    v = local_value(kb, value, ref.var.dtype, f"Local '{name}'")
    kb.emit(Op.STORE_VAR, (v.value,), (ref.var,))
    ctx.scope.bind(name, ref)


def local_value(kb: Builder, value: Any, dtype: Any, what: str) -> TVal | VecVal:
    """`value` converted for a local (or a func's result) of type `dtype`."""
    if isinstance(dtype, VectorType):
        return vectors.implicit(kb, value, dtype, what)
    return kb.implicit(value, dtype, "safe", what)


def visit_AugAssign(kb: Builder, node: ast.AugAssign) -> None:
    op = BINOPS.get(type(node.op))
    if op is None:
        kb.fail("The @= operator is not supported in kernels.", "Use m = m @ w.", node)
    target = node.target
    if isinstance(target, ast.Name):
        current = kb.lookup(target.id, target)
        assign_name(kb, target.id, exprs.binop(kb, op, current, kb.expr(node.value), node), target)
        return
    if isinstance(target, ast.Attribute):
        field = vector_field(kb, target)
        if field is not None:
            base, k = field
            current = vectors.subscript(kb, base, k, target)
            new = exprs.binop(kb, op, current, kb.expr(node.value), node)
            assign_component(kb, target, base, k, new)
            return
        kb.fail(
            "Fields of dataclass arguments are read-only in kernels.",
            "Use a local variable.",
            target,
        )
    if not isinstance(target, ast.Subscript):
        kb.fail(
            f"Cannot update {type(target).__name__} in kernels.",
            "Update a name or an array element.",
            target,
        )
    kb.node = target
    base = kb.expr(target.value)
    index = kb.expr(target.slice)
    if type(base) is VecVal:
        current = vectors.subscript(kb, base, index, target.slice)
        new = exprs.binop(kb, op, current, kb.expr(node.value), node)
        assign_component(kb, target, base, index, new)
        return
    element = vectors.memory_target(kb, base, index, target.slice)
    if element is not None:
        value = kb.expr(node.value)
        vectors.update(kb, *element, op, value, node)
        return
    ref, indices = kb.memory_access(base, index, target.slice)
    value = kb.expr(node.value)
    if op in (Op.ADD, Op.SUB) and kb.in_parallel:
        atomic_update(kb, ref, indices, op, value, node)
        return
    kb.node = target
    old = scalars.load(kb, ref, indices)
    store(kb, ref, indices, exprs.binop(kb, op, old, value, node), target)


def visit_If(kb: Builder, node: ast.If) -> None:
    cond = kb.to_bool(kb.expr(node.test), node.test)
    if is_const(cond):
        kb.body(node.body if cond else node.orelse)
        return
    top = kb.top
    kb.top = False
    scope0 = kb.ctx.scope
    kb.ctx.scope = scope0.copy()
    with kb.region() as then_stmts:
        kb.body(node.body)
    then_scope = kb.ctx.scope
    kb.ctx.scope = scope0.copy()
    with kb.region() as else_stmts:
        kb.body(node.orelse)
    kb.ctx.scope = merge(then_scope, kb.ctx.scope, node.lineno)
    kb.top = top
    kb.node = node.test
    kb.emit_stmt(If(cond.value, kb.block(then_stmts), kb.block(else_stmts), kb.loc(node.test)))


def visit_Break(kb: Builder, node: ast.Break) -> None:
    loop_exit(kb, node, "break")
    kb.emit_stmt(Break(kb.loc(node)))
    kb.ctx.scope.terminated = True


def visit_Continue(kb: Builder, node: ast.Continue) -> None:
    loop_exit(kb, node, "continue")
    kb.emit_stmt(Continue(kb.loc(node)))
    kb.ctx.scope.terminated = True


def loop_exit(kb: Builder, node: ast.AST, word: str) -> None:
    if not kb.ctx.loops:
        kb.fail(f"'{word}' outside a loop.", "Use it inside a for or while loop.", node)
    loop = kb.ctx.loops[-1]
    if loop.kind == "static":
        kb.fail(
            f"'{word}' in a qd.static loop is not supported (the loop is unrolled "
            "when the kernel compiles).",
            "Use if statements on the static loop variable instead.",
            node,
        )
    if word == "break" and loop.kind == "parallel":
        kb.fail(
            "'break' is not allowed in the parallel loop: its iterations are "
            "threads that run in no particular order.",
            "Use 'continue' to end this thread's iteration, or an if statement.",
            node,
        )
    if word == "break" and loop.kind == "ndrange":
        kb.fail(
            "'break' in a multi-dimensional qd.ndrange loop is not supported.",
            "Use nested range loops, or a flag and 'continue'.",
            node,
        )


def visit_Return(kb: Builder, node: ast.Return) -> None:
    ctx = kb.ctx
    if ctx.is_kernel:
        kb.fail(
            "Kernels cannot return values or return early.",
            "Write results into an output array argument; use 'continue' to end a "
            "thread's iteration early.",
            node,
        )
    value = None if node.value is None else kb.expr(node.value)
    ret = ctx.ret
    if ret is None:  # the single, final return of the func
        kb.func_result = value
        ctx.scope.terminated = True
        return
    has_value = value is not None
    if ret.has_value is None:
        ret.has_value = has_value
    elif ret.has_value != has_value:
        kb.fail(
            f"func '{ctx.name}' returns a value on some paths only.",
            "Return a value from every return statement.",
            node,
        )
    if has_value:
        if ret.result is None:
            if type(value) is not TVal and type(value) is not VecVal and not is_const(value):
                kb.type_fail(
                    f"func '{ctx.name}' has several return statements, so it must return "
                    f"a scalar, a vector or a matrix; got {describe(value)}.",
                    "Use a single return at the end of the func to return other values.",
                    node,
                )
            dtype: Any = value.vtype if type(value) is VecVal else kb.local_dtype(value)
            ret.result = VarRef(kb.new_var(f"{ctx.name}_result", dtype), node.lineno)
        v = local_value(kb, value, ret.result.var.dtype, f"The result of func '{ctx.name}'")
        kb.emit(Op.STORE_VAR, (v.value,), (ret.result.var,))
    true = kb.const(True, _dtypes.bool)
    kb.emit(Op.STORE_VAR, (true.value,), (ret.flag,))
    if kb.dynamic_loops():
        kb.emit_stmt(Break(kb.loc(node)))
    ctx.scope.terminated = True


# The helper of each construct this module builds (Builder.visitors).
VISITORS: dict[type, Visit] = {
    ast.Pass: visit_Pass,
    ast.Expr: visit_Expr,
    ast.Assign: visit_Assign,
    ast.AnnAssign: visit_AnnAssign,
    ast.AugAssign: visit_AugAssign,
    ast.If: visit_If,
    ast.Break: visit_Break,
    ast.Continue: visit_Continue,
    ast.Return: visit_Return,
}
