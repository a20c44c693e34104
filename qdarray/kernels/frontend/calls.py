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
from .. import language, qdmath
from .. import types as T
from ..func import Func, Function
from ..ir import Op
from .loops import LoopVisitor
from .scope import FuncCtx, ReturnState, Scope
from .values import MemRef, PartialIndex, TVal, ViewMethod, describe, is_const

_ATOMICS = {language.atomic_add: Op.ATOMIC_ADD, language.atomic_min: Op.ATOMIC_MIN,
            language.atomic_max: Op.ATOMIC_MAX}
_BINARY_MATH = {Op.ATAN2, Op.HYPOT, Op.COPYSIGN, Op.FMOD}
_PREDICATES = {Op.ISNAN, Op.ISINF, Op.ISFINITE}
_CASTS = {builtins.int: _dtypes.int64, builtins.float: _dtypes.float64,
          builtins.bool: _dtypes.bool}


_NUMPY_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "rint": "round",
                "minimum": "min", "maximum": "max", "absolute": "abs", "power": "pow"}


def _math_table() -> dict[Any, Op]:
    """Every callable that compiles to a math op: qd.math, Python's math, NumPy."""
    table: dict[Any, Op] = dict(qdmath.OPS)
    by_name = {fn.__name__: op for fn, op in qdmath.OPS.items()}
    for name, op in by_name.items():
        if name in ("min", "max", "abs", "pow", "round"):
            continue  # Python's math has none of these with NumPy semantics
        fn = getattr(math, name, None)
        if fn is not None:
            table[fn] = op
    for np_name in list(by_name) + list(_NUMPY_NAMES):
        fn = getattr(np, np_name, None)
        if fn is not None:
            table[fn] = by_name[_NUMPY_NAMES.get(np_name, np_name)]
    return table


_MATH: dict[Any, Op] | None = None
_BY_NAME = {fn.__name__: op for fn, op in qdmath.OPS.items()}


def _namespace_op(fn: Any) -> Op | None:
    """The math op of one of the array namespace's elementwise functions (qd.sin,
    qd.maximum, ...), known by its module (a private module of qdarray) and name: the kernel
    compiler sits below the namespace and does not import it. qd.min / qd.max are
    reductions, not the binary min / max."""
    name = getattr(fn, "__name__", "")
    if (name in ("min", "max") or not callable(fn)
            or not getattr(fn, "__module__", "").startswith("qdarray._")):
        return None
    return _BY_NAME.get(_NUMPY_NAMES.get(name, name))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


class CallVisitor(LoopVisitor):
    """`visit_Call`: everything a kernel may call."""

    func_result: Any = None

    def visit_Call(self, node: ast.Call) -> Any:
        global _MATH
        callee = self.expr(node.func)
        if isinstance(callee, Func):
            return self.inline(callee, node)
        if type(callee) is ViewMethod:
            return self.call_view_method(callee, node)
        if isinstance(callee, Function):  # a kernel
            self.fail(f"Kernels cannot call kernels ('{callee.fn.__name__}').",
                      "Decorate the helper with @qd.func instead of @qd.kernel.", node)
        if callee is language.static:
            if len(node.args) != 1 or node.keywords:
                self.fail("qd.static takes one argument.", "Use qd.static(expr).", node)
            return self.python_value(self.static_eval(node.args[0]), "qd.static(...)", node)
        if node.keywords:
            self.fail(f"Keyword arguments are not supported when calling {describe(callee)}.",
                      "Pass the arguments by position.", node)
        if isinstance(callee, DType):
            return self.explicit_cast(callee, node)
        if callee in _CASTS:
            return self.explicit_cast(_CASTS[callee], node, python=callee)
        if callee is language.cast:
            if len(node.args) != 2:
                self.fail("qd.cast takes (value, dtype).", "Use qd.cast(x, qd.float32).", node)
            dtype = self.expr(node.args[1])
            if not isinstance(dtype, DType):
                dtype = _dtypes.normalize_dtype(self.static_eval(node.args[1]))
            return self.explicit_cast(dtype, node, node.args[:1])
        if callee in _ATOMICS:
            return self.atomic(_ATOMICS[callee], node)
        if callee is language.select:
            return self.select(node)
        if callee is qdmath.clip:
            x, lo, hi = self.args(node, 3)
            return self.minmax(Op.MIN, self.minmax(Op.MAX, x, lo, node), hi, node)
        if callee in (builtins.min, builtins.max):
            vals = self.args(node, None)
            if len(vals) < 2:
                self.fail(f"{callee.__name__}() in kernels takes two or more scalars.",
                          f"Use {callee.__name__}(a, b).", node)
            op = Op.MIN if callee is builtins.min else Op.MAX
            out = vals[0]
            for v in vals[1:]:
                out = self.minmax(op, out, v, node)
            return out
        if callee is builtins.len:
            (x,) = self.args(node, 1)
            if type(x) is MemRef:
                return self.shape(x, 0)
            if isinstance(x, tuple):
                return len(x)
            self.type_fail(f"len() of {describe(x)} is not defined in kernels.",
                           "Use len(x) on arrays (their first extent) or tuples.", node)
        if callee is builtins.abs:
            return self.math_call(Op.ABS, node)
        if callee is builtins.pow:
            a, b = self.args(node, 2)
            return self.binop(Op.POW, a, b, node)
        if callee is builtins.round:
            self.fail("round() is not supported in kernels (Python's returns an int).",
                      "Use qd.math.round(x) (halves to even, a float), or int(qd.math.round(x)).",
                      node)
        if callee is builtins.print:
            self.fail("print() is not supported in kernels.",
                      "Write values into an output array and print them after the launch.",
                      node)
        if callee in (builtins.range, language.ndrange):
            self.fail(f"{callee.__name__}() can only be the iterable of a for loop.",
                      f"Use `for i in {callee.__name__}(...)`.", node)
        if _MATH is None:
            _MATH = _math_table()
        try:
            math_op = _MATH.get(callee)
        except TypeError:  # unhashable callee
            math_op = None
        if math_op is None:
            math_op = _namespace_op(callee)
        if math_op is not None:
            return self.math_call(math_op, node)
        self.fail(f"Cannot call {describe(callee)} in a kernel.",
                  "Kernels can call @qd.func functions, qd.math functions, casts such as "
                  "qd.float32(x), and qd.atomic_*; decorate Python helpers with @qd.func.",
                  node)

    def args(self, node: ast.Call, n: int | None) -> list[Any]:
        if n is not None and len(node.args) != n:
            self.fail(f"This call takes {_count(n, 'argument')}; got {len(node.args)}.",
                      "Check the call's arguments.", node)
        return [self.expr(a) for a in node.args]

    # -- casts ----------------------------------------------------------------------------

    def explicit_cast(self, dtype: DType, node: ast.Call, arg_nodes: list[ast.expr] | None = None,
                      python: Any = None) -> Any:
        """`qd.float32(x)`, `qd.cast(x, dtype)`; `int(x)` / `float(x)` / `bool(x)` when
        `python` is that builtin (of a constant they give a Python constant, as in Python)."""
        arg_nodes = node.args if arg_nodes is None else arg_nodes
        if len(arg_nodes) != 1:
            self.fail(f"A cast to {dtype.name} takes one value.", f"Use qd.{dtype.name}(x).",
                      node)
        if dtype not in T.KERNEL_DTYPES:
            self.type_fail(f"{dtype.name} is not a kernel scalar type.",
                           "Use bool, an integer type, float32 or float64.", node)
        x = self.expr(arg_nodes[0])
        self.require_scalar(x, arg_nodes[0])
        if is_const(x) and python is not None:
            return python(x)
        if is_const(x):
            if dtype.kind in "iu" and isinstance(x, float):
                x = int(x)
            return self.const(x, dtype)
        return self.cast_to(x, dtype)

    # -- math -----------------------------------------------------------------------------

    def minmax(self, op: Op, a: Any, b: Any, node: ast.AST) -> Any:
        self.require_scalar(a, node)
        self.require_scalar(b, node)
        if is_const(a) and is_const(b):
            return min(a, b) if op is Op.MIN else max(a, b)
        dtype, weak = self.common(a, b)
        if dtype.kind == "b":
            self.type_fail("min/max of two bools is not supported.",
                           "Use `and` / `or`.", node)
        va, vb = self.cast_to(a, dtype), self.cast_to(b, dtype)
        return TVal(self.emit(op, (va.value, vb.value), (), dtype), weak)  # type: ignore

    def math_call(self, op: Op, node: ast.Call) -> Any:
        binary = op in _BINARY_MATH or op in (Op.POW, Op.MIN, Op.MAX)
        vals = self.args(node, 2 if binary else 1)
        for v, a in zip(vals, node.args, strict=True):
            self.require_scalar(v, a)
        if op in (Op.MIN, Op.MAX):
            return self.minmax(op, vals[0], vals[1], node)
        if op is Op.POW:
            return self.binop(Op.POW, vals[0], vals[1], node)
        if all(is_const(v) for v in vals):
            return self.fold_math(op, vals, node)
        if binary:
            dtype, weak = self.common(vals[0], vals[1])
        else:
            x = vals[0]
            dtype, weak = x.dtype, x.weak
        if op is Op.ABS:
            if dtype.kind == "b":
                self.type_fail("abs() of a bool is not supported.", "Use int(x).", node)
        elif dtype.kind != "f":
            dtype = _dtypes.float64
        args = tuple(self.cast_to(v, dtype).value for v in vals)
        rtype = _dtypes.bool if op in _PREDICATES else dtype
        return TVal(self.emit(op, args, (), rtype), weak)  # type: ignore[arg-type]

    def fold_math(self, op: Op, vals: list[Any], node: ast.AST) -> Any:
        """A math function of constants is a constant (computed in float64, like Python)."""
        from ..ops import OPS

        rt = _dtypes.bool if op in _PREDICATES else _dtypes.float64
        if op is Op.ABS:
            return builtins.abs(vals[0])
        with np.errstate(all="ignore"):
            out = OPS[op].impl(rt, (), *(np.float64(v) for v in vals))  # type: ignore[misc]
        return builtins.bool(out) if rt is _dtypes.bool else float(out)

    # -- atomics and select ---------------------------------------------------------------

    def atomic(self, op: Op, node: ast.Call) -> TVal:
        name = op.name.lower()
        if len(node.args) == 2 and isinstance(node.args[0], ast.Subscript):
            target = node.args[0]
            base = self.expr(target.value)
            if type(base) not in (MemRef, PartialIndex):
                self.type_fail(f"qd.{name} updates an array element; got {describe(base)}.",
                               f"Use qd.{name}(x[i], value).", target)
            ref, indices = self.memory_access(base, self.expr(target.slice), target.slice)
        elif len(node.args) == 3:
            base = self.expr(node.args[0])
            if type(base) is not MemRef:
                self.type_fail(f"qd.{name} updates an array element; got {describe(base)}.",
                               f"Use qd.{name}(x, i, value).", node.args[0])
            ref, indices = self.memory_access(base, self.expr(node.args[1]), node.args[1])
        else:
            self.fail(f"qd.{name} takes an array element and a value.",
                      f"Use qd.{name}(x[i], value) or qd.{name}(x, i, value).", node)
        if ref.dtype.kind == "b":
            self.type_fail(f"qd.{name} on bool array '{ref.name}' is not supported.",
                           "Use an integer array.", node)
        value = self.expr(node.args[-1])
        v = self.implicit(value, ref.dtype, "same_kind", f"The value of qd.{name}")
        self.node = node
        old = self.emit(op, (ref.value,) + tuple(i.value for i in indices) + (v.value,), (),
                        ref.dtype)
        self.note_write(ref)
        return TVal(old)  # type: ignore[arg-type]

    def select(self, node: ast.Call) -> Any:
        c, a, b = self.args(node, 3)
        cond = self.to_bool(c, node.args[0])
        self.require_scalar(a, node.args[1])
        self.require_scalar(b, node.args[2])
        if is_const(cond):
            return a if cond else b
        dtype, weak = self.common(a, b)
        va, vb = self.cast_to(a, dtype), self.cast_to(b, dtype)
        return TVal(self.emit(Op.SELECT, (cond.value, va.value, vb.value), (), dtype), weak)  # type: ignore

    # -- @qd.func -------------------------------------------------------------------------

    def inline(self, func: Any, node: ast.Call) -> Any:
        """Build the func's body in place, with its parameters bound to the call's values."""
        if func in self.inline_stack:
            self.fail(f"func '{func.__name__}' calls itself; recursion is not supported in "
                      "kernels.", "Use a loop.", node)
        src = func.source()
        if self.recorder is not None:
            self.recorder.enter(func, src)
        annotations = func.annotations()
        try:
            bound = inspect.signature(func.fn).bind(
                *[self.expr(a) for a in node.args],
                **{k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None})
        except TypeError as exc:
            self.fail(f"Cannot call func '{func.__name__}': {exc}.",
                      "Check the call's arguments against the func's parameters.", node)
        bound.apply_defaults()
        ctx = FuncCtx(src, Scope(), self.ctx.stack + (self.frame(node),), is_kernel=False,
                      params=frozenset(bound.arguments))
        caller, saved_top, saved_result = self.ctx, self.top, self.func_result
        values = {}
        for name, value in bound.arguments.items():
            values[name] = self.func_argument(func, name, value, annotations.get(name), node)
        self.ctx, self.top, self.func_result = ctx, False, None
        self.inline_stack.append(func)
        try:
            self.node = src.tree
            for name, value in values.items():
                if src.assign_counts[name]:
                    self.assign_name(name, value, src.tree)  # a parameter it reassigns: a local
                else:
                    ctx.scope.bind(name, value)
            tail = len(src.returns) == 1 and src.tree.body[-1] is src.returns[0]
            if src.returns and not tail:
                if any(r.value is not None for r in src.returns) and not isinstance(
                        src.tree.body[-1], ast.Return):
                    self.fail(f"func '{func.__name__}' returns a value on some paths but does "
                              "not end with a return.",
                              "End the func with a return statement.", src.tree.body[-1])
                flag = self.new_var(f"{func.__name__}_returned", _dtypes.bool)
                self.emit(Op.STORE_VAR, (self.const(False, _dtypes.bool).value,), (flag,))
                ctx.ret = ReturnState(flag)
            self.body(src.tree.body)
            result = self.func_result
            if ctx.ret is not None and ctx.ret.result is not None:
                var = ctx.ret.result.var
                result = TVal(self.emit(Op.LOAD_VAR, (), (var,), var.dtype))  # type: ignore
        finally:
            self.inline_stack.pop()
            self.ctx, self.top, self.func_result = caller, saved_top, saved_result
        return result

    def func_argument(self, func: Any, name: str, value: Any, ann: Any, node: ast.AST) -> Any:
        if ann is None:
            return value
        from ..._array import Array
        from ...buffer_view import BufferView

        if ann is Array:
            ann = T.ArrayAnnotation(None, None)
        elif ann is BufferView:
            ann = T.ViewAnnotation(None)
        if isinstance(ann, DType):
            return self.implicit(value, ann, "safe", f"Parameter '{name}' of func "
                                                     f"'{func.__name__}'")
        if ann in (builtins.int, builtins.float, builtins.bool):
            return self.implicit(value, T.WEAK_DEFAULT[ann], "safe",
                                 f"Parameter '{name}' of func '{func.__name__}'")
        if isinstance(ann, (T.ArrayAnnotation, T.ViewAnnotation)):
            if type(value) is not MemRef or not ann.accepts(value.value.type):
                got = describe(value) if type(value) is not MemRef else \
                    T.type_str(value.value.type)
                self.type_fail(f"Parameter '{name}' of func '{func.__name__}' expects "
                               f"{ann!r}; got {got}.", "Pass a matching array.", node)
        return value

