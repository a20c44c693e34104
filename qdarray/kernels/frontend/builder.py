"""The frontend's core: IR emission, regions, locations, errors, names and conversions.

`KernelBuilder` (in `__init__.py`) combines this core with the statement, expression and
call visitors; each visitor method is `visit_<AST node>` and anything without one is rejected
with a message that says what to use instead.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, NoReturn

import numpy as np

from ... import _dtypes
from ..._array import Array
from ..._dtypes import DType
from .. import types as T
from ..ir import Block, Frame, Instr, Op, SourceLoc, Stmt, Value, Var
from .diagnostics import CompileError
from .scope import MISSING, FuncCtx
from .values import (
    PY_CONSTANTS,
    MemRef,
    PartialIndex,
    SliceVal,
    StructVal,
    TVal,
    VarRef,
    describe,
)


def _count(n: int, noun: str) -> str:
    """`1 index`, `2 indices`, `1 dimension`, `3 dimensions`."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {'indices' if noun == 'index' else noun + 's'}"


class BuilderCore:
    """Emission and bookkeeping shared by every visitor."""

    ctx: FuncCtx

    def __init__(self, kernel_name: str) -> None:
        self.kernel_name = kernel_name
        self._next_value = 0
        self._next_var = 0
        self._blocks: list[list[Stmt]] = [[]]
        self.node: ast.AST | None = None
        self.top = True            # building the kernel's top-level statement list
        self.in_parallel = False   # building the body of the parallel loop
        self.outer_vars: set[int] = set()
        self.written: set[str] = set()
        self.inline_stack: list[Any] = []
        self.recorder: Any = None  # env.Recorder: what the compile reads from Python

    # -- values and instructions --------------------------------------------------------

    def new_value(self, t: Any) -> Value:
        v = Value(self._next_value, t)
        self._next_value += 1
        return v

    def new_var(self, name: str, dtype: DType) -> Var:
        var = Var(self._next_var, name, dtype)
        self._next_var += 1
        return var

    def loc(self, node: ast.AST | None = None) -> SourceLoc:
        node = node if node is not None else self.node
        if node is None:
            node = self.ctx.src.tree
        return self.ctx.src.loc(node, self.ctx.name, self.ctx.stack)

    def emit(self, op: Op, args: tuple[Value, ...], attrs: tuple[Any, ...] = (),
             rtype: Any = None) -> Value | None:
        result = None if rtype is None else self.new_value(rtype)
        self._blocks[-1].append(Instr(op, result, args, attrs, self.loc()))
        return result

    def emit_stmt(self, stmt: Stmt) -> None:
        self._blocks[-1].append(stmt)

    @contextmanager
    def region(self) -> Iterator[list[Stmt]]:
        stmts: list[Stmt] = []
        self._blocks.append(stmts)
        try:
            yield stmts
        finally:
            self._blocks.pop()

    def splice(self, stmts: list[Stmt]) -> None:
        self._blocks[-1].extend(stmts)

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
                var = value.var
                return TVal(self.emit(Op.LOAD_VAR, (), (var,), var.dtype))  # type: ignore
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
            self.recorder.name(src, name, value)
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
        indices = prefix + tuple(self.index_value(p, node) for p in parts)
        if len(indices) > base.ndim:
            self.fail(f"{describe(base)} has {_count(base.ndim, 'dimension')} but is indexed "
                      f"with {len(indices)}.", f"Use at most {_count(base.ndim, 'index')}.",
                      node)
        return base, indices

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
