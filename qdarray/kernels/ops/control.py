"""SELECT and the structured control-flow statements.

IF, FOR, WHILE, BREAK and CONTINUE are the `ir.If` / `ir.For` / `ir.While` / `ir.Break` /
`ir.Continue` nodes; their semantics (regions, scoping, the parallel outermost loop) are
documented in `ir.py` and executed by `interp.py`. They are listed here so each code
generator's table must say how it spells them.
"""

from __future__ import annotations

from typing import Any

from .. import types as T
from ..ir import Op
from .rules import no_result
from .table import defop


def _select_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    c, a, b = types
    if not T.is_bool(c) or a is not b or not T.is_scalar(a):
        raise TypeError(f"SELECT needs (bool, T, T); got ({', '.join(map(T.type_str, types))})")
    return a


def _select_adj(b: Any, instr: Any, g: Any) -> None:
    zero = b.const(0.0, g)
    b.accum(1, b.select(b.x(0), g, zero))
    b.accum(2, b.select(b.x(0), zero, g))


defop(Op.SELECT, "control", 3, _select_rule, lambda rt, attrs, c, a, b: a if c else b,
      adjoint=_select_adj,
      doc="a if c else b (both evaluated)", host=True)
for _op in (Op.IF, Op.FOR, Op.WHILE, Op.BREAK, Op.CONTINUE):
    defop(_op, "control", None, no_result, None, pure=False, doc="structured statement")
