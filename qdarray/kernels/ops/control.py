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
from . import defop
from .rules import no_result


def _select_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    c, a, b = types
    if not T.is_bool(c) or a is not b or not T.is_scalar(a):
        raise TypeError(f"SELECT needs (bool, T, T); got ({', '.join(map(T.type_str, types))})")
    return a


defop(Op.SELECT, "control", 3, _select_rule, lambda rt, attrs, c, a, b: a if c else b,
      doc="a if c else b (both evaluated)")
for _op in (Op.IF, Op.FOR, Op.WHILE, Op.BREAK, Op.CONTINUE):
    defop(_op, "control", None, no_result, None, pure=False, doc="structured statement")
