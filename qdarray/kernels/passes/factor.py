"""Factor the incoming adjoint out of adjoint expressions (an IR -> IR pass on reverse kernels).

The adjoint rules build each contribution from the adjoint they receive: in
`v = v - 0.1*v*v + 0.01` the new `adj_v` is `-g*(0.1*v) + (-g*v)*0.1 + g`, a chain of
multiplies and adds that all wait for `g`, the adjoint loaded at the top of the loop step.
Every such expression is linear in its *seed* (an adjoint local's value, or an element of a
gradient array), so it equals `seed * coefficient` with a coefficient made of primal values
only: here `g * (1 - (0.1*v + v*0.1))`. The coefficient does not wait for the seed, so each
adjoint costs one multiply on the path from one loop step to the next.

The pass tracks, within each block, which float values are `seed * coefficient` through
NEG, ADD and SUB (of two values with the same seed), MUL by a value and TRUEDIV by a value;
every other use of such a value (a store, an atomic, a cast, any other op) gets the factored
form instead, built just before it. The old expressions are left for dead code elimination.
This is reassociation: results may differ from the unfactored form in the last bits.
"""

from __future__ import annotations

from typing import Any

from ..emit import Emitter
from ..ir import Block, For, If, Instr, Op, Stmt, Value, While
from ..types import is_float

# Coefficients: ONE, ("val", v), ("neg", c), ("mul", c, v), ("div", c, v), ("add", c, d),
# ("sub", c, d); hashable, so equal coefficients are built once per block.
ONE: tuple[Any, ...] = ("one",)


def _neg(c: Any) -> Any:
    return c[1] if c[0] == "neg" else ("neg", c)


def _scale(kind: str, c: Any, v: Value) -> Any:
    if c[0] == "neg":
        return _neg(_scale(kind, c[1], v))
    if c == ONE and kind == "mul":
        return ("val", v)
    return (kind, c, v)


def _sum(kind: str, c: Any, d: Any) -> Any:
    if kind == "sub":
        d = _neg(d)
    if c[0] == "neg" and d[0] == "neg":
        return _neg(("add", c[1], d[1]))
    if d[0] == "neg":
        return ("sub", c, d[1])
    if c[0] == "neg":
        return ("sub", d, c[1])
    return ("add", c, d)


class _Factor:
    def __init__(self, em: Emitter, seed_vars: set[int], seed_arrays: set[int]) -> None:
        self.em = em
        self.seed_vars = seed_vars
        self.seed_arrays = seed_arrays
        self.rewritten = 0

    def seed(self, i: Instr) -> bool:
        if i.result is None or not is_float(i.result.type):
            return False
        if i.op is Op.LOAD_VAR:
            return i.attrs[0].id in self.seed_vars
        return i.op is Op.LOAD and i.args[0].id in self.seed_arrays

    def linear(self, i: Instr, lin: dict[int, tuple[Value, Any]]) -> tuple[Value, Any] | None:
        """(seed, coefficient) of `i`'s result, or None."""
        if i.result is None or not is_float(i.result.type):
            return None
        if self.seed(i):
            return (i.result, ONE)
        a = lin.get(i.args[0].id) if i.args else None
        b = lin.get(i.args[1].id) if len(i.args) > 1 else None
        op = i.op
        if op is Op.NEG and a is not None:
            return (a[0], _neg(a[1]))
        if op in (Op.ADD, Op.SUB) and a is not None and b is not None and a[0] == b[0]:
            return (a[0], _sum("add" if op is Op.ADD else "sub", a[1], b[1]))
        if op is Op.MUL and a is not None and b is None:
            return (a[0], _scale("mul", a[1], i.args[1]))
        if op is Op.MUL and b is not None and a is None:
            return (b[0], _scale("mul", b[1], i.args[0]))
        if op is Op.TRUEDIV and a is not None and b is None:
            return (a[0], _scale("div", a[1], i.args[1]))
        return None

    def build(self, c: Any, like: Value, made: dict[Any, Value]) -> Value:
        if c in made:
            return made[c]
        em = self.em
        kind = c[0]
        if kind == "one":
            out = em.const(1.0, like.type)
        elif kind == "val":
            out = c[1]
        elif kind == "neg":
            out = em.emit(Op.NEG, self.build(c[1], like, made))
        elif kind in ("mul", "div"):
            op = Op.MUL if kind == "mul" else Op.TRUEDIV
            out = em.emit(op, self.build(c[1], like, made), c[2])
        else:
            op = Op.ADD if kind == "add" else Op.SUB
            out = em.emit(op, self.build(c[1], like, made), self.build(c[2], like, made))
        made[c] = out
        return out

    def factored(self, seed: Value, c: Any, made: dict[Any, Value]) -> Value:
        key = ("seed", seed.id, c)
        if key not in made:
            if c == ONE:
                made[key] = seed
            elif c == ("neg", ONE):
                made[key] = self.em.emit(Op.NEG, seed)
            else:
                made[key] = self.em.emit(Op.MUL, seed, self.build(c, seed, made))
        return made[key]

    def block(self, b: Block) -> Block:
        lin: dict[int, tuple[Value, Any]] = {}
        made: dict[Any, Value] = {}
        out: list[Stmt] = []
        for s in b.stmts:
            if not isinstance(s, Instr):
                out.append(self.control(s))
                continue
            found = self.linear(s, lin)
            if found is not None:
                lin[s.result.id] = found  # type: ignore[union-attr]
                out.append(s)
                continue
            args = list(s.args)
            with self.em.at(s.loc), self.em.region() as pre:
                for k, a in enumerate(args):
                    f = lin.get(a.id)
                    if f is not None and f != (a, ONE):
                        args[k] = self.factored(f[0], f[1], made)
            if pre:
                self.rewritten += 1
                out += pre
                s = Instr(s.op, s.result, tuple(args), s.attrs, s.loc)
            out.append(s)
        return Block(tuple(out))

    def control(self, s: Stmt) -> Stmt:
        if isinstance(s, If):
            return If(s.cond, self.block(s.then_body), self.block(s.else_body), s.loc)
        if isinstance(s, For):
            return For(s.index, s.begin, s.end, self.block(s.body), s.parallel, s.loc)
        if isinstance(s, While):
            return While(self.block(s.cond_body), s.cond, self.block(s.body), s.loc)
        return s


def factor_adjoints(body: Block, em: Emitter, seed_vars: set[int], seed_arrays: set[int]
                    ) -> Block:
    """`body` with adjoint expressions in `seed * coefficient` form (see the module
    docstring). `seed_vars` are the ids of the adjoint locals, `seed_arrays` the ids of the
    gradient arrays (and any other array holding adjoints)."""
    return _Factor(em, seed_vars, seed_arrays).block(body)
