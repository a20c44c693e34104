"""The transpose of Dask's `overlap`: gradients over extended blocks summed back into blocks.

`overlap` copies `depth` elements of each neighbouring block (and, at the array's edges, the
boundary's values: the other end for "periodic", a mirror for "reflect", the edge element for
"nearest", a constant) into every block's halo. Every element of an extended block is thus
one element of the array, or a constant. The gradient of a halo element belongs to the
element it copies: this module adds each extended block's gradient into the blocks its
elements came from. It is separable by axis: along one axis, each extended block has three
parts, each mapped to one block as a slice (copied), a reversed slice ("reflect"), or summed
into one element ("nearest"); constant halos are dropped. In n dimensions a part of an
extended block is a product of per-axis parts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
from dask.highlevelgraph import HighLevelGraph

from .. import _creation_functions as cf
from .. import _manipulation_functions as mf
from .. import _statistical_functions as st
from .._array import Array
from ._blocks import halo_widths


@dataclass(frozen=True)
class Part:
    """One part of an extended block along one axis: `source` positions of the extended block
    go to `target` positions of block `block` ("copy"), reversed ("reverse"), or summed into
    one element ("sum")."""

    source: slice
    block: int
    target: slice
    mode: str


@dataclass(frozen=True)
class Piece:
    """A part of an extended block in n dimensions: which dependency (`index` into the task's
    blocks), its per-axis source slices and modes, and the target slices in the block."""

    index: int
    source: tuple[slice, ...]
    target: tuple[slice, ...]
    modes: tuple[str, ...]


def _axis_parts(core: tuple[int, ...], d: int, kind: Any, b: int) -> list[Part]:
    """The parts of extended block `b` along one axis of core chunks `core`."""
    count = len(core)
    outer = not (isinstance(kind, str) and kind == "none")
    left = d if b > 0 or outer else 0
    parts = [Part(slice(left, left + core[b]), b, slice(0, core[b]), "copy")]
    if not d:
        return parts
    last = count - 1
    if left:
        src = slice(0, d)
        if b > 0:
            parts.append(Part(src, b - 1, slice(core[b - 1] - d, core[b - 1]), "copy"))
        elif kind == "periodic":
            parts.append(Part(src, last, slice(core[last] - d, core[last]), "copy"))
        elif kind == "reflect":
            parts.append(Part(src, 0, slice(0, d), "reverse"))
        elif kind == "nearest":
            parts.append(Part(src, 0, slice(0, 1), "sum"))
    if b < last or outer:
        src = slice(left + core[b], left + core[b] + d)
        if b < last:
            parts.append(Part(src, b + 1, slice(0, d), "copy"))
        elif kind == "periodic":
            parts.append(Part(src, 0, slice(0, d), "copy"))
        elif kind == "reflect":
            parts.append(Part(src, last, slice(core[last] - d, core[last]), "reverse"))
        elif kind == "nearest":
            parts.append(Part(src, last, slice(core[last] - 1, core[last]), "sum"))
    return parts


def core_chunks(ext: tuple[tuple[int, ...], ...], depth: dict[int, int],
                boundary: dict[int, Any]) -> tuple[tuple[int, ...], ...]:
    """The chunks of the blocks before `overlap` extended them to `ext`."""
    counts = tuple(len(c) for c in ext)
    out: list[list[int]] = [[] for _ in ext]
    for ax, chunks in enumerate(ext):
        for j, n in enumerate(chunks):
            location = tuple(j if a == ax else 0 for a in range(len(ext)))
            left, right = halo_widths(depth, boundary, location, counts)[ax]
            out[ax].append(n - left - right)
    return tuple(tuple(c) for c in out)


def add_pieces(shape: tuple[int, ...], pieces: list[Piece], blocks: list[Any]) -> Any:
    """One block of the transpose: the sum of `pieces` of the extended blocks `blocks`."""
    first = blocks[0]
    out: Any
    if type(first) is Array:
        out = cf.zeros(shape, dtype=first.dtype, device=first.device)
    else:
        out = np.zeros(shape, dtype=first.dtype)
    for piece in pieces:
        part = blocks[piece.index][piece.source]
        for ax, mode in enumerate(piece.modes):
            if mode == "reverse":
                part = mf.flip(part, axis=ax) if type(part) is Array else np.flip(part, ax)
            elif mode == "sum":
                part = (st.sum(part, axis=ax, keepdims=True) if type(part) is Array
                        else part.sum(axis=ax, keepdims=True))
        out[piece.target] = out[piece.target] + part
    return out


def transpose_overlap(g: da.Array, depth: dict[int, int], boundary: dict[int, Any]) -> da.Array:
    """The gradient of the blocks from `g`, the gradient of the blocks extended by
    `overlap(x, depth, boundary)`: every extended element's gradient added into the element
    it is a copy of."""
    core = core_chunks(g.chunks, depth, boundary)
    counts = tuple(len(c) for c in core)
    incoming: dict[tuple[int, ...], list[tuple[tuple[int, ...], Piece]]] = {}
    for ext_index in itertools.product(*(range(n) for n in counts)):
        per_axis = [_axis_parts(core[ax], depth.get(ax, 0), boundary[ax], b)
                    for ax, b in enumerate(ext_index)]
        for parts in itertools.product(*per_axis):
            target = tuple(p.block for p in parts)
            piece = Piece(-1, tuple(p.source for p in parts), tuple(p.target for p in parts),
                          tuple(p.mode for p in parts))
            incoming.setdefault(target, []).append((ext_index, piece))
    name = "overlap-transpose-" + da.core.tokenize(g, depth, boundary)
    graph: dict[Any, Any] = {}
    for target, sources in incoming.items():
        keys: list[tuple[Any, ...]] = []
        pieces = []
        for ext_index, piece in sources:
            key = (g.name, *ext_index)
            if key not in keys:
                keys.append(key)
            pieces.append(Piece(keys.index(key), piece.source, piece.target, piece.modes))
        shape = tuple(core[ax][b] for ax, b in enumerate(target))
        graph[(name, *target)] = (add_pieces, shape, pieces, keys)
    layer = HighLevelGraph.from_collections(name, graph, dependencies=[g])
    return da.Array(layer, name, core, meta=g._meta)
