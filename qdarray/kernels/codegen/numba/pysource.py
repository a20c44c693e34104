"""The walker of the code generators with Python syntax (numba CPU, numba CUDA), and the
spellings they share.

A generator subclasses `PySourceEmitter` and supplies `TABLE: dict[Op, spelling]` with one
entry per op that reaches it: `PY_TABLE` (below: values, arithmetic, comparisons, memory,
locals, index checks, control flow, in NumPy-exact Python as numba compiles it) updated with
its own math and atomics. A spelling is a format string over the argument names
(`"{0} + {1}"`), or a function `(emitter, node) -> str | None` for anything else (statements
included); an expression string is assigned to the result, if the instruction has one,
converted to the result's dtype unless numba already types it so (`EXACT`), because numba's
own promotion (int8 + int8 -> int64) differs from the IR's.

Values are named `v<id>`, locals `l<id>_<name>`. Inside a parallel body the thread's index
along each loop of its nest is `_t<d>` (`in_body` loops), which index checks record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from ... import error_record
from ...ir import Block, Continue, For, If, Instr, Op, Stmt, Value, Var, While
from ...ops import OPS

# Results numba already types exactly as the IR does (no conversion needed).
EXACT = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.NOT, Op.LOAD, Op.SHAPE,
                   Op.LOAD_VAR, Op.CONST, Op.SELECT, Op.ISNAN, Op.ISINF, Op.ISFINITE,
                   Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})


def ctor(dtype: Any) -> str:
    """The constructor converting a value to `dtype`."""
    return "bool" if dtype.kind == "b" else f"np.{dtype.name}"


def const(value: Any, dtype: Any) -> str:
    """A literal of `dtype`."""
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind == "f":
        v = float(value)
        text = repr(v) if math.isfinite(v) else ("np.nan" if v != v else
                                                   ("np.inf" if v > 0 else "-np.inf"))
        return f"np.{dtype.name}({text})"
    return f"np.{dtype.name}({int(value)})"


def element(e: Any, args: tuple[Value, ...]) -> str:
    """An atomic's element: a tuple of indices, (0,) for a 0-d array (passed on as a
    1-element 1-d view: numba's parfor lowering turns 0-d array arguments of a prange body
    into scalars)."""
    inner = ", ".join(e.val(a) for a in args)
    return f"({inner},)" if len(args) == 1 else f"({inner})" if args else "(0,)"


def _cast(e: Any, i: Instr) -> str:
    x = e.val(i.args[0])
    target = i.attrs[0]
    if target.kind == "b":
        return f"({x} != 0)"
    if getattr(i.args[0].type, "kind", "") == "c" and target.kind != "c":
        return f"{ctor(target)}({x}.real)"  # NumPy's cast keeps the real part
    return f"{ctor(target)}({x})"


def _floordiv(e: Any, i: Instr) -> str:
    a, b = (e.val(x) for x in i.args)
    if i.result.type.kind == "i":  # type: ignore[union-attr]
        return f"({a} // {b} if {b} != -1 else -{a})"  # INT_MIN // -1 wraps, like NumPy
    return f"{a} // {b}"


def _pow(e: Any, i: Instr) -> str:
    a, b = (e.val(x) for x in i.args)
    kind = i.result.type.kind  # type: ignore[union-attr]
    if kind == "i":
        return f"ipow(np.int64({a}), np.int64({b}))"
    if kind == "u":
        return f"upow(np.uint64({a}), np.uint64({b}))"
    return f"{a} ** {b}"


def _minmax(cmp: str) -> Any:
    """NumPy's minimum / maximum of floats: NaN if either operand is NaN, and the second
    operand on ties, so min(0.0, -0.0) is -0.0 (numba's np.minimum returns the first)."""
    def spell(e: Any, i: Instr) -> str:
        a, b = (e.val(x) for x in i.args)
        if i.result.type.kind != "f":  # type: ignore[union-attr]
            return f"np.{'minimum' if cmp == '<' else 'maximum'}({a}, {b})"
        return f"({a} if {a} {cmp} {b} or {a} != {a} else {b})"
    return spell


def _shift(e: Any, i: Instr) -> str:
    a, n = (e.val(x) for x in i.args)
    dtype: Any = i.result.type  # type: ignore[union-attr]
    bits = dtype.itemsize * 8
    zero = f"{ctor(dtype)}(0)"  # typed: numba unifies uint64 with an int literal to float64
    if i.op is Op.SHL:
        return f"({a} << {n} if 0 <= {n} < {bits} else {zero})"
    fill = f"({ctor(dtype)}(-1) if {a} < 0 else {zero})" if dtype.kind == "i" else zero
    return f"({a} >> {n} if 0 <= {n} < {bits} else {fill})"


def _subscript(e: Any, args: tuple[Value, ...]) -> str:
    # Signed indices are passed as uint64: numba then skips its negative-index wrap-around
    # (kernel indices are never negative: debug mode checks them), which keeps loops
    # vectorizable inside prange.
    parts = [f"np.uint64({e.val(a)})" if getattr(a.type, "kind", "") == "i" else e.val(a)
             for a in args]
    return ", ".join(parts) if parts else "0"


def _load(e: Any, i: Instr) -> str:
    return f"{e.val(i.args[0])}[{_subscript(e, i.args[1:])}]"


def _store(e: Any, i: Instr) -> str:
    return f"{e.val(i.args[0])}[{_subscript(e, i.args[1:-1])}] = {e.val(i.args[-1])}"


def _check(e: Any, i: Instr) -> None:
    """A failed check records itself in the error record (error_record.py) and ends the
    thread; a 0-d array has nothing to check."""
    pairs = list(zip(i.args[0::2], i.args[1::2], strict=True))
    if not pairs:
        return
    test = " and ".join(f"0 <= {e.val(a)} < {e.val(n)}" for a, n in pairs)
    vals = ", ".join(f"np.int64({e.val(x)})" for x in i.args)
    depth = e.in_body
    thread = ", ".join(f"np.int64(_t{k})" for k in range(depth)) or "np.int64(0)"
    e.line(f"if not ({test}):")
    with e.indent():
        e.line(f"report_index_error(err, {i.attrs[0]}, {depth}, {e.stage_no}, ({thread},), "
               f"({vals},))")
        e.line("return")


def _if(e: Any, s: If) -> None:
    e.line(f"if {e.val(s.cond)}:")
    with e.indent():
        e.block(s.then_body)
    if s.else_body.stmts:
        e.line("else:")
        with e.indent():
            e.block(s.else_body)


def _for(e: Any, s: For) -> None:
    if s.parallel:
        e.parallel_loop(s)
        return
    t = f"_i{s.index.id}"
    e.line(f"for {t} in range({e.val(s.begin)}, {e.val(s.end)}):")
    with e.loop():
        e.line(f"{e.val(s.index)} = {ctor(s.index.type)}({t})")
        e.block(s.body)


def _while(e: Any, s: While) -> None:
    e.line("while True:")
    with e.loop():
        for stmt in s.cond_body.stmts:
            e.stmt(stmt)
        e.line(f"if not {e.val(s.cond)}:")
        with e.indent():
            e.line("break")
        e.block(s.body)


def _continue(e: Any, s: Continue) -> None:
    e.line("continue" if e.loop_depth else "return")  # top of a body function: next thread


PY_TABLE: dict[Op, Any] = {
    Op.CONST: lambda e, i: e.constant(*i.attrs),
    Op.CAST: _cast,
    Op.SELECT: "({1} if {0} else {2})",
    Op.ADD: "{0} + {1}", Op.SUB: "{0} - {1}", Op.MUL: "{0} * {1}", Op.TRUEDIV: "{0} / {1}",
    Op.FLOORDIV: _floordiv, Op.MOD: "{0} % {1}", Op.POW: _pow, Op.NEG: "-{0}",
    Op.ABS: "np.abs({0})", Op.MIN: _minmax("<"), Op.MAX: _minmax(">"),
    Op.BIT_AND: "{0} & {1}", Op.BIT_OR: "{0} | {1}", Op.BIT_XOR: "{0} ^ {1}",
    Op.BIT_NOT: "~{0}", Op.SHL: _shift, Op.SHR: _shift, Op.NOT: "not {0}",
    Op.EQ: "{0} == {1}", Op.NE: "{0} != {1}", Op.LT: "{0} < {1}", Op.LE: "{0} <= {1}",
    Op.GT: "{0} > {1}", Op.GE: "{0} >= {1}",
    Op.COMPLEX: "complex({0}, {1})", Op.REAL: "{0}.real", Op.IMAG: "{0}.imag",
    Op.FMA: "fma({0}, {1}, {2})",  # cpu_runtime.fma, gpu_runtime.fma (simulator)
    Op.LOAD: _load, Op.STORE: _store, Op.SHAPE: "{0}.shape[{1}]",
    Op.LOAD_VAR: lambda e, i: e.var(i.attrs[0]),
    Op.STORE_VAR: lambda e, i: f"{e.var(i.attrs[0])} = {e.val(i.args[0])}",
    Op.CHECK_INDEX: _check,
    Op.IF: _if, Op.FOR: _for, Op.WHILE: _while,
    Op.BREAK: lambda e, s: e.line("break"), Op.CONTINUE: _continue,
}


def numpy_math() -> dict[Op, str]:
    """The math ops spelled as NumPy's functions (numba compiles them on the CPU; numba's CUDA
    simulator runs them)."""
    table = {op: f"np.{d.np_name}({', '.join(f'{{{k}}}' for k in range(d.arity or 0))})"
             for op, d in OPS.items() if d.family == "math" and d.np_name is not None}
    table[Op.RSQRT] = "1.0 / np.sqrt({0})"
    # numba's np.sign returns a zero argument itself (-0.0 for -0.0); NumPy's gives +0.0,
    # which x - x is for either zero, in x's own type
    table[Op.SIGN] = "(np.sign({0}) if {0} != 0 else {0} - {0})"
    return table


class PySourceEmitter:
    """Turns IR regions into indented Python-syntax lines (see the module docstring)."""

    TABLE: ClassVar[dict[Op, Any]] = {}
    INDENT = "    "

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.loop_depth = 0
        self.in_body = 0  # inside a parallel body: the number of loops of its nest
        self.stage_no = 0  # the launch stage being generated (error_record.STAGE)
        # module-level names of the kernel's constants, by their literal (`constant`)
        self.constants: dict[str, str] = {}

    # -- names ----------------------------------------------------------------------------

    @staticmethod
    def val(v: Value) -> str:
        return f"v{v.id}"

    @staticmethod
    def var(var: Var) -> str:
        name = re.sub(r"\W", "_", var.name)
        return f"l{var.id}_{name}"

    def constant(self, value: Any, dtype: Any) -> str:
        """A constant of the kernel: a module-level name bound to the literal (booleans stay
        literals). numba types a module's NumPy scalar as a compile-time constant, where a
        call `np.float32(0.5)` is a call to resolve at each use: in a long kernel those
        resolutions were about a third of the compile time."""
        text = const(value, dtype)
        if dtype.kind == "b":
            return text
        name = self.constants.get(text)
        if name is None:
            name = self.constants[text] = f"_K{len(self.constants)}"
        return name

    def constant_lines(self) -> list[str]:
        """The module-level bindings of the constants (numba reads a module's globals when a
        function compiles, at its first call, after the module has loaded)."""
        if not self.constants:
            return []
        return ["", "# the kernel's constants"] + [f"{name} = {text}" for text, name in
                                                   self.constants.items()]

    # -- output ---------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append(self.INDENT * self.depth + text)

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextmanager
    def loop(self) -> Iterator[None]:
        self.loop_depth += 1
        try:
            with self.indent():
                yield
        finally:
            self.loop_depth -= 1

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    def stop_after_failure(self, exit: str) -> None:
        """After a parallel loop in debug mode: leave (`exit`: "return", "break") once a check
        has failed."""
        self.line(f"if err[{error_record.SITE}] != 0:")
        with self.indent():
            self.line(exit)

    # -- walking --------------------------------------------------------------------------

    def block(self, block: Block) -> None:
        start = len(self.lines)
        for stmt in block.stmts:
            self.stmt(stmt)
        if len(self.lines) == start:
            self.line("pass")

    def stmt(self, stmt: Stmt) -> None:
        spelling = self.TABLE[stmt.op]
        if isinstance(stmt, Instr):
            self.instr(stmt, spelling)
        else:
            spelling(self, stmt)

    def instr(self, instr: Instr, spelling: Any) -> None:
        if callable(spelling):
            text = spelling(self, instr)
        else:
            text = spelling.format(*(self.val(a) for a in instr.args), *instr.attrs)
        if instr.result is not None:
            self.line(f"{self.val(instr.result)} = {self.result(instr, text)}")
        elif text:
            self.line(text)

    def result(self, instr: Instr, text: str) -> str:
        """The expression assigned to an instruction's result, in the result's dtype."""
        if instr.op in EXACT:
            return text
        return f"{ctor(instr.result.type)}({text})"  # type: ignore[union-attr]

    def thread_function(self, decorator: str, name: str, nest: list[For], args: list[str]
                        ) -> None:
        """`def name(_t0, ..., *args)`: the body of a parallel nest for one thread, each
        loop's index set from the thread's index `_t<d>` along it."""
        ts = [f"_t{d}" for d in range(len(nest))]
        self.line(decorator)
        self.line(f"def {name}({', '.join(ts + args)}):")
        self.in_body = len(nest)
        with self.indent():
            for d, loop in enumerate(nest):
                self.line(f"{self.val(loop.index)} = {ctor(loop.index.type)}(_t{d})")
            self.block(nest[-1].body)
        self.in_body = 0

    def parallel_loop(self, s: For) -> None:
        raise AssertionError(f"{type(self).__name__} met a parallel loop it did not plan")
