"""The lane renderer: a parallel loop's body for a group of consecutive threads at once, one
thread per SIMD lane (numba CPU). The numba CPU generator (numba/cpu.py) calls it for every
parallel loop that `lane_plan` (numba/lanes_plan.py) accepts and keeps its scalar body
function for the others.

`_lanes_<k>(_g, _n, ...)` runs threads `_g .. _g + _n - 1` (of the innermost loop of the
nest; the outer indices are arguments). What the body computes is classified by
`passes/uniformity.py`: uniform values stay scalars spelled as the scalar generator spells
them, LINEAR values (the thread index and uniform offsets of it) are kept as their first
lane's scalar plus a vector `w<id>`, varying values are vectors of `Lanes`
(numba/lanes_runtime.py), one intrinsic call per op where it is one instruction (TABLE)
and numba's own scalar spelling run lane by lane otherwise, so every lane computes exactly
what the scalar code computes.

Control flow runs under masks (`_c<n>`: the lanes executing a point of the body): an `if` on
a varying condition runs each branch under its lanes, skipped when it has none; a masked loop
(uniformity.py) runs until no lane is left, its lanes leaving by their bounds, `break` and
`continue`; a top-level `continue` takes its lanes out of the rest of the body. Stores and
atomics write active lanes only, in lane order (= thread order); a varying local keeps its
value in lanes that do not execute its store. Reverse kernels' adstacks are lowered to
loads, stores and an overflow atomic (passes/lower_adstack.py) at entries in the worker's
scratch region (WORKER, one value per group; LANE, 0 plus the
lane's index: ad/transform/adstack.py `scratch_slice`), depth-major: lanes at one depth touch one
contiguous run. A group keeps one depth for all its lanes where passes/lane_stacks.py allows
it (then a push is one masked contiguous store and a pop one contiguous load), else each lane
its own (gathers and scatters that check at run time whether they form a run). The loops of
a reverse kernel that pop are end-aligned (passes/uniformity.py): a lane with fewer
iterations starts later, so its pops meet the depths its pushes left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir import Block, Break, For, If, Instr, Op, Stmt, Value, Var, While
from ...passes.uniformity import Kind, Uniformity
from .lanes_ops import vector_spelling
from .pysource import PY_TABLE, PySourceEmitter, const, ctor

U, L = Kind.UNIFORM, Kind.LINEAR

@dataclass
class _Scope:
    """A loop (or the body) that break / continue / top-level continue leave: `act` holds
    the lanes still in a masked loop, `cur` those running the current iteration, `masks`
    the branch masks opened inside it since (refreshed when lanes leave)."""

    cur: str
    act: str | None = None
    masked: bool = False
    masks: list[str] = field(default_factory=list)


class _LaneArgs:
    """Names the arguments of a scalar spelling by one lane's values (`lane`: its index)."""

    def __init__(self, owner: LaneEmitter, lane: str) -> None:
        self.owner = owner
        self.lane = lane
        self.line = owner.line
        self.indent = owner.indent
        self.constant = owner.constant

    def val(self, v: Value) -> str:
        return self.owner.lane_value(v, self.lane)

    def var(self, var: Var) -> str:
        return self.owner.var(var)


class LaneEmitter(PySourceEmitter):
    """Writes one group function (see the module docstring)."""

    def __init__(self, scalar: dict[Op, Any], u: Uniformity, width: int, *,
                 private: dict[int, tuple[str, Any]], runs: set[int] | None = None) -> None:
        super().__init__()
        self.scalar = scalar
        self.u = u
        self.runs = runs or set()  # arrays whose lane-indexed accesses often form runs
        self.width = width
        self.private = private  # id(instr) -> (accumulator row, BlockSum)
        self.count = 0
        self.scopes: list[_Scope] = []
        self.vmask: str | None = None

    # -- names ----------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def vec(self, v: Value) -> str:
        """The vector of `v`'s lanes."""
        k = self.u.kind(v)
        if k is U:
            return f"V.splat({self.val(v)})"
        return f"w{v.id}" if k is L else self.val(v)

    def lane_value(self, v: Value, lane: str) -> str:
        k = self.u.kind(v)
        if k is U:
            return self.val(v)
        return f"V.get({self.vec(v)}, {lane})"

    @property
    def cur(self) -> str:
        scope = self.scopes[-1]
        return scope.masks[-1] if scope.masks else scope.cur

    # -- the function ---------------------------------------------------------------------

    def function(self, name: str, params: list[str], nest: list[For], body: Block,
                 varying_vars: list[Var]) -> None:
        outer = ", ".join(f"_t{d}" for d in range(len(nest) - 1))
        head = ", ".join(p for p in [outer, "_g, _n", ", ".join(params)] if p)
        self.line('@njit(cache=True, nogil=True, error_model="numpy")')
        self.line(f"def {name}({head}):")
        self.in_body = len(nest)
        with self.indent():
            self.line("_c0 = V.first(_n)")
            self.scopes = [_Scope("_c0")]
            for d, loop in enumerate(nest):
                t = ctor(loop.index.type)
                if d < len(nest) - 1:
                    self.line(f"{self.val(loop.index)} = {t}(_t{d})")
                else:
                    self.line(f"{self.val(loop.index)} = {t}(_g)")
                    self.line(f"w{loop.index.id} = V.add(V.splat({self.val(loop.index)}), "
                              f"V.cast(V.iota(), {t}))")
            for var in varying_vars:
                self.line(f"{self.var(var)} = V.splat({const(0, var.dtype)})")
            self.block(body)
        self.line("")

    # -- statements -----------------------------------------------------------------------

    def stmt(self, stmt: Stmt) -> None:
        if isinstance(stmt, Instr):
            self.instr(stmt, None)
        elif isinstance(stmt, If):
            self.if_(stmt)
        elif isinstance(stmt, For):
            self.for_(stmt)
        elif isinstance(stmt, While):
            self.while_(stmt)
        else:
            self.exit(stmt)

    def branch(self, body: Block, mask: str | None) -> None:
        if mask is None:
            self.block(body)
            return
        scope = self.scopes[-1]
        scope.masks.append(mask)
        self.if_any(mask, body)
        scope.masks.pop()

    def if_any(self, mask: str, body: Block) -> None:
        """`body` under the lanes of `mask` (which its stores and atomics write), skipped
        when it has none."""
        saved = self.vmask
        self.vmask = mask
        self.line(f"if V.any_({mask}):")
        with self.indent():
            self.block(body)
        self.vmask = saved

    def if_(self, s: If) -> None:
        if self.u.uniform(s.cond):
            PY_TABLE[Op.IF](self, s)  # every lane takes the same branch: the plain statement
            return
        then, other = self.fresh("_m"), self.fresh("_m")
        c = self.vec(s.cond)
        self.line(f"{then} = V.band({self.cur}, {c})")
        if s.else_body.stmts:
            self.line(f"{other} = V.band({self.cur}, V.bnot({c}))")
        self.branch(s.then_body, then)
        if s.else_body.stmts:
            self.branch(s.else_body, other)

    def for_(self, s: For) -> None:
        if id(s) not in self.u.masked_loops:
            self.uniform_loop(s)
            return
        if id(s) in self.u.end_aligned:
            self.aligned_loop(s)
            return
        act, cur = self.fresh("_a"), self.fresh("_c")
        self.line(f"{act} = {self.cur}")
        lo, hi = (self.bound(v, act, low) for v, low in ((s.begin, True), (s.end, False)))
        t = f"_i{s.index.id}"
        self.line(f"for {t} in range({lo}, {hi}):")
        with self.loop():
            i = self.val(s.index)
            self.line(f"{i} = {ctor(s.index.type)}({t})")
            if not self.u.uniform(s.end):  # a lane past its own end has left for good
                self.line(f"{act} = V.band({act}, V.lt(V.splat({i}), {self.vec(s.end)}))")
            self.line(f"if not V.any_({act}):")
            with self.indent():
                self.line("break")
            live = act
            if not self.u.uniform(s.begin):
                live = f"V.band({live}, V.le({self.vec(s.begin)}, V.splat({i})))"
            self.line(f"{cur} = {live}")
            self.masked_body(s.body, act, cur)

    def aligned_loop(self, s: For) -> None:
        """An end-aligned loop (passes/uniformity.py): as many steps as its lanes' largest
        trip count; a lane with n iterations runs them in the last n steps, its index at step
        j (of T) begin + j - (T - n)."""
        act, cur = self.fresh("_a"), self.fresh("_c")
        b, n, k, big = self.fresh("_b"), self.fresh("_n"), self.fresh("_k"), self.fresh("_T")
        i64 = "np.int64"
        self.line(f"{act} = {self.cur}")
        self.line(f"{b} = V.cast({self.vec(s.begin)}, {i64})")
        self.line(f"{n} = V.sub(V.cast({self.vec(s.end)}, {i64}), {b})")
        self.line(f"{n} = V.select(V.gt({n}, V.splat({i64}(0))), {n}, V.splat({i64}(0)))")
        self.line(f"{big} = V.hmax(V.select({act}, {n}, V.splat({i64}(0))))")
        t = f"_i{s.index.id}"
        self.line(f"for {t} in range({big}):")
        with self.loop():
            self.line(f"{k} = V.add(V.splat({i64}({t} - {big})), {n})")
            self.line(f"{cur} = V.band({act}, V.ge({k}, V.splat({i64}(0))))")
            self.line(f"{self.val(s.index)} = V.cast(V.add({b}, {k}), {ctor(s.index.type)})")
            self.masked_body(s.body, act, cur)

    def bound(self, v: Value, act: str, low: bool) -> str:
        """A loop bound over the lanes in `act`: the smallest start, the largest end."""
        if self.u.uniform(v):
            return self.val(v)
        info = np.iinfo(v.type._np)  # type: ignore[union-attr]
        far = const(info.max if low else info.min, v.type)
        return f"V.h{'min' if low else 'max'}(V.select({act}, {self.vec(v)}, V.splat({far})))"

    def uniform_loop(self, s: For | While) -> None:
        """A loop that every lane here runs alike: the Python walker's own statement
        (pysource's table), a scope of its own for the exits of its body (the lanes running
        it are the enclosing ones; the body of a group's loop nest is never parallel)."""
        self.scopes.append(_Scope(self.cur))
        PY_TABLE[Op.FOR if isinstance(s, For) else Op.WHILE](self, s)
        self.scopes.pop()

    def masked_body(self, body: Block, act: str, cur: str) -> None:
        self.scopes.append(_Scope(cur, act, True))
        self.if_any(cur, body)
        self.scopes.pop()

    def while_(self, s: While) -> None:
        if id(s) not in self.u.masked_loops:
            self.uniform_loop(s)
            return
        act, cur = self.fresh("_a"), self.fresh("_c")
        self.line(f"{act} = {self.cur}")
        self.line("while True:")
        with self.loop():
            saved = self.vmask
            self.vmask = act
            self.scopes.append(_Scope(act, act, True))
            for stmt in s.cond_body.stmts:
                self.stmt(stmt)
            self.scopes.pop()
            self.vmask = saved
            self.line(f"{act} = V.band({act}, {self.vec(s.cond)})")
            self.line(f"if not V.any_({act}):")
            with self.indent():
                self.line("break")
            self.line(f"{cur} = {act}")
            self.masked_body(s.body, act, cur)

    def exit(self, s: Stmt) -> None:
        """break / continue: plain where every lane here takes it, else lanes leave."""
        scope = self.scopes[-1]
        top = len(self.scopes) == 1
        if not scope.masked and not scope.masks:
            if top:
                self.line("return")
            else:
                self.line("break" if isinstance(s, Break) else "continue")
            return
        assert scope.masked or top, "an exit under varying control leaves a masked loop"
        leaving = self.cur
        if isinstance(s, Break) and scope.act is not None:
            self.line(f"{scope.act} = V.band({scope.act}, V.bnot({leaving}))")
        if leaving != scope.cur:
            self.line(f"{scope.cur} = V.band({scope.cur}, V.bnot({leaving}))")
        else:
            self.line(f"{scope.cur} = V.band({scope.cur}, V.bnot({scope.cur}))")
        for m in scope.masks:
            self.line(f"{m} = V.band({m}, {scope.cur})")

    # -- instructions ---------------------------------------------------------------------

    def instr(self, i: Instr, spelling: Any) -> None:
        op = i.op
        if op is Op.STORE_VAR:
            self.store_var(i)
        elif op in (Op.LOAD, Op.STORE):
            self.memory(i)
        elif op in (Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX):
            self.atomic(i)
        elif op is Op.LOAD_VAR:
            self.line(f"{self.val(i.result)} = {self.var(i.attrs[0])}")  # type: ignore[arg-type]
        elif i.result is not None and self.u.kind(i.result) is L:
            self.scalar_instr(i)  # the first lane's value, then the vector
            w = (f"V.cast({self.vec(i.args[0])}, {ctor(i.result.type)})" if op is Op.CAST
                 else f"V.add(V.splat({self.val(i.result)}), V.cast(V.iota(), "
                      f"{ctor(i.result.type)}))")
            self.line(f"w{i.result.id} = {w}")
        elif i.result is None or self.u.uniform(i.result):
            self.scalar_instr(i)
        else:
            text = vector_spelling(self, i)
            if text is not None:
                self.line(f"{self.val(i.result)} = {text}")
            else:
                self.per_lane(i)

    def scalar_instr(self, i: Instr) -> None:
        super().instr(i, self.scalar[i.op])

    def per_lane(self, i: Instr) -> None:
        """numba's scalar spelling of `i`, lane by lane (active lanes only)."""
        r = i.result
        assert r is not None
        out = self.val(r)
        self.line(f"{out} = V.splat({const(0, r.type)})")
        self.line(f"for _l in range({self.width}):")
        with self.indent():
            self.line(f"if V.get({self.cur}, _l):")
            with self.indent():
                lane = _LaneArgs(self, "_l")
                spelling = self.scalar[i.op]
                text = (spelling(lane, i) if callable(spelling) else
                        spelling.format(*(lane.val(a) for a in i.args), *i.attrs))
                self.line(f"{out} = V.put({out}, _l, {self.result(i, text)})")

    def store_var(self, i: Instr) -> None:
        var = i.attrs[0]
        name = self.var(var)
        if var.id not in self.u.varying_vars:
            self.line(f"{name} = {self.val(i.args[0])}")
        elif self.vmask is None:
            self.line(f"{name} = {self.vec(i.args[0])}")
        else:
            self.line(f"{name} = V.select({self.vmask}, {self.vec(i.args[0])}, {name})")

    def index(self, args: tuple[Value, ...]) -> tuple[str, bool]:
        """(index tuple, contiguous): the first lane's indices when only the last is LINEAR
        and the others uniform (a run of lanes), else each index's vector or scalar."""
        kinds = [self.u.kind(a) for a in args]
        if kinds and kinds[-1] is L and all(k is U for k in kinds[:-1]):
            return f"({', '.join(self.val(a) for a in args)},)", True
        parts = [self.val(a) if k is U else self.vec(a) for a, k in zip(args, kinds,
                                                                        strict=True)]
        return f"({', '.join(parts)},)", False

    def memory(self, i: Instr) -> None:
        if i.op is Op.LOAD:
            if self.u.uniform(i.result):  # type: ignore[arg-type]
                self.scalar_instr(i)
                return
            idx, run = self.index(i.args[1:])
            fn = "load" if run else "gather_run" if self.checks_run(i, 1) else "gather"
            self.line(f"{self.val(i.result)} = V.{fn}({self.val(i.args[0])}, {idx}, "  # type: ignore[arg-type]
                      f"{self.cur})")
            return
        idx, run = self.index(i.args[1:-1])
        if not i.args[1:-1]:
            idx = "(0,)"  # a 0-d array, passed as a 1-element 1-d view
        fn = "store" if run else "scatter_run" if self.checks_run(i, 2) else "scatter"
        self.line(f"V.{fn}({self.val(i.args[0])}, {idx}, {self.vec(i.args[-1])}, "
                  f"{self.cur})")

    def checks_run(self, i: Instr, extra: int) -> bool:
        """Whether a lane-indexed access `i` (`extra`: its operands other than the one
        index) checks at run time for a run: an access to an array of `runs`."""
        return i.args[0].id in self.runs and len(i.args) == 1 + extra

    def atomic(self, i: Instr) -> None:
        r = i.result
        site = self.private.get(id(i))
        if r is not None and site is None:
            self.line(f"{self.val(r)} = V.splat({const(0, r.type)})")
        self.line(f"for _l in range({self.width}):")
        with self.indent():
            self.line(f"if V.get({self.cur}, _l):")
            with self.indent():
                lane = _LaneArgs(self, "_l")
                if site is not None:
                    site[1].combine(self, f"{site[0]}[0]", lane.val(i.args[-1]))
                    return
                text = self.scalar[i.op](lane, i)
                if r is None:
                    self.line(text)
                else:
                    self.line(f"{self.val(r)} = V.put({self.val(r)}, _l, {text})")
