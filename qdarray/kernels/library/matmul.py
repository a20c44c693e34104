"""Batched matrix products as IR: one work-item per output element, reading both operands
through their strides (transposed and broadcast operands need no copies). A launch adds the
products of k in [k0, k1) to the sums the previous launch stored (to zero when k0 is 0), so
a long inner dimension runs as several launches, each loop bounded, with the same additions
in the same order as one loop."""

from __future__ import annotations

import functools

from ... import _dtypes
from ..._dtypes import DType
from ..emit import Emitter, block
from ..ir import For, If, KernelIR, Op, Param
from ..types import ArrayType
from . import complex_math, elementwise


@functools.cache
def matmul_kernel(t: DType, ndim: int) -> KernelIR:
    """out[..., i, j] (+)= sum over k in [k0, k1) of a[..., i, k] * b[..., k, j], accumulated
    in `t` in order of k; params a, b (broadcast to the batch shape, stride 0), out, all
    `ndim`-dimensional, then the int64 scalars k0 and k1."""
    em = Emitter(0, 0)
    i64 = _dtypes.int64
    params = []
    for name in ("a", "b", "out"):
        params.append(Param(name, em.value(ArrayType(t, ndim))))
    a, b, out = (p.value for p in params)
    k0, k1 = em.value(i64), em.value(i64)
    params += [Param("k0", k0), Param("k1", k1)]
    add, mul = elementwise.body("add"), elementwise.body("multiply")
    ends = [em.emit(Op.SHAPE, out, attrs=(d,)) for d in range(ndim)]
    idx = [em.value(i64) for _ in range(ndim)]
    with em.region() as body:
        acc = em.var("acc", t)
        em.store_var(acc, complex_math.constant(em, 0, t))
        with em.region() as resume:
            em.store_var(acc, em.emit(Op.LOAD, out, *idx))
        em.stmt(If(em.emit(Op.GT, k0, em.i64(0)), block(resume), block([])))
        k = em.value(i64)
        with em.region() as step:
            x = em.emit(Op.LOAD, a, *idx[:-1], k)
            y = em.emit(Op.LOAD, b, *idx[:-2], k, idx[-1])
            em.store_var(acc, add(em, t, [em.load_var(acc), mul(em, t, [x, y])]))
        em.stmt(For(k, k0, k1, block(step), False))
        em.emit(Op.STORE, out, *idx, em.load_var(acc))
    stmts = block(body)
    zero = em.i64(0)
    for d in range(ndim - 1, -1, -1):
        stmts = block([For(idx[d], zero, ends[d], stmts, True)])
    for s in stmts.stmts:
        em.stmt(s)
    return KernelIR("qd_matmul", tuple(params), block(em.out))


