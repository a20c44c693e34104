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
from ..ir import For, If, Op, Value, While
from .scope import Loop, after_loop
from .stmts import StmtVisitor, contains_return
from .values import TVal, VarRef, describe, is_const

MAX_UNROLL = 4096
MAX_NEST = 8  # intrinsics.MAX_NEST: thread indices an error record holds


class LoopVisitor(StmtVisitor):
    """`visit_For`, `visit_While` and compile-time evaluation."""

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            self.fail("for ... else is not supported in kernels.",
                      "Use a flag variable set before break.", node)
        it = node.iter
        if isinstance(it, ast.Call):
            callee = self.expr(it.func)
            if callee is builtins.range:
                self.range_loop(node, it)
                return
            from .. import language

            if callee is language.ndrange:
                self.ndrange_loop(node, it)
                return
            if callee is language.static:
                if len(it.args) != 1 or it.keywords:
                    self.fail("qd.static takes one argument.", "Use qd.static(range(n)).", it)
                self.static_loop(node, self.static_eval(it.args[0]))
                return
        self.fail("Kernels loop over range(...), qd.ndrange(...) or qd.static(...).",
                  "Use `for i in range(n)`; to unroll over a compile-time sequence use "
                  "qd.static(...).", it)

    def target_names(self, target: ast.AST) -> tuple[str, ...]:
        if isinstance(target, ast.Name):
            return (target.id,)
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            return tuple(e.id for e in target.elts)  # type: ignore[attr-defined]
        self.fail("A loop variable must be a name (or a tuple of names for qd.ndrange).",
                  "Use `for i in ...` or `for i, j in qd.ndrange(n, m)`.", target)

    # -- range ----------------------------------------------------------------------------

    def int_operand(self, x: Any, node: ast.AST, what: str) -> Any:
        if type(x) is int or (type(x) is TVal and x.dtype.kind in "iu"):
            return x
        self.type_fail(f"{what} must be an integer; got {describe(x)}.",
                       "Use int(...) to convert it.", node)

    def range_loop(self, node: ast.For, call: ast.Call) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            self.fail("range() takes 1 to 3 positional arguments in kernels.",
                      "Use range(stop), range(start, stop) or range(start, stop, step).", call)
        vals = [self.int_operand(self.expr(a), a, "A range() bound") for a in call.args]
        begin, end = (0, vals[0]) if len(vals) == 1 else (vals[0], vals[1])
        step = vals[2] if len(vals) == 3 else 1
        if type(step) is not int or step == 0:
            self.fail("The step of range() must be a non-zero integer constant in kernels.",
                      "Use a constant step such as range(a, b, 2), or a while loop.",
                      call.args[2])
        names = self.target_names(node.target)
        if len(names) != 1:
            self.fail("range() gives one loop variable.", "Use `for i in range(n)`.",
                      node.target)
        dtype, weak = self.common(begin, end)
        b = self.cast_to(begin, dtype)
        e = self.cast_to(end, dtype)
        name = names[0]
        if step == 1:
            def bind(index: Value) -> None:
                self.ctx.scope.bind(name, TVal(index, weak))

            self.loop(node, b, e, bind, (name,))
            return
        # for t in range(trip): i = begin + t * step
        int64 = _dtypes.int64
        b64, e64 = self.cast_to(b, int64), self.cast_to(e, int64)
        span = self.binop(Op.SUB, e64, b64) if step > 0 else self.binop(Op.SUB, b64, e64)
        trip = self.binop(Op.FLOORDIV, self.binop(Op.ADD, span, abs(step) - 1), abs(step))
        trip = TVal(self.emit(Op.MAX, (trip.value, self.const(0, int64).value), (), int64))  # type: ignore

        def bind_step(index: Value) -> None:
            offset = self.binop(Op.MUL, TVal(index), step)
            value = self.cast_to(self.binop(Op.ADD, b64, offset), dtype)
            self.ctx.scope.bind(name, TVal(value.value, weak))

        self.loop(node, self.const(0, int64), trip, bind_step, (name,))

    def loop(self, node: ast.For, begin: TVal, end: TVal, bind: Callable[[Value], None],
             names: tuple[str, ...], kind: str | None = None,
             inner: Callable[[], None] | None = None) -> None:
        """Build one For: parallel at the kernel's top level (or as the next level of a
        parallel ndrange nest, `kind="parallel"`), serial elsewhere."""
        parallel = kind == "parallel" or (self.top and not self.in_parallel and kind is None)
        kind = kind or ("parallel" if parallel else "serial")
        ctx = self.ctx
        saved = (self.top, self.in_parallel, self.outer_vars)
        scope0 = ctx.scope
        ctx.scope = scope0.copy()
        ctx.loops.append(Loop(kind, node.lineno, names))
        self.top = False
        if parallel and not self.in_parallel:
            self.in_parallel = True
            self.outer_vars = {ref.var.id for ref in ctx.vars.values()}
        index = self.new_value(begin.dtype)
        try:
            with self.region() as stmts:
                bind(index)
                if inner is None:
                    self.body(node.body)
                else:
                    inner()
        finally:
            ctx.loops.pop()
            self.top, self.in_parallel, self.outer_vars = saved
        ctx.scope = after_loop(scope0, ctx.scope, node.lineno, names)
        self.node = node
        self.emit_stmt(For(index, begin.value, end.value, self.block(stmts), parallel,
                           self.loc(node.iter)))

    # -- ndrange --------------------------------------------------------------------------

    def ndrange_loop(self, node: ast.For, call: ast.Call) -> None:
        if call.keywords or not call.args:
            self.fail("qd.ndrange takes one or more extents.",
                      "Use qd.ndrange(n, m) or qd.ndrange((begin, end), m).", call)
        bounds = []
        for a in call.args:
            v = self.expr(a)
            if isinstance(v, tuple):
                if len(v) != 2:
                    self.fail("An ndrange axis is an extent n or a pair (begin, end).",
                              "Use qd.ndrange((1, n - 1), m).", a)
                lo = self.int_operand(v[0], a, "An ndrange bound")
                hi = self.int_operand(v[1], a, "An ndrange bound")
            else:
                lo, hi = 0, self.int_operand(v, a, "An ndrange extent")
            dtype, weak = self.common(lo, hi)
            bounds.append((self.cast_to(lo, dtype), self.cast_to(hi, dtype), weak))
        names = self.target_names(node.target)
        if len(names) != len(bounds):
            self.fail(f"qd.ndrange has {len(bounds)} axes but the loop has {len(names)} "
                      "variables.", f"Use one name per axis: for {', '.join('ijkl'[:len(bounds)])} "
                      "in qd.ndrange(...).", node.target)
        if self.top and not self.in_parallel:
            if len(bounds) > MAX_NEST:
                self.fail(f"A parallel qd.ndrange has at most {MAX_NEST} axes; got "
                          f"{len(bounds)}.", "Loop over the extra axes inside the body.", call)
            self.parallel_ndrange(node, bounds, names)
        else:
            self.nested_ndrange(node, bounds, names, 0)

    def parallel_ndrange(self, node: ast.For, bounds: list[Any], names: tuple[str, ...],
                         axis: int = 0) -> None:
        """A perfect nest of parallel loops, one per axis: each index tuple is a thread."""
        lo, hi, weak = bounds[axis]
        last = axis == len(bounds) - 1

        def bind(index: Value) -> None:
            self.ctx.scope.bind(names[axis], TVal(index, weak))

        inner = None if last else (lambda: self.parallel_ndrange(node, bounds, names, axis + 1))
        self.loop(node, lo, hi, bind, names[axis:axis + 1], kind="parallel", inner=inner)

    def nested_ndrange(self, node: ast.For, bounds: list[Any], names: tuple[str, ...],
                       axis: int) -> None:
        lo, hi, weak = bounds[axis]
        last = axis == len(bounds) - 1

        def bind(index: Value) -> None:
            self.ctx.scope.bind(names[axis], TVal(index, weak))

        inner = None if last else (lambda: self.nested_ndrange(node, bounds, names, axis + 1))
        kind = "ndrange" if len(bounds) > 1 else None
        self.loop(node, lo, hi, bind, names[axis:axis + 1], kind=kind, inner=inner)

    # -- static ---------------------------------------------------------------------------

    def static_eval(self, node: ast.expr) -> Any:
        """Evaluate `node` as Python while the kernel compiles (qd.static, annotations)."""
        namespace: dict[str, Any] = {}
        runtime = set()
        for name, value in self.ctx.scope.names.items():
            if type(value) in (TVal, VarRef):
                runtime.add(name)
            else:
                namespace[name] = value
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in runtime:
                self.fail(f"qd.static(...) needs compile-time values, but '{n.id}' is a value "
                          "computed when the kernel runs.",
                          "Use a Python constant, a global, or a value derived from array "
                          "shapes' ndim/dtype.", n)
        src = self.ctx.src
        scope = {**src.globals, **src.closure}
        if self.recorder is not None:
            self.recorder.static(src, node, namespace, scope)
        env = {**scope, **namespace}
        expr = ast.Expression(body=node)
        ast.fix_missing_locations(expr)
        try:
            value = eval(compile(expr, src.file, "eval"), env)  # noqa: S307
        except Exception as exc:  # noqa: BLE001 - reported with the kernel's location
            self.fail(f"Evaluating `{ast.unparse(node)}` when the kernel compiles failed: "
                      f"{type(exc).__name__}: {exc}.",
                      "Use only compile-time values (constants, globals, ndim, dtype).", node)
        return value

    def static_loop(self, node: ast.For, iterable: Any) -> None:
        try:
            items = list(iterable)
        except TypeError:
            self.fail(f"qd.static(...) of {describe(iterable)} is not iterable.",
                      "Use qd.static(range(n)) or a tuple.", node.iter)
        if len(items) > MAX_UNROLL:
            self.fail(f"qd.static unrolls {len(items)} iterations; the limit is {MAX_UNROLL}.",
                      "Use a dynamic range(...) loop.", node.iter)
        names = self.target_names(node.target)
        ctx = self.ctx
        guard = ctx.ret is not None and contains_return(node) and not self.dynamic_loops()
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
                    self.fail(f"Cannot unpack {item!r} into {len(names)} names.",
                              "Use one loop variable per tuple element.", node.target)
                for name, value in zip(names, values, strict=True):
                    ctx.scope.bind(name, self.python_value(value, repr(value), node))
                if guard and k > 0:
                    flag = self.emit(Op.LOAD_VAR, (), (ctx.ret.flag,), _dtypes.bool)  # type: ignore
                    self.guarded_iteration(flag, node)  # type: ignore[arg-type]
                else:
                    self.body(node.body)
        finally:
            ctx.loops.pop()

    def guarded_iteration(self, flag: Value, node: ast.For) -> None:
        go = self.emit(Op.NOT, (flag,), (), _dtypes.bool)
        scope0 = self.ctx.scope
        self.ctx.scope = scope0.copy()
        with self.region() as stmts:
            self.body(node.body)
        self.ctx.scope = scope0
        self.emit_stmt(If(go, self.block(stmts), self.block([]), self.loc(node)))  # type: ignore

    # -- while ----------------------------------------------------------------------------

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            self.fail("while ... else is not supported in kernels.",
                      "Use a flag variable set before break.", node)
        ctx = self.ctx
        saved_top = self.top
        self.top = False
        scope0 = ctx.scope
        with self.region() as cond_stmts:
            cond = self.to_bool(self.expr(node.test), node.test)
            if is_const(cond):
                if not cond:
                    self.top = saved_top
                    return
                cond = self.const(True, _dtypes.bool)
        ctx.scope = scope0.copy()
        ctx.loops.append(Loop("serial", node.lineno, ()))
        try:
            with self.region() as body_stmts:
                self.body(node.body)
        finally:
            ctx.loops.pop()
            self.top = saved_top
        ctx.scope = after_loop(scope0, ctx.scope, node.lineno, ())
        self.emit_stmt(While(self.block(cond_stmts), cond.value, self.block(body_stmts),
                             self.loc(node.test)))

