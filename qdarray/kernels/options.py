"""Compile options of kernels and funcs beside debug mode (debug.py): the default float type.

`default_float` is the type Python floats take in a kernel where no other operand decides:
a local first assigned a literal (`imp = 0.0`), `float(x)`, an operation of two Python
floats, `/` of integers, `qd.math` functions of integers, and a literal combined with an
integer. It is float64 unless set, as NumPy and Python do; `float32` is what Taichi's
`ti.init(default_fp=ti.f32)` and Warp's `float` give. It is set per kernel or func
(`@qd.kernel(default_float=qd.float32)`) or for the whole package (`qd.set_default_float`,
or `QDARRAY_DEFAULT_FLOAT=float32` in the environment); a kernel's own setting wins, and a
func without one follows the kernel (or func) that calls it. The setting a kernel compiles
with is part of its compile cache key, so kernels compiled with either coexist.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _dtypes
from .._dtypes import DType

FLOAT_TYPES: tuple[DType, ...] = (_dtypes.float32, _dtypes.float64)


def check_float(value: Any, what: str) -> DType:
    """`value` as a DType when it names float32 or float64 (a DType, NumPy type or name);
    a TypeError naming `what` and the value otherwise."""
    try:
        dtype = _dtypes.normalize_dtype(value)
    except (TypeError, ValueError):
        dtype = None
    if dtype not in FLOAT_TYPES:
        raise TypeError(f"{what} takes qd.float32 or qd.float64; got {value!r}. "
                        "Use default_float=qd.float32 (or qd.float64, the default).")
    return dtype


def _from_environment() -> DType:
    text = os.environ.get("QDARRAY_DEFAULT_FLOAT", "").strip()
    if not text:
        return _dtypes.float64
    if text not in ("float32", "float64"):
        raise ValueError(f"QDARRAY_DEFAULT_FLOAT must be float32 or float64; got {text!r}. "
                         "Use QDARRAY_DEFAULT_FLOAT=float32, or leave it unset for float64.")
    return _dtypes.float32 if text == "float32" else _dtypes.float64


# [the package-wide default float]: a one-element list read at every kernel call
DEFAULT_FLOAT: list[DType] = [_from_environment()]


def set_default_float(dtype: Any) -> None:
    """Set the type Python floats take in kernels and funcs without their own
    `default_float`, for kernels launched from now on (Taichi's `ti.init(default_fp=...)`).

    Args:
        dtype: qd.float32 or qd.float64 (the default).

    Example::

        qd.set_default_float(qd.float32)
        step(x, v)        # `acc = 0.0` in step is a float32 local
        qd.set_default_float(qd.float64)
    """
    DEFAULT_FLOAT[0] = check_float(dtype, "set_default_float")


def default_float() -> DType:
    """The package-wide default float type of kernels (`qd.set_default_float`)."""
    return DEFAULT_FLOAT[0]
