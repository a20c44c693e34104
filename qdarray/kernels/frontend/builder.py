"""The frontend's visitor: one `Builder` per kernel compile walks the kernel's Python AST
and emits typed IR.

The Builder owns the state of a compile (the function being built and its scopes, the open
regions, the written parameters) and the operations every construct uses: emission, source
locations, errors, constants and conversions, names, memory references, compile-time
evaluation. It hands each AST node to the helper of its construct (`visitors`: one function
per node type, from `exprs.py`, `stmts.py`, `loops.py` and `calls.py`; `views.py` builds
kernel-side subviews); a node without one is rejected with a message that says what to use
instead.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Literal, NoReturn

import numpy as np

from ... import _dtypes
from ..._array import Array
from ..._dtypes import DType
from .. import types as T
from ..emit import Emitter
from ..ir import Block, Break, Frame, If, Op, SourceLoc, Stmt, Value, Var
from ..vector_types import VectorType
from .diagnostics import CompileError
from .scope import MISSING, FuncCtx, merge
from .values import (
    PY_CONSTANTS,
    MemRef,
    PartialIndex,
    SliceVal,
    StructVal,
    TVal,
    VarRef,
    VecVal,
    describe,
)

Visit = Callable[["Builder", Any], Any]
"""A construct's helper: `visit(builder, node)` builds an AST node (expressions return their
value)."""

# Why a construct is not in the kernel language, and what to use instead.
UNSUPPORTED_EXPR: dict[str, str] = {
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

UNSUPPORTED_STMT: dict[str, str] = {
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


def _count(n: int, noun: str) -> str:
    """`1 index`, `2 indices`, `1 dimension`, `3 dimensions`."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {'indices' if noun == 'index' else noun + 's'}"


class Builder:
    """Builds the IR of one kernel for one signature (see the module docstring)."""

    ctx: FuncCtx

    def __init__(self, kernel_name: str, visitors: dict[type, Visit]) -> None:
        self.kernel_name = kernel_name
        self.visitors = visitors
        self.func_result: Any = None  # the value of a func's single final return
        self.em = Emitter(0, 0)  # ids and open regions (kernels/emit.py)
        self.node: ast.AST | None = None
        self.top = True            # building the kernel's top-level statement list
        self.in_parallel = False   # building the body of the parallel loop
        self.outer_vars: set[int] = set()
        self.written: set[str] = set()
        self.inline_stack: list[Any] = []
        self.recorder: Any = None  # env.Recorder: what the compile reads from Python

    # -- dispatch -----------------------------------------------------------------------

    def expr(self, node: ast.AST) -> Any:
        """The value of an expression."""
        saved = self.node
        self.node = node
        try:
            visit = self.visitors.get(type(node))
            if visit is None or not isinstance(node, ast.expr):
                name = type(node).__name__
                hint = UNSUPPORTED_EXPR.get(name, "Use the kernel language's scalar "
                                            "expressions (see docs/kernels.md).")
                self.fail(f"{name} expressions are not supported in kernels.", hint)
            return visit(self, node)
        finally:
            self.node = saved

    def stmt(self, node: ast.stmt) -> None:
        """Build one statement."""
        self.node = node
        visit = self.visitors.get(type(node))
        if visit is None or not isinstance(node, ast.stmt):
            name = type(node).__name__
            hint = UNSUPPORTED_STMT.get(name, "See docs/kernels.md for the kernel language.")
            self.fail(f"{name} statements are not supported in kernels.", hint, node)
        visit(self, node)

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

    # -- values and instructions --------------------------------------------------------

    def new_value(self, t: Any) -> Value:
        return self.em.value(t)

    def new_var(self, name: str, dtype: DType) -> Var:
        return self.em.var(name, dtype)

    def load_var(self, var: Var) -> TVal | VecVal:
        """The value of a local (a vector or matrix for a Var of a vector type)."""
        v = self.emit(Op.LOAD_VAR, (), (var,), var.dtype)
        assert v is not None
        if isinstance(var.dtype, VectorType):
            return VecVal(v)
        return TVal(v)

    def loc(self, node: ast.AST | None = None) -> SourceLoc:
        node = node if node is not None else self.node
        if node is None:
            node = self.ctx.src.tree
        return self.ctx.src.loc(node, self.ctx.name, self.ctx.stack)

    def emit(self, op: Op, args: tuple[Value, ...], attrs: tuple[Any, ...] = (),
             rtype: Any = None) -> Value | None:
        return self.em.emit_typed(rtype, op, args, attrs, self.loc())

    def emit_stmt(self, stmt: Stmt) -> None:
        self.em.stmt(stmt)

    def region(self) -> AbstractContextManager[list[Stmt]]:
        """A nested region (`with kb.region() as stmts:`)."""
        return self.em.region()

    def reopen(self, stmts: list[Stmt]) -> AbstractContextManager[None]:
        """Append to a region built earlier again."""
        return self.em.reopen(stmts)

    def splice(self, stmts: list[Stmt]) -> None:
        self.em.out.extend(stmts)

    @staticmethod
    def block(stmts: list[Stmt]) -> Block:
        return Block(tuple(stmts))

    # -- errors -------------------------------------------------------------------------

    def fail(self, what: str, hint: str, node: ast.AST | None = None, kind: str = "syntax"
             ) -> NoReturn:
        raise CompileError(kind, what, hint, self.loc(node))

    def type_fail(self, what: str, hint: str, node: ast.AST | None = None) -> NoReturn:
        self.fail(what, hint, node, kind="type")

    # -- constants and conversions -------------------------------------------------------

    def weak_default(self, kind: type) -> DType:
        """The dtype a weak value of Python type `kind` (bool, int, float) takes where no
        other operand decides: a local, a result of two weak operands."""
        return self.ctx.default_float if kind is float else T.WEAK_DEFAULT[kind]

    def local_dtype(self, value: Any) -> DType:
        """The dtype of a new local (or func result) first assigned `value`: a typed value's
        own; for a literal or a weak float, the default of its kind (the default float)."""
        if type(value) is TVal:
            if value.weak and value.dtype.kind == "f":
                return self.ctx.default_float
            return value.dtype
        return self.weak_default(type(value))

    def promote_weak(self, strong: DType, kind: type) -> DType:
        """The dtype of `strong op weak` where the weak operand is a Python `kind`: NumPy's
        rule, except that a float with an integer or bool gives the default float."""
        if kind is float and strong.kind != "f":
            return self.ctx.default_float
        return T.promote_weak(strong, kind)

    def const(self, value: Any, dtype: DType) -> TVal:
        if dtype.kind in "iu":
            if isinstance(value, float) and not value.is_integer():
                self.type_fail(f"The constant {value!r} is not an integer, but {dtype.name} "
                               "is needed here.", "Use int(...) to truncate it explicitly.")
            value = int(value)
            if not T.literal_fits(value, dtype):
                self.type_fail(
                    f"The constant {value} does not fit in {dtype.name}.",
                    "Use a value in range, or cast the other operand to a wider type, "
                    "e.g. qd.int64(x).")
        elif dtype.kind == "f":
            value = float(value)
            if math.isfinite(value) and abs(value) > float(np.finfo(dtype._np).max):
                self.type_fail(f"The constant {value!r} is out of range for {dtype.name} "
                               "(it would become infinity).",
                               "Use a value in range, or compute in float64: qd.float64(x).")
        else:
            value = builtins.bool(value)
        return TVal(self.emit(Op.CONST, (), (value, dtype), dtype))  # type: ignore[arg-type]

    def cast_to(self, x: Any, dtype: DType) -> TVal:
        """Convert a scalar value to `dtype` (explicit conversion, no checks beyond literals)."""
        if type(x) in PY_CONSTANTS:
            if dtype.kind in "iu" and isinstance(x, float):
                x = int(x)
            return self.const(x, dtype)
        if type(x) is not TVal:
            self.type_fail(f"Cannot convert {describe(x)} to {dtype.name}.",
                           "Use a scalar value.")
        if x.dtype is dtype:
            return x
        return TVal(self.emit(Op.CAST, (x.value,), (dtype,), dtype))  # type: ignore[arg-type]

    def implicit(self, x: Any, dtype: DType, rule: Literal["safe", "same_kind"], what: str
                 ) -> TVal:
        """Convert for an assignment; `rule` is "safe" (locals) or "same_kind" (stores).

        Python literals and weak values convert when their kind fits (an int literal into a
        float, never a float literal into an int); typed values follow NumPy's can_cast.
        """
        if type(x) in PY_CONSTANTS:
            if dtype.kind in "iub" and isinstance(x, float):
                self.type_fail(
                    f"{what} has type {dtype.name}, but the value is the float {x!r}.",
                    "Use int(...) to truncate, or make it a float.")
            if dtype.kind == "b" and type(x) is not builtins.bool:
                self.type_fail(f"{what} has type bool, but the value is {x!r}.",
                               "Use a comparison such as x != 0.")
            return self.const(x, dtype)
        if type(x) is not TVal:
            self.type_fail(f"{what} needs a scalar value; got {describe(x)}.",
                           "Use a scalar expression.")
        if x.dtype is dtype:
            return x
        src = x.dtype
        if x.weak:
            ok = T.weak_kind(src) is not float or dtype.kind == "f"
            ok = ok and (dtype.kind != "b" or src.kind == "b")
        else:
            ok = T.can_cast(src, dtype, rule)
        if not ok:
            fix = "int(...)" if dtype.kind in "iu" else f"qd.{dtype.name}(...)"
            change = "narrows or changes its kind" if rule == "safe" else "changes its kind"
            self.type_fail(
                f"{what} has type {dtype.name}, but the value has type {src.name}, and "
                f"converting it {change}.", f"Use {fix} to convert explicitly.")
        return self.cast_to(x, dtype)

    def to_bool(self, x: Any, node: ast.AST) -> Any:
        """Truth value: a Python bool for constants, else a bool TVal (x != 0 for numbers)."""
        if type(x) in PY_CONSTANTS:
            return builtins.bool(x)
        if type(x) is not TVal:
            self.type_fail(f"The truth value of {describe(x)} is not defined in kernels.",
                           "Use a scalar condition.", node)
        if x.dtype is _dtypes.bool:
            return x
        zero = self.const(0, x.dtype)
        return TVal(self.emit(Op.NE, (x.value, zero.value), (), _dtypes.bool))  # type: ignore

    def index_value(self, x: Any, node: ast.AST) -> TVal:
        """An array index: an integer value; constants must be non-negative."""
        if type(x) is int:
            if x < 0:
                self.fail(f"Negative index {x}: kernels do not count from the end.",
                          "Use x[x.shape[0] - k] to index from the end.", node)
            return self.const(x, _dtypes.int64)
        if type(x) is TVal and x.dtype.kind in "iu":
            return x
        if type(x) is SliceVal:
            self.fail("Slices cannot be assigned or updated in kernels.",
                      "Assign element by element, e.g. for k in range(w.size): w[k] = value.",
                      node)
        self.type_fail(f"Array indices must be integers; got {describe(x)}.",
                       "Use int(...) to convert the index.", node)

    # -- names --------------------------------------------------------------------------

    def lookup(self, name: str, node: ast.AST) -> Any:
        value = self.ctx.scope.names.get(name, MISSING)
        if value is not MISSING:
            if type(value) is VarRef:
                return self.load_var(value.var)
            return value
        reason = self.ctx.scope.dropped.get(name)
        if reason is not None:
            self.fail(f"'{name}' may be used before it is assigned: {reason}.",
                      f"Try assigning {name} before that statement, on every path.", node)
        if (name in self.ctx.src.assign_counts or
                name in {a.arg for a in self.ctx.src.tree.args.args}):
            self.fail(f"'{name}' is used before it is assigned.",
                      f"Try assigning {name} first.", node)
        return self.global_value(name, node)

    def global_value(self, name: str, node: ast.AST) -> Any:
        src = self.ctx.src
        closure = src.closure
        if name in closure:
            value = closure[name]
        elif name in src.globals:
            value = src.globals[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            self.fail(f"Name '{name}' is not defined.", "Check the spelling, or pass the value "
                      "as a kernel argument.", node)
        if self.recorder is not None:
            value = self.recorder.name(src, name, value)
        return self.python_value(value, f"'{name}'", node)

    def python_value(self, value: Any, what: str, node: ast.AST) -> Any:
        """A Python object met at compile time (a global, an attribute of a module, ...)."""
        if type(value) in PY_CONSTANTS:
            return value
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            dtype = T.scalar_dtype_of(value)
            return value.item() if dtype is None else self.const(value.item(), dtype)
        if isinstance(value, (Array, np.ndarray)):
            self.fail(f"{what} is an array captured from Python; kernels only see arrays "
                      "passed as arguments.", "Pass it as a kernel argument.", node)
        return value

    # -- memory -------------------------------------------------------------------------

    def memory_access(self, ref: Any, index: Any, node: ast.AST) -> tuple[MemRef, tuple[TVal, ...]]:
        """(array, full index) for `ref[index]`; raises when the index is incomplete."""
        base, indices = self.subscript_memory(ref, index, node)
        if len(indices) != base.ndim:
            self.fail(f"{describe(base)} has {_count(base.ndim, 'dimension')} but is indexed "
                      f"with {len(indices)}.", f"Use {_count(base.ndim, 'index')}, as in "
                      f"{base.name}[{', '.join('ijklmn'[:base.ndim])}].", node)
        return base, indices

    def subscript_memory(self, ref: Any, index: Any, node: ast.AST
                         ) -> tuple[MemRef, tuple[TVal, ...]]:
        if type(ref) is PartialIndex:
            base, prefix = ref.ref, ref.indices
        else:
            base, prefix = ref, ()
        parts = index if isinstance(index, tuple) else (index,)
        if any(p is None for p in parts):
            self.none_index(base, node)
        indices = prefix + tuple(self.index_value(p, node) for p in parts)
        if len(indices) > base.ndim:
            self.fail(f"{describe(base)} has {_count(base.ndim, 'dimension')} but is indexed "
                      f"with {len(indices)}.", f"Use at most {_count(base.ndim, 'index')}.",
                      node)
        return base, indices

    def none_index(self, base: MemRef, node: ast.AST) -> NoReturn:
        """`x[None]`: Taichi's access to a 0-d field; kernels index arrays with integers."""
        name = base.name
        if base.ndim == 0:
            fix = f"Use {name}[()] to read or update a 0-d array."
        else:
            fix = (f"Use a shape-(1,) array and {name}[0], as for a loss that "
                   "qd.ad.Tape(loss=...) takes: qd.zeros(1, dtype=qd.float32, "
                   "requires_grad=True) (a 0-d array is indexed x[()]).")
        self.type_fail(f"{describe(base)} is indexed with None (Taichi's spelling for a 0-d "
                       "field); kernels index arrays with integers.", fix, node)

    def note_write(self, ref: MemRef) -> None:
        self.written.add(ref.name)

    def struct_field(self, value: StructVal, name: str, node: ast.AST) -> Any:
        try:
            return value.field(name)
        except KeyError:
            self.fail(f"{value.cls.__name__} has no field '{name}'.",
                      f"Use one of: {', '.join(k for k, _ in value.fields)}.", node)

    def frame(self, node: ast.AST) -> Frame:
        return Frame(self.ctx.name, self.ctx.src.file, getattr(node, "lineno", 0))
