"""The standard's special cases where NumPy (and CuPy, which copies NumPy) give another value.

`functions(m, check_first)` returns replacements for a few functions of a NumPy-like module `m`
(NumPy on the CPU and under the CUDA simulator, CuPy on CUDA GPUs), each equal to `m`'s
function except at the special values below:

- `floor_divide` with an infinite operand: NumPy derives float floor division from `fmod` (as
  Python does), so `inf // 2.0` is NaN and `1.0 // -inf` is -1.0. The standard computes
  `floor(x1 / x2)` there: `inf // 2.0` is inf, `1.0 // -inf` is -0.0. Finite operands keep
  NumPy's (and Python's) values, so `1.0 // 0.1` stays 9.0.
- complex `expm1` at infinities and NaNs: NumPy's formula does not special-case them
  (`expm1(inf + 0j)` is `inf + nanj`); the standard's values are those of `exp(z) - 1`, whose
  special cases NumPy follows. `expm1(-0 + 0j)` is `+0 + 0j` (NumPy: `-0 + 0j`).
- complex `tanh(±inf + yj)` for finite y: NumPy (C99's ctanh) gives `±1 + copysign(0, sin(2y))j`;
  the standard gives `±1 + copysign(0, y)j` (`1 + 0j` for y > 0, as `tanh(conj(z)) ==
  conj(tanh(z))` requires for y < 0).
- `sign`: of a complex z, each part over |z| as NumPy's `sign`, with z scaled by its larger
  part first where |z| would lose bits or overflow (array-api-compat's plain z / |z|
  overflows to inf + inf j for subnormal z, whose |z| rounds); a NaN part gives
  NaN + NaN j, and infinite parts follow NumPy 2's `sign` (the standard leaves them to complex
  division's rules): one infinite part gives +-1 there and +0 in the other (`sign(infj)` is
  1j, also with a NaN beside it), two give NaN + NaN j. On CuPy its sign of NaN is 0 (the
  standard: NaN); array-api-compat fixes that with a boolean-mask assignment, which waits for
  the GPU, so this one fixes it in place.
- CuPy only, where its kernels differ from NumPy's (and the standard) at special values:
  float `remainder` with an infinite divisor or a zero result (CuPy computes x - floor(x / y)
  * y: `1.0 % -inf` is NaN, `-0.0 % 5.0` is -0.0; NumPy's rule, fmod corrected to the
  divisor's sign, gives -inf and +0.0); complex `log`, `log1p`, `acosh` and `tanh` with
  infinite or NaN parts (thrust's complex functions: `tanh(+0 + inf j)` is NaN + NaN j where
  the standard says +0 + NaN j). At those inputs the standard's values are closed forms of
  real functions that follow C99 at infinities: `log(z)` is `log(hypot(a, b)) + atan2(b, a) j`
  (zero included), `log1p(z)` the same of `1 + z`, `acosh(z)` is `inf + atan2(b, a) j` where a
  part is infinite and NaN + NaN j otherwise (NaN + pi/2 j at `+-0 + NaN j`), `tanh(+-0 + yj)`
  for y infinite or NaN is `+-0 + NaN j`. tests/array/test_special_cases.py checks each
  replacement with NumPy as the module against NumPy's own function.

With `check_first` (the CPU), each replacement first counts the special inputs and returns
NumPy's result unchanged when there are none, so ordinary input pays one cheap pass; without
it (GPUs, where a count would wait for the device), the correction is always applied on the
device, with no host synchronization.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np


def _is_float(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return bool(dtype.kind == "f")
    return type(x) is float


def _unscaled_range(dtype: Any) -> tuple[float, float]:
    """The magnitudes between which a complex sign needs no scaling (module docstring): from
    the smallest normal (below it |z| rounds as a subnormal) to half the largest finite value
    (above it |z| may overflow)."""
    info = np.finfo(dtype)
    return float(info.smallest_normal), float(info.max) / 2


def functions(m: types.ModuleType, check_first: bool) -> dict[str, Callable[..., Any]]:
    """The replacements for module `m` (NumPy or CuPy), by the standard's function name."""
    floor_divide_ = m.floor_divide
    isinf = m.isinf
    isfinite = m.isfinite
    floor = m.floor
    divide = m.divide
    copyto = m.copyto
    count_nonzero = m.count_nonzero
    asarray = m.asarray
    where = m.where

    def _any_inf(x: Any) -> bool:
        if type(x) is float:
            return math.isinf(x)
        if not _is_float(x):
            return False
        return bool(count_nonzero(isinf(x)))

    def floor_divide(x1: Any, x2: Any, /, out: Any = None) -> Any:
        if not (_is_float(x1) or _is_float(x2)):
            return floor_divide_(x1, x2, out=out)
        if check_first and not (_any_inf(x1) or _any_inf(x2)):
            return floor_divide_(x1, x2, out=out)
        # Both computed before `out` (which may be x1, for //=) is written.
        infinite = isinf(x1) | isinf(x2)
        exact = floor(divide(x1, x2))
        result = asarray(floor_divide_(x1, x2, out=out))  # NumPy gives 0-d input a scalar
        copyto(result, exact, where=infinite)
        return result

    def expm1(x: Any, /) -> Any:
        if x.dtype.kind != "c":
            return m.expm1(x)
        result = asarray(m.expm1(x))
        finite = isfinite(x)
        if not check_first or not bool(finite.all()):
            copyto(result, m.exp(x) - 1, where=~finite)
        # -0 + 0j gives +0 + 0j; a real part that is zero is +0 for every finite input.
        result.real += 0.0
        return result

    def tanh(x: Any, /) -> Any:
        if x.dtype.kind != "c":
            return m.tanh(x)
        a = x.real
        b = x.imag
        special = isinf(a) & isfinite(b)
        if check_first and not bool(count_nonzero(special)):
            return m.tanh(x)
        result = asarray(m.tanh(x))
        copyto(result.real, m.copysign(1.0, a), where=special)
        copyto(result.imag, m.copysign(0.0, b), where=special)
        return result

    def sign(x: Any, /) -> Any:
        # The standard's sign without a boolean-mask assignment (array-api-compat's CuPy
        # version masks NaNs in, which synchronises with the GPU on every call). Complex:
        # x / |x| of x scaled by its larger part first, so that subnormal inputs (whose |x|
        # rounds, making x / |x| overflow to inf) and huge ones give a unit result;
        # infinite parts as NumPy's sign takes them (module docstring).
        if x.dtype.kind == "c":
            re, im = x.real, x.imag
            low, high = _unscaled_range(re.dtype)
            scale = m.maximum(m.abs(re), m.abs(im))
            # scaled only where |x| would lose bits (subnormal) or overflow; elsewhere NumPy's
            # parts over hypot, bit for bit
            scale = where(isfinite(scale) & (scale > 0) & ((scale < low) | (scale > high)),
                          scale, 1)
            sr, si = re / scale, im / scale  # parts apart: no complex division to underflow
            norm = m.hypot(sr, si)
            norm = where(norm == 0, 1, norm)
            result = asarray(m.empty_like(x))  # each part over |x|, as NumPy's sign
            copyto(result.real, sr / norm)
            copyto(result.imag, si / norm)
            copyto(result, 0, where=x == 0)
            inf_re, inf_im = isinf(re), isinf(im)
            one_re, one_im = inf_re & ~inf_im, inf_im & ~inf_re
            copyto(result.real, m.copysign(1.0, re), where=one_re)
            copyto(result.imag, 0.0, where=one_re)
            copyto(result.real, 0.0, where=one_im)
            copyto(result.imag, m.copysign(1.0, im), where=one_im)
            copyto(result, complex(math.nan, math.nan), where=inf_re & inf_im)
            return result
        result = asarray(m.sign(x))
        if x.dtype.kind == "f":
            copyto(result, x, where=m.isnan(x))  # CuPy's sign gives 0 for NaN
        return result

    table: dict[str, Callable[..., Any]] = {
        "floor_divide": floor_divide, "expm1": expm1, "tanh": tanh, "sign": sign}
    if not check_first:  # CuPy
        table.update(_cupy_functions(m, tanh))
    return table


def _cupy_functions(m: types.ModuleType, tanh_: Callable[..., Any]
                    ) -> dict[str, Callable[..., Any]]:
    """The replacements where CuPy's kernels differ from NumPy's (module docstring); with
    NumPy as `m` each gives NumPy's own values, which is how they are tested."""
    isfinite, isinf, isnan = m.isfinite, m.isinf, m.isnan
    copyto, asarray, where = m.copyto, m.asarray, m.where
    log_, log1p_, acosh_, remainder_ = m.log, m.log1p, m.arccosh, m.remainder

    def remainder(x1: Any, x2: Any, /, out: Any = None) -> Any:
        if not (_is_float(x1) or _is_float(x2)):
            return remainder_(x1, x2, out=out)
        mod = asarray(m.fmod(x1, x2))
        mod = where((mod != 0) & ((x2 < 0) != (mod < 0)), mod + x2, mod)
        mod = where(mod == 0, m.copysign(m.zeros_like(mod), x2), mod)
        if out is None:
            return mod
        copyto(out, mod)
        return out

    def _special(result: Any, at: Any, real: Any, imag: Any) -> Any:
        out = asarray(result)
        copyto(out.real, real, where=at)
        copyto(out.imag, imag, where=at)
        return out

    def log(x: Any, /) -> Any:
        if x.dtype.kind != "c":
            return log_(x)
        a, b = x.real, x.imag
        return _special(log_(x), ~isfinite(x) | (x == 0), log_(m.hypot(a, b)),
                        m.arctan2(b, a))

    def log1p(x: Any, /) -> Any:
        if x.dtype.kind != "c":
            return log1p_(x)
        a, b = x.real + 1, x.imag
        return _special(log1p_(x), ~isfinite(x) | ((a == 0) & (b == 0)),
                        log_(m.hypot(a, b)), m.arctan2(b, a))

    def acosh(x: Any, /) -> Any:
        if x.dtype.kind != "c":
            return acosh_(x)
        a, b = x.real, x.imag
        infinite = isinf(a) | isinf(b)
        real = where(infinite, m.inf, m.nan).astype(a.dtype)
        imag = where((a == 0) & isnan(b), m.pi / 2, m.arctan2(b, a)).astype(a.dtype)
        return _special(acosh_(x), ~isfinite(x), real, imag)

    def tanh(x: Any, /) -> Any:
        result = tanh_(x)
        if x.dtype.kind != "c":
            return result
        a, b = x.real, x.imag
        return _special(result, (a == 0) & ~isfinite(b), a, m.nan)

    return {"remainder": remainder, "log": log, "log1p": log1p, "acosh": acosh,
            "tanh": tanh}
