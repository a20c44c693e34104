"""Float floor division and remainder spelled as NumPy computes them, for the CUDA generator.

NumPy's `npy_divmod` (numpy/_core/src/npymath/npy_math_internal.h.src): `fmod`, then the
sign fix (add b when the remainder's sign differs from b's), `floor` of the quotient with a
rounding fix, `copysign` for zero results, and `a / b` (fmod's NaN for the remainder) when b
is zero. Spelled so, every edge (b = +-0 or +-inf, NaN operands, signed zeros) matches NumPy
bit for bit. numba's own `//` and `%` of floats lower fmod to LLVM's `frem`, which NVPTX
expands as a - trunc(a / b) * b: NaN for b = +-inf, where NumPy gives -1.0 (and inf for the
remainder of a negative a).
"""

from __future__ import annotations

from typing import Any

from ...ir import Instr, Op
from .pysource import PY_TABLE


def float_divmod(op: Op, simulated: bool) -> Any:
    """The spelling of FLOORDIV or MOD (`op`) for the CUDA generator: floats as described in
    the module docstring, with libdevice's functions (`simulated`: NumPy's ufuncs, which
    numba's simulator runs); integer operands keep the shared Python spelling."""
    integer = PY_TABLE[op]

    def spell(e: Any, i: Instr) -> str:
        t: Any = i.result.type  # type: ignore[union-attr]
        if t.kind != "f":
            if callable(integer):
                return str(integer(e, i))
            return str(integer.format(*(e.val(a) for a in i.args)))
        a, b = (e.val(x) for x in i.args)
        suffix = "f" if t.name == "float32" else ""  # libdevice's float32 functions

        def fn(name: str) -> str:
            return f"np.{name}" if simulated else f"libdevice.{name}{suffix}"

        zero, one, half = (f"np.{t.name}({c})" for c in ("0.0", "1.0", "0.5"))
        n = i.result.id  # type: ignore[union-attr]
        m, q, fl = f"_m{n}", f"_q{n}", f"_fl{n}"
        e.line(f"{m} = {fn('fmod')}({a}, {b})")
        if op is Op.FLOORDIV:
            e.line(f"{q} = {a} / {b}")  # b == +-0: the quotient (+-inf or NaN)
        e.line(f"if {b} != {zero}:")  # NaN too: C's `if (b)`
        with e.indent():
            if op is Op.FLOORDIV:
                e.line(f"{q} = ({a} - {m}) / {b}")
            e.line(f"if {m} != {zero}:")
            with e.indent():
                e.line(f"if ({b} < {zero}) != ({m} < {zero}):")
                with e.indent():
                    e.line(f"{m} = {m} + {b}")
                    if op is Op.FLOORDIV:
                        e.line(f"{q} = {q} - {one}")
            e.line("else:")
            with e.indent():
                e.line(f"{m} = {fn('copysign')}({zero}, {b})")
            if op is Op.FLOORDIV:
                e.line(f"if {q} != {zero}:")
                with e.indent():
                    e.line(f"{fl} = {fn('floor')}({q})")
                    e.line(f"if {q} - {fl} > {half}:")
                    with e.indent():
                        e.line(f"{fl} = {fl} + {one}")
                    e.line(f"{q} = {fl}")
                e.line("else:")
                with e.indent():
                    e.line(f"{q} = {fn('copysign')}({zero}, {a} / {b})")
        return q if op is Op.FLOORDIV else m
    return spell
