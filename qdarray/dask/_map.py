"""`map_kernel`: a kernel launched on every block of Dask arrays."""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import numpy as np

from .._array import Array
from . import _blocks
from ._plan import Plan, bind, boundary_of, check_grid, depth_of, names_of, unify


def empty_meta(x: Any, ndim: int | None = None) -> Any:
    """An empty array of `x`'s type, dtype and device with `ndim` dimensions (Dask's meta)."""
    ndim = x.ndim if ndim is None else ndim
    if isinstance(x, da.Array):
        x = x._meta
    if type(x) is Array:
        from .. import _creation_functions as cf

        return cf.empty((0,) * ndim, dtype=x.dtype, device=x.device)
    return np.empty((0,) * ndim, dtype=x.dtype)


def _tuple_meta(ndim: int) -> Any:
    return np.empty((0,) * ndim, dtype=object)


def whole(value: Any) -> Any:
    """A whole (unblocked) array as one task of the graph: each worker fetches it once, rather
    than every block's task carrying its own copy."""
    return dask.delayed(value, pure=True, traverse=False)


def prepare(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, depth: Any,
            boundary: Any, combine: str) -> tuple[Plan, list[Any], list[Any], dict[int, int],
                                                  dict[int, Any]]:
    """The plan, the arguments as the graph takes them (blocked ones extended by their halos,
    whole ones as tasks) and as given, and the coerced depth and boundary.

    With halos, blocks narrower than their halo are merged into a neighbour first (Dask's
    `overlap` needs every block at least as wide), for every blocked argument alike: the
    graph's blocks (`core_chunks` of the extended ones) may then be fewer than the given
    arguments' blocks, and results are rechunked back to those."""
    plan, values = bind(kernel, args, kwargs, out, combine)
    values = unify(values, plan)
    check_grid(kernel.__name__, plan, values)
    ndim = next(v.ndim for v, k in zip(values, plan.kinds, strict=True) if k == "blocked")
    depths = depth_of(depth, ndim)
    boundaries = boundary_of(boundary, ndim)
    halos = any(depths.values())
    if halos:
        for p in plan.outputs:
            if plan.accumulator(p):
                raise ValueError(
                    f"{kernel.__name__}(): out={plan.names[p]!r} is an accumulator (a whole "
                    "array), and with depth= every halo element would be added by two blocks. "
                    "Use a blockwise output (a Dask array) with halos, or depth=0.")
    graph_args = []
    for value, kind in zip(values, plan.kinds, strict=True):
        if kind == "blocked" and halos:
            value = da.overlap.overlap(widen(value, depths), depth=depths, boundary=boundaries)
        elif kind == "whole":
            value = whole(value)
        graph_args.append(value)
    if halos:
        check_grid(kernel.__name__, plan, graph_args)
    return plan, graph_args, values, depths, boundaries


def widen(x: da.Array, depths: dict[int, int]) -> da.Array:
    """`x` with every block at least as wide as its axis's halo: a narrower block merged into
    a neighbour, as Dask's `overlap` would do (`ensure_minimum_chunksize`)."""
    chunks = tuple(da.overlap.ensure_minimum_chunksize(depths[ax], c) if depths[ax] else c
                   for ax, c in enumerate(x.chunks))
    return x if chunks == x.chunks else x.rechunk(chunks)


def map_kernel(kernel: Any, *args: Any, out: str | tuple[str, ...], depth: Any = None,
               boundary: Any = "none", combine: str = "sum", **kwargs: Any) -> Any:
    """Launch `kernel` on every block of its Dask array arguments.

    Each block's launch gets the matching blocks of the Dask arrays, whole qdarray or NumPy
    arrays as they are, and scalars; it runs on the device of its blocks, in the process of the
    worker that holds them. The kernel sees a block as a whole array (`x.shape[0]` is the
    block's length).

    Args:
        kernel: a `@qd.kernel`.
        *args: the kernel's arguments (also by name in `**kwargs`). Dask arrays are split into
            blocks; all of them must have the same number of dimensions, the same grid of
            blocks and the same chunks along every axis split into several blocks (arrays of
            one shape are rechunked to common chunks).
        out: the parameter (or tuple of parameters) the kernel writes. A Dask array argument
            is a blockwise output: its result has the same chunks, each block written by the
            launch on a copy of the block. A qdarray array argument is an accumulator: each
            launch adds into its own zero-filled copy (`+=` / atomic adds), and the result is
            the initial value plus the sum of the launches' (see `combine`).
        depth: halo width (an int, a tuple per axis or a dict {axis: width}): each launch gets
            its blocks extended by that many elements of the neighbouring blocks (Dask's
            `overlap`), and the halo is trimmed from the blockwise outputs, as with
            `map_overlap`. For stencils.
        boundary: what halos hold at the array's edges: "none" (no halo there, the default),
            "periodic", "reflect", "nearest" or a constant; per axis as a dict or tuple.
        combine: how accumulators combine: "sum" (the default), or "max" / "min" (each
            launch updates a copy of the initial value; the result is the elementwise
            maximum or minimum over blocks).

    Returns:
        A Dask array per name in `out` (one, or a tuple in the order of `out`); their chunks
        are qdarray arrays on the blocks' device (their `_meta` is a qdarray array).

    Raises:
        TypeError: `kernel` is not a kernel, an argument does not bind, or an output is
            not an array.
        ValueError: no Dask array among the arguments, grids of blocks that differ (or
            blocks of other lengths along a split axis: 100 in 50s beside 90 in 45s), an
            accumulator with halos, or a bad `depth`, `boundary` or `combine`.

    Example::

        y = qdarray.dask.map_kernel(dynamic_loop, dx, da_, qd.zeros(1), out="y")
        y.compute()
    """
    plan, graph_args, values, depths, boundaries = prepare(kernel, args, kwargs, out, depth,
                                                           boundary, combine)
    _, single = names_of(out, "out")
    blocked = [v for v, k in zip(graph_args, plan.kinds, strict=True) if k == "blocked"]
    grid = blocked[0]
    token = dask.base.tokenize(kernel, plan, *graph_args)
    name = f"{kernel.__name__}-{token}"
    halos = any(depths.values())
    outputs = []
    if len(plan.outputs) == 1 and not plan.accumulator(plan.outputs[0]):
        target = graph_args[plan.outputs[0]]
        result = da.map_blocks(_blocks.launch_one, kernel, plan, *graph_args, name=name,
                               chunks=target.chunks, meta=empty_meta(target),
                               dtype=target.dtype)
        outputs.append(result)
    else:
        results = da.map_blocks(_blocks.launch, kernel, plan, *graph_args, name=name,
                                chunks=grid.chunks, meta=_tuple_meta(grid.ndim),
                                dtype=object)
        for index, position in enumerate(plan.outputs):
            if plan.accumulator(position):
                outputs.append(accumulate(results, index, values[position], plan.combine))
            else:
                target = graph_args[position]
                outputs.append(da.map_blocks(_blocks.pick, results, index,
                                             chunks=target.chunks, meta=empty_meta(target),
                                             dtype=target.dtype))
    if halos:  # trimmed, and in the blocks the output came in
        outputs = [x if plan.accumulator(p) else
                   da.overlap.trim_internal(x, depths, boundary=boundaries)
                   .rechunk(values[p].chunks)
                   for x, p in zip(outputs, plan.outputs, strict=True)]
    return outputs[0] if single else tuple(outputs)


def partials(results: da.Array, index: int | None, like: Any) -> da.Array:
    """The per-block values `results[index]` (arrays shaped like `like`) as one Dask array
    with the grid of blocks as leading axes of length-1 chunks."""
    g = results.ndim
    chunks = tuple((1,) * n for n in results.numblocks) + tuple((s,) for s in like.shape)
    return da.map_blocks(_blocks.leading, results, index, g, chunks=chunks,
                         new_axis=list(range(g, g + like.ndim)),
                         meta=empty_meta(like, g + like.ndim), dtype=like.dtype)


def accumulate(results: da.Array, index: int, initial: Any, combine: str) -> da.Array:
    """An accumulator's result: the initial value plus the sum of the blocks' partial values
    (Dask's tree reduction), or the maximum / minimum of the blocks' values."""
    grid_axes = tuple(range(results.ndim))
    per_block = partials(results, index, initial)
    if combine == "max":
        return per_block.max(axis=grid_axes)
    if combine == "min":
        return per_block.min(axis=grid_axes)
    total = per_block.sum(axis=grid_axes, dtype=np.dtype(initial.dtype))
    return da.map_blocks(_blocks.plus, total, whole(initial), meta=empty_meta(initial),
                         dtype=initial.dtype)
