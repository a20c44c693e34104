"""Dask arrays of qdarray chunks on a chosen device."""

from __future__ import annotations

from typing import Any

import dask.array as da

from .. import _creation_functions as cf
from .. import _dtypes
from .._array import Array


def _on_device(block: Any, device: Any) -> Array:
    return cf.asarray(block, device=device)


def to_device(x: da.Array, device: Any) -> da.Array:
    """The values of `x` in chunks that are qdarray arrays on `device`.

    Each chunk is converted where it is computed (on the worker that holds it): NumPy chunks
    become CPU arrays without a copy, or are copied to a device; qdarray chunks move with
    `asarray(..., device=device)`. Device names are those of the worker's process: with
    dask-cuda's `LocalCUDACluster`, "cuda:0" is each worker's own GPU.

    Args:
        x: a Dask array (NumPy or qdarray chunks).
        device: a device or its name ("cpu", "cuda:0", "opencl:0", ...). This process makes
            the empty array Dask keeps as the chunks' type (`_meta`) on it, so the device
            kind must be present here too.

    Returns:
        A Dask array of the same shape and chunks, whose `_meta` is a qdarray array.

    Raises:
        TypeError: a dtype qdarray lacks (float16, strings, ...), or one `device` lacks.
    """
    dtype = _dtypes.normalize_dtype(x.dtype)
    meta = cf.empty((0,) * x.ndim, dtype=dtype, device=device)
    return da.map_blocks(_on_device, x, device, meta=meta, dtype=x.dtype)
