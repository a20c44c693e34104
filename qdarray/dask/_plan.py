"""What a blockwise launch does with each kernel argument, checked before any graph is built.

A kernel's arguments are bound to its parameters by name. Each one is:

- *blocked*: a Dask array; each block's launch gets the matching block (all blocked arguments
  have the same number of dimensions and the same grid of blocks);
- *whole*: a qdarray or NumPy array, passed whole to every block's launch;
- a *value*: anything else (scalars, dataclasses), passed as it is.

The parameters named by `out=` are what the kernel writes. A blocked output is a *blockwise*
result: each launch writes a copy of its block. A whole output is an *accumulator*: each
launch adds into its own zero-filled copy, and the result is the initial value plus the sum
over blocks (`combine="sum"`), or the maximum / minimum of copies of the initial value that
each launch updated (`combine="max"` / `"min"`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np

from .._array import Array

COMBINES = ("sum", "max", "min")


@dataclass(frozen=True)
class Plan:
    """The kinds of a kernel's arguments and its outputs (pickled into every block's task)."""

    names: tuple[str, ...]  # the kernel's parameters, in order
    kinds: tuple[str, ...]  # "blocked", "whole" or "value", per parameter
    outputs: tuple[int, ...]  # parameter positions of `out=`, in its order
    combine: str  # how accumulators combine: "sum", "max" or "min"

    def accumulator(self, position: int) -> bool:
        return self.kinds[position] == "whole"


def names_of(value: str | tuple[str, ...] | list[str], what: str) -> tuple[tuple[str, ...], bool]:
    """`out=` or `wrt=` as a tuple of parameter names, and whether one name was given alone."""
    if isinstance(value, str):
        return (value,), True
    if isinstance(value, tuple | list) and value and all(isinstance(v, str) for v in value):
        return tuple(value), False
    raise TypeError(f"{what}= takes a parameter name or a tuple of names; got {value!r}.")


def bind(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
         out: str | tuple[str, ...] | list[str], combine: str) -> tuple[Plan, list[Any]]:
    """The Plan of a launch of `kernel` on `args`/`kwargs`, and the arguments in order."""
    fn = getattr(kernel, "fn", None)
    if fn is None or not hasattr(kernel, "grad"):
        raise TypeError(f"map_kernel takes a @qd.kernel; got {kernel!r}. Decorate the function "
                        "with @qd.kernel.")
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{kernel.__name__}(): {exc}.") from None
    bound.apply_defaults()
    names = tuple(bound.arguments)
    values = list(bound.arguments.values())
    kinds = tuple(_kind(v) for v in values)
    out_names, _ = names_of(out, "out")
    outputs = []
    for name in out_names:
        if name not in names:
            raise ValueError(f"out={name!r} is not a parameter of {kernel.__name__}(); its "
                             f"parameters are {', '.join(names)}.")
        position = names.index(name)
        if kinds[position] == "value":
            raise TypeError(f"out={name!r}: {kernel.__name__}() got a "
                            f"{type(values[position]).__name__} for it; an output is a Dask "
                            "array (a blockwise result) or a qdarray array (an accumulator).")
        outputs.append(position)
    if len(set(outputs)) != len(outputs):
        raise ValueError(f"out= names a parameter twice: {out_names}.")
    if combine not in COMBINES:
        raise ValueError(f"combine={combine!r}: use one of {', '.join(map(repr, COMBINES))}.")
    blocked = [i for i, k in enumerate(kinds) if k == "blocked"]
    if not blocked:
        raise ValueError(f"{kernel.__name__}(): no argument is a Dask array, so there are no "
                         "blocks to launch on. Use dask.array.from_array(x, chunks=...) for the "
                         "array to split.")
    return Plan(names, kinds, tuple(outputs), combine), values


def _kind(value: Any) -> str:
    if isinstance(value, da.Array):
        return "blocked"
    if type(value) is Array or type(value) is np.ndarray:
        return "whole"
    return "value"


def check_grid(kernel: str, plan: Plan, values: list[Any]) -> None:
    """Blocked arguments must have one number of dimensions, one grid of blocks, and the same
    chunks along every axis split into more than one block."""
    arrays = [(plan.names[i], values[i]) for i, k in enumerate(plan.kinds) if k == "blocked"]
    first_name, first = arrays[0]
    for name, x in arrays[1:]:
        if x.ndim != first.ndim or x.numblocks != first.numblocks:
            raise ValueError(
                f"{kernel}(): the Dask arrays '{first_name}' (shape {first.shape}, blocks "
                f"{first.numblocks}) and '{name}' (shape {x.shape}, blocks {x.numblocks}) "
                "do not split into the same grid of blocks. Use x.rechunk(...) so that every "
                "Dask argument has the same number of blocks along each axis.")
        for axis, (c0, c1) in enumerate(zip(first.chunks, x.chunks, strict=True)):
            # A split axis: block k of each argument must cover the same indices, or the
            # launch on block k reads past the end of the shorter one. An axis in one block
            # is given whole to every launch, and may differ.
            if len(c0) > 1 and c0 != c1:
                raise ValueError(
                    f"{kernel}(): the Dask arrays '{first_name}' (shape {first.shape}, chunks "
                    f"{first.chunks}) and '{name}' (shape {x.shape}, chunks {x.chunks}) split "
                    f"axis {axis} into blocks of other lengths, so a launch would get blocks "
                    "of different sizes and read past the end of the shorter one. Use arrays "
                    "of one length along each split axis, and x.rechunk(...) to give them the "
                    "same chunks.")


def unify(values: list[Any], plan: Plan) -> list[Any]:
    """Blocked arguments of one shape rechunked to common chunks (as Dask's map_blocks does)."""
    blocked = [i for i, k in enumerate(plan.kinds) if k == "blocked"]
    if len({values[i].shape for i in blocked}) != 1 or len(blocked) < 2:
        return values
    pairs: list[Any] = []
    for i in blocked:
        pairs += [values[i], tuple(range(values[i].ndim))]
    _, arrays = da.core.unify_chunks(*pairs)
    out = list(values)
    for i, x in zip(blocked, arrays, strict=True):
        out[i] = x
    return out


def depth_of(depth: Any, ndim: int) -> dict[int, int]:
    """`depth=` as {axis: halo width} (an int for every axis, a tuple or a dict by axis)."""
    if depth is None:
        return dict.fromkeys(range(ndim), 0)
    if isinstance(depth, bool | np.bool_):
        raise ValueError(f"depth={depth!r}: give an int, a tuple of {ndim} ints or a dict "
                         "{axis: int} (the halo width on both sides of each block).")
    if isinstance(depth, int | np.integer):
        out = dict.fromkeys(range(ndim), int(depth))
    elif isinstance(depth, tuple) and len(depth) == ndim:
        out = dict(enumerate(depth))
    elif isinstance(depth, dict) and all(0 <= k < ndim for k in depth):
        out = {ax: depth.get(ax, 0) for ax in range(ndim)}
    else:
        raise ValueError(f"depth={depth!r}: give an int, a tuple of {ndim} ints or a dict "
                         "{axis: int} (the halo width on both sides of each block).")
    for ax, d in out.items():
        if not isinstance(d, int | np.integer) or isinstance(d, bool | np.bool_) or d < 0:
            raise ValueError(f"depth={depth!r}: axis {ax} has {d!r}; halo widths are "
                             "non-negative ints, the same on both sides of a block.")
    return {ax: int(d) for ax, d in out.items()}


def boundary_of(boundary: Any, ndim: int) -> dict[int, Any]:
    """`boundary=` as {axis: kind}: "none", "periodic", "reflect", "nearest" or a constant."""
    if isinstance(boundary, dict):
        out = {ax: boundary.get(ax, "none") for ax in range(ndim)}
    elif isinstance(boundary, tuple) and len(boundary) == ndim:
        out = dict(enumerate(boundary))
    else:
        out = dict.fromkeys(range(ndim), boundary)
    for ax, kind in out.items():
        if isinstance(kind, str) and kind not in ("none", "periodic", "reflect", "nearest"):
            raise ValueError(f"boundary={boundary!r}: axis {ax} has {kind!r}; use 'none', "
                             "'periodic', 'reflect', 'nearest' or a number (a constant halo).")
    return out
