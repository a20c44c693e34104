"""Reductions (sum, prod, max, min, all, any, count_nonzero, argmax, argmin) and scans.

A reduction views its input as an (M, K) matrix, M outputs each reducing K elements: the
reduced axes moved last, then merged (a strided view, no copy, when the kept axes and the
reduced axes each merge into one; a C-contiguous copy otherwise). Stage 1 runs M x G
work-items, G chosen so the device is full even when M is 1; stage 2 combines the G partials
of each row (kernels/library/reductions.py). Float32 sums accumulate in float64 on devices
that have it.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ...kernels.library import reductions as lib
from .copy import contiguous
from .device import Window, launch
from .layout import simplify
from .maps import dt

FINAL = 256  # partials per row that stage 2 combines in one work-item
# The most iterations one work-item's serial loop runs. Work is split so that no loop runs
# longer: llvmpipe (lavapipe) silently ends an invocation's loops after 65,535 iterations in
# all, and a GPU wants the work-items anyway.
STEPS = 1 << 14


def _rows(x: Any, axes: tuple[int, ...]) -> tuple[Window, int, int, tuple[int, ...], bool]:
    """(x as an (M, K) window, M, K, kept shape, whether rows are adjacent in memory) with
    `axes` reduced."""
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    m = math.prod(x.shape[a] for a in kept)
    k = math.prod(x.shape[a] for a in axes)
    kept_shape = tuple(x.shape[a] for a in kept)
    st = x.elem_strides()
    ks, kst = simplify(kept_shape, [tuple(st[a] for a in kept)])
    rs, rst = simplify(tuple(x.shape[a] for a in axes), [tuple(st[a] for a in axes)])
    if len(ks) == 1 and len(rs) == 1:
        sm = kst[0][0] if m > 1 else 0
        sk = rst[0][0] if k > 1 else 1
        win = Window(x.base_data, x.elem_offset, (m, k), (sm, sk))
    else:
        data = contiguous(x.permute(kept + axes))
        sm, sk = k, 1
        win = Window(data.base_data, data.elem_offset, (m, k), (k, 1))
    return win, m, k, kept_shape, abs(sm) == 1 and abs(sk) != 1


def _groups(dev: Any, rows: int, k: int) -> int:
    """Work-items per row for rows of `k` elements: enough to fill the device, and each
    work-item's loop at most STEPS long."""
    return int(max(1, min(dev.workers // max(rows, 1), math.ceil(k / 32)),
                   math.ceil(k / STEPS)))


def out_dtype(op: str, src: np.dtype, dtype: Any) -> np.dtype:
    if op in ("all", "any"):
        return np.dtype(np.bool_)
    if op == "count_nonzero":
        return np.dtype(np.int64)
    if op in ("max", "min"):
        return src
    if dtype is not None:
        requested: np.dtype = np.dtype(dtype)
        return requested
    if src.kind in "bi":
        return np.dtype(np.int64)
    if src.kind == "u":
        return np.dtype(np.uint64)
    return src


def _acc_dtype(op: str, src: np.dtype, out: np.dtype, dev: Any) -> np.dtype:
    if op in ("all", "any"):
        return np.dtype(np.bool_)
    if op == "count_nonzero":
        return np.dtype(np.int64)
    if op in ("sum", "prod") and out == np.float32 and dev.has_fp64():
        return np.dtype(np.float64)
    if op in ("sum", "prod") and out == np.complex64 and dev.has_fp64():
        return np.dtype(np.complex128)
    if op in ("max", "min"):
        return src
    return out


def _out_shape(x: Any, axes: tuple[int, ...], keepdims: bool, kept: tuple[int, ...]
               ) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    return kept


def reduce(op: str, x: Any, axis: tuple[int, ...] | None, keepdims: bool,
           dtype: Any = None) -> Any:
    """Reduce `x` over `axis` (all axes when None) with `op`."""
    dev = x.qd_device
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % max(x.ndim, 1) for a in axis)
    out_t = out_dtype(op, x.dtype, dtype)
    acc = _acc_dtype(op, x.dtype, out_t, dev)
    win, m, k, kept, m_fast = _rows(x, axes)
    if k == 0 and op in ("max", "min") and m:
        raise ValueError(f"zero-size array to reduction operation {op}imum which has no "
                         "identity")
    out = dev.empty(_out_shape(x, axes, keepdims, kept), out_t)
    if m == 0:
        return out
    g = _groups(dev, m, k)
    spec = lib.ReduceSpec(op, dt(x.dtype), dt(acc), m_fast and dev.gpu)
    part = dev.empty((m, g), acc)
    launch(dev, spec, lambda: lib.partials_kernel(spec), [win, part.window()])
    partial_op = "sum" if op == "count_nonzero" else op
    while g > FINAL:  # partials of partials until one work-item can combine a row
        g2 = _groups(dev, m, g)
        spec2 = lib.ReduceSpec(partial_op, dt(acc), dt(acc), seeded=False)
        nxt = dev.empty((m, g2), acc)
        launch(dev, spec2, functools.partial(lib.partials_kernel, spec2),
               [part.window(), nxt.window()])
        part, g = nxt, g2
    key = ("final", op, dt(acc), dt(out_t))
    flat = Window(out.base_data, out.elem_offset, (m,), (1,))
    launch(dev, key, lambda: lib.final_kernel(op, dt(acc), dt(out_t)), [part.window(), flat])
    return out


def argreduce(op: str, x: Any, axis: int | None, keepdims: bool) -> Any:
    """argmax / argmin: the first index of the extreme value (the first NaN, if any)."""
    dev = x.qd_device
    axes = tuple(range(x.ndim)) if axis is None else (axis % max(x.ndim, 1),)
    win, m, k, kept, m_fast = _rows(x, axes)
    if k == 0 and m:
        raise ValueError(f"attempt to get {op} of an empty sequence")
    out = dev.empty(_out_shape(x, axes, keepdims, kept), np.int64)
    if m == 0:
        return out
    g = _groups(dev, m, k)
    t = dt(x.dtype)
    fast = m_fast and dev.gpu
    pv, pi = dev.empty((m, g), x.dtype), dev.empty((m, g), np.int64)
    launch(dev, (op, t, fast), lambda: lib.arg_partials_kernel(op, t, fast),
           [win, pv.window(), pi.window()])
    while g > FINAL:  # best pairs of best pairs until one work-item can combine a row
        g2 = _groups(dev, m, g)
        pv2, pi2 = dev.empty((m, g2), x.dtype), dev.empty((m, g2), np.int64)
        launch(dev, (op, "merge", t), lambda: lib.arg_merge_kernel(op, t),
               [pv.window(), pi.window(), pv2.window(), pi2.window()])
        pv, pi, g = pv2, pi2, g2
    flat = Window(out.base_data, out.elem_offset, (m,), (1,))
    launch(dev, (op, "final", t), lambda: lib.arg_final_kernel(op, t),
           [pv.window(), pi.window(), flat])
    return out


def scan(op: str, x: Any, axis: int, dtype: Any, include_initial: bool) -> Any:
    """cumulative_sum / cumulative_prod along `axis` (dtype defaults as for sum)."""
    dev = x.qd_device
    name = "sum" if op == "cumulative_sum" else "prod"
    t = out_dtype("sum", x.dtype, dtype)
    axis %= x.ndim
    win, m, k, kept, _ = _rows(x, (axis,))
    n_out = k + (1 if include_initial else 0)
    out = dev.empty(kept + (n_out,), t)
    back = _unmove(x.ndim, axis)
    if m == 0 or n_out == 0:
        return out.permute(back)
    g = max(min(_groups(dev, m, k), k // 256 or 1), math.ceil(k / STEPS), 1)
    chunk = math.ceil(k / g) if k else 1
    tot = dev.empty((m, g), t)
    src, tt = dt(x.dtype), dt(t)
    launch(dev, ("totals", name, src, tt), lambda: lib.scan_totals_kernel(name, src, tt),
           [win, tot.window(), chunk])
    if g > STEPS:  # too many chunks for one work-item to scan: scan them as rows
        ex = scan(op, tot, 1, t, True)
        offsets = Window(ex.base_data, ex.elem_offset, (m, g), (g + 1, 1))
    else:
        launch(dev, ("offsets", name, tt), lambda: lib.scan_offsets_kernel(name, tt),
               [tot.window()])
        offsets = tot.window()
    rows = Window(out.base_data, out.elem_offset, (m, n_out), (n_out, 1))
    launch(dev, ("scan", name, src, tt, include_initial),
           lambda: lib.scan_kernel(name, src, tt, include_initial),
           [win, offsets, rows, chunk])
    return out.permute(back)


def _unmove(ndim: int, axis: int) -> tuple[int, ...]:
    """The permutation taking (kept axes..., axis) back to the original axis order."""
    order = [a for a in range(ndim) if a != axis] + [axis]
    return tuple(order.index(a) for a in range(ndim))
