"""matmul on the device: one work-item per output element (kernels/library/matmul.py), its
inner loop in pieces of at most STEPS products (reductions.STEPS)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...kernels.library.matmul import matmul_kernel
from . import reductions
from .copy import astype
from .device import launch
from .layout import broadcast_shapes, broadcast_to
from .manipulation import expand_dims, squeeze
from .maps import dt


def matmul(x1: Any, x2: Any) -> Any:
    t = np.result_type(x1.dtype, x2.dtype)
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
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    n, kk, m = a.shape[-2], a.shape[-1], b.shape[-1]
    dev = a.qd_device
    out = dev.empty(batch + (n, m), t)
    if out.size:
        nd = len(batch) + 2
        av = broadcast_to(a, batch + (n, kk))
        bv = broadcast_to(b, batch + (kk, m))
        tt = dt(t)
        steps = reductions.STEPS
        for k0 in range(0, max(kk, 1), steps):
            launch(dev, ("matmul", tt, nd), lambda: matmul_kernel(tt, nd),
                   [av.window(), bv.window(), out.window(), k0, min(k0 + steps, kk)])
    if squeeze_a and squeeze_b:
        return squeeze(out, (-2, -1))
    if squeeze_a:
        return squeeze(out, -2)
    if squeeze_b:
        return squeeze(out, -1)
    return out
