"""Gathers and scatters through index arrays, and the compaction behind `nonzero`, as IR.

`index_kernel(spec)` covers NumPy's advanced indexing with any number of integer index
arrays (broadcast together), `take` and `take_along_axis`: for every index `o` of the
selection (a parallel nest over its shape), each index array `k` is read at the selection
dimensions `spec.bdims` (negative values count from the end of their axis), and element `o`
of the selection is element `[e_0, ..., e_{n-1}]` of `x`, where `e_a` is either a selection
index (`("out", d)`) or an index array's value (`("idx", k)`), per `spec.axes`. A gather
stores the element into `out[o]`; a scatter stores `value[o]` (converted) into the element.
Index arrays are checked on the host beforehand; with repeated indices a scatter writes one of
the values (which one is unspecified).

`nonzero_kernel(ndim)` writes the coordinates of each true flag at its rank among the true
flags (an inclusive scan of the flags, computed before), the kernel of `nonzero` and of
boolean-mask indexing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ... import _dtypes
from ..._dtypes import DType
from ..emit import KernelBuilder, block
from ..ir import If, KernelIR, Op, Value
from ..types import ArrayType


@dataclass(frozen=True)
class IndexSpec:
    """One gather or scatter (module docstring). `sel_ndim`: dimensions of the selection;
    `axes[a]`: what indexes axis `a` of `x`; `idx`: each index array's dtype (all with
    `len(bdims)` dimensions); `value`: the dtype of a scatter's value array (None: gather)."""

    x: DType
    sel_ndim: int
    axes: tuple[tuple[str, int], ...]
    idx: tuple[DType, ...]
    bdims: tuple[int, ...]
    value: DType | None = None


@functools.cache
def index_kernel(spec: IndexSpec) -> KernelIR:
    """The gather or scatter `spec` (module docstring). Parameters: `x`, then `out` (gather)
    or `value` (scatter; broadcast to the selection), then the index arrays."""
    b = KernelBuilder()
    em = b.em
    i64 = _dtypes.int64
    x = b.param("x", ArrayType(spec.x, len(spec.axes)))
    scatter = spec.value is not None
    sel = b.param("value" if scatter else "out",
                  ArrayType(spec.value if spec.value is not None else spec.x, spec.sel_ndim))
    arrays = [b.param(f"idx{k}", ArrayType(t, len(spec.bdims))) for k, t in enumerate(spec.idx)]

    def body(o: list[Value]) -> None:
        found = []
        for k, arr in enumerate(arrays):
            axis = next(a for a, (kind, j) in enumerate(spec.axes) if kind == "idx" and j == k)
            i = em.cast(em.emit(Op.LOAD, arr, *(o[d] for d in spec.bdims)), i64)
            n = em.emit(Op.SHAPE, x, attrs=(axis,))
            found.append(em.emit(Op.SELECT, em.emit(Op.LT, i, em.i64(0)),
                                 em.emit(Op.ADD, i, n), i))
        where = [o[j] if kind == "out" else found[j] for kind, j in spec.axes]
        if scatter:
            v = em.cast(em.emit(Op.LOAD, sel, *o), spec.x)
            em.emit(Op.STORE, x, *where, v)
        else:
            em.emit(Op.STORE, sel, *o, em.emit(Op.LOAD, x, *where))

    b.nest([b.shape(sel, d) for d in range(spec.sel_ndim)], body)
    return b.ir("qd_scatter" if scatter else "qd_gather")


@functools.cache
def nonzero_kernel(ndim: int) -> KernelIR:
    """coords[d, rank[i] - 1] = coordinate d of flat position i, for every true flags[i];
    params flags (N,) bool, rank (N,) int64 (inclusive scan of flags), coords (ndim, count),
    and the extents n_1 ... n_{ndim-1} of the flattened C-ordered array."""
    b = KernelBuilder()
    em = b.em
    i64 = _dtypes.int64
    flags = b.param("flags", ArrayType(_dtypes.bool, 1))
    rank = b.param("rank", ArrayType(i64, 1))
    coords = b.param("coords", ArrayType(i64, 2))
    extents = [b.param(f"n{d}", i64) for d in range(1, ndim)]

    def body(o: list[Value]) -> None:
        i = o[0]
        with em.region() as then:
            p = em.emit(Op.SUB, em.emit(Op.LOAD, rank, i), em.i64(1))
            r = i
            for d in range(ndim - 1, 0, -1):
                em.emit(Op.STORE, coords, em.i64(d), p, em.emit(Op.MOD, r, extents[d - 1]))
                r = em.emit(Op.FLOORDIV, r, extents[d - 1])
            em.emit(Op.STORE, coords, em.i64(0), p, r)
        em.stmt(If(em.emit(Op.LOAD, flags, i), block(then), block([])))

    b.nest([b.shape(flags, 0)], body)
    return b.ir("qd_nonzero")
