"""numba CPU code generator: `render_numba_cpu(kernel) -> str`, a module of numba functions.

Layout of the generated module:

- `_body_<k>(t, ...)`: the body of the k-th parallel loop for one thread index `t`, taking
  the values it reads from outside as arguments (a top-level `continue` is a `return`);
- `entry_serial(...)`: the whole kernel with every parallel loop as a plain `range` loop over
  its body function: small launches pay no threading cost;
- `entry_parallel(...)`: the same with `prange` (only when the kernel has parallel loops);
- `work(...)`: plain Python computing the largest parallel trip count from the arguments
  when the bounds depend only on shapes, scalars and constants (the launcher's serial or
  parallel choice), else a large number;
- with lanes (`lanes=` the group width), `_lanes_<k>(_g, _n, ...)` for each parallel loop
  that `lanes_plan.lane_plan` accepts: the body for `_n` consecutive threads from `_g` in
  SIMD lanes (numba/lanes.py). The entries then loop over groups instead of threads, in the
  same chunks and order, so results are those of the scalar code bit for bit; the loops
  lanes cannot run so (debug mode, the reasons `passes/uniformity.py` gives) keep `_body_<k>`
  and name the reason in a comment.

Every numba function is `cache=True`, so numba stores machine code next to the module file.
Values are named `v<id>`, locals `l<id>_<name>`; each result is converted to its IR dtype,
because numba's own promotion (int8 + int8 -> int64) differs from the IR's.
"""

from __future__ import annotations

import re
from typing import Any

from ...._version import __version__
from ...ir import Block, For, Instr, KernelIR, Op, Value, child_blocks, walk
from ...ops import OPS
from ...ops.adstack import PARAM_PREFIX
from ...passes.flatten import flatten_nests
from ...passes.stages import parallel_nest
from ...types import ArrayType, ViewType
from ..regions import free_values
from .lanes import LaneEmitter
from .lanes_plan import lane_plan
from .privatize import accumulator, emit_loop, plan, target_view
from .pysource import PY_TABLE, PySourceEmitter, const, ctor, element, numpy_math

_JIT = 'njit(cache=True, nogil=True, error_model="numpy"{})'
# A parallel nest shares out its outer axis when it has at least this many iterations,
# else the flattened index space.
OUTER_MIN = 64


def _atomic(name: str) -> Any:
    def spell(e: PySourceEmitter, i: Instr) -> str:
        return f"{name}({e.val(i.args[0])}, {element(e, i.args[1:-1])}, {e.val(i.args[-1])})"
    return spell


TABLE: dict[Op, Any] = {**PY_TABLE, **numpy_math()}
TABLE.update({
    Op.ATOMIC_ADD: _atomic("atomic_add"), Op.ATOMIC_MIN: _atomic("atomic_min"),
    Op.ATOMIC_MAX: _atomic("atomic_max"),
    # a lane function's LANE is this scalar plus each lane's index (numba/lanes.py)
    Op.WORKER: "get_thread_id()", Op.LANE: "0",
})


class NumbaCpuEmitter(PySourceEmitter):
    TABLE = TABLE

    def __init__(self, kernel: KernelIR, debug: bool, lanes: int | None = None) -> None:
        super().__init__()
        self.kernel = kernel
        self.debug = debug
        self.prange = False
        self.width = lanes
        self.loops = [s for s in kernel.body.stmts if isinstance(s, For) and s.parallel]
        self.lane_names: set[str] = set()  # the lane operations the module calls
        self.nests = {id(s): parallel_nest(s) for s in self.loops}
        self.flat = flatten_nests(kernel)
        self.captures = {id(s): free_values(self.nests[id(s)][-1].body,
                                      [f.index for f in self.nests[id(s)]])
                         for s in self.loops}
        # atomics into one element per parallel loop: private per chunk (numba/privatize.py)
        self.private, self.sites = plan(self.loops, self.nests, self.captures)
        # the loops that run in lanes, and why the others do not
        self.lanes: dict[int, Any] = {}
        # adstack heaps: their lane-indexed accesses are one depth of a group's stacks
        self.runs = {p.value.id for p in kernel.params if p.name.startswith(PARAM_PREFIX)}
        tables = {p.value.id for p in kernel.params
                  if p.name in (f"{PARAM_PREFIX}table", f"{PARAM_PREFIX}rows")}
        self.scalar_reasons: dict[int, list[str]] = {}
        if lanes is not None:
            for k, s in enumerate(self.loops):
                reasons = ["debug mode checks each access of each thread in order"] if debug \
                    else []
                u = None if reasons else lane_plan(self.nests[id(s)], reasons, self.runs,
                                                   tables)
                if u is not None:
                    self.lanes[id(s)] = u
                else:
                    self.scalar_reasons[k] = reasons

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
        """A parallel loop (nest) calling its body function once per thread, or its lane
        function once per group of threads."""
        if id(s) in self.lanes:
            self.lane_loop(s)
            return
        k = self.loops.index(s)
        nest = self.nests[id(s)]
        ts = ", ".join(f"_t{d}" for d in range(len(nest)))
        sums = self.private.get(id(s), [])
        # serial: each sum goes straight into its element, in the interpreter's order
        rows = {accumulator(k, p): f"{accumulator(k, p)}[_w]" if self.prange else
                target_view(self, p, const) for p in sums}
        args = ", ".join(rows.get(a, a) for a in self.args_of(s))
        call = f"_body_{k}({ts}, {args})"
        if sums and self.prange:
            def threads(lo: str, hi: str) -> None:
                self.line(f"for _t0 in range({lo}, {hi}):")
                with self.indent():
                    self.line(call)
            emit_loop(self, k, s, threads, sums, const)
        elif self.prange and len(nest) > 1:
            self.collapsed_nest(s, call, args)
        else:
            for d, loop in enumerate(nest):
                kind = "prange" if self.prange and d == 0 else "range"
                self.line(f"for _t{d} in {kind}({self.val(loop.begin)}, {self.val(loop.end)}):")
                self.depth += 1
            self.line(call)
            self.depth -= len(nest)
        if self.debug:
            self.stop_after_failure("return")

    def lane_loop(self, s: For) -> None:
        """A parallel loop over groups of `width` consecutive threads of its innermost axis,
        in the chunks and order of the scalar loop (module docstring)."""
        k = self.loops.index(s)
        nest = self.nests[id(s)]
        g = self.width or 1
        sums = self.private.get(id(s), [])
        rows = {accumulator(k, p): f"{accumulator(k, p)}[_w]" if self.prange else
                target_view(self, p, const) for p in sums}
        names = [rows.get(a, a) for a in self.args_of(s)]
        outer = "".join(f"_t{d}, " for d in range(len(nest) - 1))
        call = f"_lanes_{k}({outer}_g, min({g}, _e - _g), {', '.join(names)})"

        def groups(parallel: bool) -> None:
            last = nest[-1]
            self.line(f"_b = np.int64({self.val(last.begin)})")
            self.line(f"_e = np.int64({self.val(last.end)})")
            if parallel:
                self.line(f"for _q in prange((max(_e - _b, 0) + {g - 1}) // {g}):")
                with self.indent():
                    self.line(f"_g = _b + _q * {g}")
                    self.line(call)
            else:
                self.line(f"for _g in range(_b, _e, {g}):")
                with self.indent():
                    self.line(call)

        if sums and self.prange:
            def chunk(lo: str, hi: str) -> None:
                self.line(f"_e = {hi}")
                self.line(f"for _g in range({lo}, _e, {g}):")
                with self.indent():
                    self.line(call)
            emit_loop(self, k, s, chunk, sums, const)
        elif len(nest) == 1:
            groups(self.prange)
        else:
            b0, e0 = self.val(nest[0].begin), self.val(nest[0].end)
            variants = [(f"{e0} - {b0} >= {OUTER_MIN}", True), ("", False)] if self.prange \
                else [("", False)]
            for test, outer_parallel in variants:
                if len(variants) > 1:
                    self.line(f"if {test}:" if test else "else:")
                    self.depth += 1
                for d, loop in enumerate(nest[:-1]):
                    kind = "prange" if outer_parallel and d == 0 else "range"
                    self.line(f"for _t{d} in {kind}({self.val(loop.begin)}, "
                              f"{self.val(loop.end)}):")
                    self.depth += 1
                groups(self.prange and not outer_parallel)
                self.depth -= len(nest) - 1 + (len(variants) > 1)

    def collapsed_nest(self, s: For, call: str, args: str) -> None:
        """prange over the outer axis when it has enough iterations to share out, else over
        the flattened index space (passes/flatten.py)."""
        nest = self.nests[id(s)]
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
        flat = self.flat[id(s)]
        with self.indent():
            for i in flat.sizes:
                self.stmt(i)
            # the flat index is never reassigned: numba forbids writes to a prange index
            self.line(f"for {self.val(flat.flat)} in prange({self.val(flat.total)}):")
            with self.indent():
                for i in flat.decode:
                    self.stmt(i)
                ts = ", ".join(self.val(t) for t in flat.threads)
                self.line(f"_body_{self.loops.index(s)}({ts}, {args})")

    def body_function(self, k: int, s: For) -> None:
        self.thread_function(f"@{_JIT.format('')}", f"_body_{k}", self.nests[id(s)],
                             self.args_of(s))
        self.line("")

    def prologue(self, only: set[int] | None = None) -> None:
        for p in self.kernel.params:
            if only is not None and p.value.id not in only:
                continue
            t = p.value.type
            src = f"a{p.value.id}"
            value = src if isinstance(t, (ArrayType, ViewType)) else f"{ctor(t)}({src})"
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
        """Plain Python: the work of the launch's largest parallel loop, when the host can
        compute it: its threads times the iterations of the loops each thread runs whose
        bounds the host can compute from the arguments (a thread with a 128-long inner loop
        counts 128; loops whose bounds depend on the thread, and while loops, count their
        body once), so a launch of few threads with long loops goes parallel too."""
        defs = {s.result.id: s for s in self.kernel.body.stmts
                if isinstance(s, Instr) and s.result is not None}
        for s in self.loops:  # values a thread computes from the arguments alone
            for inner in walk(self.nests[id(s)][-1].body):
                if isinstance(inner, Instr) and inner.result is not None:
                    defs.setdefault(inner.result.id, inner)
        params = {p.value.id for p in self.kernel.params}
        needed: set[int] = set()

        def need(v: Value) -> bool:
            if v.id in params or v.id in needed:
                return True
            d = defs.get(v.id)
            if d is None or not OPS[d.op].host or not all(need(a) for a in d.args):
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
            per_thread = [self.thread_work(self.nests[id(s)][-1].body, need)
                          for s in self.loops]
            bounds += [v for terms in per_thread for v in _term_values(terms)]
            needed_defs = [d for d in defs.values() if d.result is not None
                           and d.result.id in needed]
            used = {a.id for d in needed_defs for a in d.args}
            used |= {v.id for v in bounds}
            self.prologue(only=used)
            order = {id(d): k for k, d in enumerate(walk(self.kernel.body))}
            for d in sorted(needed_defs, key=lambda d: order[id(d)]):
                if d.op is Op.CONST and d.attrs[1].kind in "iu":  # a Python int costs less
                    self.line(f"{self.val(needed_value(d))} = {int(d.attrs[0])}")
                else:
                    self.stmt(d)
            works = []
            for s, terms in zip(self.loops, per_thread, strict=True):
                threads = " * ".join(self.trips(f.begin, f.end) for f in self.nests[id(s)])
                works.append(f"{threads} * max({self.work_text(terms)}, 1)")
            self.line(f"return max({', '.join(works)}, 0)")

    def trips(self, begin: Value, end: Value) -> str:
        return f"max(int({self.val(end)}) - int({self.val(begin)}), 0)"

    def thread_work(self, block: Block, need: Any) -> list[Any]:
        """The loops of `block` a thread runs, as terms (begin, end or None when the host
        cannot compute them, the terms of the body): their iterations add up."""
        terms: list[Any] = []
        for st in block.stmts:
            if isinstance(st, For):
                known = need(st.begin) and need(st.end)
                terms.append(((st.begin, st.end) if known else None,
                              self.thread_work(st.body, need)))
            elif not isinstance(st, Instr):
                for b in child_blocks(st):
                    terms += self.thread_work(b, need)
        return terms

    def work_text(self, terms: list[Any]) -> str:
        """Python text of the iterations `terms` (thread_work) come to."""
        parts = []
        for bounds, body in terms:
            inner = f"max({self.work_text(body)}, 1)" if body else "1"
            parts.append(inner if bounds is None else f"{self.trips(*bounds)} * {inner}")
        return " + ".join(parts) or "0"

    def lane_function(self, k: int, s: For) -> None:
        plan = self.lanes[id(s)]
        private = {id_: (accumulator(kk, p), p) for id_, (kk, p) in self.sites.items()
                   if kk == k}
        e = LaneEmitter(TABLE, plan.u, self.width or 1, private=private, runs=self.runs)
        e.constants = self.constants  # one module, one set of constants
        e.depth = self.depth
        nest = self.nests[id(s)]
        e.function(f"_lanes_{k}", self.args_of(s), nest, nest[-1].body, plan.varying_vars)
        # Lane operations are called through module-level names (`V_add = V.add`): numba
        # types a global intrinsic directly, where `V.add` is an attribute of a global
        # module that its constant inference tries, fails and formats an error for, at
        # every call (a cost that grows faster than the kernel's length).
        for line in e.lines:
            self.lane_names.update(_LANE_CALL.findall(line))
        self.lines += [_LANE_CALL.sub(r"V_\1(", line) for line in e.lines]

    def render(self) -> str:
        loc = self.kernel.loc
        self.lines += [
            f'"""Generated by qdarray {__version__} for kernel {self.kernel.name!r} '
            f'({loc.file}:{loc.line}). Do not edit."""',
            "import numpy as np",
            "from numba import njit, prange",
            "from qdarray.kernels.codegen.numba.cpu_runtime import (atomic_add, atomic_max,",
            "    atomic_min, fma, get_thread_id, ipow, report_index_error, upow)",
            "from qdarray.kernels.codegen.numba.lanes_runtime import lane_ops",
            "", f"V = lane_ops({self.width or 1})", ""]
        for k, reasons in self.scalar_reasons.items():
            for r in reasons:
                self.line(f"# parallel loop {k} runs thread by thread: {r}")
        for k, s in enumerate(self.loops):
            plan = self.lanes.get(id(s))
            if plan is not None and plan.stacks:
                self.line(f"# parallel loop {k}: each lane keeps its own adstack depths: "
                          f"{plan.per_lane}" if plan.per_lane else
                          f"# parallel loop {k}: a lane group shares its adstack depths")
        if self.scalar_reasons:
            self.line("")
        for k, s in enumerate(self.loops):
            if id(s) in self.lanes:
                self.lane_function(k, s)
            self.body_function(k, s)
        self.entry("entry_serial", False)
        if self.loops:
            self.entry("entry_parallel", True)
        self.work()
        self.lines += self.constant_lines()
        self.lines += [f"V_{name} = V.{name}" for name in sorted(self.lane_names)]
        return self.source()


_LANE_CALL = re.compile(r"\bV\.([a-z_0-9]+)\(")


def render_numba_cpu(kernel: KernelIR, *, debug: bool = False, lanes: int | None = None
                     ) -> str:
    """Python source of a module running `kernel` (views lowered) with numba on the CPU;
    `lanes`: the width of the lane groups (None: thread by thread)."""
    return NumbaCpuEmitter(kernel, debug, lanes).render()


def _term_values(terms: list[Any]) -> list[Value]:
    """The bound values of `terms` (NumbaEmitter.thread_work)."""
    out: list[Value] = []
    for bounds, body in terms:
        if bounds is not None:
            out += bounds
        out += _term_values(body)
    return out


def needed_value(d: Instr) -> Value:
    """The result of an instruction that has one."""
    assert d.result is not None
    return d.result
