"""NumPy's values with the standard's special cases where they differ (the oracles of the
elementwise and operator tests; tests/array/test_special_cases.py pins each case by value)."""

from __future__ import annotations

import numpy as np


def std_expm1(a: np.ndarray) -> np.ndarray:
    """NumPy's expm1, except complex non-finite input: the standard's values are exp(z) - 1
    there, and NumPy's exp follows the standard's exp special cases; at a complex zero the
    real part is +0 (NumPy: -0 for -0 + 0j; qdarray/backends/special_cases.py)."""
    if a.dtype.kind != "c":
        return np.expm1(a)
    out = np.where(np.isfinite(a), np.expm1(a), np.exp(a) - 1)
    out.real[a == 0] = 0.0
    return out


def std_tanh(a: np.ndarray) -> np.ndarray:
    """NumPy's tanh, except complex +-inf + yj for finite y: +-1 + copysign(0, y)j."""
    if a.dtype.kind != "c":
        return np.tanh(a)
    limit = np.empty_like(a)
    limit.real = np.copysign(1.0, a.real)
    limit.imag = np.copysign(0.0, a.imag)  # 1j * 0.0 would lose the sign of a -0 part
    return np.where(np.isinf(a.real) & np.isfinite(a.imag), limit, np.tanh(a))


def std_floor_divide(a: np.ndarray | complex, b: np.ndarray | complex) -> np.ndarray:
    """NumPy's floor_divide, except where an operand is infinite: floor(a / b) there."""
    result = np.floor_divide(a, b)
    if result.dtype.kind != "f":
        return result
    return np.where(np.isinf(a) | np.isinf(b), np.floor(np.divide(a, b)), result)
