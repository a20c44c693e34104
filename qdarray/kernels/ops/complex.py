"""Complex scalars: built from and taken apart into their real parts.

complex64 and complex128 are scalar types of the IR (not of the kernel language: the
frontend accepts no complex values, so user kernels and reverse mode never meet them); the
namespace kernels (`kernels/library/`) load, store, select, cast and carry them in locals, and
compute with their parts. COMPLEX(re, im) makes one from two floats of its precision;
REAL and IMAG take them apart. Arithmetic on complex values is spelled in real ops by the
library (`library/complex_math.py`), so NumPy's formulas (Smith's division, for one) live in
one place and every renderer needs only these three ops and complex memory, locals, SELECT
and CAST (complex to complex changes precision; real to complex has imaginary part 0;
complex to bool tests both parts; complex to real keeps the real part, as NumPy's cast does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _dtypes
from .. import types as T
from ..ir import Op
from .table import defop

_PARTS = {"complex64": _dtypes.float32, "complex128": _dtypes.float64}
_WHOLE = {"float32": _dtypes.complex64, "float64": _dtypes.complex128}


def part_dtype(t: Any) -> Any:
    """The float dtype of a complex dtype's parts."""
    return _PARTS[t.name]


def complex_dtype(t: Any) -> Any:
    """The complex dtype whose parts are float dtype `t`."""
    return _WHOLE[t.name]


def _complex_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    re, im = types
    if re is not im or not T.is_float(re):
        raise TypeError(f"COMPLEX needs two floats of one dtype; got "
                        f"({T.type_str(re)}, {T.type_str(im)})")
    return complex_dtype(re)


def _part_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    (z,) = types
    if not T.is_complex(z):
        raise TypeError(f"REAL and IMAG take a complex value; got {T.type_str(z)}")
    return part_dtype(z)


def _make(rt: Any, attrs: Any, re: Any, im: Any) -> Any:
    z = np.empty((), rt._np)
    z.real = re
    z.imag = im
    return z[()]


defop(Op.COMPLEX, "complex", 2, _complex_rule, _make,
      doc="re + im * 1j, parts of the result's precision (no adjoint: no complex in kernels)")
defop(Op.REAL, "complex", 1, _part_rule, lambda rt, attrs, z: rt._np.type(np.real(z)),
      doc="the real part")
defop(Op.IMAG, "complex", 1, _part_rule, lambda rt, attrs, z: rt._np.type(np.imag(z)),
      doc="the imaginary part")
