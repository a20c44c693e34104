"""Reductions (sum, prod, max, min, all, any, argmax, argmin, count_nonzero) and scans.

A reduction moves the reduced axes last (a view; a copy only when that order is not
contiguous), so the input is an (M, K) matrix: M outputs, each reducing K elements. Stage 1
runs M x G work-items, G chosen so the device is full even when M is 1; work-item (m, g)
combines elements g, g + G, g + 2G, ... of row m (coalesced on GPUs). Stage 2 combines the G
partials of each row. Float32 sums accumulate in float64 on devices that have it.

Scans (cumulative_sum, cumulative_prod) split each row into G chunks: chunk totals, a serial
exclusive scan over the G totals of each row, then each chunk rescanned from its offset.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyopencl as cl

from ._clarray import ClArray
from ._copy import contiguous
from ._runtime import DeviceState, ctype, fp64_pragma, has_fp64, ptype

_KERNELS: dict[tuple[Any, ...], Any] = {}

# name -> (identity spelling, combine(acc, v) spelling); `T` is the accumulator type.
_OPS: dict[str, tuple[str, str]] = {
    "sum": ("0", "acc + v"),
    "prod": ("1", "acc * v"),
    "max": ("LOWEST", "((isnan_(acc) || acc > v) ? acc : v)"),
    "min": ("HIGHEST", "((isnan_(acc) || acc < v) ? acc : v)"),
    "all": ("true", "acc && v"),
    "any": ("false", "acc || v"),
    "count_nonzero": ("0", "acc + (v != 0)"),
}


def _limits(t: np.dtype) -> tuple[str, str]:
    if t.kind == "f":
        return "-INFINITY", "INFINITY"
    if t.kind == "b":
        return "false", "true"
    info = np.iinfo(t)
    lo = f"({ptype(t)})({info.min}L)" if t != np.int64 else "(-9223372036854775807L - 1)"
    hi = f"({ptype(t)})({info.max}UL)"
    return lo, hi


def _state(x: ClArray) -> DeviceState:
    return x.qd_state


def _groups(st: DeviceState, rows: int, k: int) -> int:
    dev = st.cl_device
    target = dev.max_compute_units * (2048 if st.kind == "GPU" else 64)
    g = max(1, min(target // max(rows, 1), math.ceil(k / 32)))
    return int(g)


def _as_rows(x: ClArray, axes: tuple[int, ...]) -> tuple[ClArray, int, int, tuple[int, ...]]:
    """(contiguous (M, K) data, M, K, kept shape) with `axes` reduced."""
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    moved = x.permute(kept + axes)
    data = contiguous(moved)
    m = math.prod(x.shape[a] for a in kept)
    k = math.prod(x.shape[a] for a in axes)
    return data, m, k, tuple(x.shape[a] for a in kept)


def _source(op: str, src: np.dtype, acc: np.dtype, out: np.dtype) -> str:
    ident, combine = _OPS[op]
    lo, hi = _limits(acc)
    ident = {"LOWEST": lo, "HIGHEST": hi}.get(ident, ident)
    isnan = "isnan" if acc.kind == "f" else "0 &&"
    combine = combine.replace("isnan_", isnan)
    a, s, o = ptype(acc), ctype(src), ctype(out)
    load = "(x[base + i] != 0)" if acc.kind == "b" else f"({a})x[base + i]"
    if op == "count_nonzero":
        load = "x[base + i]"
    store = "(uchar)(acc)" if out.kind == "b" else f"({o})acc"
    return fp64_pragma(src, acc, out) + f"""
__kernel void stage1(__global const {s} *x, long x_off, __global {a} *part, long k, long g)
{{
  long gid = get_global_id(0);
  long m = gid / g, j = gid % g;
  long base = x_off + m * k;
  {a} acc = {ident};
  for (long i = j; i < k; i += g) {{
    {s if op == "count_nonzero" else a} v = {load}; acc = {combine};
  }}
  part[gid] = acc;
}}
__kernel void stage2(__global const {a} *part, __global {o} *out, long g)
{{
  long m = get_global_id(0);
  {a} acc = {ident};
  for (long j = 0; j < g; ++j) {{ {a} v = part[m * g + j]; acc = {combine.replace(
        "(v != 0)", "v")}; }}
  out[m] = {store};
}}
"""


def _kernels(st: DeviceState, op: str, src: np.dtype, acc: np.dtype, out: np.dtype) -> Any:
    key = (st.index, op, src, acc, out)
    k = _KERNELS.get(key)
    if k is None:
        src_ = _source(op, src, acc, out)
        i64 = np.dtype(np.int64)
        k = (st.kernel(src_, "stage1", [None, i64, None, i64, i64]),
             st.kernel(src_, "stage2", [None, None, i64]))
        _KERNELS[key] = k
    return k


def _acc_dtype(op: str, src: np.dtype, out: np.dtype, st: DeviceState) -> np.dtype:
    if op in ("all", "any"):
        return np.dtype(np.bool_)
    if op == "count_nonzero":
        return np.dtype(np.int64)
    if op in ("sum", "prod") and out == np.float32 and has_fp64(st):
        return np.dtype(np.float64)
    if op in ("max", "min"):
        return src
    return out


def reduce(op: str, x: ClArray, axis: tuple[int, ...] | None, keepdims: bool,
           dtype: Any = None) -> ClArray:
    """Reduce `x` over `axis` (all axes when None) with `op` (see `_OPS`)."""
    st = _state(x)
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % max(x.ndim, 1) for a in axis)
    out_dtype = _out_dtype(op, x.dtype, dtype)
    src = x.dtype
    if dtype is not None and op in ("sum", "prod") and src != out_dtype:
        from ._copy import astype

        x = astype(x, out_dtype)
        src = out_dtype
    acc = _acc_dtype(op, src, out_dtype, st)
    data, m, k, kept = _as_rows(x, axes)
    out_shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) if keepdims \
        else kept
    out = ClArray.empty(st, out_shape, out_dtype)
    if m == 0:
        return out
    g = _groups(st, m, k)
    s1, s2 = _kernels(st, op, src, acc, out_dtype)
    part = _stage1(st, s1, data, m, k, g, acc)
    # Partials of partials until each row has few enough for one work-item to combine.
    partial_op = "sum" if op == "count_nonzero" else op
    while g > FINAL:
        g2 = _groups(st, m, g)
        part = _stage1(st, _kernels(st, partial_op, acc, acc, acc)[0], part, m, g, g2, acc)
        g = g2
    s2(st.queue, (m,), None, part.base_data, out.base_data, g)
    return out


FINAL = 256  # partials per row that stage 2 combines in one work-item


def _stage1(st: DeviceState, knl: Any, data: ClArray, m: int, k: int, g: int,
            acc: np.dtype) -> ClArray:
    part = ClArray.empty(st, (m * g,), acc)
    base = data.base_data if data.base_data is not None else part.base_data
    knl(st.queue, (m * g,), None, base, data.elem_offset, part.base_data, k, g)
    return part


def _out_dtype(op: str, src: np.dtype, dtype: Any) -> np.dtype:
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


# -- argmax / argmin ---------------------------------------------------------------------------


def _arg_source(op: str, t: np.dtype) -> str:
    c = ctype(t)
    cmp = ">" if op == "argmax" else "<"
    nan = ("(isnan(v) && !isnan(bv)) || (!isnan(bv) && v {cmp} bv)" if t.kind == "f"
           else "v {cmp} bv").format(cmp=cmp)
    better = f"({nan} || (v == bv && i < bi) || (isnan_both && i < bi))"
    both = "isnan(v) && isnan(bv)" if t.kind == "f" else "0"
    better = better.replace("isnan_both", both)
    return fp64_pragma(t) + f"""
__kernel void stage1(__global const {c} *x, long x_off, __global {c} *pv, __global long *pi,
                     long k, long g)
{{
  long gid = get_global_id(0);
  long m = gid / g, j = gid % g;
  long base = x_off + m * k;
  {c} bv = 0; long bi = -1;
  for (long i = j; i < k; i += g) {{
    {c} v = x[base + i];
    if (bi < 0 || {better}) {{ bv = v; bi = i; }}
  }}
  pv[gid] = bv; pi[gid] = bi;
}}
__kernel void stage2(__global const {c} *pv, __global const long *pi, __global long *out,
                     long g)
{{
  long m = get_global_id(0);
  {c} bv = 0; long bi = -1;
  for (long j = 0; j < g; ++j) {{
    long i = pi[m * g + j];
    if (i < 0) continue;
    {c} v = pv[m * g + j];
    if (bi < 0 || {better}) {{ bv = v; bi = i; }}
  }}
  out[m] = bi;
}}
"""


def argreduce(op: str, x: ClArray, axis: int | None, keepdims: bool) -> ClArray:
    """argmax / argmin: the first index of the extreme value (the first NaN, if any)."""
    st = _state(x)
    axes = tuple(range(x.ndim)) if axis is None else (axis % max(x.ndim, 1),)
    data, m, k, kept = _as_rows(x, axes)
    if keepdims:
        out_shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    else:
        out_shape = kept
    out = ClArray.empty(st, out_shape, np.int64)
    if m == 0:
        return out
    key = (st.index, op, x.dtype)
    kern = _KERNELS.get(key)
    if kern is None:
        src = _arg_source(op, x.dtype)
        kern = (st.kernel(src, "stage1"), st.kernel(src, "stage2"))
        _KERNELS[key] = kern
    g = _groups(st, m, k)
    pv = ClArray.empty(st, (m * g,), x.dtype)
    pi = ClArray.empty(st, (m * g,), np.int64)
    i64 = np.int64
    kern[0].set_args(data.qd_buffer, i64(data.elem_offset), pv.qd_buffer, pi.qd_buffer,
                     i64(k), i64(g))
    cl.enqueue_nd_range_kernel(st.queue, kern[0], (m * g,), None)
    kern[1].set_args(pv.qd_buffer, pi.qd_buffer, out.qd_buffer, i64(g))
    cl.enqueue_nd_range_kernel(st.queue, kern[1], (m,), None)
    return out


# -- scans -------------------------------------------------------------------------------------


def _scan_source(op: str, src: np.dtype, t: np.dtype) -> str:
    c, s = ctype(t), ctype(src)
    ident, comb = ("0", "+") if op == "cumulative_sum" else ("1", "*")
    load = f"({c})x[xo + i]" if src.kind != "b" else f"({c})(x[xo + i] != 0)"
    return fp64_pragma(src, t) + f"""
__kernel void totals(__global const {s} *x, long x_off, __global {c} *tot, long k, long g,
                     long chunk)
{{
  long gid = get_global_id(0);
  long m = gid / g, j = gid % g;
  long xo = x_off + m * k;
  {c} acc = {ident};
  long end = min(k, (j + 1) * chunk);
  for (long i = j * chunk; i < end; ++i) acc = acc {comb} {load};
  tot[gid] = acc;
}}
__kernel void offsets(__global {c} *tot, long g)
{{
  long m = get_global_id(0);
  {c} acc = {ident};
  for (long j = 0; j < g; ++j) {{
    {c} v = tot[m * g + j]; tot[m * g + j] = acc; acc = acc {comb} v;
  }}
}}
__kernel void rescan(__global const {s} *x, long x_off, __global const {c} *tot,
                     __global {c} *out, long k, long g, long chunk, long initial)
{{
  long gid = get_global_id(0);
  long m = gid / g, j = gid % g;
  long xo = x_off + m * k;
  long oo = m * (k + initial) + initial;
  {c} acc = tot[gid];
  if (initial && j == 0) out[m * (k + 1)] = {ident};
  long end = min(k, (j + 1) * chunk);
  for (long i = j * chunk; i < end; ++i) {{ acc = acc {comb} {load}; out[oo + i] = acc; }}
}}
"""


def scan(op: str, x: ClArray, axis: int, dtype: Any, include_initial: bool) -> ClArray:
    """cumulative_sum / cumulative_prod along `axis` (dtype defaults as for sum)."""
    st = _state(x)
    t = _out_dtype("sum", x.dtype, dtype)
    axes = (axis,)
    data, m, k, kept = _as_rows(x, axes)
    n_out = k + (1 if include_initial else 0)
    out = ClArray.empty(st, kept + (n_out,), t)
    if m == 0 or n_out == 0:
        return out.permute(_unmove(x.ndim, axis))
    key = (st.index, op, x.dtype, t)
    kern = _KERNELS.get(key)
    if kern is None:
        src = _scan_source(op, x.dtype, t)
        kern = tuple(st.kernel(src, n) for n in ("totals", "offsets", "rescan"))
        _KERNELS[key] = kern
    g = max(1, min(_groups(st, m, k), k // 256 or 1))
    chunk = math.ceil(k / g) if k else 1
    tot = ClArray.empty(st, (m * g,), t)
    i64 = np.int64
    base = data.base_data if data.base_data is not None else tot.base_data
    kern[0].set_args(base, i64(data.elem_offset), tot.base_data, i64(k), i64(g), i64(chunk))
    cl.enqueue_nd_range_kernel(st.queue, kern[0], (m * g,), None)
    kern[1].set_args(tot.base_data, i64(g))
    cl.enqueue_nd_range_kernel(st.queue, kern[1], (m,), None)
    kern[2].set_args(base, i64(data.elem_offset), tot.base_data, out.base_data, i64(k),
                     i64(g), i64(chunk), i64(1 if include_initial else 0))
    cl.enqueue_nd_range_kernel(st.queue, kern[2], (m * g,), None)
    return out.permute(_unmove(x.ndim, axis))


def _unmove(ndim: int, axis: int) -> tuple[int, ...]:
    """The permutation taking (kept axes..., axis) back to the original axis order."""
    order = [a for a in range(ndim) if a != axis] + [axis]
    return tuple(order.index(a) for a in range(ndim))
