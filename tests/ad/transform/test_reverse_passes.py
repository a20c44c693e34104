"""The passes that shorten reverse kernels: common subexpressions (cse.py) and the incoming
adjoint factored out of adjoint expressions (factor.py). Hand-built IR runs in the
interpreter before and after each pass; the reverse of the benchmark kernel is checked for
its one-multiply form and against a float64 reference."""

from __future__ import annotations

import numpy as np

import qdarray as qd
from qdarray import _dtypes
from qdarray.kernels import interp
from qdarray.kernels.emit import Emitter, block
from qdarray.kernels.ir import For, Instr, KernelIR, Op, Param, instrs
from qdarray.kernels.passes.cse import eliminate_common
from qdarray.kernels.passes.dce import eliminate
from qdarray.kernels.passes.factor import factor_adjoints
from qdarray.kernels.types import ArrayType

F32 = _dtypes.float32
I64 = _dtypes.int64


def _run(kernel: KernelIR, inp: np.ndarray, n_out: int) -> np.ndarray:
    out = np.zeros(n_out, np.float32)
    interp.run(kernel, interp.typed_arguments(kernel, [inp, out]))
    return out


def _kernel(build) -> tuple[KernelIR, Emitter, dict]:
    em = Emitter(0, 0)
    x = em.value(ArrayType(F32, 1))
    y = em.value(ArrayType(F32, 1))
    with em.region() as body:
        extra = build(em, x, y)
    k = KernelIR("k", (Param("x", x), Param("y", y)), block(body), body[0].loc, ())
    return k, em, extra


def _ops(kernel: KernelIR) -> list[Op]:
    return [i.op for i in instrs(kernel.body)]


def test_cse_merges_repeats_and_keeps_meaning():
    def build(em, x, y):
        a = em.emit(Op.LOAD, x, em.i64(0))
        b = em.emit(Op.LOAD, x, em.i64(1))
        p = em.emit(Op.MUL, a, b)
        q = em.emit(Op.MUL, b, a)                       # the same product, other order
        one = em.const(1.0, F32)
        r = em.emit(Op.MUL, em.emit(Op.ADD, p, q), one)  # x * 1
        em.emit(Op.STORE, y, em.i64(0), r)
        em.emit(Op.STORE, y, em.i64(1), em.emit(Op.ADD, a, em.const(0.0, F32)))
        em.emit(Op.STORE, y, em.i64(2), em.emit(Op.ADD, a, em.const(-0.0, F32)))
        var = em.var("t", F32)
        em.store_var(var, a)
        first = em.load_var(var)
        em.store_var(var, b)
        second = em.load_var(var)                       # not the same value as `first`
        em.emit(Op.STORE, y, em.i64(3), em.emit(Op.SUB, first, second))
        return {}

    k, _, _ = _kernel(build)
    after = KernelIR(k.name, k.params, eliminate_common(k.body), k.loc, ())
    inp = np.array([-0.0, 3.0], np.float32)
    before_out, after_out = _run(k, inp, 4), _run(after, inp, 4)
    np.testing.assert_array_equal(after_out, before_out)
    assert np.signbit(after_out[2]) and not np.signbit(after_out[1])  # -0.0 + -0.0 kept
    assert _ops(k).count(Op.MUL) == 3 and _ops(after).count(Op.MUL) == 1
    # x + 0.0 stays (it turns -0.0 into 0.0); x + -0.0 goes
    assert _ops(k).count(Op.ADD) == 3 and _ops(after).count(Op.ADD) == 2
    assert _ops(after).count(Op.LOAD_VAR) == 2


def test_factor_gives_one_multiply_of_the_seed():
    """adj = -g*(0.1*v) + (-g*v)*0.1 + g, as the rules build it for v - 0.1*v*v, stepped
    through a loop: after the pass each step is g * coefficient."""

    def build(em, x, y):
        adj = em.var("adj_v", F32)
        em.store_var(adj, em.emit(Op.LOAD, x, em.i64(1)))
        v = em.emit(Op.LOAD, x, em.i64(0))
        step = em.value(I64)
        with em.region() as body:
            g = em.load_var(adj)
            c = em.const(0.1, F32)
            cv = em.emit(Op.MUL, c, v)
            n = em.emit(Op.NEG, g)
            t1 = em.emit(Op.MUL, n, v)
            t2 = em.emit(Op.MUL, n, cv)
            total = em.emit(Op.ADD, em.emit(Op.ADD, t2, em.emit(Op.MUL, t1, c)), g)
            em.store_var(adj, total)
        em.stmt(For(step, em.i64(0), em.i64(5), block(body), False))
        em.emit(Op.STORE, y, em.i64(0), em.load_var(adj))
        return {"adj": adj}

    k, em, extra = _kernel(build)
    body = eliminate(factor_adjoints(k.body, em, {extra["adj"].id}, set()))
    after = KernelIR(k.name, k.params, eliminate_common(body), k.loc, ())
    inp = np.array([0.7, 1.5], np.float32)
    expect = 1.5 * (1 - 0.2 * 0.7) ** 5
    np.testing.assert_allclose(_run(k, inp, 1), [expect], rtol=1e-5)
    np.testing.assert_allclose(_run(after, inp, 1), [expect], rtol=1e-5)
    loop = next(s for s in after.body.stmts if isinstance(s, For))
    seed = next(i.result for i in loop.body.stmts if i.op is Op.LOAD_VAR)
    uses = [i for i in instrs(loop.body) if seed in i.args]
    assert [i.op for i in uses] == [Op.MUL]  # the seed is used once: g * coefficient
    store = loop.body.stmts[-1]
    assert isinstance(store, Instr) and store.op is Op.STORE_VAR and store.args[0] == uses[0].result


@qd.kernel
def _logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1],
              y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def _logistic_reference(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.empty(len(x))
    for k, (v, n) in enumerate(zip(x.astype(np.float64), a, strict=True)):
        d = 1.0
        for _ in range(n):
            d *= 1 - 0.2 * v
            v = v - 0.1 * v * v + 0.01
        out[k] = d
    return out


def test_reverse_of_the_benchmark_kernel(backend):
    rng = np.random.default_rng(3)
    xs = rng.random(64, dtype=np.float32)
    a_np = rng.integers(0, 40, 64).astype(np.int32)
    x = qd.asarray(xs, requires_grad=True)
    a = qd.asarray(a_np)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    y.grad[...] = 1.0
    if backend == "interp":
        _logistic.grad.interpret(x, a, y)
    else:
        _logistic.grad(x, a, y)
    np.testing.assert_allclose(np.asarray(x.grad), _logistic_reference(xs, a_np),
                               rtol=2e-5, atol=1e-6)
    rev = _logistic.grad.ir(x, a, y).kernel
    task = next(s for s in rev.body.stmts if isinstance(s, For))
    loops = [s for s in task.body.stmts if isinstance(s, For)]
    reverse_loop = loops[-1].body
    adj_stores = [i for i in reverse_loop.stmts
                  if isinstance(i, Instr) and i.op is Op.STORE_VAR
                  and i.attrs[0].name.startswith("adj_")]
    assert len(adj_stores) == 1  # written once per step, no zero store
    made = {i.result.id: i for i in reverse_loop.stmts if isinstance(i, Instr) and i.result}
    assert made[adj_stores[0].args[0].id].op is Op.MUL
