"""Gradient arrays in reverse kernels: reading them, clearing them, adding into them.

A gradient array has the shape of its array. A thread of the reverse adds into it with an
atomic add, unless no two threads of its parallel loop can touch the same element: when
every access to the array indexes it with all the loop's indices themselves (x[i], x[i, j]),
the update is a plain load and store. The kernel's serial code is one thread.
"""

from __future__ import annotations

from typing import Any

from ..kernels.ir import Op, Value, instrs
from ..kernels.emit import Emitter
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
