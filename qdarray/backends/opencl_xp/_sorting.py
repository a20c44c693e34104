"""sort, argsort and searchsorted on the device.

Sorting is a bitonic network over each row (the sorted axis moved last, padded to a power of
two) on (key, original position) pairs. Comparing positions on equal keys makes it stable,
and NaN sorts after every number, as in NumPy; descending order is the exact reverse of the
value order with ties still in original order, as the standard asks for `stable=True`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyopencl as cl

from ._clarray import ClArray
from ._copy import astype, contiguous
from ._runtime import DeviceState, ctype, fp64_pragma

_KERNELS: dict[tuple[Any, ...], Any] = {}


def _less(t: np.dtype, descending: bool) -> str:
    """C body of `ord(a, b)`: a's value goes strictly before b's."""
    if t.kind == "f":
        if descending:
            return "(b < a) || (isnan(a) && !isnan(b))"
        return "(a < b) || (!isnan(a) && isnan(b))"
    return "b < a" if descending else "a < b"


def _source(t: np.dtype, descending: bool) -> str:
    c = ctype(t)
    return fp64_pragma(t) + f"""
inline int ord_({c} a, {c} b) {{ return {_less(t, descending)}; }}
inline int before({c} a, long ia, {c} b, long ib, long n) {{
  if (ia >= n || ib >= n) return ia < ib;
  if (ord_(a, b)) return 1;
  if (ord_(b, a)) return 0;
  return ia < ib;
}}
__kernel void sort_init(__global const {c} *x, long x_off, __global {c} *keys, __global long *idx,
                   long n, long p)
{{
  long gid = get_global_id(0);
  long row = gid / p, i = gid % p;
  idx[gid] = i;
  if (i < n) keys[gid] = x[x_off + row * n + i];
}}
__kernel void bitonic_step(__global {c} *keys, __global long *idx, long n, long p, long j, long k)
{{
  long gid = get_global_id(0);
  long row = gid / p, i = gid % p;
  long l = i ^ j;
  if (l <= i) return;
  long a = row * p + i, b = row * p + l;
  {c} ka = keys[a], kb = keys[b];
  long ia = idx[a], ib = idx[b];
  int swap = ((i & k) == 0) ? before(kb, ib, ka, ia, n) : before(ka, ia, kb, ib, n);
  if (swap) {{ keys[a] = kb; keys[b] = ka; idx[a] = ib; idx[b] = ia; }}
}}
__kernel void search(__global const {c} *s, long s_off, long n, __global const {c} *v,
                     long v_off, __global long *out, long total, int right)
{{
  long gid = get_global_id(0);
  if (gid >= total) return;
  {c} b = v[v_off + gid];
  long lo = 0, hi = n;
  while (lo < hi) {{
    long mid = (lo + hi) / 2;
    {c} a = s[s_off + mid];
    int go_right = right ? !ord_(b, a) : ord_(a, b);
    if (go_right) lo = mid + 1; else hi = mid;
  }}
  out[gid] = lo;
}}
"""


def _program(st: DeviceState, t: np.dtype, descending: bool) -> Any:
    key = (st.index, t, descending)
    prog = _KERNELS.get(key)
    if prog is None:
        src = _source(t, descending)
        prog = tuple(st.kernel(src, n) for n in ("sort_init", "bitonic_step", "search"))
        _KERNELS[key] = prog
    return prog


def _sorted_rows(x: ClArray, axis: int, descending: bool) -> tuple[ClArray, ClArray, Any]:
    """(keys, positions) of every row of `x` along `axis`, sorted, as (rows, n) arrays, and
    the permutation that puts the axis back."""
    st = x.qd_state
    axis %= x.ndim
    order = tuple(a for a in range(x.ndim) if a != axis) + (axis,)
    data = contiguous(x.permute(order))
    n = x.shape[axis]
    rows = math.prod(x.shape) // n if n else 0
    p = 1 << max(0, (n - 1).bit_length())
    keys = ClArray.empty(st, (rows, p), x.dtype)
    idx = ClArray.empty(st, (rows, p), np.int64)
    back = tuple(order.index(a) for a in range(x.ndim))
    if rows == 0 or n == 0:
        return keys, idx, (data.shape, back)
    init, step, _ = _program(st, x.dtype, descending)
    i64 = np.int64
    total = rows * p
    init.set_args(data.base_data, i64(data.elem_offset), keys.base_data, idx.base_data,
                  i64(n), i64(p))
    cl.enqueue_nd_range_kernel(st.queue, init, (total,), None)
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            step.set_args(keys.base_data, idx.base_data, i64(n), i64(p), i64(j), i64(k))
            cl.enqueue_nd_range_kernel(st.queue, step, (total,), None)
            j //= 2
        k *= 2
    return keys, idx, (data.shape, back)


def _finish(sorted_: ClArray, n: int, layout: Any) -> ClArray:
    shape, back = layout
    cut = contiguous(sorted_.basic_view((slice(None), slice(0, n))))
    from ._manipulation import reshape

    return reshape(cut, shape).permute(back)


def sort(x: ClArray, axis: int = -1, descending: bool = False) -> ClArray:
    if x.ndim == 0:
        return contiguous(x, force=True)
    keys, _, layout = _sorted_rows(x, axis, descending)
    return _finish(keys, x.shape[axis], layout)


def argsort(x: ClArray, axis: int = -1, descending: bool = False) -> ClArray:
    if x.ndim == 0:
        return ClArray.from_host(x.qd_state, np.zeros((), np.int64))
    _, idx, layout = _sorted_rows(x, axis, descending)
    return _finish(idx, x.shape[axis], layout)


def searchsorted(x1: ClArray, x2: ClArray, side: str = "left") -> ClArray:
    st = x1.qd_state
    t = np.result_type(x1.dtype, x2.dtype)
    s = contiguous(x1 if x1.dtype == t else astype(x1, t))
    v = contiguous(x2 if x2.dtype == t else astype(x2, t))
    out = ClArray.empty(st, v.shape, np.int64)
    total = v.size
    if total == 0:
        return out
    _, _, search = _program(st, t, False)
    i64 = np.int64
    search.set_args(s.base_data if s.base_data is not None else out.base_data,
                    i64(s.elem_offset), i64(s.size), v.base_data, i64(v.elem_offset),
                    out.base_data, i64(total), np.int32(side == "right"))
    cl.enqueue_nd_range_kernel(st.queue, search, (-(-total // 64) * 64,), (64,))
    return out
