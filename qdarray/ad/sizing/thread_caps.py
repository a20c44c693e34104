"""Each thread's own capacity of each stack, for packed layouts (`ad/sizing/packed_layout.py`).

- From the size expressions (when they sized the launch): a stack's capacity at one thread
  (`ReversePlan.thread_exprs`, over its task's loop variables) is computed at every thread
  by a map kernel, the max-reducer's body written out per thread instead of folded into a
  maximum (`reducer.chain_over`, `_MapBuilder`): one read of the bound arrays, on the device
  of the arrays. A read that would leave its array marks the result unsized, as in the
  reducer.
- Otherwise from the counting pass, whose threads store their exact depths
  (`reverse.counting_kernel`'s `starts`): the same forward sweep that sizes stacks without
  expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...kernels.emit import block
from ...kernels.ir import For, KernelIR, Op, format_kernel
from ...kernels.launch import internal_launcher
from ...kernels.target import KernelTarget
from ...kernels.types import ArrayType
from ..device_buffers import DeviceBuffers
from ..transform.plan import COUNT_SLOTS
from .max_reducer import (
    INT64_MAX,
    INT64_MIN,
    Chain,
    Unsized,
    _Builder,
    chain_over,
    check_axes,
)


class _MapBuilder(_Builder):
    """`parallel for f in range(total): caps[f] = max(body at f's axes, 0)`; a read outside
    its array sets `partial[nchunks]` (the launch passes a one-element flag and 0)."""

    def __init__(self, chain: Chain, types: dict[str, Any]) -> None:
        super().__init__(chain, types, strided=False)
        self.out = self.param("@caps", ArrayType(self.i64, 1))

    def kernel(self) -> KernelIR:
        em = self.em
        f = em.value(self.i64)
        with em.region() as each:
            for j, q in enumerate(self.decode(f)):
                self.env[self.chain.axes[j][0].id] = self.op(Op.ADD, self.begins[j], q)
            value = self.op(Op.MAX, self.expr(self.chain.body), self.c(0))
            em.emit(Op.STORE, self.out, f, value)
        with em.region() as body:
            em.stmt(For(f, self.c(0), self.total, block(each), True))
        return KernelIR("adstack_caps", tuple(self.params), block(body))


class _Map:
    """The map kernel of one stack's per-thread capacity."""

    def __init__(self, chain: Chain, types: dict[str, Any], target: KernelTarget,
                 device: Any) -> None:
        self.chain = chain
        self.ir = _MapBuilder(chain, types).kernel()
        self.target = target
        self.device = device
        self.launcher: Any = None

    def compiled(self) -> Any:
        if self.launcher is None:
            ir = self.ir
            self.launcher = internal_launcher(format_kernel(ir), lambda: ir, self.target,
                                              self.device)
        return self.launcher


class ThreadCaps:
    """Per-thread capacities of one reverse launcher's stacks (module docstring).

    Args:
        plan: the launcher's ReversePlan.
        sizer: its Sizer (the evaluator of closed expressions, and how it sized).
        count: runs the counting kernel on (args, starts); returns the counts array (None:
            no counting pass: a stack without an expression gets its largest capacity at
            every thread).
        target, device: where the map kernels compile and run.
    """

    def __init__(self, plan: Any, sizer: Any,
                 count: Callable[[Sequence[Any], Any], Any] | None, target: KernelTarget,
                 device: Any) -> None:
        self.plan = plan
        self.sizer = sizer
        self.count_fn = count
        self.target = target
        self.device = device
        self.buffers = DeviceBuffers(target.buffer_device(device))
        self.maps: dict[int, _Map | None] = {}

    def source(self, flat: Sequence[Any], args: Sequence[Any], threads: list[int],
               uniform: bool) -> Callable[[int, int], Any]:
        """`per_thread(k, n)` for one launch (Packer.pack) with `threads` per task;
        `uniform`: every thread the largest capacity (None for every stack)."""
        if uniform:
            return lambda k, n: None
        plan = self.plan
        got: dict[int, Any] = {}
        ev = None if self.sizer.counted else self.sizer.evaluator(flat)
        pending = []
        for k, s in enumerate(plan.stacks):
            caps = None
            if ev is not None and s.task is not None:
                caps = self.mapped(k, s, ev)
            if caps is None:
                pending.append(k)
            else:
                got[k] = (caps, 0)
        if pending and self.count_fn is not None:
            got.update(self.counted(pending, args, threads))
        return lambda k, n: got.get(k)

    def mapped(self, k: int, s: Any, ev: Any) -> Any:
        """Stack k's per-thread capacities from its expression (None: not expressible, or a
        read outside its array)."""
        plan = self.plan
        if k not in self.maps:
            expr, axes = plan.thread_exprs[k], plan.axes[s.task]
            self.maps[k] = None if expr is None or axes is None else _Map(
                chain_over(axes, expr), self.sizer.types, self.target, self.device)
        m = self.maps[k]
        if m is None:
            return None
        chain = m.chain
        try:
            slots = [ev.eval(inner) for inner in chain.inner]
            begins, extents = [], []
            for _, b, e in chain.axes:
                lo = ev.eval(b)
                begins.append(lo)
                extents.append(max(ev.eval(e) - lo, 0))
            total = int(np.prod(extents, dtype=object))
            if total:
                check_axes(chain, ev.values, begins, extents)
        except Unsized:
            return None
        buffers = self.buffers
        out = buffers.empty(max(total, 1), np.int64)
        if not total:
            return out
        flag = buffers.upload(np.full(1, INT64_MIN, np.int64))
        args = [ev.values[n] for n in chain.names] + slots + begins + extents
        m.compiled()(args + [0, 0, total, flag, out])
        if int(buffers.to_host(flag)[0]) == INT64_MAX:
            return None
        return out

    def counted(self, pending: list[int], args: Sequence[Any], threads: list[int]
                ) -> dict[int, Any]:
        """Per-thread counts of the stacks `pending` (positions among the live stacks) from
        one counting launch."""
        plan = self.plan
        starts = np.full(max(plan.n_stacks, 1), -1, np.int64)
        at = plan.n_stacks * COUNT_SLOTS + plan.n_tasks
        where = {}
        for k in pending:
            s = plan.stacks[k]
            starts[s.id] = at
            where[k] = at
            at += 1 if s.task is None else threads[s.task]
        assert self.count_fn is not None
        counts = self.count_fn(args, (at, self.buffers.upload(starts)))
        native = counts if self.buffers.on_host else counts._data
        return {k: (native, a) for k, a in where.items()}

