"""What an op's adjoint rule works with: `AdjointBuilder`.

Each op's rule sits next to the op (`kernels/ops/<family>.py`, `adjoint=`) and has the form
`rule(b, instr, g)`: `g` is the adjoint of the instruction's result (None for stores and
atomics), and the rule adds its contribution to the adjoints of the arguments through the
builder. The builder gives the primal values (`x(k)`, `y()`), emits IR (`op`, `add`, `mul`,
... ) and reaches the gradient arrays of global memory. It holds no maths of its own.

Example (the rule of SIN)::

    def _sin(b, instr, g):
        b.accum(0, b.mul(g, b.op(Op.COS, b.x(0))))
"""

from __future__ import annotations

from typing import Any

from ...kernels.ir import Instr, Op, Value, Var


class AdjMap:
    """Adjoints within one segment (or one top region), written once.

    The contributions to an SSA value's adjoint are kept as a list of terms and summed when
    the value's own rule runs (`pop`). The adjoint locals of the forward locals (`adj_<name>`)
    are kept the same way: `take_var` reads a local's adjoint and resets it to zero, `add_var`
    adds to it, and `flush` stores each local that changed once, at the end of the segment,
    instead of a zero store and a chain of `+=` per use.
    """

    def __init__(self, em: Any) -> None:
        self.em = em
        self.adj: dict[int, list[Value]] = {}
        # adjoint local id -> (the local, whether its stored value is still part of it, terms)
        self.vars: dict[int, tuple[Var, bool, list[Value]]] = {}

    def add(self, v: Value, g: Value) -> None:
        self.adj.setdefault(v.id, []).append(g)

    def pop(self, vid: int) -> Value | None:
        terms = self.adj.pop(vid, None)
        return None if terms is None else self.total(terms)

    def total(self, terms: list[Value]) -> Value:
        out = terms[0]
        for t in terms[1:]:
            out = self.em.emit(Op.ADD, out, t)
        return out

    def add_var(self, av: Var, g: Value) -> None:
        """adj_local += g."""
        _, stored, terms = self.vars.get(av.id, (av, True, []))
        self.vars[av.id] = (av, stored, terms + [g])

    def take_var(self, av: Var) -> Value | None:
        """The adjoint local's value now (None when it is known to be zero); it becomes 0."""
        _, stored, terms = self.vars.get(av.id, (av, True, []))
        self.vars[av.id] = (av, False, [])
        terms = ([self.em.load_var(av)] if stored else []) + terms
        return self.total(terms) if terms else None

    def flush(self) -> None:
        """Store the adjoint locals that changed since the last flush."""
        for av, stored, terms in self.vars.values():
            if stored and not terms:
                continue
            value = self.total(([self.em.load_var(av)] if stored else []) + terms) if (
                stored or terms) else self.em.const(0, av.dtype)
            self.em.store_var(av, value)
        self.vars = {}


class AdjointBuilder:
    """The interface adjoint rules use (see the module docstring)."""

    def __init__(self, gen: Any, instr: Instr, env: Any, adj: AdjMap) -> None:
        self.gen = gen
        self.em = gen.em
        self.instr = instr
        self.env = env
        self.adj = adj

    # -- primal values and adjoints ---------------------------------------------------------

    def x(self, k: int) -> Value:
        """The primal value of argument `k`."""
        return self.env.get(self.instr.args[k])  # type: ignore[no-any-return]

    def y(self) -> Value:
        """The primal value of the result."""
        return self.env.get(self.instr.result)  # type: ignore[no-any-return]

    def active(self, k: int) -> bool:
        """Whether argument `k` carries a gradient (rules may skip work for the others)."""
        return self.gen.act.value(self.instr.args[k].id)  # type: ignore[no-any-return]

    def accum(self, k: int, g: Value | None) -> None:
        """adjoint(argument k) += g (dropped for arguments without a gradient)."""
        if g is not None and self.active(k):
            self.adj.add(self.instr.args[k], g)

    # -- IR ---------------------------------------------------------------------------------

    def op(self, op: Op, *args: Value, attrs: tuple[Any, ...] = ()) -> Value:
        return self.em.emit(op, *args, attrs=attrs)  # type: ignore[no-any-return]

    def const(self, value: float, like: Value) -> Value:
        return self.em.const(value, like.type)  # type: ignore[no-any-return]

    def add(self, a: Value, b: Value) -> Value:
        return self.op(Op.ADD, a, b)

    def sub(self, a: Value, b: Value) -> Value:
        return self.op(Op.SUB, a, b)

    def mul(self, a: Value, b: Value) -> Value:
        return self.op(Op.MUL, a, b)

    def div(self, a: Value, b: Value) -> Value:
        return self.op(Op.TRUEDIV, a, b)

    def neg(self, a: Value) -> Value:
        return self.op(Op.NEG, a)

    def select(self, c: Value, a: Value, b: Value) -> Value:
        return self.op(Op.SELECT, c, a, b)

    def cast(self, a: Value, dtype: Any) -> Value:
        return self.em.cast(a, dtype)  # type: ignore[no-any-return]

    # -- global memory (argument 0 is the array) --------------------------------------------

    def indices(self, first: int, stop: int) -> list[Value]:
        return [self.x(k) for k in range(first, stop)]

    def scatter_grad(self, idx: list[Value], g: Value) -> None:
        """grad(array)[idx] += g: atomic, or a plain update when no two threads share it."""
        self.gen.memory.scatter(self.gen.task, self.instr.args[0], idx, g)

    def grad_at(self, idx: list[Value]) -> Value | None:
        """grad(array)[idx], or None when the array has no gradient."""
        return self.gen.memory.at(self.instr.args[0], idx)  # type: ignore[no-any-return]

    def take_grad(self, idx: list[Value], won: Value) -> Value | None:
        """grad(array)[idx] moved to the one thread (of those where `won`) that claims it
        first, then 0 there; 0 for the others; None when the array has no gradient."""
        taken: Value | None = self.gen.memory.take(self.gen.task, self.instr.args[0], idx, won)
        return taken

    def clear_grad(self, idx: list[Value]) -> None:
        """grad(array)[idx] = 0: the element was overwritten, its old value had no effect."""
        self.gen.memory.clear(self.instr.args[0], idx)

    def load(self, idx: list[Value]) -> Value:
        """The array's element now (after the forward launch)."""
        return self.op(Op.LOAD, self.x(0), *idx)
