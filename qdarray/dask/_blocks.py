"""What runs on a worker for each block: a launch, the reverse of one, and the small steps
around them (picking one output, a partial sum's leading axes, adding the initial value).

Blocks are qdarray arrays (or NumPy arrays, for Dask arrays of NumPy chunks, which kernels
take on the CPU). An output block is copied before the launch writes it: Dask's blocks are
shared and never changed in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _creation_functions as cf
from .. import _manipulation_functions as mf
from .._array import Array
from ._plan import Plan


def copy(x: Any) -> Any:
    """A copy of a block or of a whole array, on its device."""
    if type(x) is Array:
        return cf.asarray(x, copy=True)
    return np.array(x, copy=True)


def zeros_like(x: Any) -> Any:
    if type(x) is Array:
        return cf.zeros_like(x)
    return np.zeros_like(x)


def _start(plan: Plan, position: int, value: Any) -> Any:
    """What an output parameter's launch writes: a copy of its block; a zero-filled copy of an
    accumulator that sums, a copy of the initial value of one that takes maxima or minima."""
    if plan.accumulator(position) and plan.combine == "sum":
        return zeros_like(value)
    return copy(value)


def launch(kernel: Any, plan: Plan, *values: Any) -> tuple[Any, ...]:
    """Launch `kernel` on one block's arguments; the outputs, in `plan.outputs` order.

    Raises:
        ValueError: the kernel wrote a qdarray array that `out=` does not name (a block or
            whole array Dask shares with other tasks, which must not change).
    """
    args = list(values)
    for position in plan.outputs:
        args[position] = _start(plan, position, values[position])
    inputs = [(p, v, v._buffer.generation) for p, v in enumerate(values)
              if type(v) is Array and p not in plan.outputs]
    kernel(*args)
    for position, value, generation in inputs:
        if value._buffer.generation != generation:
            raise ValueError(
                f"{kernel.__name__}() wrote '{plan.names[position]}', which out= does not name: "
                "Dask's blocks and whole arrays are shared by tasks and must not change. Name "
                f"it in out= (out=({', '.join(repr(plan.names[p]) for p in plan.outputs)}, "
                f"{plan.names[position]!r})) to get the written values as a result.")
    return tuple(args[p] for p in plan.outputs)


def launch_one(kernel: Any, plan: Plan, *values: Any) -> Any:
    """`launch` of a kernel with one blockwise output: that output's block."""
    return launch(kernel, plan, *values)[0]


def pick(results: tuple[Any, ...], index: int) -> Any:
    """One output of a block's launch."""
    return results[index]


def leading(results: Any, index: int | None, ndim: int) -> Any:
    """An accumulator's value after one block (or a gradient's partial), with `ndim` leading
    axes of length 1: the block's place in the grid, summed over by Dask's reductions."""
    value = results if index is None else results[index]
    shape = (1,) * ndim + tuple(value.shape)
    if type(value) is Array:
        return mf.reshape(value, shape)
    return np.reshape(value, shape)


def plus(total: Any, initial: Any) -> Any:
    """The sum of the blocks' partial accumulators, plus the accumulator's initial value."""
    return total + initial


def with_halo(cotangent: Any, halo: tuple[tuple[int, int], ...]) -> Any:
    """A cotangent block padded with zeros to its extended block (`halo`: (left, right) widths
    per axis): the halo of a launch's output was trimmed, so its cotangent is zero."""
    if not any(left or right for left, right in halo):
        return cotangent
    shape = tuple(n + left + right for n, (left, right) in zip(cotangent.shape, halo, strict=True))
    inner = tuple(slice(left, left + n) for n, (left, _) in zip(cotangent.shape, halo,
                                                                strict=True))
    out: Any
    if type(cotangent) is Array:
        out = cf.zeros(shape, dtype=cotangent.dtype, device=cotangent.device)
    else:
        out = np.zeros(shape, dtype=cotangent.dtype)
    out[inner] = cotangent
    return out


def halo_widths(depth: dict[int, int], boundary: dict[int, Any],
                location: tuple[int, ...], blocks: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(left, right) halo widths of the block at `location` in a grid of `blocks`, as Dask's
    overlap adds them: none outside the array's edges for boundary "none"."""
    out = []
    for ax, (loc, count) in enumerate(zip(location, blocks, strict=True)):
        d = depth.get(ax, 0)
        outer = not (isinstance(boundary[ax], str) and boundary[ax] == "none")
        out.append((d if loc > 0 or outer else 0, d if loc < count - 1 or outer else 0))
    return tuple(out)


def reverse(kernel: Any, plan: Plan, wrt: tuple[int, ...], depth: dict[int, int],
            boundary: dict[int, Any], *values: Any, block_info: Any = None) -> tuple[Any, ...]:
    """The reverse of one block's launch. `values` are the kernel's arguments for the block
    (extended by `depth` halos) followed by the cotangents of its outputs (in `plan.outputs`
    order; blockwise ones without halos). The launch runs forward, then its reverse with the
    outputs' gradients set to the cotangents; the result is the gradient of every parameter in
    `wrt` (for a blockwise output: of its initial value), over the extended block.

    Arrays the reverse must not accumulate into (inputs outside `wrt`, which may carry a
    `.grad` of their own) are passed as views without a gradient companion."""
    info = block_info[None]
    halo = halo_widths(depth, boundary, tuple(info["chunk-location"]),
                       tuple(info["num-chunks"]))
    n = len(plan.names)
    args = list(values[:n])
    cotangents = values[n:]
    for position, kind in enumerate(plan.kinds):
        if position in plan.outputs:
            args[position] = cf.asarray(_start(plan, position, values[position]),
                                        copy=False, requires_grad=True)
        elif position in wrt:
            args[position] = cf.asarray(values[position], copy=False, requires_grad=True)
        elif kind != "value" and type(values[position]) is Array:
            args[position] = cf.asarray(values[position], copy=False)
    kernel(*args)
    for position, cotangent in zip(plan.outputs, cotangents, strict=True):
        seed = cotangent if plan.accumulator(position) else with_halo(cotangent, halo)
        args[position].grad[...] = seed
    kernel.grad(*args)
    return tuple(args[p].grad for p in wrt)
