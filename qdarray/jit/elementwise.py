"""Which traced calls are elementwise functions the fusion can compile, and how to type them.

A call is fusable when it is one of the standard's elementwise functions (`qd.sin`,
`qd.add`, ...), an Array operator (`x + y`, `2.0 * x`, `-x`, `x < y`) or `qd.where` with
three operands, its operands are
arrays of boolean, integer or real floating dtypes or Python `bool`, `int` or `float`
scalars, and the kernel library has a body for it (`kernels/library/elementwise.py`, which
holds NumPy's semantics for each dtype). Its compute dtype (what operands are converted to
before the body) is the one the IR-built namespace uses, derived the same way
(`backends/kernel_xp/elementwise.py`): so a fused chain computes what the eager calls
compute, op by op, in the same dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _array, _elementwise_functions, _searching_functions
from .._array import Array
from .._dtypes import DType
from ..backends.kernel_xp import elementwise as xp_elementwise
from ..backends.kernel_xp.maps import dt, scalar_value
from ..kernels.library import elementwise as bodies

_SCALARS = (bool, int, float)


def _operator_table() -> dict[Any, tuple[str, bool]]:
    """Array's operator methods: the function each applies and whether it is reflected."""
    forward = _array._binary_operator("add").__code__
    reflected = _array._reflected_operator("add").__code__
    unary = _array._unary_operator("negative").__code__
    table: dict[Any, tuple[str, bool]] = {}
    for fn in vars(Array).values():
        code = getattr(fn, "__code__", None)
        if code is None or not fn.__closure__:
            continue
        name = fn.__closure__[0].cell_contents
        if code is forward or code is unary:
            table[fn] = (name, False)
        elif code is reflected:
            table[fn] = (name, True)
    return table


def _function_table() -> dict[Any, tuple[str, bool]]:
    table = {}
    for name in bodies.NAMES:
        fn = getattr(_elementwise_functions, name, None)
        if fn is not None:
            table[fn] = (name, False)
    return table


# Functions that generated CPU code computes with one scalar libm call per element, where
# NumPy's loops on this hardware are SIMD: measured at N = 1e7 float32 with 2 threads,
# a fused `tanh` costs ten times NumPy's (300 ms against 30 ms, benchmarks/compare_jit.py),
# so by default they stay the namespace's own calls and split a run (fusion.FUSE_LIBM,
# docs/jit.md). `sqrt`, `abs`, rounding, comparisons and arithmetic are single
# instructions and fuse.
LIBM = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "atan2", "hypot", "logaddexp",
    "pow",
})

FUSABLE: dict[Any, tuple[str, bool]] = {
    fn: entry for fn, entry in (_function_table() | _operator_table()).items()
    if entry[0] in bodies.NAMES
}
# `qd.where(condition, x1, x2)`: a select, computed in its result dtype (NumPy's where).
FUSABLE[_searching_functions.where] = ("where", False)
ARITY = {"where": 3} | {name: 1 if name in bodies.UNARY else 2 for name in bodies.NAMES}


@dataclass(frozen=True)
class Operand:
    """One operand of a fused node: an array (its dtype) or a Python scalar (its value,
    already converted to the node's compute dtype, as the namespace converts it)."""

    dtype: DType
    value: Any = None  # a NumPy scalar of the compute dtype, for scalars


def typing(name: str, operands: list[Any], out: DType) -> DType | None:
    """The compute dtype of `name` on `operands` (Arrays or Python scalars) giving `out`,
    or None when the fused kernel would not compute what the namespace does (no body for
    the dtypes, an integer scalar outside the compute dtype, integer powers, whose negative
    exponents the namespace refuses)."""
    kinds = "biuf"
    if name == "where":
        cond = operands[0]
        if type(cond) is not Array or cond._dtype.kind != "b" or out.kind not in kinds:
            return None
        if any(type(x) is Array and x._dtype.kind not in kinds or type(x) is not Array and
               type(x) not in _SCALARS for x in operands[1:]):
            return None
        return out
    for x in operands:
        if type(x) is Array:
            if x._dtype.kind not in kinds:
                return None
        elif type(x) not in _SCALARS:
            return None
    if out.kind not in kinds:
        return None
    samples = [np.empty(0, x._dtype._np) if type(x) is Array else x for x in operands]
    try:
        t = np.dtype(xp_elementwise._compute_dtype(name, samples, out._np))
    except (OverflowError, TypeError, ValueError):
        return None
    if any(type(x) is int and xp_elementwise._out_of_range(x, t) for x in operands):
        return None
    compute = dt(t)
    if not bodies.supported(name, compute):
        return None
    if name == "pow" and compute.kind in "iu":
        return None
    return compute


def scalar(x: Any, compute: DType) -> Any:
    """A Python scalar operand as the namespace converts it for compute dtype `compute`."""
    return scalar_value(x, compute._np)
