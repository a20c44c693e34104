"""numba CPU code generator: `render_numba_cpu(kernel) -> str`, a module of numba functions.

Layout of the generated module:

- `_body_<k>(t, ...)`: the body of the k-th parallel loop for one thread index `t`, taking
  the values it reads from outside as arguments (a top-level `continue` is a `return`);
- `entry_serial(...)`: the whole kernel with every parallel loop as a plain `range` loop over
  its body function: small launches pay no threading cost;
- `entry_parallel(...)`: the same with `prange` (only when the kernel has parallel loops);
- `work(...)`: plain Python computing the largest parallel trip count from the arguments
  when the bounds depend only on shapes, scalars and constants (the launcher's serial or
  parallel choice), else a large number.

Every numba function is `cache=True`, so numba stores machine code next to the module file.
Values are named `v<id>`, locals `l<id>_<name>`; each result is converted to its IR dtype,
because numba's own promotion (int8 + int8 -> int64) differs from the IR's.
"""

from __future__ import annotations

import math
from typing import Any

from ..._version import __version__
from .. import error_record
from ..ir import Continue, For, If, Instr, KernelIR, Op, Value, While
from ..ops.math import BINARY, PREDICATES, UNARY
from ..types import ArrayType, ViewType
from .privatize import accumulator, emit_loop, plan, target_view
from .pysource import PySourceEmitter
from .regions import free_values, parallel_nest

_JIT = 'njit(cache=True, nogil=True, error_model="numpy"{})'
# A parallel nest shares out its outer axis when it has at least this many iterations,
# else the flattened index space.
OUTER_MIN = 64
# Results numba already types exactly as the IR does (no conversion needed).
_EXACT = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.NOT, Op.LOAD, Op.SHAPE,
                    Op.LOAD_VAR, Op.CONST, Op.SELECT, Op.ISNAN, Op.ISINF, Op.ISFINITE,
                    Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})
# Ops `work()` may evaluate in plain Python.
_HOST_OPS = frozenset({Op.CONST, Op.CAST, Op.SHAPE, Op.ADD, Op.SUB, Op.MUL, Op.FLOORDIV,
                       Op.MOD, Op.MIN, Op.MAX, Op.NEG, Op.ABS, Op.SELECT})
_NP_NAMES = {Op.ASIN: "arcsin", Op.ACOS: "arccos", Op.ATAN: "arctan", Op.ASINH: "arcsinh",
             Op.ACOSH: "arccosh", Op.ATANH: "arctanh", Op.ROUND: "rint", Op.ATAN2: "arctan2"}


def _ctor(dtype: Any) -> str:
    return "bool" if dtype.kind == "b" else f"np.{dtype.name}"


def _const(value: Any, dtype: Any) -> str:
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind == "f":
        v = float(value)
        text = repr(v) if math.isfinite(v) else ("np.nan" if v != v else
                                                   ("np.inf" if v > 0 else "-np.inf"))
        return f"np.{dtype.name}({text})"
    return f"np.{dtype.name}({int(value)})"


def _cast(e: PySourceEmitter, i: Instr) -> str:
    x = e.val(i.args[0])
    target = i.attrs[0]
    if target.kind == "b":
        return f"({x} != 0)"
    return f"{_ctor(target)}({x})"


def _floordiv(e: PySourceEmitter, i: Instr) -> str:
    a, b = (e.val(x) for x in i.args)
    if i.result.type.kind == "i":  # type: ignore[union-attr]
        return f"({a} // {b} if {b} != -1 else -{a})"  # INT_MIN // -1 wraps, like NumPy
    return f"{a} // {b}"


def _pow(e: PySourceEmitter, i: Instr) -> str:
    a, b = (e.val(x) for x in i.args)
    kind = i.result.type.kind  # type: ignore[union-attr]
    if kind == "i":
        return f"ipow(np.int64({a}), np.int64({b}))"
    if kind == "u":
        return f"upow(np.uint64({a}), np.uint64({b}))"
    return f"{a} ** {b}"


def _shift(e: PySourceEmitter, i: Instr) -> str:
    a, n = (e.val(x) for x in i.args)
    dtype: Any = i.result.type  # type: ignore[union-attr]
    bits = dtype.itemsize * 8
    zero = f"{_ctor(dtype)}(0)"  # typed: numba unifies uint64 with an int literal to float64
    if i.op is Op.SHL:
        return f"({a} << {n} if 0 <= {n} < {bits} else {zero})"
    fill = f"({_ctor(dtype)}(-1) if {a} < 0 else {zero})" if dtype.kind == "i" else zero
    return f"({a} >> {n} if 0 <= {n} < {bits} else {fill})"


# 0-d arrays are passed on as 1-element 1-d views (numba's parfor lowering turns 0-d array
# arguments of a prange body into scalars), so their one element is [0].
def _index(e: PySourceEmitter, args: tuple[Value, ...]) -> str:
    inner = ", ".join(e.val(a) for a in args)
    return f"({inner},)" if len(args) == 1 else f"({inner})" if args else "(0,)"


def _subscript(e: PySourceEmitter, args: tuple[Value, ...]) -> str:
    # Signed indices are passed as uint64: numba then skips its negative-index wrap-around
    # (kernel indices are never negative: debug mode checks them), which keeps loops
    # vectorizable inside prange.
    parts = [f"np.uint64({e.val(a)})" if getattr(a.type, "kind", "") == "i" else e.val(a)
             for a in args]
    return ", ".join(parts) if parts else "0"


def _load(e: PySourceEmitter, i: Instr) -> str:
    return f"{e.val(i.args[0])}[{_subscript(e, i.args[1:])}]"


def _store(e: PySourceEmitter, i: Instr) -> str:
    return f"{e.val(i.args[0])}[{_subscript(e, i.args[1:-1])}] = {e.val(i.args[-1])}"


def _atomic(name: str) -> Any:
    def spell(e: PySourceEmitter, i: Instr) -> str:
        return f"{name}({e.val(i.args[0])}, {_index(e, i.args[1:-1])}, {e.val(i.args[-1])})"
    return spell


def _check(e: Any, i: Instr) -> None:
    pairs = list(zip(i.args[0::2], i.args[1::2], strict=True))
    test = " and ".join(f"0 <= {e.val(a)} < {e.val(n)}" for a, n in pairs)
    vals = ", ".join(f"np.int64({e.val(x)})" for x in i.args)
    e.line(f"if not ({test}):")
    with e.indent():
        depth = e.in_body
        thread = ", ".join(f"np.int64(_t{k})" for k in range(depth)) or "np.int64(0)"
        e.line(f"report_index_error(err, {i.attrs[0]}, {depth}, 0, ({thread},), ({vals},))")
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
        e.line(f"{e.val(s.index)} = {_ctor(s.index.type)}({t})")
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


TABLE: dict[Op, Any] = {
    Op.CONST: lambda e, i: _const(*i.attrs),
    Op.CAST: _cast,
    Op.SELECT: "({1} if {0} else {2})",
    Op.ADD: "{0} + {1}", Op.SUB: "{0} - {1}", Op.MUL: "{0} * {1}", Op.TRUEDIV: "{0} / {1}",
    Op.FLOORDIV: _floordiv, Op.MOD: "{0} % {1}", Op.POW: _pow, Op.NEG: "-{0}",
    Op.ABS: "np.abs({0})", Op.MIN: "np.minimum({0}, {1})", Op.MAX: "np.maximum({0}, {1})",
    Op.BIT_AND: "{0} & {1}", Op.BIT_OR: "{0} | {1}", Op.BIT_XOR: "{0} ^ {1}",
    Op.BIT_NOT: "~{0}", Op.SHL: _shift, Op.SHR: _shift, Op.NOT: "not {0}",
    Op.EQ: "{0} == {1}", Op.NE: "{0} != {1}", Op.LT: "{0} < {1}", Op.LE: "{0} <= {1}",
    Op.GT: "{0} > {1}", Op.GE: "{0} >= {1}",
    Op.LOAD: _load, Op.STORE: _store, Op.SHAPE: "{0}.shape[{1}]",
    Op.LOAD_VAR: lambda e, i: e.var(i.attrs[0]),
    Op.STORE_VAR: lambda e, i: f"{e.var(i.attrs[0])} = {e.val(i.args[0])}",
    Op.CHECK_INDEX: _check,
    Op.ATOMIC_ADD: _atomic("atomic_add"), Op.ATOMIC_MIN: _atomic("atomic_min"),
    Op.ATOMIC_MAX: _atomic("atomic_max"),
    Op.IF: _if, Op.FOR: _for, Op.WHILE: _while,
    Op.BREAK: lambda e, s: e.line("break"), Op.CONTINUE: _continue,
}
for _op in list(UNARY) + list(PREDICATES):
    if _op is not Op.RSQRT:
        TABLE[_op] = f"np.{_NP_NAMES.get(_op, _op.name.lower())}({{0}})"
for _op in BINARY:
    TABLE[_op] = f"np.{_NP_NAMES.get(_op, _op.name.lower())}({{0}}, {{1}})"
TABLE[Op.RSQRT] = "1.0 / np.sqrt({0})"


class NumbaCpuEmitter(PySourceEmitter):
    TABLE = TABLE

    def __init__(self, kernel: KernelIR, debug: bool) -> None:
        super().__init__()
        self.kernel = kernel
        self.debug = debug
        self.in_body = 0  # inside a body function: the depth of its parallel nest
        self.prange = False
        self.loops = [s for s in kernel.body.stmts if isinstance(s, For) and s.parallel]
        self.nests = {id(s): parallel_nest(s) for s in self.loops}
        self.captures = {id(s): free_values(self.nests[id(s)][-1].body,
                                      [f.index for f in self.nests[id(s)]])
                         for s in self.loops}
        # atomics into one element per parallel loop: private per chunk (privatize.py)
        self.private, self.sites = plan(self.loops, self.nests, self.captures)

    def result(self, instr: Instr, text: str) -> str:
        if instr.op in _EXACT:
            return text
        return f"{_ctor(instr.result.type)}({text})"  # type: ignore[union-attr]

    def args_of(self, s: For) -> list[str]:
        values, locals_ = self.captures[id(s)]
        names = [self.val(v) for v in values] + [self.var(v) for v in locals_]
        k = self.loops.index(s)
        names += [accumulator(k, p) for p in self.private.get(id(s), [])]
        return names + (["err"] if self.debug else [])

    def instr(self, instr: Instr, spelling: Any) -> None:
        site = self.sites.get(id(instr))
        if site is None:
            super().instr(instr, spelling)
        else:  # a privatized atomic: its old value is unused
            site[1].combine(self, f"{accumulator(*site)}[0]", self.val(instr.args[-1]))

    def parallel_loop(self, s: For) -> None:
        """A parallel loop (nest) calling its body function once per thread."""
        k = self.loops.index(s)
        nest = self.nests[id(s)]
        ts = ", ".join(f"_t{d}" for d in range(len(nest)))
        sums = self.private.get(id(s), [])
        # serial: each sum goes straight into its element, in the interpreter's order
        rows = {accumulator(k, p): f"{accumulator(k, p)}[_w]" if self.prange else
                target_view(self, p, _const) for p in sums}
        call = f"_body_{k}({ts}, {', '.join(rows.get(a, a) for a in self.args_of(s))})"
        if sums and self.prange:
            emit_loop(self, k, s, call, sums, _const)
        elif self.prange and len(nest) > 1:
            self.collapsed_nest(nest, call)
        else:
            for d, loop in enumerate(nest):
                kind = "prange" if self.prange and d == 0 else "range"
                self.line(f"for _t{d} in {kind}({self.val(loop.begin)}, {self.val(loop.end)}):")
                self.depth += 1
            self.line(call)
            self.depth -= len(nest)
        if self.debug:
            self.line(f"if err[{error_record.SITE}] != 0:")
            with self.indent():
                self.line("return")

    def collapsed_nest(self, nest: list[For], call: str) -> None:
        """prange over the outer axis when it has enough iterations to share out, else over
        the flattened index space."""
        b0, e0 = self.val(nest[0].begin), self.val(nest[0].end)
        self.line(f"if {e0} - {b0} >= {OUTER_MIN}:")
        with self.indent():
            for d, loop in enumerate(nest):
                kind = "prange" if d == 0 else "range"
                self.line(f"for _t{d} in {kind}({self.val(loop.begin)}, {self.val(loop.end)}):")
                self.depth += 1
            self.line(call)
            self.depth -= len(nest)
        self.line("else:")
        with self.indent():
            for d, loop in enumerate(nest):
                self.line(f"_n{d} = max(np.int64({self.val(loop.end)}) - "
                          f"np.int64({self.val(loop.begin)}), np.int64(0))")
            total = " * ".join(f"_n{d}" for d in range(len(nest)))
            self.line(f"for _f in prange({total}):")
            with self.indent():
                rest = "_f"  # never reassigned: numba forbids writes to a prange index
                for d in range(len(nest) - 1, 0, -1):
                    self.line(f"_t{d} = {self.val(nest[d].begin)} + {rest} % _n{d}")
                    self.line(f"_q{d} = {rest} // _n{d}")
                    rest = f"_q{d}"
                self.line(f"_t0 = {self.val(nest[0].begin)} + {rest}")
                self.line(call)

    def body_function(self, k: int, s: For) -> None:
        nest = self.nests[id(s)]
        ts = ", ".join(f"_t{d}" for d in range(len(nest)))
        self.line(f"@{_JIT.format('')}")
        self.line(f"def _body_{k}({ts}, {', '.join(self.args_of(s))}):")
        self.in_body = len(nest)
        with self.indent():
            for d, loop in enumerate(nest):
                self.line(f"{self.val(loop.index)} = {_ctor(loop.index.type)}(_t{d})")
            self.block(nest[-1].body)
        self.in_body = 0
        self.line("")

    def prologue(self, only: set[int] | None = None) -> None:
        for p in self.kernel.params:
            if only is not None and p.value.id not in only:
                continue
            t = p.value.type
            src = f"a{p.value.id}"
            value = src if isinstance(t, (ArrayType, ViewType)) else f"{_ctor(t)}({src})"
            if isinstance(t, ArrayType) and t.ndim == 0:
                value = f"{src}.reshape((1,))"
            self.line(f"{self.val(p.value)} = {value}")

    def params(self) -> str:
        names = [f"a{p.value.id}" for p in self.kernel.params]
        return ", ".join(names + (["err"] if self.debug else []))

    def entry(self, name: str, parallel: bool) -> None:
        self.line(f"@{_JIT.format(', parallel=True' if parallel else '')}")
        self.line(f"def {name}({self.params()}):")
        self.prange = parallel
        with self.indent():
            self.prologue()
            self.block(self.kernel.body)
        self.line("")

    def work(self) -> None:
        """Plain Python: the largest parallel trip count, when the host can compute it."""
        defs = {s.result.id: s for s in self.kernel.body.stmts
                if isinstance(s, Instr) and s.result is not None}
        params = {p.value.id for p in self.kernel.params}
        needed: set[int] = set()

        def need(v: Value) -> bool:
            if v.id in params or v.id in needed:
                return True
            d = defs.get(v.id)
            if d is None or d.op not in _HOST_OPS or not all(need(a) for a in d.args):
                return False
            needed.add(v.id)
            return True

        self.line(f"def work({', '.join(f'a{p.value.id}' for p in self.kernel.params)}):")
        with self.indent():
            if not self.loops:
                self.line("return 0")
                return
            bounds = [v for s in self.loops for f in self.nests[id(s)] for v in (f.begin, f.end)]
            if not all(need(v) for v in bounds):
                self.line("return 1 << 62")
                return
            used = {a.id for s in self.kernel.body.stmts if isinstance(s, Instr)
                    and s.result is not None and s.result.id in needed for a in s.args}
            used |= {v.id for v in bounds}
            self.prologue(only=used)
            for s in self.kernel.body.stmts:
                if not (isinstance(s, Instr) and s.result is not None and s.result.id in needed):
                    continue
                if s.op is Op.CONST and s.attrs[1].kind in "iu":  # a Python int costs less
                    self.line(f"{self.val(s.result)} = {int(s.attrs[0])}")
                else:
                    self.stmt(s)
            trips = [" * ".join(f"max(int({self.val(f.end)}) - int({self.val(f.begin)}), 0)"
                                for f in self.nests[id(s)]) for s in self.loops]
            self.line(f"return max({', '.join(trips)}, 0)")

    def render(self) -> str:
        loc = self.kernel.loc
        self.lines += [
            f'"""Generated by qdarray {__version__} for kernel {self.kernel.name!r} '
            f'({loc.file}:{loc.line}). Do not edit."""',
            "import numpy as np",
            "from numba import njit, prange",
            "from qdarray.kernels.intrinsics import (atomic_add, atomic_max, atomic_min, ipow,",
            "                                        report_index_error, upow)",
            "", ""]
        for k, s in enumerate(self.loops):
            self.body_function(k, s)
        self.entry("entry_serial", False)
        if self.loops:
            self.entry("entry_parallel", True)
        self.work()
        return self.source()


def render_numba_cpu(kernel: KernelIR, *, debug: bool = False) -> str:
    """Python source of a module running `kernel` (views lowered) with numba on the CPU."""
    return NumbaCpuEmitter(kernel, debug).render()

