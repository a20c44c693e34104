"""Launching strided maps (`kernels/library/maps.py`) on native arrays.

`launch_map(body, out, operands, computes, compute)` writes `out[i] = body(operands at i)`
for every index of `out`: operands are arrays of `out`'s shape (broadcast views included) or
`Scalar`s. Layouts are simplified first (length-1 axes dropped, axes merged where every
operand is contiguous across them), so a map over C-contiguous operands is one flat loop and
only truly strided operands pay for index arithmetic. Large flat maps on GPUs handle several
elements per work-item (`UNROLL`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _dtypes
from ..._dtypes import DType
from ...kernels.library.maps import MapSpec, Operand, map_kernel
from .device import Window, launch
from .layout import simplify

UNROLL = 4  # elements per work-item of large flat maps on GPUs
UNROLL_MIN = 1 << 20


class Scalar:
    """A scalar operand: `value` passed as a kernel argument of `dtype`."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: Any, dtype: Any) -> None:
        self.value = value
        self.dtype = np.dtype(dtype)


def dt(dtype: Any) -> DType:
    """The qdarray DType of a NumPy dtype."""
    return _dtypes.from_numpy_dtype(dtype)


def scalar_value(value: Any, dtype: np.dtype) -> Any:
    """A Python or NumPy scalar as a kernel argument of `dtype` (NumPy's cast)."""
    return np.asarray(value).astype(dtype)[()] if dtype.kind != "c" else dtype.type(value)


def launch_map(body: str, out: Any, operands: Sequence[Any], computes: Sequence[Any],
               compute: Any, *, keep_axes: bool = False) -> Any:
    """`out[i] = body(operands at i)` (module docstring).

    Args:
        body: an elementwise function's name or a `maps.INDEX_BODIES` key.
        out: the result array (any strides).
        operands: arrays of `out`'s shape (broadcast views allowed) or `Scalar`s.
        computes: the dtype each operand is converted to before the body sees it.
        compute: the dtype the body computes in.
        keep_axes: keep `out`'s axes as they are (bodies that use the index).
    """
    n = out.size
    if n == 0:
        return out
    dev = out.qd_device
    arrays = [out] + [a for a in operands if not isinstance(a, Scalar)]
    strides = [a.elem_strides() for a in arrays]
    if keep_axes:
        shape = tuple(out.shape) or (1,)
        strides = [s or (1,) for s in strides]
    else:
        shape, strides = simplify(tuple(out.shape), strides)
    flat = len(shape) == 1 and all(s == (1,) for s in strides)
    unroll = UNROLL if dev.gpu and flat and n >= UNROLL_MIN and not keep_axes else 1
    kinds = []
    args: list[Any] = [Window(out.base_data, out.elem_offset, shape, strides[0])]
    k = 1
    for a, c in zip(operands, computes, strict=True):
        scalar = isinstance(a, Scalar)
        kinds.append((not scalar, a.dtype, c))
        if scalar:
            args.append(scalar_value(a.value, a.dtype))
            continue
        args.append(Window(a.base_data, a.elem_offset, shape, strides[k]))
        k += 1
    # The launcher key: NumPy dtypes hash in C, so a hit costs no MapSpec (built on a miss).
    key = ("map", body, compute, out.dtype, tuple(kinds), len(shape), unroll)
    if unroll > 1:
        args.append(-(-n // unroll))
    launch(dev, key, lambda: map_kernel(_spec(key)), args)
    return out


def _spec(key: tuple[Any, ...]) -> MapSpec:
    _, body, compute, out, kinds, ndim, unroll = key
    operands = tuple(Operand(array, dt(d), dt(c)) for array, d, c in kinds)
    return MapSpec(body, dt(compute), dt(out), operands, ndim, unroll)
