"""qdarray's entries in Dask's per-chunk-type tables, made when qdarray.dask is imported.

- `sizeof`: a chunk's size is its `nbytes` (on its device), so `dask.distributed` counts
  worker memory right (its default for unknown objects is a few hundred bytes);
- `numel_lookup`: element counts as qdarray arrays on the chunk's device (Dask's default is a
  NumPy array, which a device chunk cannot be divided by), for `std`, `var` and moments.

A worker process needs these too: it imports qdarray.dask when it runs a task of it
(`map_kernel`, `to_device`); start workers with `preload=["qdarray.dask"]` (docs/dask.md)
to have them for every task.
"""

from __future__ import annotations

from typing import Any

from dask.array.backends import _numel_arraylike
from dask.array.dispatch import numel_lookup
from dask.sizeof import sizeof

from .._array import Array


def _sizeof(x: Array) -> int:
    return int(x.nbytes)


def _numel(x: Array, **kwargs: Any) -> Any:
    return _numel_arraylike(x, **kwargs)


def register() -> None:
    sizeof.register(Array, _sizeof)
    numel_lookup.register(Array, _numel)
