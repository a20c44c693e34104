"""Reductions, arg-reductions and scans over an (M, K) strided view, as IR.

The caller views its input as M rows of K elements, reduced along K (any strides: the
reduced axes of a NumPy-style reduction, merged). Reductions run in two kernels:

    partials:  parallel (m, j) in (M, G):  part[m, j] = op over x[m, j], x[m, j + G], ...
    final:     parallel m in M:            out[m] = op over part[m, 0..G)

with G chosen by the caller so the device is full even when M is 1 (`partials` may run again
on its own output while G is large). Work-item order is a layout flag: with `m_fast` the row
index varies fastest between neighbouring work-items (coalesced when rows are adjacent in
memory, as in a reduction over axis 0 of a C-ordered matrix), else the position within the
row. Arg-reductions keep (value, index) pairs, and NaN wins (the first one), as in NumPy.

Scans (cumulative sum and product) split each row into G chunks: chunk totals, an exclusive
scan over the G totals of each row, then each chunk rescanned from its offset.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _dtypes
from ..._dtypes import DType
from ..emit import Emitter, KernelBuilder, block
from ..ir import For, If, KernelIR, Op, Value
from ..types import ArrayType
from . import complex_math, elementwise

Combine = Callable[[Emitter, DType, Value, Value], Value]


def _body(name: str) -> Combine:
    fn = elementwise.body(name)
    return lambda em, t, a, b: fn(em, t, [a, b])


def _count(em: Emitter, t: DType, acc: Value, v: Value) -> Value:
    return em.emit(Op.ADD, acc, em.cast(em.cast(v, _dtypes.bool), t))  # type: ignore[no-any-return]


def _logical(op: Op) -> Combine:
    return lambda em, t, a, b: em.emit(op, a, em.cast(b, _dtypes.bool))


COMBINE: dict[str, Combine] = {
    "sum": _body("add"), "prod": _body("multiply"), "max": _body("maximum"),
    "min": _body("minimum"), "all": _logical(Op.BIT_AND), "any": _logical(Op.BIT_OR),
    "count_nonzero": _count,
}


def identity(op: str, t: DType) -> Any:
    """The value a reduction starts from (max: the lowest value of `t`, min: the highest)."""
    if op in ("sum", "count_nonzero"):
        return 0
    if op == "prod":
        return 1
    if op in ("all", "any"):
        return op == "all"
    high = op == "min"
    if t.kind == "f":
        return float("inf") if high else float("-inf")
    if t.kind == "b":
        return high
    info = np.iinfo(t._np)
    return int(info.max if high else info.min)


@dataclass(frozen=True)
class ReduceSpec:
    """One reduction kernel: `op` over elements of `src` accumulated in `acc`."""

    op: str
    src: DType
    acc: DType
    m_fast: bool = False
    # prod: whether part[m, 0] starts from the identity (the first level of partials) or
    # from its first element (partials of partials), see `partials_kernel`
    seeded: bool = True


class _Kernel(KernelBuilder):
    """A kernel over the (rows, columns) of one array's shape."""

    def grid(self, rows: Value, cols: Value, m_fast: bool, body: Callable[[Value, Value], None]
             ) -> None:
        """A 2-D parallel nest `body(m, j)`; the row index m innermost when `m_fast`."""
        em = self.em
        m, j = em.value(self.i64), em.value(self.i64)
        zero = em.i64(0)
        with em.region() as inner:
            body(m, j)
        outer_index, outer_end, inner_index, inner_end = (j, cols, m, rows) if m_fast else (
            m, rows, j, cols)
        loop = For(inner_index, zero, inner_end, block(inner), True)
        em.stmt(For(outer_index, zero, outer_end, block([loop]), True))

    def rows(self, rows: Value, body: Callable[[Value], None]) -> None:
        self.loop(self.c(0), rows, body, parallel=True)


def _strided_count(em: Emitter, n: Value, j: Value, g: Value) -> Value:
    """How many of j, j + g, j + 2g, ... lie below n."""
    one = em.i64(1)
    return em.emit(Op.FLOORDIV,  # type: ignore[no-any-return]
                   em.emit(Op.ADD, em.emit(Op.SUB, n, j), em.emit(Op.SUB, g, one)), g)


@functools.cache
def partials_kernel(spec: ReduceSpec) -> KernelIR:
    """part[m, j] = op over x[m, j + t G] (module docstring); params x (M, K), part (M, G)."""
    k = _Kernel()
    em, acc_t = k.em, spec.acc
    x = k.param("x", ArrayType(spec.src, 2))
    part = k.param("part", ArrayType(acc_t, 2))
    rows, n, g = k.shape(x, 0), k.shape(x, 1), k.shape(part, 1)
    combine = COMBINE[spec.op]

    def body(m: Value, j: Value) -> None:
        acc = k.local("acc", acc_t, complex_math.constant(em, identity(spec.op, acc_t), acc_t))
        count = _strided_count(em, n, j, g)
        start = k.local("start", _dtypes.int64, em.i64(0))
        if spec.op == "prod":
            # A product multiplies by the identity once, first, as NumPy's does: 1 * (-0 - 0j)
            # is (0 - 0j), and a second multiplication would make it (0 + 0j). So only the
            # first partial of the first level starts from 1; every other partial starts
            # from its first element (there is one: the caller's G is at most the row).
            seeded = em.emit(Op.EQ, j, em.i64(0)) if spec.seeded else em.const(False,
                                                                             _dtypes.bool)
            with em.region() as from_first:
                em.store_var(acc, em.cast(em.emit(Op.LOAD, x, m, j), acc_t))
                em.store_var(start, em.i64(1))
            em.stmt(If(em.emit(Op.BIT_AND, em.emit(Op.NOT, seeded),
                                em.emit(Op.GT, count, em.i64(0))), block(from_first), block([])))

        def step(t: Value) -> None:
            i = em.emit(Op.ADD, j, em.emit(Op.MUL, t, g))
            v = em.emit(Op.LOAD, x, m, i)
            if spec.op != "count_nonzero":
                v = em.cast(v, acc_t)
            em.store_var(acc, combine(em, acc_t, em.load_var(acc), v))

        k.loop(em.load_var(start), count, step)
        em.emit(Op.STORE, part, m, j, em.load_var(acc))

    k.grid(rows, g, spec.m_fast, body)
    return k.ir(f"qd_reduce_{spec.op}")


@functools.cache
def final_kernel(op: str, acc_t: DType, out_t: DType) -> KernelIR:
    """out[m] = op over part[m, :]; params part (M, G), out (M,)."""
    k = _Kernel()
    em = k.em
    part = k.param("part", ArrayType(acc_t, 2))
    out = k.param("out", ArrayType(out_t, 1))
    g = k.shape(part, 1)
    combine = COMBINE["sum" if op == "count_nonzero" else op]

    def body(m: Value) -> None:
        if op == "prod":  # the identity is in part[m, 0] already (partials_kernel)
            acc = k.local("acc", acc_t, em.emit(Op.LOAD, part, m, em.i64(0)))
            first = em.i64(1)
        else:
            acc = k.local("acc", acc_t, complex_math.constant(em, identity(op, acc_t), acc_t))
            first = em.i64(0)
        k.loop(first, g, lambda j: em.store_var(
            acc, combine(em, acc_t, em.load_var(acc), em.emit(Op.LOAD, part, m, j))))
        em.emit(Op.STORE, out, m, em.cast(em.load_var(acc), out_t))

    k.rows(k.shape(part, 0), body)
    return k.ir(f"qd_reduce_final_{op}")


# -- argmax / argmin ---------------------------------------------------------------------------


def _better(em: Emitter, op: str, v: Value, i: Value, bv: Value, bi: Value) -> Value:
    """Whether (v, i) replaces the best (bv, bi) so far: larger (argmax) / smaller value, the
    first NaN, and on ties the smaller index; anything replaces an empty best (bi < 0)."""
    cmp = Op.GT if op == "argmax" else Op.LT
    t = v.type
    wins = em.emit(cmp, v, bv)
    tie = em.emit(Op.EQ, v, bv)
    if getattr(t, "kind", "") == "f":
        v_nan, b_nan = em.emit(Op.ISNAN, v), em.emit(Op.ISNAN, bv)
        wins = em.emit(Op.BIT_OR, em.emit(Op.BIT_AND, v_nan, em.emit(Op.NOT, b_nan)),
                       em.emit(Op.BIT_AND, em.emit(Op.NOT, b_nan), wins))
        tie = em.emit(Op.BIT_OR, tie, em.emit(Op.BIT_AND, v_nan, b_nan))
    earlier = em.emit(Op.LT, i, bi)
    better = em.emit(Op.BIT_OR, wins, em.emit(Op.BIT_AND, tie, earlier))
    return em.emit(Op.BIT_OR, em.emit(Op.LT, bi, em.i64(0)), better)  # type: ignore[no-any-return]


def _update(k: _Kernel, op: str, v: Value, i: Value, best: Any, where: Any) -> None:
    em = k.em
    better = _better(em, op, v, i, em.load_var(best), em.load_var(where))
    with em.region() as then:
        em.store_var(best, v)
        em.store_var(where, i)
    em.stmt(If(better, block(then), block([])))


@functools.cache
def arg_partials_kernel(op: str, t: DType, m_fast: bool) -> KernelIR:
    """(pv, pi)[m, j] = best (value, index) of x[m, j + t G]; params x, pv, pi."""
    k = _Kernel()
    em = k.em
    x = k.param("x", ArrayType(t, 2))
    pv = k.param("pv", ArrayType(t, 2))
    pi = k.param("pi", ArrayType(_dtypes.int64, 2))
    n, g = k.shape(x, 1), k.shape(pv, 1)

    def body(m: Value, j: Value) -> None:
        best = k.local("best", t, em.const(0, t))
        where = k.local("where", _dtypes.int64, em.i64(-1))

        def step(s: Value) -> None:
            i = em.emit(Op.ADD, j, em.emit(Op.MUL, s, g))
            _update(k, op, em.emit(Op.LOAD, x, m, i), i, best, where)

        k.loop(em.i64(0), _strided_count(em, n, j, g), step)
        em.emit(Op.STORE, pv, m, j, em.load_var(best))
        em.emit(Op.STORE, pi, m, j, em.load_var(where))

    k.grid(k.shape(x, 0), g, m_fast, body)
    return k.ir(f"qd_{op}")


@functools.cache
def arg_merge_kernel(op: str, t: DType) -> KernelIR:
    """(pv2, pi2)[m, j] = the best pair of (pv, pi)[m, j + s G2]; params pv, pi (M, G),
    pv2, pi2 (M, G2). Pairs with index -1 (empty) are skipped."""
    k = _Kernel()
    em = k.em
    pv = k.param("pv", ArrayType(t, 2))
    pi = k.param("pi", ArrayType(_dtypes.int64, 2))
    pv2 = k.param("pv2", ArrayType(t, 2))
    pi2 = k.param("pi2", ArrayType(_dtypes.int64, 2))
    n, g = k.shape(pv, 1), k.shape(pv2, 1)

    def body(m: Value, j: Value) -> None:
        best = k.local("best", t, em.const(0, t))
        where = k.local("where", _dtypes.int64, em.i64(-1))

        def step(s: Value) -> None:
            at = em.emit(Op.ADD, j, em.emit(Op.MUL, s, g))
            i = em.emit(Op.LOAD, pi, m, at)
            with em.region() as then:
                _update(k, op, em.emit(Op.LOAD, pv, m, at), i, best, where)
            em.stmt(If(em.emit(Op.GE, i, em.i64(0)), block(then), block([])))

        k.loop(em.i64(0), _strided_count(em, n, j, g), step)
        em.emit(Op.STORE, pv2, m, j, em.load_var(best))
        em.emit(Op.STORE, pi2, m, j, em.load_var(where))

    k.grid(k.shape(pv, 0), g, False, body)
    return k.ir(f"qd_{op}_merge")


@functools.cache
def arg_final_kernel(op: str, t: DType) -> KernelIR:
    """out[m] = the index of the best pair of row m; params pv, pi (M, G), out (M,)."""
    k = _Kernel()
    em = k.em
    pv = k.param("pv", ArrayType(t, 2))
    pi = k.param("pi", ArrayType(_dtypes.int64, 2))
    out = k.param("out", ArrayType(_dtypes.int64, 1))
    g = k.shape(pv, 1)

    def body(m: Value) -> None:
        best = k.local("best", t, em.const(0, t))
        where = k.local("where", _dtypes.int64, em.i64(-1))

        def step(j: Value) -> None:
            i = em.emit(Op.LOAD, pi, m, j)
            with em.region() as then:
                _update(k, op, em.emit(Op.LOAD, pv, m, j), i, best, where)
            em.stmt(If(em.emit(Op.GE, i, em.i64(0)), block(then), block([])))

        k.loop(em.i64(0), g, step)
        em.emit(Op.STORE, out, m, em.load_var(where))

    k.rows(k.shape(pv, 0), body)
    return k.ir(f"qd_{op}_final")


# -- scans -------------------------------------------------------------------------------------


def _chunk(k: _Kernel, j: Value, chunk: Value, n: Value) -> tuple[Value, Value]:
    em = k.em
    lo = em.emit(Op.MUL, j, chunk)
    hi = em.emit(Op.MIN, em.emit(Op.ADD, lo, chunk), n)
    return lo, hi


def scan_identity(op: str, t: DType) -> Any:
    """The value a scan's running total starts from: for float and complex sums -0.0, the
    one that adds to every value exactly (0.0 + -0.0 would lose the sign of a first -0.0,
    which NumPy's cumulative sum keeps)."""
    if op == "sum" and t.kind in "fc":
        return complex(-0.0, -0.0) if t.kind == "c" else -0.0
    return identity(op, t)


@functools.cache
def scan_totals_kernel(op: str, src: DType, t: DType) -> KernelIR:
    """tot[m, j] = op over chunk j of row m; params x (M, K), tot (M, G), chunk."""
    k = _Kernel()
    em = k.em
    x = k.param("x", ArrayType(src, 2))
    tot = k.param("tot", ArrayType(t, 2))
    chunk = k.param("chunk", _dtypes.int64)
    combine = COMBINE[op]

    def body(m: Value, j: Value) -> None:
        acc = k.local("acc", t, complex_math.constant(em, scan_identity(op, t), t))
        lo, hi = _chunk(k, j, chunk, k.shape(x, 1))
        k.loop(lo, hi, lambda i: em.store_var(acc, combine(
            em, t, em.load_var(acc), em.cast(em.emit(Op.LOAD, x, m, i), t))))
        em.emit(Op.STORE, tot, m, j, em.load_var(acc))

    k.grid(k.shape(x, 0), k.shape(tot, 1), False, body)
    return k.ir(f"qd_scan_totals_{op}")


@functools.cache
def scan_offsets_kernel(op: str, t: DType) -> KernelIR:
    """Each row of tot replaced by its exclusive scan; params tot (M, G)."""
    k = _Kernel()
    em = k.em
    tot = k.param("tot", ArrayType(t, 2))
    combine = COMBINE[op]

    def body(m: Value) -> None:
        acc = k.local("acc", t, complex_math.constant(em, scan_identity(op, t), t))

        def step(j: Value) -> None:
            v = em.emit(Op.LOAD, tot, m, j)
            em.emit(Op.STORE, tot, m, j, em.load_var(acc))
            em.store_var(acc, combine(em, t, em.load_var(acc), v))

        k.loop(em.i64(0), k.shape(tot, 1), step)

    k.rows(k.shape(tot, 0), body)
    return k.ir(f"qd_scan_offsets_{op}")


@functools.cache
def scan_kernel(op: str, src: DType, t: DType, initial: bool) -> KernelIR:
    """out[m, i + initial] = op over x[m, :i + 1], each chunk from its offset in tot (and
    out[m, 0] = the identity when `initial`); params x (M, K), tot (M, G), out, chunk."""
    k = _Kernel()
    em = k.em
    x = k.param("x", ArrayType(src, 2))
    tot = k.param("tot", ArrayType(t, 2))
    out = k.param("out", ArrayType(t, 2))
    chunk = k.param("chunk", _dtypes.int64)
    combine = COMBINE[op]
    shift = 1 if initial else 0

    def body(m: Value, j: Value) -> None:
        acc = k.local("acc", t, em.emit(Op.LOAD, tot, m, j))
        if initial:
            with em.region() as first:
                em.emit(Op.STORE, out, m, em.i64(0),
                        complex_math.constant(em, identity(op, t), t))
            em.stmt(If(em.emit(Op.EQ, j, em.i64(0)), block(first), block([])))
        lo, hi = _chunk(k, j, chunk, k.shape(x, 1))

        def step(i: Value) -> None:
            v = combine(em, t, em.load_var(acc), em.cast(em.emit(Op.LOAD, x, m, i), t))
            em.store_var(acc, v)
            em.emit(Op.STORE, out, m, em.emit(Op.ADD, i, em.i64(shift)), v)

        k.loop(lo, hi, step)

    k.grid(k.shape(x, 0), k.shape(tot, 1), False, body)
    return k.ir(f"qd_scan_{op}")
