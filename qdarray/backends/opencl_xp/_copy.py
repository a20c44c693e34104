"""Copies, casts and fills on the device, and the creation functions built from them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._clarray import ClArray
from ._map import Scalar, broadcast_to, launch_map
from ._runtime import DeviceState, has_fp64

COMPLEX_KINDS = "c"


def is_device_dtype(dtype: Any) -> bool:
    """Whether generated kernels handle `dtype` (complex dtypes compute on the host)."""
    return np.dtype(dtype).kind in "biuf"


def assign(dst: ClArray, src: ClArray | Any) -> ClArray:
    """`dst[...] = src`: broadcast `src` (an array or a scalar) to `dst` and cast it."""
    if isinstance(src, ClArray):
        if not (is_device_dtype(dst.dtype) and is_device_dtype(src.dtype)):
            host = np.empty(dst.shape, dst.dtype)
            host[...] = src.to_host()
            write_host(dst, host)
            return dst
        src = broadcast_to(src, dst.shape)
        return launch_map("copy", dst, [src], [src.dtype], lambda: "a0")
    if not is_device_dtype(dst.dtype):
        host = np.empty(dst.shape, dst.dtype)
        host[...] = src
        write_host(dst, host)
        return dst
    value = np.asarray(src).astype(dst.dtype)[()]  # the cast NumPy's setitem makes
    return launch_map("fill", dst, [Scalar(value, dst.dtype)], [dst.dtype], lambda: "a0")


def write_host(dst: ClArray, host: np.ndarray) -> None:
    """Write a host array of `dst`'s shape into `dst` (any strides)."""
    tmp = ClArray.from_host(dst.qd_state, np.asarray(host, dtype=dst.dtype, order="C"))
    if dst.is_c_contiguous():
        import pyopencl as cl

        if dst.size:
            cl.enqueue_copy(dst.qd_state.queue, dst.qd_buffer, tmp.qd_buffer,
                            byte_count=dst.size * dst.dtype.itemsize, dst_offset=dst.offset)
        return
    if is_device_dtype(dst.dtype):
        launch_map("copy", dst, [tmp], [tmp.dtype], lambda: "a0")
        return
    raise NotImplementedError(  # complex data in a strided window: no kernel for it yet
        f"Writing complex data into a non-contiguous view on opencl:{dst.qd_state.index} "
        "is not supported yet. Use qd.asarray(x, copy=True) first."
    )


def astype(x: ClArray, dtype: np.dtype) -> ClArray:
    out = ClArray.empty(x.qd_state, x.shape, dtype)
    if not (is_device_dtype(x.dtype) and is_device_dtype(dtype)):
        write_host(out, x.to_host().astype(dtype))
        return out
    return launch_map("copy", out, [x], [x.dtype], lambda: "a0")


def contiguous(x: ClArray, force: bool = False) -> ClArray:
    """`x` itself when C-contiguous (unless `force`), else a C-contiguous copy."""
    if not force and x.is_c_contiguous():
        return x
    out = ClArray.empty(x.qd_state, x.shape, x.dtype)
    if x.size == 0:
        return out
    if x.is_c_contiguous():
        import pyopencl as cl

        cl.enqueue_copy(x.qd_state.queue, out.qd_buffer, x.qd_buffer,
                        byte_count=x.size * x.dtype.itemsize, src_offset=x.offset)
        return out
    if not is_device_dtype(x.dtype):
        write_host(out, x.to_host())
        return out
    return launch_map("copy", out, [x], [x.dtype], lambda: "a0")


def full(st: DeviceState, shape: tuple[int, ...], value: Any, dtype: np.dtype) -> ClArray:
    out = ClArray.empty(st, shape, dtype)
    if isinstance(value, ClArray):
        return assign(out, value)
    return assign(out, value)


def arange(st: DeviceState, start: Any, stop: Any, step: Any, dtype: np.dtype) -> ClArray:
    """NumPy's arange: element i is start + i * step computed in the result dtype (float
    arguments in float64, as NumPy computes them before the cast)."""
    n = max(0, math.ceil((stop - start) / step)) if dtype.kind == "f" else len(
        range(int(start), int(stop), int(step)))
    out = ClArray.empty(st, (n,), dtype)
    if dtype.kind == "f":
        # NumPy fills start, start + step and then extends by the difference of the two.
        first = np.float64(start).astype(dtype)
        delta = (np.float64(start) + np.float64(step)).astype(dtype) - first
        return launch_map(("arange", "f"), out, [Scalar(first, dtype), Scalar(delta, dtype)],
                          [dtype, dtype], lambda: "a0 + (a1 * gid)")
    wide = np.dtype(np.uint64 if dtype.kind == "u" else np.int64)
    return launch_map(("arange", "i"), out, [Scalar(start, wide), Scalar(step, wide)],
                      [wide, wide], lambda: "a0 + a1 * gid")


def linspace(st: DeviceState, start: float, stop: float, num: int, dtype: np.dtype,
             endpoint: bool) -> ClArray:
    """Values computed in float64 where the device has it, then cast (as NumPy does)."""
    out = ClArray.empty(st, (num,), dtype)
    if num == 0:
        return out
    div = (num - 1) if endpoint else num
    wide = np.dtype(np.float64 if has_fp64(st) else np.float32)
    if div <= 0:
        return assign(out, start)
    step = (stop - start) / div
    floor = "floor" if dtype.kind in "iu" else ""
    launch_map(("linspace", floor, endpoint), out,
               [Scalar(start, wide), Scalar(step, wide), Scalar(stop, wide),
                Scalar(num - 1, np.dtype(np.int64))],
               [wide, wide, wide, np.dtype(np.int64)],
               lambda: (f"{floor}(" + ("gid == a3 ? a2 : " if endpoint else "")
                        + "a0 + gid * a1)"))
    return out


def eye(st: DeviceState, rows: int, cols: int, k: int, dtype: np.dtype) -> ClArray:
    out = ClArray.empty(st, (rows, cols), dtype)
    if out.size == 0:
        return out
    i64 = np.dtype(np.int64)
    return launch_map("eye", out, [Scalar(cols, i64), Scalar(k, i64)], [i64, i64],
                      lambda: "(gid % a0) - (gid / a0) == a1")


def triangle(x: ClArray, k: int, upper: bool) -> ClArray:
    """tril / triu: zeros on one side of the k-th diagonal of the last two axes."""
    out = ClArray.empty(x.qd_state, x.shape, x.dtype)
    if out.size == 0:
        return out
    rows, cols = x.shape[-2], x.shape[-1]
    i64 = np.dtype(np.int64)
    test = ">=" if upper else "<="
    return launch_map(("tri", test), out,
                      [x, Scalar(cols, i64), Scalar(rows * cols, i64), Scalar(k, i64)],
                      [x.dtype, i64, i64, i64],
                      lambda: f"((gid % a1) - ((gid % a2) / a1) {test} a3) ? a0 : 0")
