"""Common-subexpression elimination over pure ops (an IR -> IR pass, for any target).

Reverse kernels recompute each segment and the adjoint rules rebuild primal products
(`0.1*v` in the forward sweep and again in a rule), so the same pure instruction often
appears twice. An instruction whose op is pure (LOAD_VAR aside: it reads a local), with the
same arguments and attributes as one already seen in its block or an enclosing block, is
dropped and its uses take the earlier result. Arguments of ADD and MUL are compared in
either order. Two exact identities go with it: `x * 1` is `x`, and `x + 0` / `x - 0` are
`x` for integers (for floats, `x + -0.0` and `x - 0.0`, the forms that keep `-0.0`).
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, For, If, Instr, Op, Stmt, Value, While
from ..ops import OPS
from ..types import is_float

_COMMUTATIVE = (Op.ADD, Op.MUL)
# Pure but not a function of its arguments: a local's value changes with each store.
_READS_STATE = (Op.LOAD_VAR,)


def _attr_key(a: Any) -> Any:
    # 0.0 == -0.0 and 1 == 1.0 == True in Python: key floats by their text and type.
    return (type(a).__name__, repr(a)) if isinstance(a, (float, int, bool)) else a


def _is_const(v: Value, consts: dict[int, Any], want: float, negative_zero: bool = False
              ) -> bool:
    found = consts.get(v.id)
    if found is None or found != want:
        return False
    if isinstance(found, float) and want == 0:
        return (str(found).startswith("-")) == negative_zero
    return True


class _Cse:
    def __init__(self, keep: set[int]) -> None:
        self.keep = keep
        self.subst: dict[int, Value] = {}
        self.removed = 0

    def v(self, x: Value) -> Value:
        return self.subst.get(x.id, x)

    def identity(self, i: Instr, consts: dict[int, Any]) -> Value | None:
        """The argument `i` equals exactly (x * 1, x + 0, x - 0), or None."""
        if i.result is None or len(i.args) != 2 or i.result.type is not i.args[0].type:
            return None
        a, b = i.args
        if i.op is Op.MUL:
            if _is_const(b, consts, 1):
                return a
            if _is_const(a, consts, 1) and b.type is i.result.type:
                return b
        floating = is_float(i.result.type)
        if i.op is Op.ADD:
            if _is_const(b, consts, 0, floating):
                return a
            if _is_const(a, consts, 0, floating) and b.type is i.result.type:
                return b
        if i.op is Op.SUB and _is_const(b, consts, 0, False):
            return a
        return None

    def block(self, b: Block, seen: dict[Any, Value], consts: dict[int, Any]) -> Block:
        seen = dict(seen)
        consts = dict(consts)
        out: list[Stmt] = []
        for s in b.stmts:
            if not isinstance(s, Instr):
                out.append(self.control(s, seen, consts))
                continue
            if any(a.id in self.subst for a in s.args):
                s = Instr(s.op, s.result, tuple(self.v(a) for a in s.args), s.attrs, s.loc)
            if (s.result is None or not OPS[s.op].pure or s.op in _READS_STATE
                    or s.result.id in self.keep):
                out.append(s)
                continue
            same = self.identity(s, consts)
            if same is None:
                ids = [a.id for a in s.args]
                if s.op in _COMMUTATIVE:
                    ids.sort()
                key = (s.op, tuple(ids), tuple(_attr_key(a) for a in s.attrs), s.result.type)
                same = seen.get(key)
                if same is None:
                    seen[key] = s.result
                    if s.op is Op.CONST:
                        consts[s.result.id] = s.attrs[0]
                    out.append(s)
                    continue
            self.subst[s.result.id] = same
            self.removed += 1
        return Block(tuple(out))

    def control(self, s: Stmt, seen: dict[Any, Value], consts: dict[int, Any]) -> Stmt:
        if isinstance(s, If):
            return If(self.v(s.cond), self.block(s.then_body, seen, consts),
                      self.block(s.else_body, seen, consts), s.loc)
        if isinstance(s, For):
            return For(s.index, self.v(s.begin), self.v(s.end),
                       self.block(s.body, seen, consts), s.parallel, s.loc)
        if isinstance(s, While):
            cond = self.block(s.cond_body, seen, consts)
            return While(cond, self.v(s.cond), self.block(s.body, seen, consts), s.loc)
        return s


def eliminate_common(body: Block, keep: frozenset[int] | set[int] = frozenset()) -> Block:
    """`body` with repeated pure instructions removed (see the module docstring); the
    instructions defining the values `keep` (ids) stay, and stand for no other."""
    return _Cse(set(keep)).block(body, {}, {})
