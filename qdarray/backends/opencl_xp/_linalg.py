"""matmul on the device: one work-item per output element, reading both operands through
their strides (so transposed and broadcast operands need no copies)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from ._clarray import ClArray
from ._manipulation import expand_dims, squeeze
from ._map import broadcast_shapes
from ._runtime import ctype, fp64_pragma

_KERNELS: dict[tuple[Any, ...], Any] = {}


def _source(t: np.dtype, nb: int) -> str:
    c = ctype(t)
    batch = []
    for d in range(nb - 1, -1, -1):
        batch.append(f"  long b{d} = r % nb{d}; r /= nb{d};")
    aoff = " + ".join(["a_off"] + [f"b{d} * as{d}" for d in range(nb)])
    boff = " + ".join(["b_off"] + [f"b{d} * bs{d}" for d in range(nb)])
    nbp = "".join(f", long nb{d}, long as{d}, long bs{d}" for d in range(nb))
    return fp64_pragma(t) + f"""
__kernel void matmul(__global const {c} *a, long a_off, long ai, long ak,
                     __global const {c} *b, long b_off, long bk, long bj,
                     __global {c} *o, long n, long m, long kk, long total{nbp})
{{
  long gid = get_global_id(0);
  if (gid >= total) return;
  long j = gid % m, i = (gid / m) % n;
  long r = gid / (m * n);
{chr(10).join(batch)}
  __global const {c} *pa = a + {aoff} + i * ai;
  __global const {c} *pb = b + {boff} + j * bj;
  {c} acc = 0;
  for (long k = 0; k < kk; ++k) acc += pa[k * ak] * pb[k * bk];
  o[gid] = acc;
}}
"""


def matmul(x1: ClArray, x2: ClArray) -> ClArray | None:
    t = np.result_type(x1.dtype, x2.dtype)
    if t.kind not in "iuf":
        return None
    from ._copy import astype

    a = x1 if x1.dtype == t else astype(x1, t)
    b = x2 if x2.dtype == t else astype(x2, t)
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = expand_dims(a, 0)
    if squeeze_b:
        b = expand_dims(b, 1)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {b.shape[-2]} is different from "
            f"{a.shape[-1]})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, kk, m = a.shape[-2], a.shape[-1], b.shape[-1]
    st = a.qd_state
    out = ClArray.empty(st, batch + (n, m), t)
    total = out.size
    if total:
        nb = len(batch)
        key = (st.index, t, nb)
        knl = _KERNELS.get(key)
        if knl is None:
            knl = st.kernel(_source(t, nb), "matmul")
            _KERNELS[key] = knl
        i64 = np.int64
        sa, sb = a.elem_strides(), b.elem_strides()
        args: list[Any] = [a.base_data, i64(a.elem_offset), i64(sa[-2]), i64(sa[-1]),
                           b.base_data, i64(b.elem_offset), i64(sb[-2]), i64(sb[-1]),
                           out.base_data, i64(n), i64(m), i64(kk), i64(total)]
        for d, size in enumerate(batch):
            da = d - (nb - (a.ndim - 2))
            db = d - (nb - (b.ndim - 2))
            stride_a = sa[da] if da >= 0 and a.shape[da] != 1 else 0
            stride_b = sb[db] if db >= 0 and b.shape[db] != 1 else 0
            args += [i64(size), i64(stride_a), i64(stride_b)]
        if kk == 0:
            from ._copy import assign

            assign(out, 0)
        else:
            knl.set_args(*args)
            lsize = 64
            cl.enqueue_nd_range_kernel(st.queue, knl, (-(-total // lsize) * lsize,), (lsize,))
    if squeeze_a and squeeze_b:
        return squeeze(out, (-2, -1))
    if squeeze_a:
        return squeeze(out, -2)
    if squeeze_b:
        return squeeze(out, -1)
    return out


