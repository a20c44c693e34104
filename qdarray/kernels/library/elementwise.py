"""The elementwise functions of the standard as IR, with NumPy's semantics for each dtype.

`body(name)(em, t, args)` emits, through the emitter `em`, the IR computing function `name`
of operand Values `args` already converted to the compute dtype `t`, and returns the result
Value (the caller converts it to the result dtype); `supported(name, t)` says whether a body
exists for `t`. The compute dtype is NumPy's loop dtype: the operands' common dtype for
comparisons, bool for the logical functions, the operand's for predicates and for the parts
of complex numbers, else the result dtype.

The IR ops carry NumPy's answers where C leaves things undefined or differs (ops/arith.py):
integer `x // 0` and `x % 0` are 0, float floor division and remainder are NumPy's `divmod`
(floor division by or of an infinity is the standard's floor(x1 / x2), as on the CPU),
`maximum`/`minimum` propagate NaN (and return the second operand on ties, as NumPy does, so
signed zeros come out as NumPy's), shifts past the width give 0 or -1. Booleans follow
NumPy's boolean loops (`add` is `or`, `multiply` is `and`, `maximum` is `or`).
Complex operands go through `complex_math` (arithmetic on the device's complex scalars).
"""

from __future__ import annotations

from collections.abc import Callable

from ... import _dtypes
from ..._dtypes import DType
from ..emit import Emitter
from ..ir import Op, Value
from . import complex_math

Body = Callable[[Emitter, DType, list[Value]], Value]

_FLOAT_UNARY: dict[str, Op] = {
    "sin": Op.SIN, "cos": Op.COS, "tan": Op.TAN, "asin": Op.ASIN, "acos": Op.ACOS,
    "atan": Op.ATAN, "sinh": Op.SINH, "cosh": Op.COSH, "tanh": Op.TANH, "asinh": Op.ASINH,
    "acosh": Op.ACOSH, "atanh": Op.ATANH, "exp": Op.EXP, "expm1": Op.EXPM1, "log": Op.LOG,
    "log1p": Op.LOG1P, "log2": Op.LOG2, "log10": Op.LOG10, "sqrt": Op.SQRT,
}
_ROUNDING: dict[str, Op] = {"ceil": Op.CEIL, "floor": Op.FLOOR, "trunc": Op.TRUNC,
                            "round": Op.ROUND}
_FLOAT_BINARY: dict[str, Op] = {"atan2": Op.ATAN2, "hypot": Op.HYPOT, "copysign": Op.COPYSIGN,
                                "nextafter": Op.NEXTAFTER}
COMPARISONS: dict[str, Op] = {"equal": Op.EQ, "not_equal": Op.NE, "less": Op.LT,
                              "less_equal": Op.LE, "greater": Op.GT, "greater_equal": Op.GE}
LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})
PREDICATES = frozenset({"isnan", "isinf", "isfinite", "signbit"})


def _op(op: Op) -> Body:
    return lambda em, t, a: em.emit(op, *a)


def _by_kind(**bodies: Body) -> Body:
    """A body chosen by the compute dtype's kind: keys `b`, `i`, `u`, `f`, `c`, or `iu`."""
    table = {}
    for kinds, body in bodies.items():
        for k in kinds:
            table[k] = body
    return lambda em, t, a: table[t.kind](em, t, a)


def _kinds(body: Body, kinds: str) -> tuple[Body, str]:
    return body, kinds


def _identity(em: Emitter, t: DType, a: list[Value]) -> Value:
    return a[0]


def _zero(em: Emitter, t: DType, a: list[Value]) -> Value:
    return em.const(0, t)


def _const_bool(value: bool) -> Body:
    return lambda em, t, a: em.const(value, _dtypes.bool)


def _sign(em: Emitter, t: DType, a: list[Value]) -> Value:
    x = a[0]
    if t.kind == "f":
        return em.emit(Op.SIGN, x)  # type: ignore[no-any-return]
    zero, one = em.const(0, t), em.const(1, t)
    pos = em.emit(Op.SELECT, em.emit(Op.GT, x, zero), one, zero)
    if t.kind == "u":
        return pos  # type: ignore[no-any-return]
    return em.emit(Op.SELECT, em.emit(Op.LT, x, zero),  # type: ignore[no-any-return]
                   em.const(-1, t), pos)


def _signbit(em: Emitter, t: DType, a: list[Value]) -> Value:
    if t.kind == "f":  # copysign sees the sign of -0.0 and of negative NaNs
        one = em.emit(Op.COPYSIGN, em.const(1.0, t), a[0])
        return em.emit(Op.LT, one, em.const(0.0, t))  # type: ignore[no-any-return]
    if t.kind == "i":
        return em.emit(Op.LT, a[0], em.const(0, t))  # type: ignore[no-any-return]
    return em.const(False, _dtypes.bool)


def _logaddexp(em: Emitter, t: DType, a: list[Value]) -> Value:
    """NumPy's npy_logaddexp: x + ln2 on ties (infinities included), else the larger plus
    log1p(exp(-|x - y|)); NaN when x - y is NaN."""
    x, y = a
    d = em.emit(Op.SUB, x, y)
    zero = em.const(0.0, t)
    tail_pos = em.emit(Op.ADD, x, em.emit(Op.LOG1P, em.emit(Op.EXP, em.emit(Op.NEG, d))))
    tail_neg = em.emit(Op.ADD, y, em.emit(Op.LOG1P, em.emit(Op.EXP, d)))
    rest = em.emit(Op.SELECT, em.emit(Op.LE, d, zero), tail_neg, d)  # NaN: d itself
    rest = em.emit(Op.SELECT, em.emit(Op.GT, d, zero), tail_pos, rest)
    tie = em.emit(Op.ADD, x, em.const(0.6931471805599453, t))
    return em.emit(Op.SELECT, em.emit(Op.EQ, x, y), tie, rest)  # type: ignore[no-any-return]


def _floor_divide(em: Emitter, t: DType, a: list[Value]) -> Value:
    """NumPy's floor division, except with an infinite operand, where the standard's
    floor(x1 / x2) applies (NumPy's divmod gives inf // 2.0 = NaN, 1.0 // -inf = -1.0; the
    CPU namespace corrects the same cases, backends/special_cases.py)."""
    q = em.emit(Op.FLOORDIV, *a)
    if t.kind != "f":
        return q  # type: ignore[no-any-return]
    infinite = em.emit(Op.BIT_OR, em.emit(Op.ISINF, a[0]), em.emit(Op.ISINF, a[1]))
    exact = em.emit(Op.FLOOR, em.emit(Op.TRUEDIV, *a))
    return em.emit(Op.SELECT, infinite, exact, q)  # type: ignore[no-any-return]


def _reciprocal(em: Emitter, t: DType, a: list[Value]) -> Value:
    return em.emit(Op.TRUEDIV, em.const(1, t), a[0])  # type: ignore[no-any-return]


def _square(em: Emitter, t: DType, a: list[Value]) -> Value:
    return em.emit(Op.MUL, a[0], a[0])  # type: ignore[no-any-return]


def _logical(op: Op) -> Body:
    def body(em: Emitter, t: DType, a: list[Value]) -> Value:
        bools = [em.cast(v, _dtypes.bool) for v in a]
        if op is Op.NOT:
            return em.emit(Op.NOT, *bools)  # type: ignore[no-any-return]
        return em.emit(op, *bools)  # type: ignore[no-any-return]
    return body


# name -> (body, kinds of compute dtype it handles)
_TABLE: dict[str, tuple[Body, str]] = {
    "add": (_by_kind(b=_op(Op.BIT_OR), iuf=_op(Op.ADD), c=complex_math.add), "biufc"),
    "subtract": (_by_kind(iuf=_op(Op.SUB), c=complex_math.sub), "iufc"),
    "multiply": (_by_kind(b=_op(Op.BIT_AND), iuf=_op(Op.MUL), c=complex_math.mul), "biufc"),
    "divide": (_by_kind(f=_op(Op.TRUEDIV), c=complex_math.div), "fc"),
    "floor_divide": (_floor_divide, "iuf"),
    "remainder": (_op(Op.MOD), "iuf"),
    "pow": (_op(Op.POW), "iuf"),
    "maximum": (_by_kind(b=_op(Op.BIT_OR), iuf=_op(Op.MAX)), "biuf"),
    "minimum": (_by_kind(b=_op(Op.BIT_AND), iuf=_op(Op.MIN)), "biuf"),
    "bitwise_and": (_op(Op.BIT_AND), "biu"),
    "bitwise_or": (_op(Op.BIT_OR), "biu"),
    "bitwise_xor": (_op(Op.BIT_XOR), "biu"),
    "bitwise_invert": (_by_kind(b=_op(Op.NOT), iu=_op(Op.BIT_NOT)), "biu"),
    "bitwise_left_shift": (_op(Op.SHL), "iu"),
    "bitwise_right_shift": (_op(Op.SHR), "iu"),
    "logical_and": (_logical(Op.BIT_AND), "biufc"),
    "logical_or": (_logical(Op.BIT_OR), "biufc"),
    "logical_xor": (_logical(Op.NE), "biufc"),
    "logical_not": (_logical(Op.NOT), "biufc"),
    "isnan": (_by_kind(f=_op(Op.ISNAN), biu=_const_bool(False), c=complex_math.isnan),
              "biufc"),
    "isinf": (_by_kind(f=_op(Op.ISINF), biu=_const_bool(False), c=complex_math.isinf),
              "biufc"),
    "isfinite": (_by_kind(f=_op(Op.ISFINITE), biu=_const_bool(True), c=complex_math.isfinite),
                 "biufc"),
    "signbit": (_signbit, "biuf"),
    "sign": (_by_kind(iuf=_sign, c=complex_math.sign), "iufc"),
    "abs": (_by_kind(f=_op(Op.ABS), i=_op(Op.ABS), bu=_identity, c=complex_math.abs_), "biufc"),
    "negative": (_by_kind(iuf=_op(Op.NEG), c=complex_math.neg), "iufc"),
    "positive": (_identity, "iufc"),
    "square": (_by_kind(iuf=_square, c=complex_math.mul_self), "iufc"),
    "reciprocal": (_by_kind(f=_reciprocal, c=complex_math.reciprocal), "fc"),
    "logaddexp": (_logaddexp, "f"),
    "real": (_by_kind(biuf=_identity, c=complex_math.real), "biufc"),
    "imag": (_by_kind(biuf=_zero, c=complex_math.imag), "biufc"),
    "conj": (_by_kind(biuf=_identity, c=complex_math.conj), "biufc"),
}
for _name, _o in _FLOAT_UNARY.items():
    _TABLE[_name] = (_op(_o), "f")
for _name, _o in _ROUNDING.items():
    _TABLE[_name] = (_by_kind(f=_op(_o), biu=_identity), "biuf")
for _name, _o in _FLOAT_BINARY.items():
    _TABLE[_name] = (_op(_o), "f")
for _name, _o in COMPARISONS.items():
    _TABLE[_name] = (_by_kind(biuf=_op(_o), c=complex_math.compare(_o)),
                     "biufc" if _o in (Op.EQ, Op.NE) else "biuf")
for _name, _body in complex_math.FUNCTIONS.items():
    _real, _kinds_ = _TABLE[_name]
    _TABLE[_name] = (_by_kind(**{_kinds_: _real, "c": _body}), _kinds_ + "c")

NAMES = frozenset(_TABLE)
UNARY = frozenset(n for n in _TABLE if n not in COMPARISONS and n not in {
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum",
    "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "logaddexp",
} and n not in _FLOAT_BINARY)


def supported(name: str, t: DType) -> bool:
    """Whether `name` has a body for compute dtype `t`."""
    entry = _TABLE.get(name)
    return entry is not None and t.kind in entry[1]


def body(name: str) -> Body:
    return _TABLE[name][0]
