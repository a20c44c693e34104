"""Constants, casts, arithmetic, bitwise and logical ops, comparisons.

Semantics are NumPy's scalar semantics for the operand dtype (integers wrap around), made
total where NumPy would warn or raise, so every backend can implement them exactly:
integer `x // 0` and `x % 0` are 0; `INT_MIN // -1` wraps to INT_MIN; an integer `x ** n` with
`n < 0` is the truncated `1 / x**-n` (0 unless x is 1 or -1); shifts by a count outside
[0, bits) give 0 (`<<`, and `>>` of non-negative values) or -1 (`>>` of negative values).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Op
from ..types import is_scalar, type_str
from .rules import same
from .table import defop


def _np(rt: Any) -> Any:
    return rt._np.type


# -- values and conversions -----------------------------------------------------------------


def _const_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    value, dtype = attrs
    if not is_scalar(dtype) or type(value) not in (bool, int, float):
        raise TypeError(f"CONST needs a Python bool/int/float and a dtype; got {attrs!r}")
    return dtype


def _cast_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    (dtype,) = attrs
    if not is_scalar(types[0]) or not is_scalar(dtype):
        raise TypeError(f"CAST converts scalars; got {type_str(types[0])} -> {dtype!r}")
    return dtype


def cast_value(rt: Any, v: Any) -> Any:
    """Convert a NumPy scalar to dtype `rt` as C does (bool: v != 0; ints wrap; complex to
    real keeps the real part)."""
    if rt.kind == "b":
        return np.bool_(v != 0)
    if np.iscomplexobj(v) and rt.kind != "c":
        v = np.real(v)
    return np.asarray(v).astype(rt._np)[()]


def _cast_adj(b: Any, instr: Any, g: Any) -> None:
    # Between floats the gradient converts back; a cast to an integer stops it (its result
    # never carries one), and an integer source has none to receive.
    b.accum(0, b.cast(g, instr.args[0].type))


defop(Op.CONST, "arith", 0, _const_rule, lambda rt, attrs: _np(rt)(attrs[0]),
      doc="the literal attrs[0] as dtype attrs[1]", host=True)
defop(Op.CAST, "arith", 1, _cast_rule, lambda rt, attrs, v: cast_value(rt, v),
      adjoint=_cast_adj,
      doc="convert to dtype attrs[0]: ints wrap, floats round to nearest, to int truncates",
      host=True)

# -- arithmetic -----------------------------------------------------------------------------


def _floordiv(rt: Any, attrs: Any, a: Any, b: Any) -> Any:
    if rt.kind in "iu":
        if b == 0:
            return _np(rt)(0)
        if rt.kind == "i" and b == -1:
            return np.negative(a)
    return _np(rt)(np.floor_divide(a, b))


def _mod(rt: Any, attrs: Any, a: Any, b: Any) -> Any:
    if rt.kind in "iu" and b == 0:
        return _np(rt)(0)
    return _np(rt)(np.remainder(a, b))


def ipow(a: int, n: int, rt: Any) -> Any:
    """Integer power with wrap-around; n < 0 truncates 1 / a**-n."""
    if n < 0:
        if a == 1:
            return _np(rt)(1)
        if a == -1:
            return _np(rt)(1 if n % 2 == 0 else -1)
        return _np(rt)(0)
    result = np.asarray(1, dtype=rt._np)
    base = np.asarray(a, dtype=rt._np)
    while n:
        if n & 1:
            result = result * base
        base = base * base
        n >>= 1
    return result[()]


def _pow(rt: Any, attrs: Any, a: Any, b: Any) -> Any:
    if rt.kind in "iu":
        return ipow(int(a), int(b), rt)
    # On arrays: NumPy's scalar power takes x ** 0.5 as sqrt(x), so (-0.0) ** 0.5 would be
    # -0.0 and (-inf) ** 0.5 NaN, where C's pow (and NumPy's array loop) give +0.0 and inf.
    return _np(rt)(np.power(np.asarray([a]), np.asarray([b]))[0])


def _binary(fn: Any) -> Any:
    return lambda rt, attrs, a, b: _np(rt)(fn(a, b))


def _unary(fn: Any) -> Any:
    return lambda rt, attrs, a: _np(rt)(fn(a))


# Adjoint rules: `rule(b, instr, g)` adds the op's contribution to its arguments' adjoints
# given `g`, the adjoint of its result (see qdarray/ad/transform/adjoint.py). Integer results never
# carry gradients, so these rules only ever run on floats.


def _add_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, g)
    b.accum(1, g)


def _sub_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, g)
    b.accum(1, b.neg(g))


def _mul_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, b.mul(g, b.x(1)))
    b.accum(1, b.mul(g, b.x(0)))


def _truediv_adj(b: Any, instr: Any, g: Any) -> None:
    ga = b.div(g, b.x(1))
    b.accum(0, ga)
    b.accum(1, b.neg(b.mul(ga, b.y())))  # d(a/b)/db = -(a/b) / b


def _no_gradient(b: Any, instr: Any, g: Any) -> None:
    """Piecewise constant (floor division): the derivative is 0 wherever it exists."""


def _mod_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, g)  # a % b = a - floor(a / b) * b
    b.accum(1, b.neg(b.mul(g, b.op(Op.FLOOR, b.div(b.x(0), b.x(1))))))


def _pow_adj(b: Any, instr: Any, g: Any) -> None:
    x, n = b.x(0), b.x(1)
    zero = b.const(0.0, x)
    dx = b.mul(n, b.op(Op.POW, x, b.sub(n, b.const(1.0, x))))
    b.accum(0, b.mul(g, b.select(b.op(Op.EQ, n, zero), zero, dx)))  # x ** 0 is constant
    if b.active(1):  # d/dn x ** n = log(x) x ** n, taken as 0 at x == 0 (as JAX does)
        dn = b.mul(b.op(Op.LOG, x), b.y())
        b.accum(1, b.mul(g, b.select(b.op(Op.EQ, x, zero), zero, dn)))


def _neg_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, b.neg(g))


def _abs_adj(b: Any, instr: Any, g: Any) -> None:
    b.accum(0, b.mul(g, b.op(Op.SIGN, b.x(0))))  # 0 at x == 0


def _minmax_adj(wins: Op) -> Any:
    """min/max: the gradient goes to the operand that is the result; a tie splits it in
    halves (as JAX does), and NaN operands get none."""

    def rule(b: Any, instr: Any, g: Any) -> None:
        x, y = b.x(0), b.x(1)
        zero, half, one = b.const(0.0, x), b.const(0.5, x), b.const(1.0, x)
        tie = b.select(b.op(Op.EQ, x, y), half, zero)
        b.accum(0, b.mul(g, b.select(b.op(wins, x, y), one, tie)))
        b.accum(1, b.mul(g, b.select(b.op(wins, y, x), one, tie)))

    return rule


num2 = same("numeric")
defop(Op.ADD, "arith", 2, num2, _binary(np.add), adjoint=_add_adj, doc="a + b", host=True)
defop(Op.SUB, "arith", 2, num2, _binary(np.subtract), adjoint=_sub_adj, doc="a - b", host=True)
defop(Op.MUL, "arith", 2, num2, _binary(np.multiply), adjoint=_mul_adj, doc="a * b", host=True)
defop(Op.TRUEDIV, "arith", 2, same("float"), _binary(np.true_divide), adjoint=_truediv_adj,
      doc="a / b (floats)")
defop(Op.FLOORDIV, "arith", 2, num2, _floordiv, adjoint=_no_gradient,
      doc="floor(a / b); integer x // 0 is 0", host=True)
defop(Op.MOD, "arith", 2, num2, _mod, adjoint=_mod_adj,
      doc="a - floor(a / b) * b (sign of b); x % 0 is 0", host=True)
defop(Op.POW, "arith", 2, num2, _pow, adjoint=_pow_adj, doc="a ** b", np_name="power")
defop(Op.NEG, "arith", 1, same("numeric"), _unary(np.negative), adjoint=_neg_adj, doc="-a",
      host=True)
defop(Op.ABS, "arith", 1, same("numeric"), _unary(np.absolute), adjoint=_abs_adj, doc="|a|",
      host=True, np_name="absolute")
defop(Op.MIN, "arith", 2, num2, _binary(np.minimum), adjoint=_minmax_adj(Op.LT),
      doc="minimum, NaN-propagating", host=True, np_name="minimum")
defop(Op.MAX, "arith", 2, num2, _binary(np.maximum), adjoint=_minmax_adj(Op.GT),
      doc="maximum, NaN-propagating", host=True, np_name="maximum")

# -- bitwise and logical --------------------------------------------------------------------


def _shl(rt: Any, attrs: Any, a: Any, n: Any) -> Any:
    bits = rt.itemsize * 8
    if not 0 <= int(n) < bits:
        return _np(rt)(0)
    return _np(rt)(np.left_shift(a, n))


def _shr(rt: Any, attrs: Any, a: Any, n: Any) -> Any:
    bits = rt.itemsize * 8
    if not 0 <= int(n) < bits:
        return _np(rt)(-1 if a < 0 else 0)
    return _np(rt)(np.right_shift(a, n))


ib2 = same("int_or_bool")
defop(Op.BIT_AND, "arith", 2, ib2, _binary(np.bitwise_and), doc="a & b (and of bools)", host=True)
defop(Op.BIT_OR, "arith", 2, ib2, _binary(np.bitwise_or), doc="a | b (or of bools)", host=True)
defop(Op.BIT_XOR, "arith", 2, ib2, _binary(np.bitwise_xor), doc="a ^ b", host=True)
defop(Op.BIT_NOT, "arith", 1, same("int"), _unary(np.invert), doc="~a (integers)")
defop(Op.SHL, "arith", 2, same("int"), _shl, doc="a << n; 0 when n is outside [0, bits)")
defop(Op.SHR, "arith", 2, same("int"), _shr, doc="a >> n (arithmetic for signed)")
defop(Op.NOT, "arith", 1, same("bool"), _unary(np.logical_not), doc="not a (bool)", host=True)

# -- comparisons ----------------------------------------------------------------------------

cmp2 = same("real_scalar", result="bool")  # complex: compared by parts (library)
defop(Op.EQ, "arith", 2, cmp2, _binary(np.equal), doc="a == b", host=True)
defop(Op.NE, "arith", 2, cmp2, _binary(np.not_equal), doc="a != b", host=True)
defop(Op.LT, "arith", 2, cmp2, _binary(np.less), doc="a < b", host=True)
defop(Op.LE, "arith", 2, cmp2, _binary(np.less_equal), doc="a <= b", host=True)
defop(Op.GT, "arith", 2, cmp2, _binary(np.greater), doc="a > b", host=True)
defop(Op.GE, "arith", 2, cmp2, _binary(np.greater_equal), doc="a >= b", host=True)
