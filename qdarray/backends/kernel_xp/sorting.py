"""sort, argsort and searchsorted on the device (kernels/library/sorting.py).

Each row (the sorted axis moved last) is padded to a power of two p and sorted by a bitonic
network of (key, original position) pairs: stable, NaN last (first when descending).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...kernels.library import sorting as lib
from .copy import astype, contiguous
from .device import Window, launch
from .manipulation import reshape
from .maps import dt


def _sorted_rows(x: Any, axis: int, descending: bool) -> tuple[Any, Any, Any]:
    """(keys, positions) of every row of `x` along `axis`, sorted, as (rows, p) arrays, and
    what `_finish` needs to put the axis back."""
    dev = x.qd_device
    axis %= x.ndim
    order = tuple(a for a in range(x.ndim) if a != axis) + (axis,)
    data = contiguous(x.permute(order))
    n = x.shape[axis]
    rows = math.prod(x.shape) // n if n else 0
    p = 1 << max(0, (n - 1).bit_length())
    keys = dev.empty((rows, p), x.dtype)
    pos = dev.empty((rows, p), np.int64)
    back = tuple(order.index(a) for a in range(x.ndim))
    layout = (tuple(data.shape), back)
    if rows == 0 or n == 0:
        return keys, pos, layout
    t = dt(x.dtype)
    src = Window(data.base_data, data.elem_offset, (rows, n), (n, 1))
    launch(dev, ("sort_init", t), lambda: lib.sort_init_kernel(t),
           [src, keys.window(), pos.window()])
    kw, pw = keys.window(), pos.window()
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            launch(dev, ("bitonic", t, descending), lambda: lib.bitonic_kernel(t, descending),
                   [kw, pw, n, j, k])
            j //= 2
        k *= 2
    return keys, pos, layout


def _finish(sorted_: Any, n: int, layout: Any) -> Any:
    shape, back = layout
    cut = contiguous(sorted_.basic_view((slice(None), slice(0, n))))
    return reshape(cut, shape).permute(back)


def sort(x: Any, axis: int = -1, descending: bool = False) -> Any:
    if x.ndim == 0:
        return contiguous(x, force=True)
    keys, _, layout = _sorted_rows(x, axis, descending)
    return _finish(keys, x.shape[axis], layout)


def argsort(x: Any, axis: int = -1, descending: bool = False) -> Any:
    if x.ndim == 0:
        return x.qd_device.from_host(np.zeros((), np.int64))
    _, pos, layout = _sorted_rows(x, axis, descending)
    return _finish(pos, x.shape[axis], layout)


def searchsorted(x1: Any, x2: Any, side: str = "left") -> Any:
    dev = x1.qd_device
    t = np.result_type(x1.dtype, x2.dtype)
    s = x1 if x1.dtype == t else astype(x1, t)
    v = contiguous(x2 if x2.dtype == t else astype(x2, t))
    out = dev.empty(tuple(v.shape), np.int64)
    total = v.size
    if total == 0:
        return out
    tt, right = dt(t), side == "right"
    flat = Window(v.base_data, v.elem_offset, (total,), (1,))
    launch(dev, ("search", tt, right), lambda: lib.search_kernel(tt, right),
           [s.window(), flat, Window(out.base_data, out.elem_offset, (total,), (1,))])
    return out
