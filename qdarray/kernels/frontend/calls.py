"""Calls: casts, builtins, `qd.math`, atomics, `qd.select`, and inlining of `@qd.func`."""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from typing import Any

import numpy as np

from ... import _dtypes
from ..._dtypes import DType
from .. import language, qdmath, vector_types
from .. import types as T
from ..func import Func, Function, unknown_keyword
from ..ir import Op
from ..ops import OPS
from ..vector_types import VectorType
from . import exprs, scalars, stmts, vector_calls, vectors, views
from .builder import Builder, Visit
from .scope import FuncCtx, ReturnState, Scope
from .values import MemRef, PartialIndex, TVal, VecVal, ViewMethod, describe, is_const

_ATOMICS = {
    language.atomic_add: Op.ATOMIC_ADD,
    language.atomic_min: Op.ATOMIC_MIN,
    language.atomic_max: Op.ATOMIC_MAX,
}
_BINARY_MATH = {Op.ATAN2, Op.HYPOT, Op.COPYSIGN, Op.FMOD, Op.NEXTAFTER}
_PREDICATES = {Op.ISNAN, Op.ISINF, Op.ISFINITE}
_CASTS = {builtins.int: _dtypes.int64, builtins.float: _dtypes.float64, builtins.bool: _dtypes.bool}


def _by_name() -> dict[str, Op]:
    """The math ops by qd.math's names and by NumPy's (each op's `OpDef.np_name`: arcsin,
    minimum, absolute, rint, ...)."""
    by_name = {fn.__name__: op for fn, op in qdmath.OPS.items()}
    numpy = {name: op for op in by_name.values() if (name := OPS[op].np_name) is not None}
    return numpy | by_name


_BY_NAME = _by_name()


def _math_table() -> dict[Any, Op]:
    """Every callable that compiles to a math op: qd.math, Python's math, NumPy."""
    table: dict[Any, Op] = dict(qdmath.OPS)
    for fn, op in qdmath.OPS.items():
        if fn.__name__ in ("min", "max", "abs", "pow", "round"):
            continue  # Python's math has none of these with NumPy semantics
        python = getattr(math, fn.__name__, None)
        if python is not None:
            table[python] = op
    for name, op in _BY_NAME.items():
        fn = getattr(np, name, None)
        if fn is not None:
            table[fn] = op
    return table


_MATH: dict[Any, Op] | None = None


def _namespace_op(fn: Any) -> Op | None:
    """The math op of one of the array namespace's elementwise functions (qd.sin,
    qd.maximum, ...), known by its module (a private module of qdarray) and name: the kernel
    compiler sits below the namespace and does not import it. qd.min / qd.max are
    reductions, not the binary min / max."""
    name = getattr(fn, "__name__", "")
    if (
        name in ("min", "max")
        or not callable(fn)
        or not getattr(fn, "__module__", "").startswith("qdarray._")
    ):
        return None
    return _BY_NAME.get(name)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def visit_Call(kb: Builder, node: ast.Call) -> Any:
    global _MATH
    callee = kb.expr(node.func)
    if isinstance(callee, Func):
        return inline(kb, callee, node)
    if type(callee) is ViewMethod:
        return views.call_view_method(kb, callee, node)
    if isinstance(callee, Function):  # a kernel
        kb.fail(
            f"Kernels cannot call kernels ('{callee.fn.__name__}').",
            "Decorate the helper with @qd.func instead of @qd.kernel.",
            node,
        )
    if isinstance(callee, VectorType):
        return vectors.construct(kb, callee, node)
    if callee is vector_types.vector or callee is vector_types.matrix:
        return vector_calls.type_call(kb, callee, node)
    if vector_calls.is_vector_function(callee):
        return vector_calls.call(kb, callee, node)
    if callee is language.static:
        if len(node.args) != 1 or node.keywords:
            kb.fail("qd.static takes one argument.", "Use qd.static(expr).", node)
        return kb.python_value(kb.static_eval(node.args[0]), "qd.static(...)", node)
    if node.keywords:
        kb.fail(
            f"Keyword arguments are not supported when calling {describe(callee)}.",
            "Pass the arguments by position.",
            node,
        )
    if isinstance(callee, DType):
        return explicit_cast(kb, callee, node)
    if callee in _CASTS:
        to = kb.ctx.default_float if callee is builtins.float else _CASTS[callee]
        return explicit_cast(kb, to, node, python=callee)
    if callee is language.cast:
        if len(node.args) != 2:
            kb.fail("qd.cast takes (value, dtype).", "Use qd.cast(x, qd.float32).", node)
        dtype = kb.expr(node.args[1])
        if not isinstance(dtype, DType):
            dtype = _dtypes.normalize_dtype(kb.static_eval(node.args[1]))
        return explicit_cast(kb, dtype, node, node.args[:1])
    if callee in _ATOMICS:
        return atomic(kb, _ATOMICS[callee], node)
    if callee is language.select:
        return select(kb, node)
    if callee is qdmath.clip:
        x, lo, hi = call_args(kb, node, 3)
        return minmax(kb, Op.MIN, minmax(kb, Op.MAX, x, lo, node), hi, node)
    if callee in (builtins.min, builtins.max):
        vals = call_args(kb, node, None)
        if len(vals) < 2:
            kb.fail(
                f"{callee.__name__}() in kernels takes two or more scalars.",
                f"Use {callee.__name__}(a, b).",
                node,
            )
        op = Op.MIN if callee is builtins.min else Op.MAX
        out = vals[0]
        for v in vals[1:]:
            out = minmax(kb, op, out, v, node)
        return out
    if callee is builtins.len:
        (x,) = call_args(kb, node, 1)
        if type(x) is MemRef:
            return scalars.shape(kb, x, 0)
        if type(x) is VecVal:
            return x.vtype.shape[0]
        if isinstance(x, tuple):
            return len(x)
        kb.type_fail(
            f"len() of {describe(x)} is not defined in kernels.",
            "Use len(x) on arrays (their first extent) or tuples.",
            node,
        )
    if callee is builtins.abs:
        return math_call(kb, Op.ABS, node)
    if callee is builtins.pow:
        a, b = call_args(kb, node, 2)
        return exprs.binop(kb, Op.POW, a, b, node)
    if callee is builtins.round:
        kb.fail(
            "round() is not supported in kernels (Python's returns an int).",
            "Use qd.math.round(x) (halves to even, a float), or int(qd.math.round(x)).",
            node,
        )
    if callee is builtins.print:
        kb.fail(
            "print() is not supported in kernels.",
            "Write values into an output array and print them after the launch.",
            node,
        )
    if callee in (builtins.range, language.ndrange):
        kb.fail(
            f"{callee.__name__}() can only be the iterable of a for loop.",
            f"Use `for i in {callee.__name__}(...)`.",
            node,
        )
    if _MATH is None:
        _MATH = _math_table()
    try:
        math_op = _MATH.get(callee)
    except TypeError:  # unhashable callee
        math_op = None
    if math_op is None:
        math_op = _namespace_op(callee)
    if math_op is not None:
        return math_call(kb, math_op, node)
    kb.fail(
        f"Cannot call {describe(callee)} in a kernel.",
        "Kernels can call @qd.func functions, qd.math functions, casts such as "
        "qd.float32(x), and qd.atomic_*; decorate Python helpers with @qd.func.",
        node,
    )


def call_args(kb: Builder, node: ast.Call, n: int | None) -> list[Any]:
    if n is not None and len(node.args) != n:
        kb.fail(
            f"This call takes {_count(n, 'argument')}; got {len(node.args)}.",
            "Check the call's arguments.",
            node,
        )
    return [kb.expr(a) for a in node.args]


def explicit_cast(
    kb: Builder,
    dtype: DType,
    node: ast.Call,
    arg_nodes: list[ast.expr] | None = None,
    python: Any = None,
) -> Any:
    """`qd.float32(x)`, `qd.cast(x, dtype)`; `int(x)` / `float(x)` / `bool(x)` when
    `python` is that builtin (of a constant they give a Python constant, as in Python)."""
    arg_nodes = node.args if arg_nodes is None else arg_nodes
    if len(arg_nodes) != 1:
        kb.fail(f"A cast to {dtype.name} takes one value.", f"Use qd.{dtype.name}(x).", node)
    if dtype not in T.KERNEL_DTYPES:
        kb.type_fail(
            f"{dtype.name} is not a kernel scalar type.",
            "Use bool, an integer type, float32 or float64.",
            node,
        )
    x = kb.expr(arg_nodes[0])
    scalars.require_scalar(kb, x, arg_nodes[0])
    if is_const(x) and python is not None:
        return python(x)
    if is_const(x):
        if dtype.kind in "iu" and isinstance(x, float):
            x = int(x)
        return kb.const(x, dtype)
    return kb.cast_to(x, dtype)


def minmax(kb: Builder, op: Op, a: Any, b: Any, node: ast.AST) -> Any:
    if type(a) is VecVal or type(b) is VecVal:
        return vectors.componentwise(kb, lambda x, y: minmax(kb, op, x, y, node), [a, b], node)
    scalars.require_scalar(kb, a, node)
    scalars.require_scalar(kb, b, node)
    if is_const(a) and is_const(b):
        return min(a, b) if op is Op.MIN else max(a, b)
    dtype, weak = scalars.common(kb, a, b)
    if dtype.kind == "b":
        kb.type_fail("min/max of two bools is not supported.", "Use `and` / `or`.", node)
    va, vb = kb.cast_to(a, dtype), kb.cast_to(b, dtype)
    return TVal(kb.emit(op, (va.value, vb.value), (), dtype), weak)  # type: ignore


def math_call(kb: Builder, op: Op, node: ast.Call) -> Any:
    binary = op in _BINARY_MATH or op in (Op.POW, Op.MIN, Op.MAX)
    vals = call_args(kb, node, 2 if binary else 1)
    if any(type(v) is VecVal for v in vals) and op not in _PREDICATES:
        return vectors.componentwise(kb, lambda *c: math_values(kb, op, list(c), node), vals,
                                     node)
    return math_values(kb, op, vals, node)


def math_values(kb: Builder, op: Op, vals: list[Any], node: ast.Call) -> Any:
    """A math function of scalar values (of each component, for vectors)."""
    binary = len(vals) == 2
    for v, a in zip(vals, node.args, strict=True):
        scalars.require_scalar(kb, v, a)
    if op in (Op.MIN, Op.MAX):
        return minmax(kb, op, vals[0], vals[1], node)
    if op is Op.POW:
        return exprs.binop(kb, Op.POW, vals[0], vals[1], node)
    if all(is_const(v) for v in vals):
        return fold_math(kb, op, vals, node)
    if binary:
        dtype, weak = scalars.common(kb, vals[0], vals[1])
    else:
        x = vals[0]
        dtype, weak = x.dtype, x.weak
    if op is Op.ABS:
        if dtype.kind == "b":
            kb.type_fail("abs() of a bool is not supported.", "Use int(x).", node)
    elif dtype.kind != "f":
        dtype = kb.ctx.default_float
    args = tuple(kb.cast_to(v, dtype).value for v in vals)
    rtype = _dtypes.bool if op in _PREDICATES else dtype
    return TVal(kb.emit(op, args, (), rtype), weak)  # type: ignore[arg-type]


def fold_math(kb: Builder, op: Op, vals: list[Any], node: ast.AST) -> Any:
    """A math function of constants is a constant (computed in float64, like Python)."""
    rt = _dtypes.bool if op in _PREDICATES else _dtypes.float64
    if op is Op.ABS:
        return builtins.abs(vals[0])
    with np.errstate(all="ignore"):
        out = OPS[op].impl(rt, (), *(np.float64(v) for v in vals))  # type: ignore[misc]
    return builtins.bool(out) if rt is _dtypes.bool else float(out)


def atomic(kb: Builder, op: Op, node: ast.Call) -> TVal | VecVal:
    name = op.name.lower()
    if len(node.args) == 2 and isinstance(node.args[0], ast.Subscript):
        target = node.args[0]
        base = kb.expr(target.value)
        if type(base) not in (MemRef, PartialIndex):
            kb.type_fail(
                f"qd.{name} updates an array element; got {describe(base)}.",
                f"Use qd.{name}(x[i], value).",
                target,
            )
        index = kb.expr(target.slice)
        element = vectors.memory_target(kb, base, index, target.slice)
        if element is not None:
            return vectors.atomic(kb, op, *element, kb.expr(node.args[-1]), node)
        ref, indices = kb.memory_access(base, index, target.slice)
    elif len(node.args) == 3:
        base = kb.expr(node.args[0])
        if type(base) is not MemRef:
            kb.type_fail(
                f"qd.{name} updates an array element; got {describe(base)}.",
                f"Use qd.{name}(x, i, value).",
                node.args[0],
            )
        index = kb.expr(node.args[1])
        element = vectors.memory_target(kb, base, index, node.args[1])
        if element is not None:
            return vectors.atomic(kb, op, *element, kb.expr(node.args[-1]), node)
        ref, indices = kb.memory_access(base, index, node.args[1])
    else:
        kb.fail(
            f"qd.{name} takes an array element and a value.",
            f"Use qd.{name}(x[i], value) or qd.{name}(x, i, value).",
            node,
        )
    if ref.dtype.kind == "b":
        kb.type_fail(
            f"qd.{name} on bool array '{ref.name}' is not supported.", "Use an integer array.", node
        )
    value = kb.expr(node.args[-1])
    v = kb.implicit(value, ref.dtype, "same_kind", f"The value of qd.{name}")
    kb.node = node
    old = kb.emit(op, (ref.value,) + tuple(i.value for i in indices) + (v.value,), (), ref.dtype)
    kb.note_write(ref)
    return TVal(old)  # type: ignore[arg-type]


def select(kb: Builder, node: ast.Call) -> Any:
    c, a, b = call_args(kb, node, 3)
    cond = kb.to_bool(c, node.args[0])
    if type(a) is VecVal or type(b) is VecVal:
        return vectors.select(kb, cond, a, b, node)
    scalars.require_scalar(kb, a, node.args[1])
    scalars.require_scalar(kb, b, node.args[2])
    if is_const(cond):
        return a if cond else b
    dtype, weak = scalars.common(kb, a, b)
    va, vb = kb.cast_to(a, dtype), kb.cast_to(b, dtype)
    return TVal(kb.emit(Op.SELECT, (cond.value, va.value, vb.value), (), dtype), weak)  # type: ignore


def inline(kb: Builder, func: Any, node: ast.Call) -> Any:
    """Build the func's body in place, with its parameters bound to the call's values."""
    if func in kb.inline_stack:
        kb.fail(
            f"func '{func.__name__}' calls itself; recursion is not supported in kernels.",
            "Use a loop.",
            node,
        )
    src = func.source()
    if kb.recorder is not None:
        kb.recorder.enter(func, src)
    annotations = func.annotations()
    unknown = unknown_keyword(func._signature, [k.arg for k in node.keywords if k.arg])
    if unknown is not None:
        kb.fail(f"Cannot call func '{func.__name__}': it {unknown}",
                "Use the func's parameter names.", node)
    try:
        bound = inspect.signature(func.fn).bind(
            *[kb.expr(a) for a in node.args],
            **{k.arg: kb.expr(k.value) for k in node.keywords if k.arg is not None},
        )
    except TypeError as exc:
        kb.fail(
            f"Cannot call func '{func.__name__}': {exc}.",
            "Check the call's arguments against the func's parameters.",
            node,
        )
    bound.apply_defaults()
    ctx = FuncCtx(
        src,
        Scope(),
        kb.ctx.stack + (kb.frame(node),),
        is_kernel=False,
        params=frozenset(bound.arguments),
        default_float=kb.ctx.default_float if func.default_float is None else func.default_float,
    )
    caller, saved_top, saved_result = kb.ctx, kb.top, kb.func_result
    values = {}
    for name, value in bound.arguments.items():
        values[name] = func_argument(kb, func, name, value, annotations.get(name), node)
    kb.ctx, kb.top, kb.func_result = ctx, False, None
    kb.inline_stack.append(func)
    try:
        kb.node = src.tree
        for name, value in values.items():
            if src.assign_counts[name] or (type(value) is VecVal and
                                           src.component_counts[name]):
                stmts.assign_name(kb, name, value, src.tree)  # a parameter it reassigns: a local
            else:
                ctx.scope.bind(name, value)
        tail = len(src.returns) == 1 and src.tree.body[-1] is src.returns[0]
        if src.returns and not tail:
            if any(r.value is not None for r in src.returns) and not isinstance(
                src.tree.body[-1], ast.Return
            ):
                kb.fail(
                    f"func '{func.__name__}' returns a value on some paths but does "
                    "not end with a return.",
                    "End the func with a return statement.",
                    src.tree.body[-1],
                )
            flag = kb.new_var(f"{func.__name__}_returned", _dtypes.bool)
            kb.emit(Op.STORE_VAR, (kb.const(False, _dtypes.bool).value,), (flag,))
            ctx.ret = ReturnState(flag)
        kb.body(src.tree.body)
        result = kb.func_result
        if ctx.ret is not None and ctx.ret.result is not None:
            result = kb.load_var(ctx.ret.result.var)
    finally:
        kb.inline_stack.pop()
        kb.ctx, kb.top, kb.func_result = caller, saved_top, saved_result
    return result


def func_argument(kb: Builder, func: Any, name: str, value: Any, ann: Any, node: ast.AST) -> Any:
    if ann is None:
        return value
    from ..._array import Array
    from ...buffer_view import BufferView

    if ann is Array:
        ann = T.ArrayAnnotation(None, None)
    elif ann is BufferView:
        ann = T.ViewAnnotation(None)
    if isinstance(ann, DType):
        return kb.implicit(value, ann, "safe", f"Parameter '{name}' of func '{func.__name__}'")
    if isinstance(ann, VectorType):
        return vectors.implicit(kb, value, ann, f"Parameter '{name}' of func '{func.__name__}'")
    if ann in (builtins.int, builtins.float, builtins.bool):
        dtype = kb.weak_default(ann)
        if ann is builtins.float and func.default_float is not None:
            dtype = func.default_float  # the func's own default float types its parameters
        return kb.implicit(value, dtype, "safe", f"Parameter '{name}' of func '{func.__name__}'")
    if isinstance(ann, (T.ArrayAnnotation, T.ViewAnnotation)):
        if type(value) is not MemRef or not ann.accepts(value.value.type):
            got = describe(value) if type(value) is not MemRef else T.type_str(value.value.type)
            kb.type_fail(
                f"Parameter '{name}' of func '{func.__name__}' expects {ann!r}; got {got}.",
                "Pass a matching array.",
                node,
            )
    return value


# The helper of each construct this module builds (Builder.visitors).
VISITORS: dict[type, Visit] = {
    ast.Call: visit_Call,
}
