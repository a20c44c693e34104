"""Elementwise functions, `where` and `clip` on native arrays: dtypes, scalars, launches.

Result dtypes, weak-scalar promotion and NumPy's own argument errors come from running the
CPU namespace's function on empty arrays of the operands' dtypes (a microsecond or two), so
every device agrees with the CPU on what `float32_array * 2.0` or `int8_array + 300` gives.
The values come from one map kernel per (function, dtypes, layout) whose body is the
function's IR (`kernels/library/elementwise.py`, NumPy's semantics). A Python integer that
does not fit the dtype a comparison computes in compares by value, as in NumPy: the result
is the same for every element. `elementwise` returns None for what has no device body
(complex transcendental functions); the namespace then computes on the host.
"""

from __future__ import annotations

import operator
from typing import Any

import array_api_compat.numpy as compat
import numpy as np

from ...kernels.library import elementwise as bodies
from ..quiet import quiet
from .copy import assign
from .layout import broadcast_shapes, broadcast_to, overlaps
from .maps import Scalar, dt, launch_map

_COMPARE = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
            "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}
_RESOLVERS: dict[str, Any] = {}


def native(x: Any) -> bool:
    return hasattr(x, "qd_device")


def result_dtype(name: str, samples: list[Any]) -> np.dtype:
    """The dtype the CPU namespace gives (raising NumPy's errors for bad operands)."""
    fn = _RESOLVERS.get(name)
    if fn is None:
        fn = quiet(getattr(compat, name))
        _RESOLVERS[name] = fn
    dtype: np.dtype = np.dtype(fn(*samples).dtype)
    return dtype


def _compute_dtype(name: str, samples: list[Any], out: np.dtype) -> np.dtype:
    if name in bodies.COMPARISONS:
        return np.dtype(np.result_type(*samples))
    if name in bodies.LOGICAL:
        return np.dtype(np.bool_)
    if name in bodies.PREDICATES or name in ("real", "imag", "abs", "conj"):
        operand: np.dtype = np.dtype(samples[0].dtype)
        return operand
    return out


def check_fp64(name: str, dev: Any, *dtypes: np.dtype) -> None:
    if any(d in (np.float64, np.complex128) for d in dtypes) and not dev.has_fp64():
        raise TypeError(
            f"{name} computes in float64 here, which device {dev.device} ({dev.name}) does "
            "not support; use float32 operands (qd.astype(x, qd.float32)).")


def _out_of_range(x: Any, t: np.dtype) -> bool:
    """A Python int that the integer compute dtype `t` cannot hold."""
    if type(x) is not int or t.kind not in "iu":
        return False
    info = np.iinfo(t)
    return not info.min <= x <= info.max


def _by_value(name: str, args: tuple[Any, ...], shape: tuple[int, ...], dev: Any) -> Any:
    """A comparison with a Python int outside the array's range: every element compares as
    0 does (any in-range value would)."""
    a, b = (0 if native(v) else v for v in args)
    value = _COMPARE[name](a, b)
    out = dev.empty(shape, np.dtype(np.bool_))
    return assign(out, value)


def elementwise(name: str, *args: Any, out: Any = None) -> Any:
    """`name` applied to native arrays and Python scalars on the device, or None when this
    combination has no device body (the caller computes on the host)."""
    arrays = [a for a in args if native(a)]
    samples = [np.empty(0, a.dtype) if native(a) else a for a in args]
    out_dtype = result_dtype(name, samples)
    dev = arrays[0].qd_device
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    try:
        t = _compute_dtype(name, samples, out_dtype)
    except OverflowError:  # a comparison of unsigned values with a negative int
        return _by_value(name, args, shape, dev) if out is None else None
    if any(_out_of_range(a, t) for a in args):
        if name not in _COMPARE or out is not None:
            return None
        return _by_value(name, args, shape, dev)
    if not bodies.supported(name, dt(t)):
        return None
    check_fp64(name, dev, out_dtype, t)
    if name == "pow" and t.kind in "iu":
        _check_int_exponent(args[1])
    result = out
    if out is None or any(overlaps(out, broadcast_to(a, shape)) for a in arrays):
        result = dev.empty(shape, out_dtype)
    operands = [broadcast_to(a, shape) if native(a) else Scalar(a, t) for a in args]
    launch_map(name, result, operands, [t] * len(args), t)
    if out is not None and result is not out:
        assign(out, result)
        return out
    return result


def _check_int_exponent(n: Any) -> None:
    if native(n):
        if n.size == 0 or n.dtype.kind == "u":
            return
        from .reductions import reduce

        low = int(reduce("min", n, None, False))
    else:
        low = int(n)
    if low < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")


def where(cond: Any, x1: Any, x2: Any) -> Any:
    """`cond ? x1 : x2` with NumPy's promotion (x1 and x2 arrays or Python scalars)."""
    ops = [cond, x1, x2]
    arrays = [a for a in ops if native(a)]
    samples = [np.empty(0, a.dtype) if native(a) else a for a in ops]
    # array_api_compat clones NumPy's functions into its namespace at import time.
    t = np.dtype(quiet(compat.where)(*samples).dtype)  # type: ignore[attr-defined]
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    dev = cond.qd_device
    check_fp64("where", dev, t)
    out = dev.empty(shape, t)
    operands = [broadcast_to(a, shape) if native(a) else Scalar(a, t) for a in ops]
    return launch_map("where", out, operands, [np.dtype(np.bool_), t, t], t)


def clip(x: Any, lo: Any, hi: Any) -> Any:
    """NumPy's clip: minimum(maximum(x, lo), hi), NaN propagating, hi winning over lo."""
    bounds = [b for b in (lo, hi) if b is not None]
    if not bounds:
        from .copy import contiguous

        return contiguous(x, force=True)
    ops = [x] + bounds
    samples = [np.empty(0, a.dtype) if native(a) else a for a in ops]
    np_clip = quiet(compat.clip)  # type: ignore[attr-defined]  # cloned from NumPy, as above
    t = np.dtype(np_clip(samples[0], lo if not native(lo) else samples[1],
                         hi if not native(hi) else samples[-1]).dtype)
    if any(_out_of_range(b, t) for b in bounds):
        return None
    shape = broadcast_shapes(*(tuple(a.shape) for a in ops if native(a)))
    dev = x.qd_device
    check_fp64("clip", dev, t)
    out = dev.empty(shape, t)
    operands = [broadcast_to(a, shape) if native(a) else Scalar(a, t) for a in ops]
    body = "clip" if len(bounds) == 2 else "clip_lo" if lo is not None else "clip_hi"
    return launch_map(body, out, operands, [t] * len(ops), t)
