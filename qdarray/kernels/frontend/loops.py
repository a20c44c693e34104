"""Loops: `for ... in range(...)`, `qd.ndrange(...)`, `qd.static(...)`, and `while`.

A `for` directly in the kernel's top-level statements (after static unrolling) is a parallel
loop: one thread per iteration. `qd.ndrange` at the top level is a perfect nest of parallel
loops, one per axis, whose threads are the index tuples; elsewhere it is nested serial loops.
`qd.static(iterable)` unrolls the loop while the kernel compiles, binding each element as a
compile-time value.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

from ... import _dtypes
from ..error_record import MAX_NEST  # the thread indices an error record holds
from ..ir import For, If, Op, Value, While
from . import exprs, scalars
from .builder import Builder, Visit, contains_return
from .scope import Loop, after_loop
from .values import TVal, describe, is_const

MAX_UNROLL = 4096


def visit_For(kb: Builder, node: ast.For) -> None:
    if node.orelse:
        kb.fail(
            "for ... else is not supported in kernels.",
            "Use a flag variable set before break.",
            node,
        )
    it = node.iter
    if isinstance(it, ast.Call):
        callee = kb.expr(it.func)
        if callee is builtins.range:
            range_loop(kb, node, it)
            return
        from .. import language

        if callee is language.ndrange:
            ndrange_loop(kb, node, it)
            return
        if callee is language.static:
            if len(it.args) != 1 or it.keywords:
                kb.fail("qd.static takes one argument.", "Use qd.static(range(n)).", it)
            static_loop(kb, node, kb.static_eval(it.args[0]))
            return
    kb.fail(
        "Kernels loop over range(...), qd.ndrange(...) or qd.static(...).",
        "Use `for i in range(n)`; to unroll over a compile-time sequence use qd.static(...).",
        it,
    )


def target_names(kb: Builder, target: ast.AST) -> tuple[str, ...]:
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return tuple(e.id for e in target.elts)  # type: ignore[attr-defined]
    kb.fail(
        "A loop variable must be a name (or a tuple of names for qd.ndrange).",
        "Use `for i in ...` or `for i, j in qd.ndrange(n, m)`.",
        target,
    )


def int_operand(kb: Builder, x: Any, node: ast.AST, what: str) -> Any:
    if type(x) is int or (type(x) is TVal and x.dtype.kind in "iu"):
        return x
    kb.type_fail(
        f"{what} must be an integer; got {describe(x)}.", "Use int(...) to convert it.", node
    )


def range_loop(kb: Builder, node: ast.For, call: ast.Call) -> None:
    if call.keywords or not 1 <= len(call.args) <= 3:
        kb.fail(
            "range() takes 1 to 3 positional arguments in kernels.",
            "Use range(stop), range(start, stop) or range(start, stop, step).",
            call,
        )
    vals = [int_operand(kb, kb.expr(a), a, "A range() bound") for a in call.args]
    begin, end = (0, vals[0]) if len(vals) == 1 else (vals[0], vals[1])
    step = vals[2] if len(vals) == 3 else 1
    if type(step) is not int or step == 0:
        kb.fail(
            "The step of range() must be a non-zero integer constant in kernels.",
            "Use a constant step such as range(a, b, 2), or a while loop.",
            call.args[2],
        )
    names = target_names(kb, node.target)
    if len(names) != 1:
        kb.fail("range() gives one loop variable.", "Use `for i in range(n)`.", node.target)
    dtype, weak = scalars.common(kb, begin, end)
    b = kb.cast_to(begin, dtype)
    e = kb.cast_to(end, dtype)
    name = names[0]
    if step == 1:

        def bind(index: Value) -> None:
            kb.ctx.scope.bind(name, TVal(index, weak))

        loop(kb, node, b, e, bind, (name,))
        return
    # for t in range(trip): i = begin + t * step
    int64 = _dtypes.int64
    b64, e64 = kb.cast_to(b, int64), kb.cast_to(e, int64)
    span = exprs.binop(kb, Op.SUB, e64, b64) if step > 0 else exprs.binop(kb, Op.SUB, b64, e64)
    trip = exprs.binop(kb, Op.FLOORDIV, exprs.binop(kb, Op.ADD, span, abs(step) - 1), abs(step))
    trip = TVal(kb.emit(Op.MAX, (trip.value, kb.const(0, int64).value), (), int64))  # type: ignore

    def bind_step(index: Value) -> None:
        offset = exprs.binop(kb, Op.MUL, TVal(index), step)
        value = kb.cast_to(exprs.binop(kb, Op.ADD, b64, offset), dtype)
        kb.ctx.scope.bind(name, TVal(value.value, weak))

    loop(kb, node, kb.const(0, int64), trip, bind_step, (name,))


def loop(
    kb: Builder,
    node: ast.For,
    begin: TVal,
    end: TVal,
    bind: Callable[[Value], None],
    names: tuple[str, ...],
    kind: str | None = None,
    inner: Callable[[], None] | None = None,
) -> None:
    """Build one For: parallel at the kernel's top level (or as the next level of a
    parallel ndrange nest, `kind="parallel"`), serial elsewhere."""
    parallel = kind == "parallel" or (kb.top and not kb.in_parallel and kind is None)
    kind = kind or ("parallel" if parallel else "serial")
    ctx = kb.ctx
    saved = (kb.top, kb.in_parallel, kb.outer_vars)
    scope0 = ctx.scope
    ctx.scope = scope0.copy()
    ctx.loops.append(Loop(kind, node.lineno, names))
    kb.top = False
    if parallel and not kb.in_parallel:
        kb.in_parallel = True
        kb.outer_vars = {ref.var.id for ref in ctx.vars.values()}
    index = kb.new_value(begin.dtype)
    try:
        with kb.region() as stmts:
            bind(index)
            if inner is None:
                kb.body(node.body)
            else:
                inner()
    finally:
        ctx.loops.pop()
        kb.top, kb.in_parallel, kb.outer_vars = saved
    ctx.scope = after_loop(scope0, ctx.scope, node.lineno, names)
    kb.node = node
    kb.emit_stmt(For(index, begin.value, end.value, kb.block(stmts), parallel, kb.loc(node.iter)))


def ndrange_loop(kb: Builder, node: ast.For, call: ast.Call) -> None:
    if call.keywords or not call.args:
        kb.fail(
            "qd.ndrange takes one or more extents.",
            "Use qd.ndrange(n, m) or qd.ndrange((begin, end), m).",
            call,
        )
    bounds = []
    for a in call.args:
        v = kb.expr(a)
        if isinstance(v, tuple):
            if len(v) != 2:
                kb.fail(
                    "An ndrange axis is an extent n or a pair (begin, end).",
                    "Use qd.ndrange((1, n - 1), m).",
                    a,
                )
            lo = int_operand(kb, v[0], a, "An ndrange bound")
            hi = int_operand(kb, v[1], a, "An ndrange bound")
        else:
            lo, hi = 0, int_operand(kb, v, a, "An ndrange extent")
        dtype, weak = scalars.common(kb, lo, hi)
        bounds.append((kb.cast_to(lo, dtype), kb.cast_to(hi, dtype), weak))
    names = target_names(kb, node.target)
    if len(names) != len(bounds):
        kb.fail(
            f"qd.ndrange has {len(bounds)} axes but the loop has {len(names)} variables.",
            f"Use one name per axis: for {', '.join('ijkl'[: len(bounds)])} in qd.ndrange(...).",
            node.target,
        )
    if kb.top and not kb.in_parallel:
        if len(bounds) > MAX_NEST:
            kb.fail(
                f"A parallel qd.ndrange has at most {MAX_NEST} axes; got {len(bounds)}.",
                "Loop over the extra axes inside the body.",
                call,
            )
        parallel_ndrange(kb, node, bounds, names)
    else:
        nested_ndrange(kb, node, bounds, names, 0)


def parallel_ndrange(
    kb: Builder, node: ast.For, bounds: list[Any], names: tuple[str, ...], axis: int = 0
) -> None:
    """A perfect nest of parallel loops, one per axis: each index tuple is a thread."""
    lo, hi, weak = bounds[axis]
    last = axis == len(bounds) - 1

    def bind(index: Value) -> None:
        kb.ctx.scope.bind(names[axis], TVal(index, weak))

    inner = None if last else (lambda: parallel_ndrange(kb, node, bounds, names, axis + 1))
    loop(kb, node, lo, hi, bind, names[axis : axis + 1], kind="parallel", inner=inner)


def nested_ndrange(
    kb: Builder, node: ast.For, bounds: list[Any], names: tuple[str, ...], axis: int
) -> None:
    lo, hi, weak = bounds[axis]
    last = axis == len(bounds) - 1

    def bind(index: Value) -> None:
        kb.ctx.scope.bind(names[axis], TVal(index, weak))

    inner = None if last else (lambda: nested_ndrange(kb, node, bounds, names, axis + 1))
    kind = "ndrange" if len(bounds) > 1 else None
    loop(kb, node, lo, hi, bind, names[axis : axis + 1], kind=kind, inner=inner)


def static_loop(kb: Builder, node: ast.For, iterable: Any) -> None:
    try:
        items = list(iterable)
    except TypeError:
        kb.fail(
            f"qd.static(...) of {describe(iterable)} is not iterable.",
            "Use qd.static(range(n)) or a tuple.",
            node.iter,
        )
    if len(items) > MAX_UNROLL:
        kb.fail(
            f"qd.static unrolls {len(items)} iterations; the limit is {MAX_UNROLL}.",
            "Use a dynamic range(...) loop.",
            node.iter,
        )
    names = target_names(kb, node.target)
    ctx = kb.ctx
    guard = ctx.ret is not None and contains_return(node) and not kb.dynamic_loops()
    ctx.loops.append(Loop("static", node.lineno, names))
    try:
        for k, item in enumerate(items):
            if ctx.scope.terminated:
                break
            if len(names) == 1:
                values = (item,)
            elif isinstance(item, tuple) and len(item) == len(names):
                values = item
            else:
                kb.fail(
                    f"Cannot unpack {item!r} into {len(names)} names.",
                    "Use one loop variable per tuple element.",
                    node.target,
                )
            for name, value in zip(names, values, strict=True):
                ctx.scope.bind(name, kb.python_value(value, repr(value), node))
            if guard and k > 0:
                flag = kb.emit(Op.LOAD_VAR, (), (ctx.ret.flag,), _dtypes.bool)  # type: ignore
                guarded_iteration(kb, flag, node)  # type: ignore[arg-type]
            else:
                kb.body(node.body)
    finally:
        ctx.loops.pop()


def guarded_iteration(kb: Builder, flag: Value, node: ast.For) -> None:
    go = kb.emit(Op.NOT, (flag,), (), _dtypes.bool)
    scope0 = kb.ctx.scope
    kb.ctx.scope = scope0.copy()
    with kb.region() as stmts:
        kb.body(node.body)
    kb.ctx.scope = scope0
    kb.emit_stmt(If(go, kb.block(stmts), kb.block([]), kb.loc(node)))  # type: ignore


def visit_While(kb: Builder, node: ast.While) -> None:
    if node.orelse:
        kb.fail(
            "while ... else is not supported in kernels.",
            "Use a flag variable set before break.",
            node,
        )
    ctx = kb.ctx
    saved_top = kb.top
    kb.top = False
    scope0 = ctx.scope
    with kb.region() as cond_stmts:
        cond = kb.to_bool(kb.expr(node.test), node.test)
        if is_const(cond):
            if not cond:
                kb.top = saved_top
                return
            cond = kb.const(True, _dtypes.bool)
    ctx.scope = scope0.copy()
    ctx.loops.append(Loop("serial", node.lineno, ()))
    try:
        with kb.region() as body_stmts:
            kb.body(node.body)
    finally:
        ctx.loops.pop()
        kb.top = saved_top
    ctx.scope = after_loop(scope0, ctx.scope, node.lineno, ())
    kb.emit_stmt(While(kb.block(cond_stmts), cond.value, kb.block(body_stmts), kb.loc(node.test)))


# The helper of each construct this module builds (Builder.visitors).
VISITORS: dict[type, Visit] = {
    ast.For: visit_For,
    ast.While: visit_While,
}
