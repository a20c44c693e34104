"""Indexing of native arrays with NumPy's semantics: views, gathers, scatters, `nonzero`.

Keys come from qdarray's `_indexing` already checked (bounds, mask shapes, devices). Basic
keys (ints, slices, None, ...) give views. Keys with index arrays run on the device: boolean
masks become integer arrays through `nonzero` (a scan of the mask, then a compaction), the
slices and `None`s are applied as a view first, integers join the index arrays (as NumPy
treats them), and one gather (or, for `x[key] = value`, one scatter) kernel reads through all
index arrays at once (`kernels/library/gathers.py`). The selection's dimensions follow NumPy:
the broadcast index dimensions replace the indexed axes where those are adjacent in the key,
and come first otherwise. A Python bool in a key (a 0-d mask) computes on the host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...kernels.library.gathers import IndexSpec, index_kernel, nonzero_kernel
from .copy import assign, astype, contiguous
from .device import Window, launch
from .layout import broadcast_shapes, broadcast_to
from .maps import dt
from .reductions import scan

_BASIC = (int, slice, type(None), type(Ellipsis))


def _native(x: Any) -> bool:
    return hasattr(x, "qd_device")


def _is_basic(key: tuple[Any, ...]) -> bool:
    return all(type(k) in _BASIC or (isinstance(k, (int, np.integer)) and type(k) is not bool
                                      and not isinstance(k, np.bool_)) for k in key)


def nonzero(x: Any) -> tuple[Any, ...]:
    """The coordinates of the nonzero elements of `x`, one int64 array per axis, in C order."""
    dev = x.qd_device
    ndim = max(x.ndim, 1)
    flags = astype(x, np.dtype(np.bool_)) if x.dtype != np.bool_ else contiguous(x)
    n = x.size
    if n == 0:
        return tuple(dev.empty((0,), np.int64) for _ in range(ndim))
    flat = flags._view((n,), (1,), flags.offset)
    rank = scan("cumulative_sum", flat, 0, np.int64, False)
    count = int(rank[n - 1:].to_host()[0])
    coords = dev.empty((ndim, count), np.int64)
    if count:
        shape = tuple(x.shape) or (1,)
        launch(dev, ("nonzero", ndim), lambda: nonzero_kernel(ndim),
               [flat.window(), rank.window(), coords.window(), *shape[1:]])
    return tuple(coords.basic_view((d,)) for d in range(ndim))


def _expand(x: Any, key: tuple[Any, ...]) -> list[Any]:
    """`key` with masks replaced by their coordinate arrays and full slices for the ellipsis
    and the axes after the key: one item per axis of the view the slices select."""
    out: list[Any] = []
    for k in key:
        out.extend(nonzero(k) if _native(k) and k.dtype == np.bool_ else [k])
    consumed = sum(0 if k is None or k is Ellipsis else 1 for k in out)
    fill = [slice(None)] * (x.ndim - consumed)
    if Ellipsis in out:
        i = out.index(Ellipsis)
        return out[:i] + fill + out[i + 1:]
    return out + fill


def _advanced(k: Any) -> bool:
    return _native(k) or (type(k) is not slice and k is not None)


class _Plan:
    """How an advanced key selects (module docstring): `view`, the view of `x` its slices and
    Nones select (one axis per key item, the indexed axes whole); `arrays`, the index
    arrays; `shape`, the selection's shape; `axes` and `bdims`, as `IndexSpec` has them."""

    def __init__(self, x: Any, key: tuple[Any, ...]) -> None:
        items = _expand(x, key)
        adv = [p for p, k in enumerate(items) if _advanced(k)]
        dev = x.qd_device
        self.arrays = [k if _native(k) else dev.from_host(np.asarray(k, dtype=np.int64))
                       for k in (items[p] for p in adv)]
        self.view = x.basic_view(tuple(slice(None) if p in adv else k
                                       for p, k in enumerate(items)))
        self.bshape = broadcast_shapes(*(tuple(a.shape) for a in self.arrays))
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        sel: list[int] = [] if adjacent else list(self.bshape)
        self.bdims = tuple(range(len(self.bshape)))
        axes: list[tuple[str, int]] = []
        for p in range(len(items)):
            if p in adv:
                if adjacent and p == adv[0]:
                    self.bdims = tuple(range(len(sel), len(sel) + len(self.bshape)))
                    sel.extend(self.bshape)
                axes.append(("idx", adv.index(p)))
            else:
                axes.append(("out", len(sel)))
                sel.append(self.view.shape[p])
        self.shape = tuple(sel)
        self.axes = tuple(axes)

    def windows(self) -> list[Window]:
        return [broadcast_to(a, self.bshape).window() for a in self.arrays]

    def spec(self, x: Any, value: Any = None) -> IndexSpec:
        return IndexSpec(dt(x.dtype), len(self.shape), self.axes,
                         tuple(dt(a.dtype) for a in self.arrays), self.bdims,
                         None if value is None else dt(value.dtype))


def _on_host(key: tuple[Any, ...]) -> bool:
    """Keys with a Python bool or a 0-d boolean array (which add an axis) compute on the
    host."""
    return any(type(k) is bool or isinstance(k, np.bool_) or (
        _native(k) and k.dtype == np.bool_ and k.ndim == 0) for k in key)


def getitem(x: Any, key: Any) -> Any:
    if type(key) is not tuple:
        key = (key,)
    if _is_basic(key):
        return x.basic_view(key)
    if _on_host(key):
        return _host_getitem(x, key)
    plan = _Plan(x, key)
    dev = x.qd_device
    out = dev.empty(plan.shape, x.dtype)
    if out.size:
        spec = plan.spec(x)
        launch(dev, spec, lambda: index_kernel(spec),
               [plan.view.window(), out.window(), *plan.windows()])
    return out


def setitem(x: Any, key: Any, value: Any) -> None:
    if x.qd_readonly:
        raise ValueError("assignment destination is read-only")
    if type(key) is not tuple:
        key = (key,)
    if _is_basic(key):
        assign(x.basic_view(key), value)
        return
    if _on_host(key):
        _host_setitem(x, key, value)
        return
    plan = _Plan(x, key)
    dev = x.qd_device
    plan.arrays = [contiguous(a, force=True) if a.base_data is x.base_data else a
                   for a in plan.arrays]  # index arrays inside x: read before any write
    if not _native(value):
        value = dev.from_host(np.asarray(np.asarray(value).astype(x.dtype)))
    elif value.base_data is not None and value.base_data is x.base_data:
        value = contiguous(value, force=True)  # read everything before writing
    value = broadcast_to(value, plan.shape)
    if math.prod(plan.shape):
        spec = plan.spec(x, value)
        launch(dev, spec, lambda: index_kernel(spec),
               [plan.view.window(), value.window(), *plan.windows()])


def _host_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(k.to_host() if _native(k) else k for k in key)


def _host_getitem(x: Any, key: tuple[Any, ...]) -> Any:
    return x.qd_device.from_host(np.asarray(x.to_host()[_host_key(key)]))


def _host_setitem(x: Any, key: tuple[Any, ...], value: Any) -> None:
    from .copy import write_host

    host = x.to_host()
    host[_host_key(key)] = value.to_host() if _native(value) else value
    write_host(x, host)


def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    if axis is None:
        from .manipulation import reshape

        x = reshape(x, (-1,))
        axis = 0
    axis %= x.ndim
    key = (slice(None),) * axis + (indices,)
    return getitem(x, key)


def take_along_axis(x: Any, indices: Any, axis: int = -1) -> Any:
    axis %= x.ndim
    others = [broadcast_shapes((n,), (m,))[0] if a != axis else m
              for a, (n, m) in enumerate(zip(x.shape, indices.shape, strict=True))]
    shape = list(others)  # every axis broadcast but `axis`, which has the indices' length
    idx = broadcast_to(indices, tuple(shape))
    xshape = list(shape)
    xshape[axis] = x.shape[axis]
    xv = broadcast_to(x, tuple(xshape))
    dev = x.qd_device
    out = dev.empty(tuple(shape), x.dtype)
    if out.size:
        axes = tuple(("idx", 0) if a == axis else ("out", a) for a in range(x.ndim))
        spec = IndexSpec(dt(x.dtype), len(shape), axes, (dt(idx.dtype),),
                         tuple(range(len(shape))))
        launch(dev, spec, lambda: index_kernel(spec), [xv.window(), out.window(), idx.window()])
    return out
