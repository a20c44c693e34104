"""Gradient arrays in reverse kernels: reading them, clearing them, adding into them.

A gradient array has the shape of its array. A thread of the reverse adds into it with an
atomic add, unless no two threads of its parallel loop can touch the same element: when
every access to the array indexes it with all the loop's indices themselves (x[i], x[i, j]),
the update is a plain load and store. The kernel's serial code is one thread.

`take` moves an element's gradient to one thread among those that claim it (the reverse of
an atomic min/max: the value that became the element's final value takes its gradient, and
the element's value from before the update keeps none of it).
"""

from __future__ import annotations

from typing import Any

from ...kernels.emit import Emitter, block
from ...kernels.ir import If, Op, Value, instrs
from .structure import WRITES


class GradMemory:
    """The gradient arrays of one reverse kernel, by the id of their array parameter."""

    def __init__(self, em: Emitter, grads: dict[int, Value]) -> None:
        self.em = em
        self.grads = grads
        self.cache: dict[tuple[int, int], bool] = {}

    def private(self, task: Any, mem: Value) -> bool:
        """Whether no two threads of `task` (a structure.Node, None for the serial code)
        touch the same element of `mem`."""
        if task is None:
            return True
        key = (id(task), mem.id)
        if key not in self.cache:
            indices = {f.index.id for f in task.nest}
            ok = True
            for i in instrs(task.nest[-1].body):
                if (i.op is Op.LOAD or i.op in WRITES) and i.args[0].id == mem.id:
                    n = len(i.args) - (1 if i.op is Op.LOAD else 2)
                    ok = ok and indices <= {a.id for a in i.args[1:1 + n]}
            self.cache[key] = ok
        return self.cache[key]

    def scatter(self, task: Any, mem: Value, idx: list[Value], g: Value) -> None:
        """grad(mem)[idx] += g."""
        grad = self.grads.get(mem.id)
        if grad is None:
            return
        em = self.em
        if self.private(task, mem):
            old = em.emit(Op.LOAD, grad, *idx)
            em.emit(Op.STORE, grad, *idx, em.emit(Op.ADD, old, g))
        else:
            em.emit(Op.ATOMIC_ADD, grad, *idx, g)

    def at(self, mem: Value, idx: list[Value]) -> Value | None:
        """grad(mem)[idx], or None when `mem` has no gradient."""
        grad = self.grads.get(mem.id)
        return None if grad is None else self.em.emit(Op.LOAD, grad, *idx)

    def clear(self, mem: Value, idx: list[Value]) -> None:
        """grad(mem)[idx] = 0."""
        grad = self.grads.get(mem.id)
        if grad is not None:
            self.em.emit(Op.STORE, grad, *idx, self.em.const(0, grad.type.dtype))

    def take(self, task: Any, mem: Value, idx: list[Value], won: Value) -> Value | None:
        """Where `won`, grad(mem)[idx] is moved out (returned, and the element's gradient set
        to 0); elsewhere 0 is returned. Of several threads that claim one element, exactly
        one gets its gradient. None when `mem` has no gradient."""
        grad = self.grads.get(mem.id)
        if grad is None:
            return None
        em = self.em
        dtype = grad.type.dtype
        zero = em.const(0, dtype)
        if self.private(task, mem):
            g = em.emit(Op.LOAD, grad, *idx)
            em.emit(Op.STORE, grad, *idx, em.emit(Op.SELECT, won, zero, g))
            return em.emit(Op.SELECT, won, g, zero)  # type: ignore[no-any-return]
        # An atomic exchange from the atomics every target has: the first claimant's add of
        # -inf returns the gradient and leaves -inf, which its max with 0 then clears; a
        # later claimant's add returns -inf or 0, never the gradient (each add is followed
        # by its thread's max, so the element ends at 0). The add, because an atomic add
        # returns the value it replaced on every target, where CUDA's float min and max
        # (numba's compare-and-swap loops) return the value read before the loop, which
        # other claimants may have replaced meanwhile. Reading the element and clearing it
        # in a later stage would race with other claimants' reads instead. (A gradient of
        # -inf is given to no thread; one of +inf to the first claimant, NaN to the others.)
        taken = em.var("taken", dtype)
        em.store_var(taken, zero)
        with em.region() as claim:
            old = em.emit(Op.ATOMIC_ADD, grad, *idx, em.const(float("-inf"), dtype))
            em.emit(Op.ATOMIC_MAX, grad, *idx, em.const(0, dtype))
            em.store_var(taken, old)
        em.stmt(If(won, block(claim), block([]), em.loc))
        got = em.load_var(taken)
        kept = em.emit(Op.EQ, got, em.const(float("-inf"), dtype))
        return em.emit(Op.SELECT, kept, zero, got)  # type: ignore[no-any-return]
