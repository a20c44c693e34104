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
from ..ir import Break, Continue, If, Op, Value
from .exprs import BINOPS, ExprVisitor
from .scope import MISSING, merge
from .values import MemRef, TVal, VarRef, describe, is_const

_UNSUPPORTED_STMT: dict[str, str] = {
    "With": "Kernels have no context managers; write the statements directly.",
    "AsyncWith": "Kernels have no context managers; write the statements directly.",
    "Try": "Kernels cannot catch exceptions; check conditions with if, and use debug mode "
           "(qd.set_debug(True)) to find out-of-bounds accesses.",
    "Raise": "Kernels cannot raise; use debug mode (qd.set_debug(True)) to check indices, or "
             "write an error flag into an output array.",
    "Assert": "Use debug mode (qd.set_debug(True)) for index checks, or write a flag into an "
              "output array.",
    "FunctionDef": "Define helpers at module level with @qd.func.",
    "AsyncFunctionDef": "Define helpers at module level with @qd.func.",
    "ClassDef": "Define classes outside kernels; pass frozen dataclass instances as arguments.",
    "Global": "Pass values as kernel arguments.",
    "Nonlocal": "Pass values as kernel arguments.",
    "Delete": "Locals live until the kernel ends; just stop using the name.",
    "Import": "Import at module level.",
    "ImportFrom": "Import at module level.",
    "Match": "Use if / elif / else.",
    "AsyncFor": "Use a plain for loop.",
    "TypeAlias": "Define type aliases outside kernels.",
}


def contains_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


class StmtVisitor(ExprVisitor):
    """`visit_<Node>` for statements other than loops."""

    static_eval: Any  # loops.LoopVisitor.static_eval

    def stmt(self, node: ast.stmt) -> None:
        self.node = node
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None or not isinstance(node, ast.stmt):
            name = type(node).__name__
            hint = _UNSUPPORTED_STMT.get(name, "See docs/kernels.md for the kernel language.")
            self.fail(f"{name} statements are not supported in kernels.", hint, node)
        method(node)

    def body(self, stmts: list[ast.stmt]) -> None:
        for k, node in enumerate(stmts):
            if self.ctx.scope.terminated:
                return  # unreachable code after break / continue / return
            self.stmt(node)
            ret = self.ctx.ret
            if (ret is None or isinstance(node, ast.Return) or self.ctx.scope.terminated
                    or not contains_return(node)):
                continue
            self.node = node
            returned = TVal(self.emit(Op.LOAD_VAR, (), (ret.flag,), _dtypes.bool))  # type: ignore
            if self.dynamic_loops():
                self.emit_stmt(If(returned.value, self.block([Break(self.loc())]),
                                  self.block([]), self.loc()))
                continue
            rest = stmts[k + 1:]
            if rest:
                self.guarded(returned, rest)
            return

    def guarded(self, returned: TVal, stmts: list[ast.stmt]) -> None:
        """Build `stmts` under `if not returned`."""
        go = TVal(self.emit(Op.NOT, (returned.value,), (), _dtypes.bool))  # type: ignore
        scope0 = self.ctx.scope
        self.ctx.scope = scope0.copy()
        with self.region() as stmts_ir:
            self.body(stmts)
        self.ctx.scope = merge(self.ctx.scope, scope0, getattr(stmts[0], "lineno", 0))
        self.emit_stmt(If(go.value, self.block(stmts_ir), self.block([]), self.loc()))

    def dynamic_loops(self) -> bool:
        return any(loop.kind != "static" for loop in self.ctx.loops)

    # -- simple statements ------------------------------------------------------------------

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        self.expr(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            self.fail("A declaration without a value is not supported in kernels.",
                      "Assign a value: x: qd.float32 = 0.0.", node)
        if not isinstance(node.target, ast.Name):
            self.fail("Only plain names can be annotated in kernels.",
                      "Use x: qd.float32 = value.", node)
        dtype = self.static_eval(node.annotation)
        value = self.expr(node.value)
        if isinstance(dtype, _dtypes.DType):
            if dtype not in T.KERNEL_DTYPES:
                self.type_fail(f"{dtype.name} is not a kernel scalar type.",
                               "Use bool, an integer type, float32 or float64.", node)
            value = self.implicit(value, dtype, "same_kind", f"Local '{node.target.id}'")
        self.assign(node.target, value)

    def assign(self, target: ast.AST, value: Any) -> None:
        self.node = target
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, ast.Subscript):
            ref, indices = self.memory_access(self.expr(target.value), self.expr(target.slice),
                                              target.slice)
            self.store(ref, indices, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                n = len(value) if isinstance(value, tuple) else "a non-tuple"
                self.fail(f"Cannot unpack {n} values into {len(target.elts)} names.",
                          "Use a tuple of the same length on the right.", target)
            for t, v in zip(target.elts, value, strict=True):
                self.assign(t, v)
        elif isinstance(target, ast.Attribute):
            self.fail("Fields of dataclass arguments are read-only in kernels.",
                      "Use a local variable, or store into an array field: p.x[i] = v.", target)
        else:
            self.fail(f"Cannot assign to {type(target).__name__} in kernels.",
                      "Assign to a name or an array element.", target)

    def store(self, ref: Any, indices: tuple[TVal, ...], value: Any, node: ast.AST) -> None:
        what = f"An element of {describe(ref)}"
        v = self.implicit(value, ref.dtype, "same_kind", what)
        self.emit(Op.STORE, (ref.value,) + tuple(i.value for i in indices) + (v.value,))
        self.note_write(ref)

    def assign_name(self, name: str, value: Any, node: ast.AST) -> None:
        ctx = self.ctx
        for loop in ctx.loops:
            if name in loop.names:
                self.fail(f"'{name}' is the variable of the loop at line {loop.line}; it "
                          "cannot be assigned in the loop body.",
                          "Try a new local name for the value.", node)
        if not ctx.is_mutable(name):
            ctx.scope.bind(name, value)
            return
        if type(value) is not TVal and not is_const(value):
            self.type_fail(f"'{name}' is assigned more than once, so it must hold a scalar; "
                           f"got {describe(value)}.",
                           "Use a different name for each array or compile-time value.", node)
        ref = ctx.vars.get(name)
        bound = ctx.scope.names.get(name, MISSING) is ref
        if ref is not None and self.in_parallel and ref.var.id in self.outer_vars:
            if bound:
                self.fail(f"'{name}' is defined outside the parallel loop, so threads cannot "
                          "assign it (the threads run in no particular order).",
                          "Use a new local inside the loop, or accumulate into an array "
                          "element with += (atomic), e.g. out[0] += v.", node)
            ref = None  # not bound here: this is a fresh local of each thread
        if ref is None:
            dtype = value.dtype if type(value) is TVal else T.WEAK_DEFAULT[type(value)]
            ref = VarRef(self.new_var(name, dtype), getattr(node, "lineno", 0))
            ctx.vars[name] = ref
        v = self.implicit(value, ref.var.dtype, "safe", f"Local '{name}'")  # type: ignore[arg-type]
        self.emit(Op.STORE_VAR, (v.value,), (ref.var,))
        ctx.scope.bind(name, ref)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        op = BINOPS.get(type(node.op))
        if op is None:
            self.fail("The @= operator is not supported in kernels.", "Use loops.", node)
        target = node.target
        if isinstance(target, ast.Name):
            current = self.lookup(target.id, target)
            self.assign_name(target.id, self.binop(op, current, self.expr(node.value), node),
                             target)
            return
        if isinstance(target, ast.Attribute):
            self.fail("Fields of dataclass arguments are read-only in kernels.",
                      "Use a local variable.", target)
        if not isinstance(target, ast.Subscript):
            self.fail(f"Cannot update {type(target).__name__} in kernels.",
                      "Update a name or an array element.", target)
        self.node = target
        ref, indices = self.memory_access(self.expr(target.value), self.expr(target.slice),
                                          target.slice)
        value = self.expr(node.value)
        if op in (Op.ADD, Op.SUB) and self.in_parallel:
            self.atomic_update(ref, indices, op, value, node)
            return
        self.node = target
        old = self.load(ref, indices)
        self.store(ref, indices, self.binop(op, old, value, node), target)

    def atomic_update(self, ref: MemRef, indices: tuple[TVal, ...], op: Op, value: Any,
                      node: ast.AST) -> None:
        """`x[i] += v` / `x[i] -= v` in the parallel loop: one ATOMIC_ADD."""
        self.require_scalar(value, node)
        dtype = ref.dtype
        if dtype.kind == "b":
            self.type_fail(f"+= and -= on bool array '{ref.name}' are not supported.",
                           "Use an integer array.", node)
        common, _ = self.common(TVal(Value(-1, dtype)), value)  # a typed stand-in for x[i]
        if not T.can_cast(common, dtype, "same_kind"):
            self.type_fail(
                f"An element of {describe(ref)} has type {dtype.name}, but adding "
                f"{describe(value)} gives {common.name}.",
                f"Use qd.{dtype.name}(...) or int(...) to convert the value explicitly.", node)
        v = self.cast_to(value, dtype)
        if op is Op.SUB:
            v = TVal(self.emit(Op.NEG, (v.value,), (), dtype))  # type: ignore[arg-type]
        self.emit(Op.ATOMIC_ADD, (ref.value,) + tuple(i.value for i in indices) + (v.value,),
                  (), dtype)
        self.note_write(ref)

    # -- if / break / continue / return ---------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        cond = self.to_bool(self.expr(node.test), node.test)
        if is_const(cond):
            self.body(node.body if cond else node.orelse)
            return
        top = self.top
        self.top = False
        scope0 = self.ctx.scope
        self.ctx.scope = scope0.copy()
        with self.region() as then_stmts:
            self.body(node.body)
        then_scope = self.ctx.scope
        self.ctx.scope = scope0.copy()
        with self.region() as else_stmts:
            self.body(node.orelse)
        self.ctx.scope = merge(then_scope, self.ctx.scope, node.lineno)
        self.top = top
        self.node = node.test
        self.emit_stmt(If(cond.value, self.block(then_stmts), self.block(else_stmts),
                          self.loc(node.test)))

    def visit_Break(self, node: ast.Break) -> None:
        self.loop_exit(node, "break")
        self.emit_stmt(Break(self.loc(node)))
        self.ctx.scope.terminated = True

    def visit_Continue(self, node: ast.Continue) -> None:
        self.loop_exit(node, "continue")
        self.emit_stmt(Continue(self.loc(node)))
        self.ctx.scope.terminated = True

    def loop_exit(self, node: ast.AST, word: str) -> None:
        if not self.ctx.loops:
            self.fail(f"'{word}' outside a loop.", "Use it inside a for or while loop.", node)
        loop = self.ctx.loops[-1]
        if loop.kind == "static":
            self.fail(f"'{word}' in a qd.static loop is not supported (the loop is unrolled "
                      "when the kernel compiles).", "Use if statements on the static loop "
                      "variable instead.", node)
        if word == "break" and loop.kind == "parallel":
            self.fail("'break' is not allowed in the parallel loop: its iterations are "
                      "threads that run in no particular order.",
                      "Use 'continue' to end this thread's iteration, or an if statement.",
                      node)
        if word == "break" and loop.kind == "ndrange":
            self.fail("'break' in a multi-dimensional qd.ndrange loop is not supported.",
                      "Use nested range loops, or a flag and 'continue'.", node)

    def visit_Return(self, node: ast.Return) -> None:
        ctx = self.ctx
        if ctx.is_kernel:
            self.fail("Kernels cannot return values or return early.",
                      "Write results into an output array argument; use 'continue' to end a "
                      "thread's iteration early.", node)
        value = None if node.value is None else self.expr(node.value)
        ret = ctx.ret
        if ret is None:  # the single, final return of the func
            self.func_result = value
            ctx.scope.terminated = True
            return
        has_value = value is not None
        if ret.has_value is None:
            ret.has_value = has_value
        elif ret.has_value != has_value:
            self.fail(f"func '{ctx.name}' returns a value on some paths only.",
                      "Return a value from every return statement.", node)
        if has_value:
            if ret.result is None:
                if type(value) is not TVal and not is_const(value):
                    self.type_fail(
                        f"func '{ctx.name}' has several return statements, so it must return "
                        f"a scalar; got {describe(value)}.",
                        "Use a single return at the end of the func to return other values.",
                        node)
                dtype = value.dtype if type(value) is TVal else T.WEAK_DEFAULT[type(value)]
                ret.result = VarRef(self.new_var(f"{ctx.name}_result", dtype), node.lineno)
            v = self.implicit(value, ret.result.var.dtype, "safe",  # type: ignore[arg-type]
                              f"The result of func '{ctx.name}'")
            self.emit(Op.STORE_VAR, (v.value,), (ret.result.var,))
        true = self.const(True, _dtypes.bool)
        self.emit(Op.STORE_VAR, (true.value,), (ret.flag,))
        if self.dynamic_loops():
            self.emit_stmt(Break(self.loc(node)))
        ctx.scope.terminated = True

