"""The reverse-mode transform: a kernel's IR -> the IR of its reverse kernel.

Each thread of the reverse kernel runs its forward thread body once more (the *forward
sweep*: locals only, no global writes, pushing onto adstacks what the reverse needs), then
walks the body backwards (the *reverse sweep*), adding each op's contribution to the
adjoints through the op's own rule (`kernels/ops/*.py`, `adjoint=`). This module is the
machinery only; it holds no maths of any op.

- Top regions (the kernel's serial code, the parallel loop's body) run once per thread, so
  their values stay in scope: the reverse sweep uses the forward sweep's values directly.
- Inside constructs each *segment* (straight-line run) is recomputed from its entry state:
  a local's value at entry is the top of its adstack (each segment that stores a local pushes
  its final value; the reverse pops it first), or the value captured when the enclosing top
  construct began, for locals the construct does not store.
- A top construct without loops inside (`Structure.straight`: ifs only) runs each of its
  segments at most once per thread, so it needs no stack: a segment copies the locals it reads
  at entry into locals of its own (`<name>_in`), and an inner if keeps its condition in one.
- A top loop without loops inside replays its integer locals in the reverse instead of
  stacking them (transform/replay.py).
- If: its condition is recomputed, pushed, or kept in a local (straight constructs,
  replays). For: its bounds are recomputed or the start
  and trip count pushed; a loop with an exit test (break) counts its iterations. While: its
  trip count is counted. The reverse of a loop runs its body's reverse from the last
  iteration to the first, recomputing the loop index.
- Locals have adjoint locals `adj_<name>`; STORE_VAR v = s gives adj_s += adj_v, adj_v = 0;
  LOAD_VAR v -> x gives adj_v += adj_x. Locals of the serial code that the parallel loop
  reads collect their adjoints through a float64 scratch array (one atomic add per thread).
- Debug-mode checks in the forward IR (kernel-side subviews, accesses through them) run in
  the forward sweep; the compile of the reverse kernel adds bounds checks of its accesses.
"""

from __future__ import annotations

from typing import Any

from ... import _dtypes
from ..._errors import AutodiffError
from ...kernels.emit import Emitter, block
from ...kernels.frontend.diagnostics import format_location
from ...kernels.ir import Block, For, If, Instr, KernelIR, Op, Param, Value, Var, While
from ...kernels.ops import OPS
from ...kernels.ops.adstack import PARAM_PREFIX
from ...kernels.types import ArrayType, is_float
from . import checkpoint, replay
from .activity import Activity
from .adjoint import AdjMap, AdjointBuilder
from .adstack import StackInfo, Stacks
from .exits import has_exit_test
from .gradient_memory import GradMemory
from .structure import EXTREMA, WRITES, Node, Region, Seg, Structure, entry_reads, stored_vars
from .sweep import Env


class Gen:
    """Generates one reverse kernel (see the module docstring)."""

    def __init__(self, kernel: KernelIR, st: Structure, act: Activity, em: Emitter,
                 grads: dict[int, Value], names: dict[int, str], checkpoint: bool = False,
                 scratch: bool = False) -> None:
        self.kernel = kernel
        self.st = st
        self.act = act
        self.em = em
        self.grads = grads
        self.names = names
        self.stacks = Stacks(em, scratch)
        self.var_stacks: dict[tuple[int, int], StackInfo] = {}
        self.header_stacks: dict[tuple[int, str], StackInfo] = {}
        self.captured: dict[int, dict[int, Value]] = {}
        self.trips: dict[int, Value] = {}
        self.subst: dict[int, Value] = {}
        self.loops: list[Node] = []
        self.task: Node | None = None
        self.assigned: set[int] = set()
        self.adj_vars: dict[tuple[int, int], Var] = {}
        self.task_adj: dict[int, list[Var]] = {}
        self.outer_adj: dict[tuple[int, int], tuple[Var, int]] = {}
        self.scratch: Value | None = None
        self.placeholders: dict[int, Instr] = {}
        self.entry_vars: dict[int, set[int]] = {}
        self.entry_copies: dict[tuple[int, int], Var] = {}  # (id(seg), var id): straight
        self.cond_copies: dict[int, Var] = {}               # id(if node): straight
        self.task_copies: dict[int, list[Var]] = {}
        self.replays: dict[int, replay.Replay | None] = {}
        self.memory = GradMemory(em, grads)
        self.var_loc = self._var_locations()
        self.serial_fwd: list[Any] = []
        self.thread_fwd: dict[int, tuple[list[Any], list[Any]]] = {}
        # checkpointing (transform/checkpoint.py): the loops whose iterations are recomputed in
        # blocks of `@checkpoint` from every k-th state, pushes suppressed while sweeping them
        self.checkpoint = checkpoint
        self.stride: Value | None = None
        self.checkpointed: dict[int, Any] = {}
        self.suppress = False

    def _var_locations(self) -> dict[int, Any]:
        from ...kernels.ir import instrs

        out: dict[int, Any] = {}
        for i in instrs(self.kernel.body):
            if i.op is Op.STORE_VAR:
                out.setdefault(i.attrs[0].id, i.loc)
        return out

    # -- values ---------------------------------------------------------------------------

    def clone(self, instr: Instr, env: Env) -> Value:
        args = tuple(env.get(a) for a in instr.args)
        result = self.em.value(instr.result.type)  # type: ignore[union-attr]
        self.em.stmt(Instr(instr.op, result, args, instr.attrs, instr.loc))
        return result

    def check_recompute(self, instr: Instr) -> None:
        if instr.op in WRITES:
            self.atomic_result_error(instr)

    def atomic_result_error(self, instr: Instr) -> None:
        raise AutodiffError(
            f"Reverse mode cannot recompute the value returned by {instr.op.name} (the "
            f"element's old value): the forward launch changed the element.\n"
            f"{format_location(instr.loc)}\n"
            "Try computing the value without the atomic, or keep the atomic's result out of "
            "the differentiated computation (e.g. in a separate kernel).")

    def captured_value(self, top: Node | None, var: Var) -> Value:
        if top is None or var.id not in self.captured.get(id(top), {}):
            raise AssertionError(f"{var} has no captured value")
        return self.captured[id(top)][var.id]

    def recomputable(self, v: Value, top: Node | None) -> bool:
        return self.st.recomputable(v, top)

    # -- stacks ---------------------------------------------------------------------------

    def var_stack(self, top: Node, var: Var) -> StackInfo:
        key = (id(top), var.id)
        s = self.var_stacks.get(key)
        if s is None:
            s = self.stacks.new(var.name, var.dtype, self.var_loc.get(var.id, top.stmt.loc),
                                self.task)
            self.var_stacks[key] = s
        return s

    def header_stack(self, node: Node, kind: str, dtype: Any) -> StackInfo:
        key = (id(node), kind)
        s = self.header_stacks.get(key)
        if s is None:
            s = self.stacks.new(kind, dtype, node.stmt.loc, self.task)
            self.header_stacks[key] = s
        return s

    def straight(self, top: Node | None) -> bool:
        return top is not None and self.st.straight(top)

    def replayed(self, top: Node | None) -> set[int]:
        """The locals of the top construct `top` that its reverse replays (transform/replay.py)."""
        rep = self.replay(top)
        return rep.vars if rep is not None else set()

    def replayed_conds(self, top: Node | None) -> set[int]:
        rep = self.replay(top)
        return rep.conds if rep is not None else set()

    def replay(self, top: Node | None) -> replay.Replay | None:
        if top is None or (self.checkpoint and checkpoint.applies(top)):
            return None
        if id(top) not in self.replays:
            self.replays[id(top)] = replay.plan(self.st, self.act, top)
        return self.replays[id(top)]

    def copy_var(self, name: str, dtype: Any) -> Var:
        var = self.em.var(name, dtype)
        self.task_copies.setdefault(id(self.task), []).append(var)
        return var

    def entry_copy(self, seg: Seg, var: Var) -> Var:
        key = (id(seg), var.id)
        if key not in self.entry_copies:
            self.entry_copies[key] = self.copy_var(f"{var.name}_in", var.dtype)
        return self.entry_copies[key]

    def push(self, s: StackInfo, v: Value) -> None:
        if not self.suppress:
            self.stacks.push(s, v, tuple(self.loops))

    def pop_top(self, s: StackInfo) -> Value:
        t = self.stacks.top(s)
        self.stacks.pop(s)
        return t

    # -- forward sweep ----------------------------------------------------------------------

    def fwd_instr(self, instr: Instr) -> None:
        em = self.em
        if instr.op in WRITES:
            if instr.result is not None:  # kept only when something needs it (then an error)
                r = instr.result
                em.stmt(Instr(Op.CONST, r, (), (0.0 if is_float(r.type) else 0, r.type),
                              instr.loc))
                self.placeholders[r.id] = instr
            return
        if instr.op is Op.LOAD_VAR and self.task is not None:
            var = instr.attrs[0]
            if var.id not in self.task.stores:  # a local of the serial code: its value then
                self.subst[instr.result.id] = self.captured[id(self.task)][var.id]  # type: ignore[union-attr]
                return
        if instr.op is Op.STORE_VAR:
            self.assigned.add(instr.attrs[0].id)
        if any(a.id in self.subst for a in instr.args):
            instr = Instr(instr.op, instr.result, tuple(self.subst.get(a.id, a)
                                                        for a in instr.args),
                          instr.attrs, instr.loc)
        em.stmt(instr)

    def var_now(self, var: Var) -> Value:
        if self.task is not None and var.id not in self.task.stores:
            return self.captured[id(self.task)][var.id]
        return self.em.load_var(var)

    def capture(self, node: Node) -> None:
        with self.em.at(node.stmt.loc):
            self.captured[id(node)] = {vid: self.var_now(var) for vid, var in node.reads.items()
                                       if vid not in node.stores}

    def fwd_top(self, reg: Region) -> None:
        for item in reg.items:
            if isinstance(item, Seg):
                for instr in item.instrs:
                    self.fwd_instr(instr)
            elif item.task_body:
                self.capture(item)
            elif self.checkpoint and checkpoint.applies(item):
                checkpoint.forward(self, item)
            else:
                self.capture(item)
                if not self.straight(item):
                    entry = self.entry_vars.setdefault(id(item), set())
                    with self.em.at(item.stmt.loc):
                        for vid in sorted((item.stores & self.assigned)
                                          - self.replayed(item)):
                            var = self.st.vars[vid]
                            self.push(self.var_stack(item, var), self.em.load_var(var))
                            entry.add(vid)
                self.fwd_node(item)
                self.assigned |= item.stores

    def fwd_block(self, reg: Region) -> None:
        for item in reg.items:
            if isinstance(item, Seg):
                top = reg.parent.top_node  # type: ignore[union-attr]
                assert top is not None
                if self.straight(top):
                    with self.em.at(item.instrs[0].loc):
                        for var in entry_reads(item, top.stores):
                            self.em.store_var(self.entry_copy(item, var), self.em.load_var(var))
                for instr in item.instrs:
                    self.fwd_instr(instr)
                for var in self.pushed_vars(item, top):
                    with self.em.at(self.var_loc.get(var.id, item.instrs[-1].loc)):
                        self.push(self.var_stack(top, var), self.em.load_var(var))
            else:
                self.fwd_node(item)

    def pushed_vars(self, seg: Seg, top: Node) -> list[Var]:
        """The locals `seg` stores that go on `top`'s stacks."""
        if self.straight(top):
            return []
        skip = self.replayed(top)
        return [v for v in stored_vars(seg) if v.id not in skip]

    def sub_block(self, reg: Region) -> Block:
        with self.em.region() as out:
            self.fwd_block(reg)
        return block(out)

    def fwd_node(self, node: Node, start: Any = None) -> None:
        """The forward sweep of `node`; `start()` emits code at the start of each iteration
        of a loop (transform/checkpoint.py)."""
        em = self.em
        s = node.stmt
        nested = not node.region.top
        top = node.top_node
        if node.exit:
            em.stmt(If(self.subst.get(s.cond.id, s.cond), s.then_body, s.else_body, s.loc))
            return
        with em.at(s.loc):
            if isinstance(s, If):
                if nested and not self.recomputable(s.cond, top):
                    if self.straight(top):
                        var = self.cond_copies[id(node)] = self.copy_var("cond", s.cond.type)
                        em.store_var(var, self.subst.get(s.cond.id, s.cond))
                    elif id(node) not in self.replayed_conds(top):
                        self.push(self.header_stack(node, "if condition", s.cond.type), s.cond)
                then, other = (self.sub_block(r) for r in node.children)
                em.stmt(If(self.subst.get(s.cond.id, s.cond), then, other, s.loc))
                return
            i64 = _dtypes.int64
            counted = isinstance(s, While) or has_exit_test(s.body)
            counter = em.var("trips", i64) if counted else None
            if counter is not None:
                em.store_var(counter, em.i64(0))
            if isinstance(s, For):
                begin, end = (self.subst.get(v.id, v) for v in (s.begin, s.end))
                if nested:
                    b_ok = self.recomputable(s.begin, top)
                    if not b_ok:
                        self.push(self.header_stack(node, "loop start", begin.type), begin)
                    if not counted and not (b_ok and self.recomputable(s.end, top)):
                        n = em.emit(Op.MAX, em.emit(Op.SUB, end, begin), em.const(0, end.type))
                        self.push(self.header_stack(node, "loop trip count", i64),
                                  em.cast(n, i64))
            self.loops.append(node)
            with em.region() as body:
                if start is not None:
                    start()
                if counter is not None:
                    em.store_var(counter, em.emit(Op.ADD, em.load_var(counter), em.i64(1)))
                self.fwd_block(node.children[0])
            self.loops.pop()
            if isinstance(s, For):
                em.stmt(For(s.index, begin, end, block(body), False, s.loc))
            else:
                with em.region() as cond:
                    for instr in s.cond_body.stmts:
                        self.fwd_instr(instr)
                em.stmt(While(block(cond), self.subst.get(s.cond.id, s.cond), block(body),
                              s.loc))
            if counter is not None:
                n = em.load_var(counter)
                if nested:
                    self.push(self.header_stack(node, "loop trip count", i64), n)
                else:
                    self.trips[id(node)] = n

    # -- reverse sweep ----------------------------------------------------------------------

    def rev_top(self, reg: Region) -> None:
        env = Env(self, None, None)
        adj = AdjMap(self.em)
        for item in reversed(reg.items):
            if isinstance(item, Seg):
                for instr in reversed(item.instrs):
                    self.adjoint(instr, env, adj)
                with self.em.at(item.instrs[0].loc):
                    adj.flush()
            elif item.task_body:
                self.rev_task(item)
            elif id(item) in self.checkpointed:
                checkpoint.reverse(self, item, Env(self, env, item))
            elif not item.exit:
                self.rev_node(item, Env(self, env, item))

    def header(self, node: Node, kind: str, v: Value, env: Env) -> Value:
        if node.region.top or self.recomputable(v, node.top_node):
            return env.get(v)
        if id(node) in self.cond_copies:
            return self.em.load_var(self.cond_copies[id(node)])
        return self.pop_top(self.header_stacks[(id(node), kind)])

    def rev_node(self, node: Node, env: Env) -> None:
        em = self.em
        s = node.stmt
        top = node.top_node
        with em.at(s.loc):
            if isinstance(s, If):
                c = self.header(node, "if condition", s.cond, env)
                kids = []
                for r in node.children:
                    with em.region() as out:
                        self.rev_block(r, Env(self, env, top))
                    kids.append(block(out))
                em.stmt(If(c, kids[0], kids[1], s.loc))
                return
            i64 = _dtypes.int64
            if isinstance(s, For):
                t = s.index.type
                begin = self.header(node, "loop start", s.begin, env)
                if id(node) in self.trips:
                    n = em.cast(self.trips[id(node)], t)
                elif (id(node), "loop trip count") in self.header_stacks and not node.region.top:
                    n = em.cast(self.pop_top(self.header_stacks[(id(node), "loop trip count")]),
                                t)
                else:  # top level, or both bounds recomputable
                    end = env.get(s.end)
                    n = em.emit(Op.MAX, em.emit(Op.SUB, end, begin), em.const(0, t))
            else:
                t = i64
                if id(node) in self.trips:
                    n = self.trips[id(node)]
                else:
                    n = self.pop_top(self.header_stacks[(id(node), "loop trip count")])
            step = em.value(t)
            with em.region() as body:
                inner = Env(self, env, top)
                if isinstance(s, For):
                    last = em.emit(Op.SUB, n, em.const(1, t))
                    inner.map[s.index.id] = em.emit(Op.ADD, begin, em.emit(Op.SUB, last, step))
                rep = self.replay(node) if node.region.top else None
                if rep is not None:
                    replay.emit(self, node, rep, inner)
                self.rev_block(node.children[0], inner)
            em.stmt(For(step, em.const(0, t), n, block(body), False, s.loc))

    def rev_block(self, reg: Region, env: Env) -> None:
        for item in reversed(reg.items):
            if isinstance(item, Seg):
                self.rev_seg(item, env)
            elif not item.exit:
                self.rev_node(item, env)

    def rev_seg(self, seg: Seg, parent: Env) -> None:
        em = self.em
        top = seg.region.parent.top_node  # type: ignore[union-attr]
        assert top is not None
        copied = self.replayed(top) | (top.stores if self.straight(top) else set())
        with em.at(seg.instrs[0].loc):
            for var in self.pushed_vars(seg, top):
                self.stacks.pop(self.var_stack(top, var))
        env = Env(self, parent, top)
        current: dict[int, Value] = {}
        tops: dict[int, Value] = {}
        for instr in seg.instrs:
            with em.at(instr.loc):
                op = instr.op
                if op is Op.LOAD_VAR:
                    var = instr.attrs[0]
                    v = current.get(var.id)
                    if v is None:
                        if var.id in top.stores:
                            if var.id not in tops:
                                tops[var.id] = (em.load_var(self.entry_copy(seg, var))
                                                if var.id in copied else
                                                self.stacks.top(self.var_stack(top, var)))
                            v = tops[var.id]
                        else:
                            v = self.captured_value(top, var)
                    env.map[instr.result.id] = v  # type: ignore[union-attr]
                elif op is Op.STORE_VAR:
                    current[instr.attrs[0].id] = env.get(instr.args[0])
                elif op in WRITES:
                    if instr.result is not None:
                        r = instr.result
                        ph = em.const(0.0 if is_float(r.type) else 0, r.type)
                        self.placeholders[ph.id] = instr
                        env.map[r.id] = ph
                elif op is not Op.CHECK_INDEX:
                    env.map[instr.result.id] = self.clone(instr, env)  # type: ignore[union-attr]
        adj = AdjMap(em)
        for instr in reversed(seg.instrs):
            self.adjoint(instr, env, adj)
        with em.at(seg.instrs[0].loc):
            adj.flush()

    # -- adjoints -------------------------------------------------------------------------

    def adjoint(self, instr: Instr, env: Env, adj: AdjMap) -> None:
        op = instr.op
        act = self.act
        with self.em.at(instr.loc):
            if op is Op.LOAD_VAR:
                g = adj.pop(instr.result.id)  # type: ignore[union-attr]
                if g is not None and act.var(instr.attrs[0].id):
                    adj.add_var(self.adj_var(instr.attrs[0]), g)
                return
            if op is Op.STORE_VAR:
                var = instr.attrs[0]
                if act.var(var.id):
                    g = adj.take_var(self.adj_var(var))
                    if g is not None and act.value(instr.args[0].id):
                        adj.add(instr.args[0], g)
                return
            if op in WRITES:
                if act.value(instr.args[-1].id) or op in EXTREMA:  # an extremum's constant
                    self.rule(instr, env, adj, None)                # can replace the element
                elif op is Op.STORE:  # a constant overwrote the element: its old value
                    b = AdjointBuilder(self, instr, env, adj)  # had no effect, gradient 0
                    b.clear_grad(b.indices(1, len(instr.args) - 1))
                return
            r = instr.result
            if r is None:
                return
            g = adj.pop(r.id)
            if g is not None and act.value(r.id):
                self.rule(instr, env, adj, g)

    def rule(self, instr: Instr, env: Env, adj: AdjMap, g: Value | None) -> None:
        rule = OPS[instr.op].adjoint
        if rule is None:
            raise AutodiffError(
                f"Reverse mode cannot differentiate {instr.op.name}: the op has no derivative "
                f"rule (in kernel '{self.kernel.name}').\n{format_location(instr.loc)}\n"
                "Try computing this value without it, or keep it out of the computation that "
                "needs gradients (e.g. through qd.float32(int(x)) or in a separate kernel).")
        rule(AdjointBuilder(self, instr, env, adj), instr, g)

    def adj_var(self, var: Var) -> Var:
        task = self.task
        if task is not None and var.id not in task.stores:
            key = (id(task), var.id)
            if key not in self.outer_adj:
                self.outer_adj[key] = (self.em.var(f"adj_{var.name}", var.dtype),
                                       len(self.outer_adj))
                self.task_adj.setdefault(id(task), []).append(self.outer_adj[key][0])
            return self.outer_adj[key][0]
        key = (id(task), var.id)
        av = self.adj_vars.get(key)
        if av is None:
            av = self.adj_vars[key] = self.em.var(f"adj_{var.name}", var.dtype)
            self.task_adj.setdefault(id(task), []).append(av)
        return av

    def add_to_var(self, var: Var, g: Value) -> None:
        av = self.adj_var(var)
        self.em.store_var(av, self.em.emit(Op.ADD, self.em.load_var(av), g))

    # -- tasks and the kernel ---------------------------------------------------------------

    def rev_task(self, node: Node) -> None:
        """The reverse of one parallel loop: each thread sweeps forward, then backward."""
        em = self.em
        s = node.stmt
        outer_task, outer_assigned = self.task, self.assigned
        self.task, self.assigned = node, set()
        reg = node.children[0]
        with em.region() as fwd:
            self.fwd_top(reg)
        with em.region() as rev:
            self.rev_top(reg)
        with em.region() as flush, em.at(s.loc):
            for (task_id, _), (av, slot) in self.outer_adj.items():
                if task_id == id(node):
                    em.emit(Op.ATOMIC_ADD, self.scratch_array(), em.i64(slot),
                            em.cast(em.load_var(av), _dtypes.float64))
        with em.region() as prelude, em.at(s.loc):
            thread = self.thread_index(node.nest)
            prelude += self.stacks.thread_prelude(self.stacks.all, node, thread)
            self.init_locals(node)
        self.thread_fwd[id(node)] = (fwd, list(prelude))  # (the counting kernel's)
        nest = node.nest
        if not self.stacks.scratch and any(x.task is node for x in self.stacks.all):
            with em.region() as prelude, em.at(s.loc):  # the threads may run reordered
                nest = tuple(For(em.value(f.index.type), f.begin, f.end, f.body, True, f.loc)
                             for f in node.nest)
                hardware = self.thread_index(nest)
                logical = self.stacks.logical_thread(self.st.tasks.index(node), hardware)
                self.decode(node.nest, logical)
                prelude += self.stacks.thread_prelude(self.stacks.all, node, hardware)
                self.init_locals(node)
        self.task, self.assigned = outer_task, outer_assigned
        em.stmt(nest_loops(nest, prelude + fwd + rev + flush))
        with em.at(s.loc):
            for (task_id, vid), (_, slot) in self.outer_adj.items():
                if task_id == id(node):
                    var = self.st.vars[vid]
                    total = em.emit(Op.LOAD, self.scratch_array(), em.i64(slot))
                    self.add_to_var(var, em.cast(total, var.dtype))

    def thread_index(self, nest: tuple[For, ...]) -> Value:
        """The thread's number in [0, threads): row-major over the nest's index tuple."""
        em = self.em
        i64 = _dtypes.int64
        linear = None
        for f in nest:
            k = em.cast(em.emit(Op.SUB, f.index, f.begin), i64)
            if linear is None:
                linear = k
            else:
                extent = em.cast(em.emit(Op.SUB, f.end, f.begin), i64)
                linear = em.emit(Op.ADD, em.emit(Op.MUL, linear, extent), k)
        assert linear is not None
        return linear

    def decode(self, nest: tuple[For, ...], thread: Value) -> None:
        """Define the nest's loop indices from a thread number (`thread_index` inverted)."""
        em = self.em
        i64 = _dtypes.int64
        extents = [em.cast(em.emit(Op.SUB, f.end, f.begin), i64) for f in nest]
        for f, q in zip(nest, em.unravel(thread, extents), strict=True):
            at = em.emit(Op.ADD, em.cast(f.begin, i64), q)
            if f.index.type is i64:
                em.emit_into(f.index, Op.ADD, at, em.i64(0))
            else:
                em.emit_into(f.index, Op.CAST, at, attrs=(f.index.type,))

    def init_locals(self, task: Node | None) -> None:
        """Adjoint locals start at 0; locals that entry pushes read, and the copies of
        straight constructs, get a defined value."""
        em = self.em
        for av in self.task_adj.get(id(task), []) + self.task_copies.get(id(task), []):
            em.store_var(av, em.const(0, av.dtype))
        for vids in self.entry_vars.values():
            for vid in sorted(vids):
                var = self.st.vars[vid]
                if (task is None and not any(vid in t.stores for t in self.st.tasks)) or (
                        task is not None and vid in task.stores):
                    em.store_var(var, em.const(0, var.dtype))

    def scratch_array(self) -> Value:
        if self.scratch is None:
            self.scratch = self.em.value(ArrayType(_dtypes.float64, 1))
        return self.scratch

    def run(self) -> Block:
        """The reverse kernel's body."""
        em = self.em
        root = self.st.root
        with em.region() as fwd:
            self.fwd_top(root)
        with em.region() as rev:
            self.rev_top(root)
        with em.region() as prelude:
            prelude += self.stacks.kernel_prelude(self.stacks.all)
            prelude += self.stacks.thread_prelude(self.stacks.all, None, None)
            self.init_locals(None)
        self.serial_fwd = prelude + fwd
        return block(prelude + fwd + rev)

    def params(self) -> tuple[Param, ...]:
        """The reverse kernel's extra parameters, after the forward ones."""
        out = [Param(f"{self.names[pid]}@grad", g) for pid, g in self.grads.items()]
        if self.scratch is not None:
            out.append(Param("@adj_outer", self.scratch))
        for dtype, heap in self.stacks.heaps.items():
            out.append(Param(f"{PARAM_PREFIX}{dtype.name}", heap))
        if self.stacks.all:
            out.append(Param(f"{PARAM_PREFIX}layout", self.stacks.layout))
            out.append(Param(f"{PARAM_PREFIX}table", self.stacks.table))
            out.append(Param(f"{PARAM_PREFIX}rows", self.stacks.rows))
            out.append(Param(f"{PARAM_PREFIX}overflow", self.stacks.overflow))
        if self.stride is not None:
            out.append(Param("@checkpoint", self.stride))
        return tuple(out)


def nest_loops(nest: tuple[For, ...], stmts: list[Any]) -> For:
    """The parallel loops of a task around `stmts` (the innermost loop's body)."""
    body = block(stmts)
    for f in reversed(nest):
        body = block([For(f.index, f.begin, f.end, body, True, f.loc)])
    return body.stmts[0]  # type: ignore[return-value]
