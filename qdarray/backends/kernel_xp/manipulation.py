"""Manipulation functions: views (strides only) and device copies (concat, stack, roll, ...)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .copy import assign, contiguous
from .layout import broadcast_shapes, broadcast_to, c_strides


def _resolve_shape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    shape = tuple(int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def nocopy_strides(old_shape: tuple[int, ...], old_strides: tuple[int, ...],
                   shape: tuple[int, ...], itemsize: int) -> tuple[int, ...] | None:
    """The strides that view an array of `old_shape` / `old_strides` with the new `shape` (C
    order), or None when no view can: NumPy's `_attempt_nocopy_reshape`, so a reshape is a
    view exactly where NumPy's is (code such as SciPy's tanhsinh writes through one)."""
    if math.prod(shape) == 0:
        return c_strides(shape, itemsize)
    dims = [(n, st) for n, st in zip(old_shape, old_strides, strict=True) if n != 1]
    olddims = [n for n, _ in dims]
    oldstrides = [st for _, st in dims]
    new = [0] * len(shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(shape) and oi < len(olddims):
        np_, op = shape[ni], olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= shape[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):  # the old axes merged here must be contiguous
            if oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1]:
                return None
        new[nj - 1] = oldstrides[oj - 1]
        for nk in range(nj - 1, ni, -1):
            new[nk - 1] = new[nk] * shape[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = new[ni - 1] if ni >= 1 else itemsize
    for nk in range(ni, len(shape)):  # trailing axes of size 1
        new[nk] = last
    return tuple(new)


def reshape(x: Any, shape: tuple[int, ...], copy: bool | None = None) -> Any:
    """A view where NumPy's reshape gives one (and copy is not True), else a copy; copy=False
    on a layout that needs one raises ValueError, as NumPy does."""
    shape = _resolve_shape(shape, x.size)
    if x.is_c_contiguous() and copy is not True:
        return x._view(shape, c_strides(shape, x.dtype.itemsize), x.offset)
    if copy is not True:
        strides = nocopy_strides(tuple(x.shape), tuple(x.strides), shape, x.dtype.itemsize)
        if strides is not None:
            return x._view(shape, strides, x.offset)
    if copy is False:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    data = contiguous(x, force=True)
    return data._view(shape, c_strides(shape, x.dtype.itemsize), data.offset)


def expand_dims(x: Any, axis: Any) -> Any:
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = x.ndim + len(axes)
    axes = tuple(sorted(a % ndim for a in axes))
    shape, strides = list(x.shape), list(x.strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    return x._view(tuple(shape), tuple(strides), x.offset)


def squeeze(x: Any, axis: Any) -> Any:
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(a % x.ndim for a in axes)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             "to one")
    keep = [k for k in range(x.ndim) if k not in axes]
    return x._view(tuple(x.shape[k] for k in keep), tuple(x.strides[k] for k in keep),
                   x.offset)


def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [s % x.ndim for s in src]
    dst = [d % x.ndim for d in dst]
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return x.permute(tuple(order))


def flip(x: Any, axis: Any = None) -> Any:
    axes = range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    key: list[Any] = [slice(None)] * x.ndim
    for a in axes:
        key[a % x.ndim] = slice(None, None, -1)
    return x.basic_view(tuple(key))


def broadcast_arrays(*arrays: Any) -> list[Any]:
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, axis: int | None = 0) -> Any:
    arrays = list(arrays)
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    first = arrays[0]
    axis = axis % first.ndim
    dtype = np.result_type(*(a.dtype for a in arrays))
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = first.qd_device.empty(tuple(shape), dtype)
    start = 0
    for a in arrays:
        key: list[Any] = [slice(None)] * out.ndim
        key[axis] = slice(start, start + a.shape[axis])
        assign(out.basic_view(tuple(key)), a)
        start += a.shape[axis]
    return out


def stack(arrays: Any, axis: int = 0) -> Any:
    arrays = list(arrays)
    ndim = arrays[0].ndim + 1
    return concat([expand_dims(a, axis % ndim) for a in arrays], axis=axis % ndim)


def roll(x: Any, shift: Any, axis: Any = None) -> Any:
    if axis is None:
        flat = reshape(x, (-1,), copy=None)
        return reshape(roll(flat, shift, 0), x.shape)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes, strict=True):
        total[a % x.ndim] = total.get(a % x.ndim, 0) + int(s)
    out = contiguous(x, force=True)
    for a, s in total.items():
        n = x.shape[a]
        if n == 0 or s % n == 0:
            continue
        s %= n
        src = out
        out = x.qd_device.empty(x.shape, x.dtype)
        head: list[Any] = [slice(None)] * x.ndim
        tail: list[Any] = [slice(None)] * x.ndim
        head[a], tail[a] = slice(s, None), slice(None, n - s)
        assign(out.basic_view(tuple(head)), src.basic_view(tuple(tail)))
        head[a], tail[a] = slice(None, s), slice(n - s, None)
        assign(out.basic_view(tuple(head)), src.basic_view(tuple(tail)))
    return out


def tile(x: Any, reps: tuple[int, ...]) -> Any:
    reps = tuple(int(r) for r in reps)
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape) if x.ndim < nd else x
    inter = []
    for n in x.shape:
        inter += [1, n]
    view = broadcast_to(reshape(x, tuple(inter)),
                        tuple(v for r, n in zip(reps, x.shape, strict=True) for v in (r, n)))
    return reshape(contiguous(view, force=True),
                   tuple(r * n for r, n in zip(reps, x.shape, strict=True)))


def repeat_scalar(x: Any, repeats: int, axis: int | None) -> Any:
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis %= x.ndim
    shape = x.shape[:axis + 1] + (repeats,) + x.shape[axis + 1:]
    view = broadcast_to(expand_dims(x, axis + 1), shape)
    out_shape = x.shape[:axis] + (x.shape[axis] * repeats,) + x.shape[axis + 1:]
    return reshape(contiguous(view, force=True), out_shape)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    flat = [reshape(a, (-1,)) for a in arrays]
    lengths = [a.shape[0] for a in flat]
    if indexing == "xy" and len(flat) >= 2:
        lengths[0], lengths[1] = lengths[1], lengths[0]
    out = []
    for k, a in enumerate(flat):
        pos = k
        if indexing == "xy" and len(flat) >= 2 and k < 2:
            pos = 1 - k
        shape = [1] * len(flat)
        shape[pos] = a.shape[0]
        view = broadcast_to(reshape(a, tuple(shape)), tuple(lengths))
        out.append(contiguous(view, force=True))
    return out
