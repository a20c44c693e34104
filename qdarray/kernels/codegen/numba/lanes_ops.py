"""The op-spelling table of the lane renderer (numba/lanes.py): the IR ops whose varying result
is one call of the lane runtime (numba/lanes_runtime.py), each one LLVM instruction or
intrinsic with the exact semantics of numba's scalar code for the op; every other op runs
numba's scalar spelling lane by lane, for the active lanes only.
"""

from __future__ import annotations

from typing import Any

from ...ir import Instr, Op
from .pysource import const, ctor

_ARITH = {Op.ADD: "add", Op.SUB: "sub", Op.MUL: "mul"}
_BITS = {Op.BIT_AND: "band", Op.BIT_OR: "bor", Op.BIT_XOR: "bxor"}
_CMP = {Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge", Op.EQ: "eq", Op.NE: "ne"}
_FLOAT_UNARY = {Op.SQRT: "sqrt", Op.FLOOR: "floor", Op.CEIL: "ceil", Op.TRUNC: "trunc",
                Op.ABS: "fabs", Op.ISNAN: "isnan", Op.ISINF: "isinf", Op.ISFINITE: "isfinite"}


def _kind(t: Any) -> str:
    return str(getattr(t, "kind", ""))


def vector_spelling(e: Any, i: Instr) -> str | None:
    """One intrinsic call for `i`'s varying result (`e`: the lane emitter, which names the
    operands' vectors), or None: then numba's scalar spelling runs lane by lane."""
    r = i.result
    assert r is not None
    a = i.args
    k = _kind(r.type)
    same = all(_kind(x.type) == _kind(a[0].type) for x in a)
    if i.op in _ARITH and k in "iuf":
        return f"V.{_ARITH[i.op]}({e.vec(a[0])}, {e.vec(a[1])})"
    if i.op is Op.TRUEDIV and k == "f" and _kind(a[0].type) == "f":
        return f"V.div({e.vec(a[0])}, {e.vec(a[1])})"
    if i.op is Op.NEG and k in "iuf":
        return f"V.neg({e.vec(a[0])})"
    if i.op in _BITS and k in "iub":
        return f"V.{_BITS[i.op]}({e.vec(a[0])}, {e.vec(a[1])})"
    if (i.op is Op.BIT_NOT and k in "iu") or (i.op is Op.NOT and k == "b"):
        return f"V.bnot({e.vec(a[0])})"
    if i.op in _CMP and same and _kind(a[0].type) in "iufb":
        return f"V.{_CMP[i.op]}({e.vec(a[0])}, {e.vec(a[1])})"
    if i.op in _FLOAT_UNARY and _kind(a[0].type) == "f":
        return f"V.{_FLOAT_UNARY[i.op]}({e.vec(a[0])})"
    if i.op in (Op.MIN, Op.MAX) and k in ("i", "u") and same:  # exact: either operand on ties
        x, y = e.vec(a[0]), e.vec(a[1])
        return f"V.select(V.{'lt' if i.op is Op.MIN else 'gt'}({x}, {y}), {x}, {y})"
    if i.op is Op.SELECT:
        return f"V.select({e.vec(a[0])}, {e.vec(a[1])}, {e.vec(a[2])})"
    if i.op is Op.CAST:
        src = _kind(a[0].type)
        if k == "b":
            zero = const(0, a[0].type)
            return f"V.ne({e.vec(a[0])}, V.splat({zero}))"
        if src in "iub" or (src == "f" and k == "f"):
            return f"V.cast({e.vec(a[0])}, {ctor(r.type)})"
    return None
