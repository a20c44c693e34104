"""sort, argsort and searchsorted as IR: a bitonic network and a binary search.

Sorting works on (key, original position) pairs of each row (R rows of n keys, padded to a
power of two p): `sort_init_kernel` copies the keys, `bitonic_kernel` is one compare-exchange
step (j, k) of the network, launched log2(p) (log2(p) + 1) / 2 times. Comparing positions on
equal keys makes the order stable; padding sorts after every key. NaN sorts after every
number, as in NumPy; descending order is the exact reverse of the value order with ties still
in original order, as the standard asks for `stable=True`.
"""

from __future__ import annotations

import functools

from ... import _dtypes
from ..._dtypes import DType
from ..emit import Emitter, KernelBuilder, block
from ..ir import For, If, KernelIR, Op, Value, While
from ..types import ArrayType


def goes_before(em: Emitter, a: Value, b: Value, descending: bool) -> Value:
    """Whether value a goes strictly before value b (NaN last ascending, first descending)."""
    if descending:
        a, b = b, a
    less = em.emit(Op.LT, a, b)
    if getattr(a.type, "kind", "") == "f":
        nan_b = em.emit(Op.BIT_AND, em.emit(Op.NOT, em.emit(Op.ISNAN, a)), em.emit(Op.ISNAN, b))
        less = em.emit(Op.BIT_OR, less, nan_b)
    return less  # type: ignore[no-any-return]


def _pair_before(em: Emitter, a: Value, ia: Value, b: Value, ib: Value, n: Value,
                 descending: bool) -> Value:
    """(a, ia) goes before (b, ib): padding (position >= n) last, then value, then position."""
    by_index = em.emit(Op.LT, ia, ib)
    pad = em.emit(Op.BIT_OR, em.emit(Op.GE, ia, n), em.emit(Op.GE, ib, n))
    after = goes_before(em, b, a, descending)
    by_value = em.emit(Op.BIT_OR, goes_before(em, a, b, descending),
                       em.emit(Op.BIT_AND, em.emit(Op.NOT, after), by_index))
    return em.emit(Op.SELECT, pad, by_index, by_value)  # type: ignore[no-any-return]


@functools.cache
def sort_init_kernel(t: DType) -> KernelIR:
    """keys[r, i] = x[r, i] (i < n), pos[r, i] = i; params x (R, n), keys, pos (R, p)."""
    k = KernelBuilder()
    em = k.em
    x = k.param("x", ArrayType(t, 2))
    keys = k.param("keys", ArrayType(t, 2))
    pos = k.param("pos", ArrayType(_dtypes.int64, 2))

    def body(r: Value, i: Value) -> None:
        em.emit(Op.STORE, pos, r, i, i)
        with em.region() as then:
            em.emit(Op.STORE, keys, r, i, em.emit(Op.LOAD, x, r, i))
        n = em.emit(Op.SHAPE, x, attrs=(1,))
        em.stmt(If(em.emit(Op.LT, i, n), block(then), block([])))

    k.nest([k.shape(keys, 0), k.shape(keys, 1)], lambda at: body(*at))
    return k.ir("qd_sort_init")


@functools.cache
def bitonic_kernel(t: DType, descending: bool) -> KernelIR:
    """One compare-exchange step (j, k) of the bitonic network over each row; params keys,
    pos (R, p), n, j, k."""
    kb = KernelBuilder()
    em = kb.em
    i64 = _dtypes.int64
    keys = kb.param("keys", ArrayType(t, 2))
    pos = kb.param("pos", ArrayType(i64, 2))
    n, j, kk = (kb.param(name, i64) for name in ("n", "j", "k"))

    def body(r: Value, i: Value) -> None:
        partner = em.emit(Op.BIT_XOR, i, j)
        with em.region() as exchange:
            ka, kp = em.emit(Op.LOAD, keys, r, i), em.emit(Op.LOAD, keys, r, partner)
            ia, ip = em.emit(Op.LOAD, pos, r, i), em.emit(Op.LOAD, pos, r, partner)
            rising = em.emit(Op.EQ, em.emit(Op.BIT_AND, i, kk), em.i64(0))
            swap = em.emit(Op.SELECT, rising, _pair_before(em, kp, ip, ka, ia, n, descending),
                           _pair_before(em, ka, ia, kp, ip, n, descending))
            with em.region() as then:
                em.emit(Op.STORE, keys, r, i, kp)
                em.emit(Op.STORE, keys, r, partner, ka)
                em.emit(Op.STORE, pos, r, i, ip)
                em.emit(Op.STORE, pos, r, partner, ia)
            em.stmt(If(swap, block(then), block([])))
        em.stmt(If(em.emit(Op.GT, partner, i), block(exchange), block([])))

    kb.nest([kb.shape(keys, 0), kb.shape(keys, 1)], lambda at: body(*at))
    return kb.ir("qd_bitonic_step")


@functools.cache
def search_kernel(t: DType, right: bool) -> KernelIR:
    """out[g] = the insertion point of v[g] in sorted s (left: before equal values, right:
    after them); params s (n,), v (total,), out (total,)."""
    k = KernelBuilder()
    em = k.em
    i64 = _dtypes.int64
    s = k.param("s", ArrayType(t, 1))
    v = k.param("v", ArrayType(t, 1))
    out = k.param("out", ArrayType(i64, 1))
    g = em.value(i64)
    with em.region() as body:
        b = em.emit(Op.LOAD, v, g)
        lo, hi = em.var("lo", i64), em.var("hi", i64)
        em.store_var(lo, em.i64(0))
        em.store_var(hi, em.emit(Op.SHAPE, s, attrs=(0,)))
        with em.region() as cond_body:
            cond = em.emit(Op.LT, em.load_var(lo), em.load_var(hi))
        with em.region() as step:
            low, high = em.load_var(lo), em.load_var(hi)
            mid = em.emit(Op.FLOORDIV, em.emit(Op.ADD, low, high), em.i64(2))
            a = em.emit(Op.LOAD, s, mid)
            if right:
                go = em.emit(Op.NOT, goes_before(em, b, a, False))
            else:
                go = goes_before(em, a, b, False)
            em.store_var(lo, em.emit(Op.SELECT, go, em.emit(Op.ADD, mid, em.i64(1)), low))
            em.store_var(hi, em.emit(Op.SELECT, go, high, mid))
        em.stmt(While(block(cond_body), cond, block(step)))
        em.emit(Op.STORE, out, g, em.load_var(lo))
    n = em.emit(Op.SHAPE, v, attrs=(0,))
    em.stmt(For(g, em.i64(0), n, block(body), True))
    return k.ir("qd_searchsorted")
