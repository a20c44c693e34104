"""Checkpointed dynamic loops: keep every k-th loop state, recompute the rest in the reverse.

A reverse kernel built with `checkpoint=True` (`reverse.build_reverse`) sweeps each loop of a
top region (a loop directly in a thread's body or in the kernel's serial code) without
pushing what its iterations overwrite. Instead, at the start of iterations 0, k, 2k, ...
it pushes the loop's state (every local the loop stores) onto the locals' own stacks; k is
the kernel's `@checkpoint` argument, which the launcher chooses from the memory it may use
(`ad/sizing/checkpoint_stride.py`). The reverse of the loop then takes its blocks of k iterations
last first:

    for b in nb - 1, ..., 0:                     nb = ceil(trips / k)
        the locals <- the top of their stacks (block b's checkpoint, left there: it is the
                      block's entry state, as the loop's entry pushes are for the whole loop)
        iterations b*k ... min(b*k + k, trips) - 1 run forward again, pushing as usual
        their reverse, last first, popping what they pushed
        pop the checkpoint

The iterations run again are the forward sweep's own instructions (with fresh value ids), on
the same state, so every value, and so every gradient, equals the stored run's bit for bit.
The adstacks then hold at most one block of iterations over the checkpoints: the sizing
expressions count a checkpointed loop's trips as min(trips, k) and its checkpoints as
ceil(trips / k) (`sizing.Deriver`, the `Blocks` marker in a push's loops). Each iteration
runs twice in the reverse kernel (its forward sweep, then its block's), whatever k is.

Only `for` loops are checkpointed: a `while` loop's trip count is known only by running it,
and the counting pass that would size its stacks does not run the reverse sweep where the
blocks push.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import _dtypes
from ...kernels.emit import block
from ...kernels.ir import Block, Break, Continue, For, If, Instr, Op, Stmt, Value, Var, While
from .structure import Node
from .sweep import Env, Sweep


@dataclass(frozen=True)
class Blocks:
    """In a push's enclosing loops: once per block of the checkpointed loop `node`."""

    node: Any


@dataclass
class Checkpointed:
    """What the reverse of one checkpointed loop needs from its forward sweep."""

    node: Any
    state: list[Var]                 # the locals the loop stores
    stacks: list[Any]                # their stacks (StackInfo)
    template: list[Stmt]             # one iteration's forward sweep, with pushes
    captured: dict[int, Value]       # Var id -> its value at the loop, for the locals the
                                     # loop reads but does not store (code after the loop may
                                     # assign them before the reverse runs the template)


def applies(item: Node) -> bool:
    """Whether the item of a top region is a loop that checkpointing takes."""
    return isinstance(item.stmt, For) and item.is_loop and not item.exit


def stride(gen: Sweep) -> Value:
    if gen.stride is None:
        gen.stride = gen.em.value(_dtypes.int64)
    return gen.stride


def forward(gen: Sweep, item: Node) -> None:
    """The forward sweep of a checkpointed loop `item` (module docstring)."""
    em = gen.em
    i64 = _dtypes.int64
    k = stride(gen)
    gen.capture(item)
    state = [gen.st.vars[vid] for vid in sorted(item.stores)]
    gen.entry_vars.setdefault(id(item), set()).update(v.id for v in state)  # defined at start
    with em.at(item.stmt.loc):
        stacks = [gen.var_stack(item, v) for v in state]
        # one iteration's forward sweep as the reverse runs it again, pushes included
        with em.region() as template:
            gen.loops.append(item)
            gen.fwd_block(item.children[0])
            gen.loops.pop()
        it = em.var("iteration", i64)
        em.store_var(it, em.i64(0))

        def start() -> None:
            n = em.load_var(it)
            with em.region() as keep:
                for var, s in zip(state, stacks, strict=True):
                    gen.stacks.push(s, em.load_var(var), tuple(gen.loops[:-1]) + (
                        Blocks(item),))
            first = em.emit(Op.EQ, em.emit(Op.MOD, n, k), em.i64(0))
            em.stmt(If(first, block(keep), block([]), item.stmt.loc))
            em.store_var(it, em.emit(Op.ADD, n, em.i64(1)))

        gen.suppress = True
        try:
            gen.fwd_node(item, start)
        finally:
            gen.suppress = False
    gen.assigned |= item.stores
    gen.checkpointed[id(item)] = Checkpointed(item, state, stacks, template,
                                              dict(gen.captured[id(item)]))


def reverse(gen: Sweep, item: Node, env: Env) -> None:
    """The reverse of a checkpointed loop `item`: its blocks, last first."""
    em = gen.em
    ck = gen.checkpointed[id(item)]
    s = item.stmt
    t = s.index.type
    with em.at(s.loc):
        begin = env.get(s.begin)
        if id(item) in gen.trips:
            n = em.cast(gen.trips[id(item)], t)
        else:
            n = em.emit(Op.MAX, em.emit(Op.SUB, env.get(s.end), begin), em.const(0, t))
        k = em.cast(stride(gen), t)
        one = em.const(1, t)
        blocks = em.emit(Op.FLOORDIV, em.emit(Op.SUB, em.emit(Op.ADD, n, k), one), k)
        bb = em.value(t)
        with em.region() as each:
            b = em.emit(Op.SUB, em.emit(Op.SUB, blocks, one), bb)
            lo = em.emit(Op.MUL, b, k)
            count = em.emit(Op.SUB, em.emit(Op.MIN, em.emit(Op.ADD, lo, k), n), lo)
            for var, st in zip(ck.state, ck.stacks, strict=True):
                em.store_var(var, gen.stacks.top(st))
            i = em.value(t)
            with em.region() as again:
                index = em.emit(Op.ADD, begin, em.emit(Op.ADD, lo, i))
                em.out.extend(Renamer(gen, {s.index.id: index}, ck.captured).stmts(
                    ck.template))
            em.stmt(For(i, em.const(0, t), count, block(again), False, s.loc))
            step = em.value(t)
            with em.region() as back:
                inner = Env(gen, env, item)
                last = em.emit(Op.SUB, em.emit(Op.ADD, lo, count), one)
                inner.map[s.index.id] = em.emit(Op.ADD, begin, em.emit(Op.SUB, last, step))
                gen.rev_block(item.children[0], inner)
            em.stmt(For(step, em.const(0, t), count, block(back), False, s.loc))
            for st in ck.stacks:
                gen.stacks.pop(st)
        em.stmt(For(bb, em.const(0, t), blocks, block(each), False, s.loc))


class Renamer:
    """A copy of statements with a fresh Value for everything they define (each Value is
    defined once in a kernel), uses renamed to match; `mapping` renames values defined
    outside (the loop index), and a load of a Var in `loads` becomes the value given there
    (the Var's value when the loop ran)."""

    def __init__(self, gen: Sweep, mapping: dict[int, Value],
                 loads: dict[int, Value] | None = None) -> None:
        self.em = gen.em
        self.map = dict(mapping)
        self.loads = loads or {}

    def v(self, value: Value) -> Value:
        return self.map.get(value.id, value)

    def fresh(self, value: Value) -> Value:
        new = self.em.value(value.type)
        self.map[value.id] = new
        return new

    def stmts(self, stmts: list[Stmt] | tuple[Stmt, ...]) -> list[Stmt]:
        out = []
        for s in stmts:
            if (isinstance(s, Instr) and s.op is Op.LOAD_VAR and s.result is not None
                    and s.attrs[0].id in self.loads):
                self.map[s.result.id] = self.loads[s.attrs[0].id]
                continue
            out.append(self.stmt(s))
        return out

    def block(self, b: Block) -> Block:
        return Block(tuple(self.stmts(b.stmts)))

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, Instr):
            args = tuple(self.v(a) for a in s.args)
            result = None if s.result is None else self.fresh(s.result)
            return Instr(s.op, result, args, s.attrs, s.loc)
        if isinstance(s, If):
            return If(self.v(s.cond), self.block(s.then_body), self.block(s.else_body), s.loc)
        if isinstance(s, For):
            begin, end = self.v(s.begin), self.v(s.end)
            return For(self.fresh(s.index), begin, end, self.block(s.body), s.parallel, s.loc)
        if isinstance(s, While):
            cond_body = self.block(s.cond_body)
            return While(cond_body, self.v(s.cond), self.block(s.body), s.loc)
        assert isinstance(s, (Break, Continue))
        return s
