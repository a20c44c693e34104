"""Copies, casts and fills on the device, and the creation functions built from them.

`assign(dst, src)` is `dst[...] = src` with NumPy's semantics: `src` (an array or a scalar)
broadcast to `dst` and cast to its dtype; when `src` shares memory with `dst` in another
layout (`x[:] = x[::-1]`, `z[...] = z.T`), it is copied first, as NumPy does, so every element
is read before any is overwritten.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .layout import broadcast_to, overlaps
from .maps import Scalar, launch_map


def _native(x: Any) -> bool:
    return hasattr(x, "qd_device")


def assign(dst: Any, src: Any) -> Any:
    """`dst[...] = src` (module docstring)."""
    if _native(src):
        src = broadcast_to(src, tuple(dst.shape))
        if overlaps(dst, src):
            src = contiguous(src, force=True)
        return launch_map("copy", dst, [src], [src.dtype], src.dtype)
    value = np.asarray(src).astype(dst.dtype)[()]  # the cast NumPy's setitem makes
    return launch_map("copy", dst, [Scalar(value, dst.dtype)], [dst.dtype], dst.dtype)


def write_host(dst: Any, host: np.ndarray) -> None:
    """Write a host array of `dst`'s shape into `dst` (any strides)."""
    tmp = dst.qd_device.from_host(np.asarray(host, dtype=dst.dtype, order="C"))
    if dst.is_c_contiguous():
        if dst.size:
            dst.qd_device.copy_bytes(dst, tmp)
        return
    launch_map("copy", dst, [tmp], [tmp.dtype], tmp.dtype)


def astype(x: Any, dtype: np.dtype) -> Any:
    out = x.qd_device.empty(tuple(x.shape), dtype)
    return launch_map("copy", out, [x], [x.dtype], x.dtype)


def contiguous(x: Any, force: bool = False) -> Any:
    """`x` itself when C-contiguous (unless `force`), else a C-contiguous copy."""
    if not force and x.is_c_contiguous():
        return x
    out = x.qd_device.empty(tuple(x.shape), x.dtype)
    if x.size == 0:
        return out
    if x.is_c_contiguous():
        x.qd_device.copy_bytes(out, x)
        return out
    return launch_map("copy", out, [x], [x.dtype], x.dtype)


def full(dev: Any, shape: tuple[int, ...], value: Any, dtype: np.dtype) -> Any:
    return assign(dev.empty(shape, dtype), value)


def arange(dev: Any, start: Any, stop: Any, step: Any, dtype: np.dtype) -> Any:
    """NumPy's arange: element i is start + i * step computed in the result dtype (float
    arguments in float64, as NumPy computes them before the cast)."""
    if dtype.kind == "f":
        n = max(0, math.ceil((stop - start) / step))
    else:
        n = len(range(int(start), int(stop), int(step)))
    out = dev.empty((n,), dtype)
    if dtype.kind == "f":
        # NumPy fills start, start + step and then extends by the difference of the two.
        first = np.float64(start).astype(dtype)
        delta = (np.float64(start) + np.float64(step)).astype(dtype) - first
        return launch_map("arange", out, [Scalar(first, dtype), Scalar(delta, dtype)],
                          [dtype, dtype], dtype, keep_axes=True)
    wide = np.dtype(np.uint64 if dtype.kind == "u" else np.int64)
    return launch_map("arange", out, [Scalar(start, wide), Scalar(step, wide)],
                      [wide, wide], wide, keep_axes=True)


def linspace(dev: Any, start: float, stop: float, num: int, dtype: np.dtype,
             endpoint: bool) -> Any:
    """Values computed in float64 where the device has it, then cast (as NumPy does)."""
    out = dev.empty((num,), dtype)
    if num == 0:
        return out
    div = (num - 1) if endpoint else num
    if div <= 0:
        return assign(out, start)
    if dtype.kind == "c":
        wide = np.dtype(np.complex128 if dev.has_fp64() else np.complex64)
    else:
        wide = np.dtype(np.float64 if dev.has_fp64() else np.float32)
    step = (stop - start) / div
    body = "linspace" + ("_end" if endpoint else "") + ("_floor" if dtype.kind in "iu" else "")
    i64 = np.dtype(np.int64)
    return launch_map(body, out, [Scalar(start, wide), Scalar(step, wide), Scalar(stop, wide),
                                  Scalar(num - 1, i64)], [wide, wide, wide, i64], wide,
                      keep_axes=True)


def eye(dev: Any, rows: int, cols: int, k: int, dtype: np.dtype) -> Any:
    out = dev.empty((rows, cols), dtype)
    i64 = np.dtype(np.int64)
    return launch_map("eye", out, [Scalar(k, i64)], [i64], dtype, keep_axes=True)


def triangle(x: Any, k: int, upper: bool) -> Any:
    """tril / triu: zeros on one side of the k-th diagonal of the last two axes."""
    out = x.qd_device.empty(tuple(x.shape), x.dtype)
    i64 = np.dtype(np.int64)
    return launch_map("triu" if upper else "tril", out, [x, Scalar(k, i64)], [x.dtype, i64],
                      x.dtype, keep_axes=True)
