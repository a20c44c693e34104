"""The OpenCL C spelling of every instruction op: `TABLE[op]` is a format string over the
argument names (`"{0} + {1}"`) or a function `(emitter, instr) -> str` (empty for statements
it writes itself); the C walker (c/csource.py) declares each result in its IR dtype. Math ops
are spelled by the C names their `defop` gives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...._dtypes import DType
from ...ir import Instr, Op, Value
from ...ops import OPS
from ...types import ArrayType
from .opencl_helpers import atomic_helper, ct, float_helpers, int_helpers


def _rt(i: Instr) -> DType:
    """The dtype of `i`'s result: every op spelled through this table with a result has a
    scalar one (views are lowered to arrays before code generation)."""
    t = i.result.type if i.result is not None else None
    assert isinstance(t, DType), i
    return t


def _elem(v: Value) -> DType:
    """The element dtype of the array operand `v`."""
    t = v.type
    assert isinstance(t, ArrayType), v
    return t.dtype


def _arith_helper(e: Any, i: Instr, fn: str) -> str:
    t = _rt(i)
    c = ct(t)
    name, text = float_helpers(c) if t.kind == "f" else int_helpers(c, t.kind == "i")
    e.helper(name, text)
    a, b = (e.val(x) for x in i.args)
    return f"qd_{fn}_{c}({a}, {b})"


def const(value: Any, t: Any) -> str:
    """A literal of dtype `t` (floats exactly, as hexadecimal)."""
    if t.kind == "b":
        return "true" if value else "false"
    if t.kind == "f":
        v = float(value)
        suffix = "f" if t.name == "float32" else ""
        if math.isnan(v):
            return f"(({ct(t)})NAN)"
        if math.isinf(v):
            return f"(({ct(t)}){'' if v > 0 else '-'}INFINITY)"
        if t.name == "float32":
            v = float(np.float32(v))
        return f"(({ct(t)}){v.hex()}{suffix})"
    v = int(value)
    if t.kind == "u":
        return f"(({ct(t)}){v}UL)"
    if v == -(1 << 63):
        return "((long)(-9223372036854775807L - 1))"
    return f"(({ct(t)}){v}L)"


def _cast(e: Any, i: Instr) -> str:
    x = e.val(i.args[0])
    target = i.attrs[0]
    source = getattr(i.args[0].type, "kind", "")
    if source == "c":  # vector types convert by convert_<type>, parts by .x / .y
        if target.kind == "c":
            return f"convert_{ct(target)}({x})"
        if target.kind == "b":
            return f"({x}.x != 0 || {x}.y != 0)"
        return f"({ct(target)}){x}.x"
    if target.kind == "c":
        part = "double" if target.name == "complex128" else "float"
        return f"({ct(target)})(({part}){x}, ({part})0)"
    return f"{x} != 0" if target.kind == "b" else f"({ct(target)}){x}"


def _wraps(t: DType) -> bool:
    """Whether integer arithmetic in `t` must be spelled through an unsigned type: C leaves
    signed overflow undefined (compilers fold `x + 1 > x` to true), and promotes 8- and 16-bit
    operands to `int`, where `(ushort)65535 * (ushort)65535` overflows too."""
    return t.kind == "i" or (t.kind == "u" and t.itemsize < 4)


def wrap_int(t: DType, expr: str) -> str:
    """`expr`, computed in the unsigned type at least 32 bits wide that holds `t`, as a value of
    `t`: its low bits, reinterpreted (`as_int`), so the result wraps around as NumPy's does."""
    c = ct(t)
    u = c if t.kind == "u" else f"u{c}"
    return f"as_{c}(({u})({expr}))" if t.kind == "i" else f"(({u})({expr}))"


def _int_spelling(fmt: str) -> Any:
    """The table entry of an arithmetic op whose integer result can overflow: `fmt` over
    operands `{0}`, `{1}`; plain for floats and wide unsigned types."""
    def spell(e: Any, i: Instr) -> str:
        t = _rt(i)
        args = [e.val(x) for x in i.args]
        if not _wraps(t):
            return fmt.format(*args)
        w = "ulong" if t.itemsize == 8 else "uint"
        return wrap_int(t, fmt.format(*(f"({w}){a}" for a in args)))
    return spell


def _neg(e: Any, i: Instr) -> str:
    # A float's negation flips its sign bit: 0 - x would give +0.0 for x = +0.0, not -0.0.
    if _rt(i).kind == "f":
        return f"(-{e.val(i.args[0])})"
    return _int_spelling("0 - {0}")(e, i)  # type: ignore[no-any-return]


def _pow(e: Any, i: Instr) -> str:
    if _rt(i).kind == "f":
        a, b = (e.val(x) for x in i.args)
        return f"pow({a}, {b})"
    return _arith_helper(e, i, "pow")


def _shift(e: Any, i: Instr) -> str:
    a, n = (e.val(x) for x in i.args)
    t = _rt(i)
    bits = t.itemsize * 8
    if i.op is Op.SHL:
        w = "ulong" if bits == 64 else "uint"
        return f"((ulong){n} < {bits} ? {wrap_int(t, f'({w}){a} << {n}')} : 0)"
    fill = f"({a} < 0 ? -1 : 0)" if t.kind == "i" else "0"
    return f"((ulong){n} < {bits} ? {a} >> {n} : {fill})"


def _minmax(cmp: str) -> Any:
    def spell(e: Any, i: Instr) -> str:
        a, b = (e.val(x) for x in i.args)
        if _rt(i).kind == "f":
            return f"((isnan({a}) || {a} {cmp} {b}) ? {a} : {b})"
        return f"({a} {cmp} {b} ? {a} : {b})"
    return spell


def _abs(e: Any, i: Instr) -> str:
    x = e.val(i.args[0])
    k = _rt(i).kind
    # OpenCL's abs returns the unsigned type: abs(INT_MIN) is 2**31, INT_MIN again as an int
    return f"fabs({x})" if k == "f" else wrap_int(_rt(i), f"abs({x})") if k == "i" else x


def _sign(e: Any, i: Instr) -> str:
    x = e.val(i.args[0])
    return f"({x} > 0 ? 1 : ({x} < 0 ? -1 : ({x} == 0 ? 0 : {x})))"


def _log1p(e: Any, i: Instr) -> str:
    # PoCL's log1p rounds subnormals to the wrong ulp (0 for the smallest); below 2**-54
    # (float32: 2**-25) log1p(x) = x - x*x/2 rounds to x itself
    x = e.val(i.args[0])
    tiny = "0x1p-25f" if _rt(i).itemsize <= 4 else "0x1p-54"
    return f"(fabs({x}) < {tiny} ? {x} : log1p({x}))"


def _load(e: Any, i: Instr) -> str:
    ref = e.index(i.args[0], i.args[1:])
    return f"{ref} != 0" if _elem(i.args[0]).kind == "b" else ref


def _store(e: Any, i: Instr) -> str:
    ref = e.index(i.args[0], i.args[1:-1])
    v = e.val(i.args[-1])
    if _elem(i.args[0]).kind == "b":
        v = f"(uchar){v}"
    return f"{ref} = {v};"


def _atomic(kind: str) -> Any:
    def spell(e: Any, i: Instr) -> str:
        if i.attrs and not e.caps.get("int64_atomics", False):  # an adstack overflow record
            raise TypeError(
                f"reverse mode records adstack overflows with 64-bit atomics "
                f"(cl_khr_int64_base_atomics), which {e.caps.get('device', 'the device')} "
                "does not have. Use CPU arrays for the gradient (x.to_device('cpu')), or "
                "another device.")
        name, text = atomic_helper(kind, _elem(i.args[0]), e.caps)
        e.helper(name, text)
        ref = e.index(i.args[0], i.args[1:-1])
        return f"{name}(&{ref}, {e.val(i.args[-1])})"
    return spell


def _check(e: Any, i: Instr) -> str:
    e.check(i)
    return ""


TABLE: dict[Op, Any] = {
    Op.CONST: lambda e, i: const(*i.attrs), Op.CAST: _cast, Op.SELECT: "{0} ? {1} : {2}",
    Op.ADD: _int_spelling("{0} + {1}"), Op.SUB: _int_spelling("{0} - {1}"),
    Op.MUL: _int_spelling("{0} * {1}"), Op.TRUEDIV: "{0} / {1}",
    Op.FLOORDIV: lambda e, i: _arith_helper(e, i, "floordiv"),
    Op.MOD: lambda e, i: _arith_helper(e, i, "mod"), Op.POW: _pow, Op.NEG: _neg,
    Op.ABS: _abs, Op.MIN: _minmax("<"), Op.MAX: _minmax(">"),
    Op.BIT_AND: "{0} & {1}", Op.BIT_OR: "{0} | {1}", Op.BIT_XOR: "{0} ^ {1}",
    Op.BIT_NOT: "~{0}", Op.SHL: _shift, Op.SHR: _shift, Op.NOT: "!{0}",
    Op.EQ: "{0} == {1}", Op.NE: "{0} != {1}", Op.LT: "{0} < {1}", Op.LE: "{0} <= {1}",
    Op.GT: "{0} > {1}", Op.GE: "{0} >= {1}",
    Op.COMPLEX: lambda e, i: f"({ct(_rt(i))})({e.val(i.args[0])}, {e.val(i.args[1])})",
    Op.REAL: "{0}.x", Op.IMAG: "{0}.y",
    Op.LOAD: _load, Op.STORE: _store,
    Op.SHAPE: lambda e, i: f"a{i.args[0].id}_n{i.attrs[0]}",
    Op.LOAD_VAR: lambda e, i: e.var(i.attrs[0]),
    Op.STORE_VAR: lambda e, i: f"{e.var(i.attrs[0])} = {e.val(i.args[0])};",
    Op.CHECK_INDEX: _check,
    Op.ATOMIC_ADD: _atomic("add"), Op.ATOMIC_MIN: _atomic("min"),
    Op.ATOMIC_MAX: _atomic("max"),
}
TABLE.update({op: f"{d.c_name}({', '.join(f'{{{k}}}' for k in range(d.arity or 0))})"
              for op, d in OPS.items() if d.family == "math" and d.c_name is not None})
TABLE[Op.SIGN] = _sign
TABLE[Op.LOG1P] = _log1p
TABLE[Op.RSQRT] = "1 / sqrt({0})"
