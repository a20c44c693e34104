"""`map_kernel_grad`: the reverse of a blockwise launch, per block."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from .. import _dtypes
from . import _blocks
from ._halo import core_chunks, transpose_overlap
from ._map import _tuple_meta, empty_meta, partials, prepare, whole
from ._plan import Plan, names_of


def _cotangents(plan: Plan, values: list[Any], graph_args: list[Any], halos: Any, grad: Any,
                single: bool, kernel: str) -> list[Any]:
    """The cotangent of each output, as the graph takes it: Dask arrays chunked like the
    blocks of blockwise outputs (`halos`: (depths, boundaries), or None without halos),
    whole arrays for accumulators."""
    given = (grad,) if single else grad
    if not isinstance(given, tuple | list) or len(given) != len(plan.outputs):
        raise TypeError(f"{kernel}(): grad= takes one cotangent per name in out= "
                        f"({len(plan.outputs)}, in the same structure); got {grad!r}.")
    out = []
    for position, cotangent in zip(plan.outputs, given, strict=True):
        value = values[position]
        name = plan.names[position]
        if tuple(cotangent.shape) != tuple(value.shape):
            raise ValueError(f"{kernel}(): the cotangent of '{name}' has shape "
                             f"{tuple(cotangent.shape)}; the output has shape {value.shape}.")
        _check_dtype(kernel, name, cotangent, value)
        if plan.accumulator(position):
            if isinstance(cotangent, da.Array):
                raise TypeError(f"{kernel}(): the cotangent of the accumulator '{name}' is a "
                                "Dask array; pass a qdarray array (it goes to every block).")
            out.append(whole(cotangent))
        else:
            chunks = value.chunks
            if halos is not None:  # the graph's blocks: `prepare` may have merged some
                chunks = core_chunks(graph_args[position].chunks, *halos)
            if not isinstance(cotangent, da.Array):
                cotangent = da.from_array(cotangent, chunks=chunks)
            out.append(cotangent.rechunk(chunks))
    return out


def _check_dtype(kernel: str, name: str, cotangent: Any, value: Any) -> None:
    """A cotangent is real floating-point and converts to its output's dtype without loss
    (float32 for a float64 output, not the other way): nothing is downcast silently."""
    given = _dtypes.normalize_dtype(getattr(cotangent, "dtype", None))
    wanted = _dtypes.normalize_dtype(value.dtype)
    if (given is None or wanted is None or given not in _dtypes.REAL_FLOATING_DTYPES
            or not np.can_cast(np.dtype(given.name), np.dtype(wanted.name), "safe")):
        raise TypeError(f"{kernel}(): the cotangent of '{name}' has dtype "
                        f"{getattr(cotangent, 'dtype', None)}; the output has dtype "
                        f"{value.dtype}. Pass a cotangent of the output's dtype.")


def _wrt(plan: Plan, values: list[Any], wrt: Any, kernel: str) -> tuple[tuple[int, ...], bool]:
    names, single = names_of(wrt, "wrt")
    positions = []
    for name in names:
        if name not in plan.names:
            raise ValueError(f"wrt={name!r} is not a parameter of {kernel}(); its parameters "
                             f"are {', '.join(plan.names)}.")
        position = plan.names.index(name)
        value = values[position]
        dtype = _dtypes.normalize_dtype(getattr(value, "dtype", None))
        if plan.kinds[position] == "value" or dtype not in _dtypes.FLOATING_DTYPES:
            raise TypeError(f"wrt={name!r}: gradients are taken of floating-point arrays; "
                            f"{kernel}() got {type(value).__name__} of dtype "
                            f"{getattr(value, 'dtype', None)} for it.")
        positions.append(position)
    return tuple(positions), single


def map_kernel_grad(kernel: Any, *args: Any, out: str | tuple[str, ...], grad: Any,
                    wrt: str | tuple[str, ...], depth: Any = None, boundary: Any = "none",
                    **kwargs: Any) -> Any:
    """The gradients of `map_kernel(kernel, *args, out=out, depth=..., boundary=...)`, per
    block: the vector-Jacobian product with the cotangents `grad` of its outputs.

    Each block's task launches the kernel on its blocks, then its reverse (`kernel.grad`) with
    the outputs' gradients set to the blocks of the cotangents, so it runs where the blocks
    are. Where blocks share an input, their gradients are summed: a whole array's gradient is
    the sum over blocks (Dask's tree reduction), and the gradient of a halo element is added
    into the block it was copied from (the transpose of `overlap`, boundaries included).

    Args:
        kernel, *args, out, depth, boundary, **kwargs: as for `map_kernel` (accumulators sum).
        grad: the cotangent of each output in `out` (one, or a tuple in its order): for a
            blockwise output a Dask array of its shape (or a qdarray array, split like it),
            for an accumulator a qdarray array (given to every block).
        wrt: the parameter (or tuple of parameters) to differentiate with respect to:
            floating-point arrays, Dask or whole; an output's gradient is that of its initial
            value.

    Returns:
        A Dask array per name in `wrt` (one, or a tuple in its order), chunked like the
        argument (one chunk for a whole array).

    Raises:
        TypeError: a `wrt` that is not a floating-point array, cotangents that do not match
            `out` (or that are not real floating-point, or wider than their output's dtype),
            or any error of `map_kernel`.
        ValueError: as for `map_kernel`, or a cotangent of the wrong shape.
    """
    plan, graph_args, values, depths, boundaries = prepare(kernel, args, kwargs, out, depth,
                                                           boundary, "sum")
    _, single_out = names_of(out, "out")
    positions, single = _wrt(plan, values, wrt, kernel.__name__)
    halos = any(depths.values())
    cotangents = _cotangents(plan, values, graph_args, (depths, boundaries) if halos else None,
                             grad, single_out, kernel.__name__)
    grid = next(v for v, k in zip(graph_args, plan.kinds, strict=True) if k == "blocked")
    token = da.core.tokenize(kernel, plan, positions, *graph_args, *cotangents)
    results = da.map_blocks(_blocks.reverse, kernel, plan, positions, depths, boundaries,
                            *graph_args, *cotangents, name=f"{kernel.__name__}-grad-{token}",
                            chunks=grid.chunks, meta=_tuple_meta(grid.ndim), dtype=object)
    grads = []
    for index, position in enumerate(positions):
        value = values[position]
        if plan.kinds[position] == "whole":
            if position in plan.outputs:  # an accumulator's initial value adds as it is
                grads.append(da.from_array(cotangent_of(plan, position, grad, single_out),
                                           chunks=value.shape))
                continue
            per_block = partials(results, index, value)
            grads.append(per_block.sum(axis=tuple(range(grid.ndim)), dtype=np.dtype(value.dtype)))
            continue
        extended = graph_args[position]
        g = da.map_blocks(_blocks.pick, results, index, chunks=extended.chunks,
                          meta=empty_meta(extended), dtype=extended.dtype)
        if halos:
            g = transpose_overlap(g, depths, boundaries)
        grads.append(g.rechunk(value.chunks))
    return grads[0] if single else tuple(grads)


def cotangent_of(plan: Plan, position: int, grad: Any, single: bool) -> Any:
    """The cotangent given in `grad` for the output at `position`."""
    return grad if single else grad[plan.outputs.index(position)]
