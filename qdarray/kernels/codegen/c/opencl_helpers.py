"""OpenCL C helper functions the generated kernels call: NumPy-exact integer division,
modulo and powers, float floor division and modulo, and atomics for every numeric dtype.

Atomics return the element's old value. Integer add/min/max of 32 bits are OpenCL 1.1
built-ins, of 64 bits `atom_*` (cl_khr_int64_base_atomics, extended for min/max; min/max fall
back to a compare-and-swap loop when only the base extension is there). Floats use a
compare-and-swap loop on the element's bits; 8- and 16-bit integers one on the aligned 32-bit
word that holds the element (qdarray rounds every allocation up to 8 bytes, so the word is
inside the buffer). Float min/max store only when the value compares less/greater, so NaN
never wins and a NaN element stays, as in the interpreter.
"""

from __future__ import annotations

from typing import Any

CTYPES: dict[str, str] = {
    "bool": "uchar", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2",
}
PTYPES = dict(CTYPES, bool="bool")


def ct(t: Any) -> str:
    """The C type of a value of dtype `t` in registers."""
    return PTYPES[t.name]

_UNSIGNED = {"char": "uchar", "short": "ushort", "uchar": "uchar", "ushort": "ushort"}


def helper_source() -> str:
    """Helpers every program may use (inline functions; unused ones cost nothing)."""
    return ""


def int_helpers(c: str, signed: bool) -> tuple[str, str]:
    """(name, text) of floordiv / mod / pow helpers for integer C type `c`."""
    neg = ("  if (n < 0) return a == 1 ? 1 : (a == -1 ? ((n & 1) ? -1 : 1) : 0);\n"
           if signed else "")
    # Results are made in ulong and reinterpreted in `c`'s width (as_int((uint)r)): converting
    # an out-of-range value to a signed type is not wrap-around everywhere.
    back = f"as_{c}((u{c})" if signed else f"(({c})"
    wrap = f"  if (b == -1) return {back}(0UL - (ulong)(long)a));\n" if signed else ""
    fix = "  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n" if signed else ""
    rfix = "  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n" if signed else ""
    mone = " || b == -1" if signed else ""
    text = (f"inline {c} qd_floordiv_{c}({c} a, {c} b) {{\n  if (b == 0) return 0;\n{wrap}"
            f"  {c} q = a / b;\n{fix}  return q;\n}}\n"
            f"inline {c} qd_mod_{c}({c} a, {c} b) {{\n  if (b == 0{mone}) return 0;\n"
            f"  {c} r = a % b;\n{rfix}  return r;\n}}\n"
            f"inline {c} qd_pow_{c}({c} a, {c} n) {{\n{neg}"
            f"  ulong r = 1, b = (ulong)a, e = (ulong)n;\n"
            f"  while (e) {{ if (e & 1) r *= b; b *= b; e >>= 1; }}\n  return {back}r);\n}}\n")
    return f"qd_int_{c}", text


def float_helpers(c: str) -> tuple[str, str]:
    """(name, text) of floordiv / mod helpers for float C type `c` (NumPy's divmod)."""
    text = (f"inline {c} qd_floordiv_{c}({c} a, {c} b) {{\n"
            f"  if (b == 0) return a / b;\n  {c} mod = fmod(a, b);\n"
            f"  {c} div = (a - mod) / b;\n"
            f"  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;\n"
            f"  if (div != 0) {{ {c} fl = floor(div); if (div - fl > ({c})0.5) fl += 1; "
            f"return fl; }}\n  return copysign(({c})0, a / b);\n}}\n"
            f"inline {c} qd_mod_{c}({c} a, {c} b) {{\n  {c} mod = fmod(a, b);\n"
            f"  if (b == 0) return mod;\n"
            f"  if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }}\n"
            f"  else mod = copysign(({c})0, b);\n  return mod;\n}}\n")
    return f"qd_float_{c}", text


def _update(kind: str, c: str) -> tuple[str, str]:
    """(new value from `cur` and `v`, condition to attempt the store)."""
    if kind == "add" and c in ("char", "short", "int", "long"):  # signed overflow: wrap
        u = "ulong" if c == "long" else "uint"
        return f"as_{c}((u{c})(({u})cur + ({u})v))", "1"
    if kind == "add":
        return f"({c})(cur + v)", "1"
    if kind == "min":
        return "v", "v < cur"
    return "v", "v > cur"


def atomic_helper(kind: str, dtype: Any, caps: dict[str, Any]) -> tuple[str, str]:
    """(function name, C text) of the atomic `kind` ("add", "min", "max") on `dtype`.

    Raises:
        TypeError: when `dtype` needs 64-bit atomics the device lacks.
    """
    c = CTYPES[dtype.name]
    name = f"qd_atomic_{kind}_{c}"
    ptr = f"volatile __global {c} *p"
    bits = dtype.itemsize * 8
    new, cond = _update(kind, c)
    if bits == 32 and dtype.kind in "iu":
        return name, f"inline {c} {name}({ptr}, {c} v) {{ return atomic_{kind}(p, v); }}\n"
    if bits == 64 and not caps.get("int64_atomics", False):
        what = "float64" if dtype.kind == "f" else dtype.name
        raise TypeError(
            f"Atomic {kind} on {what} needs 64-bit atomics (cl_khr_int64_base_atomics), which "
            f"{caps.get('device', 'the device')} does not have. Try float32 or int32 data for "
            "the atomically updated array, or another device.")
    if bits == 64 and dtype.kind in "iu" and (kind == "add" or caps.get("int64_minmax")):
        return name, (f"inline {c} {name}({ptr}, {c} v) {{ return atom_{kind}(p, v); }}\n")
    if bits in (32, 64):
        u = "uint" if bits == 32 else "ulong"
        cas = "atomic_cmpxchg" if bits == 32 else "atom_cmpxchg"
        to_c = f"as_{c}" if dtype.kind == "f" else f"({c})"
        to_u = f"as_{u}" if dtype.kind == "f" else f"({u})"
        return name, (
            f"inline {c} {name}({ptr}, {c} v) {{\n"
            f"  volatile __global {u} *q = (volatile __global {u} *)p;\n"
            f"  {u} old = *q;\n  while (1) {{\n    {c} cur = {to_c}(old);\n"
            f"    if (!({cond})) break;\n"
            f"    {u} prev = {cas}(q, old, {to_u}({new}));\n"
            f"    if (prev == old) break;\n    old = prev;\n  }}\n"
            f"  return {to_c}(old);\n}}\n")
    uc = _UNSIGNED[c]
    return name, (
        f"inline {c} {name}({ptr}, {c} v) {{\n"
        f"  ulong addr = (ulong)p;\n"
        f"  volatile __global uint *w = (volatile __global uint *)(addr & ~(ulong)3);\n"
        f"  uint shift = (uint)(addr & 3) * 8;\n"
        f"  uint mask = ((1u << {bits}) - 1u) << shift;\n"
        f"  uint old = *w;\n  while (1) {{\n"
        f"    {c} cur = ({c})(({uc})((old & mask) >> shift));\n"
        f"    if (!({cond})) break;\n"
        f"    uint upd = (old & ~mask) | ((((uint)({uc})({new})) << shift) & mask);\n"
        f"    uint prev = atomic_cmpxchg(w, old, upd);\n"
        f"    if (prev == old) break;\n    old = prev;\n  }}\n"
        f"  return ({c})(({uc})((old & mask) >> shift));\n}}\n")
