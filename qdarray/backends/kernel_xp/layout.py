"""Shapes and strides on the host: broadcasting, axis merging, memory overlap."""

from __future__ import annotations

from typing import Any

from .device import Window


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a C-contiguous array of `shape` (NumPy's: axes of length 0 count
    as 1)."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        n = 1
        for s in shapes:
            k = axis - (ndim - len(s))
            if k < 0:
                continue
            m = s[k]
            if m != 1:
                if n != 1 and n != m:
                    raise ValueError(
                        f"operands could not be broadcast together with shapes "
                        f"{' '.join(str(tuple(x)) for x in shapes)}")
                n = m
        out.append(n)
    return tuple(out)


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """A view of `x` with `shape` (stride 0 along broadcast axes)."""
    if tuple(x.shape) == shape:
        return x
    extra = len(shape) - x.ndim
    if extra < 0:
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    strides = []
    for axis, n in enumerate(shape):
        k = axis - extra
        if k < 0:
            strides.append(0)
            continue
        m = x.shape[k]
        if m == n:
            strides.append(x.strides[k] if n != 1 else 0)
        elif m == 1:
            strides.append(0)
        else:
            raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return x._view(shape, tuple(strides), x.offset)


def simplify(shape: tuple[int, ...], strides: list[tuple[int, ...]]
             ) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop length-1 axes and merge neighbouring axes that are contiguous for every operand
    (element strides); at least one axis remains (a 0-d or one-element map is one of 1)."""
    dims = [k for k, n in enumerate(shape) if n != 1]
    out_shape = [shape[k] for k in dims]
    out_strides = [[s[k] for k in dims] for s in strides]
    k = len(out_shape) - 1
    while k > 0:
        n = out_shape[k]
        if all(s[k - 1] == s[k] * n for s in out_strides):
            out_shape[k - 1] *= n
            del out_shape[k]
            for s in out_strides:
                s[k - 1] = s[k]
                del s[k]
        k -= 1
    if not out_shape:
        return (1,), [(1,) for _ in strides]
    return tuple(out_shape), [tuple(s) for s in out_strides]


def windows(arrays: list[Any], shape: tuple[int, ...]
            ) -> tuple[tuple[int, ...], list[Window]]:
    """The arrays (all of `shape`) as kernel arguments over the simplified layout."""
    sshape, sstrides = simplify(shape, [a.elem_strides() for a in arrays])
    return sshape, [Window(a.base_data, a.elem_offset, sshape, s)
                    for a, s in zip(arrays, sstrides, strict=True)]


def overlaps(a: Any, b: Any) -> bool:
    """Whether writing `a` may change what `b` reads: the same buffer with intersecting
    element ranges, unless both address exactly the same elements the same way (an
    elementwise update in place reads each element before it writes it)."""
    if a.base_data is None or a.base_data is not b.base_data:
        return False
    lo_a, hi_a = a.span()
    lo_b, hi_b = b.span()
    if hi_a <= lo_b or hi_b <= lo_a:
        return False
    return not (a.offset == b.offset and tuple(a.shape) == tuple(b.shape)
                and tuple(a.strides) == tuple(b.strides) and a.dtype == b.dtype)
