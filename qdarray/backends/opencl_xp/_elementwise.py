"""Elementwise functions of the standard as generated OpenCL C maps.

Result dtypes, weak-scalar promotion and NumPy's own argument errors come from running the
CPU namespace's function on empty arrays of the operands' dtypes (a microsecond or two), so
every device agrees with the CPU on what `float32_array * 2.0` or `int8_array + 300` gives.
The values are computed by one map kernel per (function, dtypes, layout); each function's
C spelling below reproduces NumPy's semantics, including its answers where C leaves things
undefined or differs: integer `x // 0` and `x % 0` are 0, float floor division and remainder
follow NumPy's `divmod`, `maximum`/`minimum` propagate NaN, shifts past the width give 0 (or
-1 for negative values shifted right), `sign(nan)` is nan.

Complex operands, and the few integer cases NumPy treats specially (`reciprocal` of integers),
compute on the host; `elementwise` returns None for those and the namespace falls back.
"""

from __future__ import annotations

from typing import Any

import array_api_compat.numpy as compat
import numpy as np

from ..quiet import quiet
from ._clarray import ClArray
from ._map import Scalar, broadcast_shapes, broadcast_to, launch_map
from ._runtime import ctype, has_fp64, ptype

_FLOAT_UNARY = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh",
    "atanh": "atanh", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "sqrt": "sqrt", "ceil": "ceil", "floor": "floor",
    "trunc": "trunc", "round": "rint",
}
_FLOAT_BINARY = {"atan2": "atan2", "hypot": "hypot", "copysign": "copysign",
                 "nextafter": "nextafter"}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
            "greater": ">", "greater_equal": ">="}
_LOGICAL = {"logical_and": "a0 && a1", "logical_or": "a0 || a1", "logical_xor": "a0 != a1",
            "logical_not": "!a0"}
_PREDICATES = {"isnan": ("isnan(a0)", "false"), "isinf": ("isinf(a0)", "false"),
               "isfinite": ("isfinite(a0)", "true"), "signbit": ("signbit(a0)", "(a0 < 0)")}

UNARY = frozenset(_FLOAT_UNARY) | {"abs", "negative", "positive", "square", "sign",
                                   "reciprocal", "bitwise_invert", "logical_not", "real",
                                   "imag", "conj"} | frozenset(_PREDICATES)
BINARY = frozenset(_FLOAT_BINARY) | frozenset(_COMPARE) | {
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum",
    "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "logaddexp", "logical_and", "logical_or", "logical_xor"}
NAMES = UNARY | BINARY


def _helpers(name: str, t: np.dtype) -> str:
    """C helper functions for `name` computed in `t` (named per type)."""
    c = ptype(t)
    if name == "floor_divide" and t.kind == "i":
        return (f"inline {c} qd_floordiv_{c}({c} a, {c} b) {{\n"
                f"  if (b == 0) return 0;\n"
                f"  if (b == -1) return ({c})(0UL - (ulong)(long)a);\n"
                f"  {c} q = a / b;\n"
                f"  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n"
                f"  return q;\n}}\n")
    if name == "remainder" and t.kind == "i":
        return (f"inline {c} qd_mod_{c}({c} a, {c} b) {{\n"
                f"  if (b == 0 || b == -1) return 0;\n"
                f"  {c} r = a % b;\n"
                f"  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n"
                f"  return r;\n}}\n")
    if name == "floor_divide" and t.kind == "f":
        # The standard's floor(a / b) where an operand is infinite (special_cases.py).
        return (f"inline {c} qd_floordiv_{c}({c} a, {c} b) {{\n"
                f"  if (b == 0 || isinf(a) || isinf(b)) return floor(a / b);\n"
                f"  {c} mod = fmod(a, b);\n"
                f"  {c} div = (a - mod) / b;\n"
                f"  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;\n"
                f"  if (div != 0) {{\n"
                f"    {c} fl = floor(div);\n"
                f"    if (div - fl > ({c})0.5) fl += 1;\n"
                f"    return fl;\n  }}\n"
                f"  return copysign(({c})0, a / b);\n}}\n")
    if name == "remainder" and t.kind == "f":
        return (f"inline {c} qd_mod_{c}({c} a, {c} b) {{\n"
                f"  {c} mod = fmod(a, b);\n"
                f"  if (b == 0) return mod;\n"
                f"  if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }}\n"
                f"  else mod = copysign(({c})0, b);\n"
                f"  return mod;\n}}\n")
    if name == "pow" and t.kind in "iu":
        neg = ("  if (n < 0) return a == 1 ? 1 : (a == -1 ? ((n & 1) ? -1 : 1) : 0);\n"
               if t.kind == "i" else "")
        return (f"inline {c} qd_pow_{c}({c} a, {c} n) {{\n{neg}"
                f"  ulong r = 1, b = (ulong)a, e = (ulong)n;\n"
                f"  while (e) {{ if (e & 1) r *= b; b *= b; e >>= 1; }}\n"
                f"  return ({c})r;\n}}\n")
    if name == "logaddexp":
        ln2 = "M_LN2_F" if c == "float" else "M_LN2"
        return (f"inline {c} qd_logaddexp_{c}({c} x, {c} y) {{\n"
                f"  if (x == y) return x + {ln2};\n"
                f"  {c} t = x - y;\n"
                f"  if (t > 0) return x + log1p(exp(-t));\n"
                f"  if (t <= 0) return y + log1p(exp(t));\n"
                f"  return t;\n}}\n")
    return ""


def _expr(name: str, t: np.dtype) -> str | None:
    """The C expression of `name` over operands a0 (a1) of compute dtype `t`; None when the
    combination computes on the host."""
    k = t.kind
    c = ptype(t)
    if name in _FLOAT_UNARY:
        if k == "f":
            return f"{_FLOAT_UNARY[name]}(a0)"
        return "a0" if name in ("ceil", "floor", "trunc", "round") else None
    if name in _FLOAT_BINARY:
        return f"{_FLOAT_BINARY[name]}(a0, a1)" if k == "f" else None
    if name in _COMPARE:
        return f"a0 {_COMPARE[name]} a1"
    if name in _LOGICAL:
        return _LOGICAL[name]
    if name in _PREDICATES:
        return _PREDICATES[name][0 if k == "f" else 1]
    bits = t.itemsize * 8
    table: dict[str, Any] = {
        "add": "a0 || a1" if k == "b" else "a0 + a1",
        "subtract": None if k == "b" else "a0 - a1",
        "multiply": "a0 && a1" if k == "b" else "a0 * a1",
        "divide": "a0 / a1" if k == "f" else None,
        "floor_divide": {"i": f"qd_floordiv_{c}(a0, a1)", "f": f"qd_floordiv_{c}(a0, a1)",
                         "u": "(a1 == 0 ? 0 : a0 / a1)"}.get(k),
        "remainder": {"i": f"qd_mod_{c}(a0, a1)", "f": f"qd_mod_{c}(a0, a1)",
                      "u": "(a1 == 0 ? 0 : a0 % a1)"}.get(k),
        "pow": "pow(a0, a1)" if k == "f" else f"qd_pow_{c}(a0, a1)" if k in "iu" else None,
        "maximum": "((isnan(a0) || a0 > a1) ? a0 : a1)" if k == "f" else "(a0 > a1 ? a0 : a1)",
        "minimum": "((isnan(a0) || a0 < a1) ? a0 : a1)" if k == "f" else "(a0 < a1 ? a0 : a1)",
        "bitwise_and": "a0 && a1" if k == "b" else "a0 & a1",
        "bitwise_or": "a0 || a1" if k == "b" else "a0 | a1",
        "bitwise_xor": "a0 != a1" if k == "b" else "a0 ^ a1",
        "bitwise_left_shift": f"((ulong)a1 < {bits} ? a0 << a1 : 0)" if k in "iu" else None,
        "bitwise_right_shift": (f"((ulong)a1 < {bits} ? a0 >> a1 : (a0 < 0 ? -1 : 0))"
                                if k == "i" else f"((ulong)a1 < {bits} ? a0 >> a1 : 0)"
                                if k == "u" else None),
        "logaddexp": f"qd_logaddexp_{c}(a0, a1)" if k == "f" else None,
        "abs": "fabs(a0)" if k == "f" else f"({c})abs(a0)" if k == "i" else "a0",
        "negative": None if k == "b" else "-a0",
        "positive": "a0",
        "square": "a0 * a0",
        "sign": ("(a0 > 0 ? 1 : (a0 < 0 ? -1 : (a0 == 0 ? 0 : a0)))" if k == "f" else
                 "(a0 > 0) - (a0 < 0)" if k == "i" else "(a0 > 0)"),
        "reciprocal": "1 / a0" if k == "f" else None,
        "bitwise_invert": "!a0" if k == "b" else "~a0",
        "real": "a0", "conj": "a0", "imag": "0",
    }
    return table.get(name)


def _compute_dtype(name: str, samples: list[Any], out: np.dtype) -> np.dtype:
    if name in _COMPARE:
        common: np.dtype = np.result_type(*samples)
        return common
    if name in _LOGICAL:
        return np.dtype(np.bool_)
    if name in _PREDICATES:
        operand: np.dtype = np.dtype(samples[0].dtype)
        return operand
    return out


_RESOLVERS: dict[str, Any] = {}


def result_dtype(name: str, samples: list[Any]) -> np.dtype:
    """The dtype the CPU namespace gives (raising NumPy's errors for bad operands)."""
    fn = _RESOLVERS.get(name)
    if fn is None:
        fn = quiet(getattr(compat, name))
        _RESOLVERS[name] = fn
    result: np.dtype = np.dtype(fn(*samples).dtype)
    return result


def elementwise(name: str, *args: Any, out: ClArray | None = None) -> ClArray | None:
    """`name` applied to ClArrays and Python scalars on the device, or None when this
    combination has no device implementation (the caller computes on the host)."""
    arrays = [a for a in args if isinstance(a, ClArray)]
    if not arrays or any(a.dtype.kind not in "biuf" for a in arrays):
        return None
    if any(type(a) is complex for a in args):
        return None
    samples = [np.empty(0, a.dtype) if isinstance(a, ClArray) else a for a in args]
    out_dtype = result_dtype(name, samples)
    if out_dtype.kind not in "biuf":
        return None
    try:
        t = _compute_dtype(name, samples, out_dtype)
    except (TypeError, OverflowError):
        return None
    expr = _expr(name, t)
    if expr is None or not all(_fits(a, t) for a in args):
        return None
    st = arrays[0].qd_state
    if np.float64 in (out_dtype, t) and not has_fp64(st):
        raise TypeError(
            f"{name} computes in float64 here, which device opencl:{st.index} "
            f"({st.name}) does not support; use float32 operands (qd.astype(x, qd.float32))."
        )
    if name == "pow" and t.kind == "i":
        _check_int_exponent(args[1])
    shape = broadcast_shapes(*(a.shape for a in arrays))
    if out is None:
        out = ClArray.empty(st, shape, out_dtype)
    operands = [broadcast_to(a, shape) if isinstance(a, ClArray) else Scalar(a, t)
                for a in args]
    return launch_map(("ew", name, t), out, operands, [t] * len(args),
                      lambda: expr, lambda: _helpers(name, t))


def _fits(x: Any, t: np.dtype) -> bool:
    """Whether a scalar operand converts to compute dtype `t` exactly (NumPy compares an
    out-of-range Python int with an integer array by value, on the host here)."""
    if type(x) is int and t.kind in "iu":
        info = np.iinfo(t)
        return bool(info.min <= x <= info.max)
    return True


def _check_int_exponent(n: Any) -> None:
    if isinstance(n, ClArray):
        if n.size == 0 or n.dtype.kind == "u":
            return
        from ._reductions import reduce

        low = int(reduce("min", n, None, False))
    else:
        low = int(n)
    if low < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")


def where(cond: ClArray, x1: Any, x2: Any) -> ClArray | None:
    """`cond ? x1 : x2` with NumPy's promotion (x1 and x2 arrays or Python scalars)."""
    ops = [cond, x1, x2]
    arrays = [a for a in ops if isinstance(a, ClArray)]
    if any(a.dtype.kind not in "biuf" for a in arrays) or any(
            type(a) is complex for a in ops):
        return None
    samples = [np.empty(0, a.dtype) if isinstance(a, ClArray) else a for a in ops]
    # array_api_compat clones NumPy's functions into its namespace at import time, unseen by mypy.
    t = np.dtype(quiet(compat.where)(*samples).dtype)  # type: ignore[attr-defined]
    shape = broadcast_shapes(*(a.shape for a in arrays))
    out = ClArray.empty(cond.qd_state, shape, t)
    operands = [broadcast_to(a, shape) if isinstance(a, ClArray) else Scalar(a, t)
                for a in ops]
    return launch_map("where", out, operands, [np.dtype(np.bool_), t, t],
                      lambda: "a0 ? a1 : a2")


def clip(x: ClArray, lo: Any, hi: Any) -> ClArray | None:
    """NumPy's clip: min(max(x, lo), hi) (so hi wins where lo > hi), NaN propagating."""
    ops = [x] + [b for b in (lo, hi) if b is not None]
    if any(isinstance(a, ClArray) and a.dtype.kind not in "biuf" for a in ops) or (
            x.dtype.kind not in "biuf"):
        return None
    samples = [np.empty(0, a.dtype) if isinstance(a, ClArray) else a for a in ops]
    np_clip = quiet(compat.clip)  # type: ignore[attr-defined]  # cloned from NumPy, as above
    t = np.dtype(np_clip(samples[0], lo if not isinstance(lo, ClArray) else samples[1],
                         hi if not isinstance(hi, ClArray) else samples[-1]).dtype)
    shape = broadcast_shapes(*(a.shape for a in ops if isinstance(a, ClArray)))
    out = ClArray.empty(x.qd_state, shape, t)
    operands = [broadcast_to(a, shape) if isinstance(a, ClArray) else Scalar(a, t)
                for a in ops]
    nan = "isnan(a0) ? a0 : " if t.kind == "f" else ""
    body = "a0"
    j = 1
    if lo is not None:
        body = f"({body} < a{j} ? a{j} : {body})"
        j += 1
    if hi is not None:
        body = f"({body} > a{j} ? a{j} : {body})"
    key = ("clip", lo is not None, hi is not None)
    return launch_map(key, out, operands, [t] * len(ops), lambda: f"({nan}{body})")


def c_type_name(dtype: np.dtype) -> str:
    return ctype(dtype)
