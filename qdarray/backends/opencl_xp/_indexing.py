"""`ClArray.__getitem__` / `__setitem__` with NumPy's semantics.

Basic keys (ints, slices, None, ...) are views. One integer array with full slices around it
is a device gather (`take`); one boolean mask is a gather of the mask's true positions (the
positions are found on the host, since the result's size depends on the data). Other
combinations of array keys, and writes through array keys, compute on the host: the array and
keys are copied there, NumPy indexes, and a write copies the array back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._clarray import ClArray
from ._copy import assign, write_host

_BASIC = (int, slice, type(None), type(Ellipsis))


def _is_basic(key: tuple[Any, ...]) -> bool:
    return all(type(k) in _BASIC or (isinstance(k, (int, np.integer)) and type(k) is not bool
                                      and not isinstance(k, np.bool_)) for k in key)


def _host_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(k.to_host() if isinstance(k, ClArray) else k for k in key)


def _full(k: Any) -> bool:
    return type(k) is slice and k == slice(None)


def _expand(x: ClArray, key: tuple[Any, ...]) -> tuple[Any, ...]:
    """`key` with its ellipsis replaced by full slices (one entry per consumed axis)."""
    consumed = sum(k.ndim if isinstance(k, ClArray) and k.dtype == np.bool_ else
                   0 if k is None or k is Ellipsis else 1 for k in key)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - consumed) + key[i + 1:]
    return key


def getitem(x: ClArray, key: Any) -> Any:
    if type(key) is not tuple:
        key = (key,)
    if _is_basic(key):
        return x.basic_view(key)
    from ._manipulation import reshape, take

    full = _expand(x, key)
    arrays = [k for k in full if isinstance(k, ClArray)]
    rest_full = all(_full(k) for k in full if not isinstance(k, ClArray))
    if len(arrays) == 1 and rest_full and None not in full:
        idx = arrays[0]
        axis = next(i for i, k in enumerate(full) if isinstance(k, ClArray))
        if idx.dtype.kind in "iu":
            return take(x, idx, axis)
        if idx.dtype == np.bool_ and idx.ndim >= 1:
            positions = np.flatnonzero(idx.to_host())
            lead = x.shape[:axis]
            merged = reshape(x, lead + (-1,) + x.shape[axis + idx.ndim:]) if idx.size else x
            if idx.size == 0:
                return ClArray.from_host(x.qd_state, x.to_host()[_host_key(key)])
            pos = ClArray.from_host(x.qd_state, positions.astype(np.int64))
            return take(merged, pos, axis)
    host = x.to_host()[_host_key(key)]
    return ClArray.from_host(x.qd_state, np.asarray(host))


def setitem(x: ClArray, key: Any, value: Any) -> None:
    if x.qd_readonly:
        raise ValueError("assignment destination is read-only")
    if type(key) is not tuple:
        key = (key,)
    if _is_basic(key):
        assign(x.basic_view(key), value)
        return
    host = x.to_host()
    hv = value.to_host() if isinstance(value, ClArray) else value
    host[_host_key(key)] = hv
    write_host(x, host)
