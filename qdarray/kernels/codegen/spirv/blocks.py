"""Atomics that every invocation of a parallel stage aims at one element (`y[0] += v`),
reduced within each workgroup first: the SPIR-V renderer's side of `block_sums.py`.

On a GPU, atomics that all hit one address serialise. A parallel stage is a grid-stride loop
(spirv/render.py), so an invocation runs several iterations: each qualifying atomic (the same rule
as the CUDA generator's, `block_sums.block_sums`) instead folds its value into a Function
variable that starts at the operation's identity; after the loop the workgroup's
accumulators are reduced in Workgroup memory (a tree over the `LOCAL` invocations, a
workgroup barrier between levels) and invocation 0 issues one atomic of the result. Threads
are unordered, so only the order of the operations changes: integer sums (wrapping), minima
and maxima are exact, a float sum is the same sum up to rounding, and a NaN never wins a
minimum or maximum, as with the atomics.

The barriers need every invocation of the workgroup to reach them: nothing in a parallel
stage returns early except a failed debug-mode check, so debug mode keeps the atomics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...._dtypes import DType
from ...ir import Block, Instr, Value
from ..block_sums import BlockSum, block_sums
from .enums import SC, Scope
from .enums import Op as S

if TYPE_CHECKING:
    from .ctx import Ctx

# OpControlBarrier's semantics: acquire-release of Workgroup memory.
_SEMANTICS = 0x8 | 0x100


def plan(ctx: Ctx, body: Block, outside: set[int]) -> dict[int, BlockSum]:
    """The workgroup-reduced atomics of a parallel stage's body, by `id()` of their
    instruction (none in debug mode: module docstring)."""
    if ctx.debug:
        return {}
    caps = ctx.caps

    def atomic_ok(t: Any) -> bool:
        if not isinstance(t, DType) or t.kind not in "iuf" or t.itemsize not in (4, 8):
            return False
        return t.itemsize == 4 or bool(caps.get("int64_atomics", False))

    return block_sums(body, outside, atomic_ok)


def identity(ctx: Ctx, s: BlockSum) -> int:
    """The accumulator's initial value (block_sums.py: -0.0 or 0, -inf / +inf, the integer
    extremes)."""
    t: DType = s.dtype
    if s.kind == "add":
        return ctx.const(t, -0.0 if t.kind == "f" else 0)
    if t.kind == "f":
        return ctx.const(t, float("-inf") if s.kind == "max" else float("inf"))
    bits = t.itemsize * 8
    if t.kind == "i":
        return ctx.const(t, -(1 << (bits - 1)) if s.kind == "max" else (1 << (bits - 1)) - 1)
    return ctx.const(t, 0 if s.kind == "max" else (1 << bits) - 1)


def combine(ctx: Ctx, s: BlockSum, acc: int, value: int) -> int:
    """`acc` with `value` folded in."""
    t: DType = s.dtype
    f, reg = ctx.f, ctx.scalar(t)
    if s.kind == "add":
        return f.op(S.FAdd if t.kind == "f" else S.IAdd, reg, acc, value)
    if t.kind == "f":
        test = S.FOrdGreaterThan if s.kind == "max" else S.FOrdLessThan
    elif t.kind == "i":
        test = S.SGreaterThan if s.kind == "max" else S.SLessThan
    else:
        test = S.UGreaterThan if s.kind == "max" else S.ULessThan
    wins = f.op(test, ctx.bool, value, acc)
    return f.op(S.Select, reg, wins, value, acc)


class Accumulators:
    """The Function variables of one stage's workgroup-reduced atomics."""

    def __init__(self, ctx: Ctx, sums: dict[int, BlockSum]) -> None:
        self.ctx = ctx
        self.sums = sums
        self.vars: dict[int, int] = {}
        for s in sums.values():
            ptr = ctx.f.var(ctx.ptr(SC.Function, ctx.scalar(s.dtype)))
            ctx.f.store(ptr, identity(ctx, s))
            self.vars[s.slot] = ptr

    def fold(self, instr: Instr) -> bool:
        """Fold the value of atomic `instr` into its accumulator; False when `instr` is not
        a workgroup-reduced atomic."""
        s = self.sums.get(id(instr))
        if s is None:
            return False
        ctx = self.ctx
        value = ctx.val(instr.args[-1])
        ptr = self.vars[s.slot]
        ctx.f.store(ptr, combine(ctx, s, ctx.f.load(ctx.scalar(s.dtype), ptr), value))
        return True

    def finish(self, lid: int, local: int) -> None:
        """After the grid-stride loop: each workgroup's accumulators reduced in Workgroup
        memory, and invocation `lid` 0 updating the element atomically (`local`: the
        workgroup size, a power of two)."""
        ctx = self.ctx
        f, m = ctx.f, ctx.m
        u32 = m.t_int(32, False)
        scope = m.const(u32, Scope.Workgroup)

        def barrier() -> None:
            f.op_void(S.ControlBarrier, scope, scope, m.const(u32, _SEMANTICS))

        shared = {}
        for s in self.sums.values():
            reg = ctx.scalar(s.dtype)
            arr = m.t_array(reg, local)
            shared[s.slot] = m.variable(ctx.ptr(SC.Workgroup, arr), SC.Workgroup)
            f.store(self._at(s, shared[s.slot], lid), f.load(reg, self.vars[s.slot]))
        barrier()
        width = local // 2
        while width:
            with f.if_(f.op(S.ULessThan, ctx.bool, lid, m.const(u32, width))):
                other = f.op(S.IAdd, u32, lid, m.const(u32, width))
                for s in self.sums.values():
                    reg = ctx.scalar(s.dtype)
                    mine = self._at(s, shared[s.slot], lid)
                    value = combine(ctx, s, f.load(reg, mine),
                                    f.load(reg, self._at(s, shared[s.slot], other)))
                    f.store(mine, value)
            barrier()
            width //= 2
        with f.if_(f.op(S.IEqual, ctx.bool, lid, m.const(u32, 0))):
            for s in self.sums.values():
                total = f.load(ctx.scalar(s.dtype), self._at(s, shared[s.slot],
                                                              m.const(u32, 0)))
                self._update(s, total)

    def _at(self, s: BlockSum, array: int, index: int) -> int:
        ctx = self.ctx
        return ctx.f.op(S.AccessChain, ctx.ptr(SC.Workgroup, ctx.scalar(s.dtype)), array, index)

    def _update(self, s: BlockSum, value: int) -> None:
        """The atomic of `s` with `value`, at its element."""
        from .atomics import atomic_at

        ctx = self.ctx
        f = ctx.f
        i64 = ctx.i64
        name = f"a{s.array.id}"
        offset = ctx.field(f"{name}_off")
        for d, i in enumerate(s.index):
            if isinstance(i, Value):
                ix = ctx.convert(ctx.val(i), i.type, _int64())  # type: ignore[arg-type]
            else:
                ix = ctx.m.const(i64, int(i[0]))
            offset = f.op(S.IAdd, i64, offset, f.op(S.IMul, i64, ix,
                                                    ctx.field(f"{name}_s{d}")))
        pointer, storage, dtype = ctx._pointer(s.array, offset)
        if dtype != s.dtype:
            value = ctx.convert(value, s.dtype, dtype)
        atomic_at(ctx, s.kind, pointer, storage, dtype, value)


def _int64() -> DType:
    from .... import _dtypes

    return _dtypes.int64
