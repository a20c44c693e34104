"""The max-reducer kernels against brute force: random size expressions on the interpreter,
large chunked launches (several chunks, rows split between chunks) on numba."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qdarray as qd
from qdarray import _dtypes
from qdarray.ad.sizing.at_launch import Sizer
from qdarray.ad.sizing.bounds import Arg, Bin, Const, LoopVar, MaxOverRange, Read, Shape, subexprs
from qdarray.ad.sizing.max_reducer import Reducer, Unsized, chain_of, split
from qdarray.backends.cpu.target import PARALLEL_MIN
from qdarray.backends.cpu.target import TARGET as CPU_TARGET
from qdarray.kernels.interp import INTERP
from qdarray.kernels.ir import Block, KernelIR, Param, Value
from qdarray.kernels.types import ArrayType

A = np.array([3, 0, 5, 2, 6, 1], np.int32)
B = np.array([2, 7, 1, 4], np.int64)
C = np.array([[1, 4, 0], [6, 2, 3]], np.int8)
K = 4
VALUES = {"a": A, "b": B, "c": C, "k": K}
TYPES = {"a": ArrayType(_dtypes.int32, 1), "b": ArrayType(_dtypes.int64, 1),
         "c": ArrayType(_dtypes.int8, 2), "k": _dtypes.int64}


class OutOfBounds(Exception):
    pass


def reference(e, env):
    """Brute-force value of a size expression (Python ints)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Arg):
        return VALUES[e.name]
    if isinstance(e, Shape):
        return VALUES[e.name].shape[e.axis]
    if isinstance(e, LoopVar):
        return env[e.id]
    if isinstance(e, Read):
        arr = VALUES[e.name]
        idx = tuple(reference(i, env) for i in e.index)
        if any(not 0 <= i < n for i, n in zip(idx, arr.shape, strict=True)):
            raise OutOfBounds
        return int(arr[idx])
    if isinstance(e, Bin):
        a, b = reference(e.a, env), reference(e.b, env)
        ops = {"+": a + b, "-": a - b, "*": a * b, "max": max(a, b), "min": min(a, b)}
        return (a // b if b else 0) if e.op == "//" else ops[e.op]
    lo, hi = reference(e.begin, env), reference(e.end, env)
    vals = [reference(e.body, {**env, e.var.id: v}) for v in range(lo, hi)]
    return max(vals) if vals else 0


_IDS = iter(range(1000, 10**9))


@st.composite
def index(draw, loop_vars):
    """An index expression: a loop variable, plus a constant, or a constant."""
    if loop_vars and draw(st.booleans()):
        v = draw(st.sampled_from(loop_vars))
        off = draw(st.integers(-1, 1))
        return v if off == 0 else Bin("+", v, Const(off))
    return Const(draw(st.integers(0, 2)))


@st.composite
def bounded(draw, loop_vars, depth):
    """A small non-negative range end: a read, a shape or a constant."""
    kind = draw(st.sampled_from(["read", "shape", "const"] if depth else ["shape", "const"]))
    if kind == "read":
        return Read("a", (draw(index(loop_vars)),))
    if kind == "shape":
        return Shape(draw(st.sampled_from(["a", "b"])), 0)
    return Const(draw(st.integers(0, 4)))


@st.composite
def expr(draw, loop_vars, depth):
    choices = ["const", "arg", "shape", "read1", "read2"] + (["bin", "max"] * 2 if depth else [])
    kind = draw(st.sampled_from(choices))
    if kind == "const":
        return Const(draw(st.integers(-3, 9)))
    if kind == "arg":
        return Arg("k")
    if kind == "shape":
        return Shape("c", draw(st.integers(0, 1)))
    if kind == "read1":
        return Read(draw(st.sampled_from(["a", "b"])), (draw(index(loop_vars)),))
    if kind == "read2":
        return Read("c", (draw(index(loop_vars)), draw(index(loop_vars))))
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*", "//", "max", "min"]))
        return Bin(op, draw(expr(loop_vars, depth - 1)), draw(expr(loop_vars, depth - 1)))
    var = LoopVar(next(_IDS), "v")
    begin = draw(st.sampled_from([Const(0), Const(1)]))
    end = draw(bounded(loop_vars, depth - 1))
    body = draw(expr(loop_vars + [var], depth - 1))
    return MaxOverRange(var, begin, end, body)


def evaluate(e, target=INTERP):
    """The sizer's value of a closed expression (clamped at 0, as capacities are)."""
    params = [Param(name, Value(k, t)) for k, (name, t) in enumerate(TYPES.items())]
    values = {"a": qd.asarray(A), "b": qd.asarray(B), "c": qd.asarray(C), "k": K}
    sizer = Sizer([e], [], params, KernelIR("none", (), Block(())), None, [], 0, target)
    return sizer._symbolic([values[p.name] for p in params])[0][0]


@given(expr([], 3))
def test_random_expressions_match_brute_force(e):
    try:
        want = max(reference(e, {}), 0)
    except OutOfBounds:
        want = None
    try:
        got = evaluate(e)
    except Unsized:
        got = None
    if want is None:
        assert got is None, str(e)       # a read outside an array is never evaluated
    elif got is not None:
        assert got == want, str(e)
    else:                                 # the host check is conservative on whole axes
        assert any(isinstance(x, Read) and any(isinstance(i, (LoopVar, Bin)) for i in x.index)
                   for x in subexprs(e)), str(e)
    STATS[(want is not None, got is not None)] += 1


STATS: Counter[tuple[bool, bool]] = Counter()


def test_the_random_expressions_cover_every_outcome():
    """Values, reads outside arrays and conservative refusals all occur above."""
    if not STATS:
        pytest.skip("runs after test_random_expressions_match_brute_force")
    assert STATS[(True, True)] >= 10 and STATS[(False, False)] >= 1


def test_the_host_check_refuses_only_reads_outside_the_axis():
    i = LoopVar(1, "i")
    inside = MaxOverRange(i, Const(0), Shape("a", 0), Read("a", (i,)))
    shifted = MaxOverRange(i, Const(0), Shape("a", 0), Read("a", (Bin("+", i, Const(1)),)))
    assert evaluate(inside) == A.max()
    with pytest.raises(Unsized):
        evaluate(shifted)
    tail = MaxOverRange(i, Const(1), Shape("a", 0), Read("a", (Bin("-", i, Const(1)),)))
    assert evaluate(tail) == A[:-1].max()


def run_chain(e, arrays, types, target=CPU_TARGET):
    chain = chain_of(e)
    reducer = Reducer(chain, types, target)
    begins = [reference(b, {}) for _, b, _ in chain.axes]
    extents = [reference(n, {}) - b for (_, _, n), b in zip(chain.axes, begins, strict=True)]
    return reducer.run({k: qd.asarray(v) for k, v in arrays.items()}, [], begins, extents)


@pytest.mark.parametrize("n", [PARALLEL_MIN - 1, PARALLEL_MIN, 3 * PARALLEL_MIN + 7])
def test_one_axis_in_many_chunks(n):
    rng = np.random.default_rng(n)
    data = rng.integers(-(1 << 40), 1 << 40, n + 10)
    data[rng.integers(3, n + 3)] = 1 << 50                  # the maximum, somewhere
    i = LoopVar(1, "i")
    e = MaxOverRange(i, Const(3), Const(n + 3), Read("d", (i,)))
    got = run_chain(e, {"d": data}, {"d": ArrayType(_dtypes.int64, 1)})
    assert got == data[3:n + 3].max() == 1 << 50
    chunk, chunks = split(n, CPU_TARGET.reduction)
    assert chunks * chunk >= n and (chunks == 1 or chunks >= PARALLEL_MIN)


@pytest.mark.parametrize("shape", [(3, 40_001), (50_003, 2), (181, 181)])
def test_two_axes_with_rows_split_between_chunks(shape):
    rng = np.random.default_rng(sum(shape))
    data = rng.integers(0, 1000, shape).astype(np.int32)
    i, j = LoopVar(1, "i"), LoopVar(2, "j")
    body = Bin("-", Read("d", (i, j)), Bin("*", Const(3), j))
    e = MaxOverRange(i, Const(1), Const(shape[0]), MaxOverRange(j, Const(0), Const(shape[1]),
                                                                  body))
    got = run_chain(e, {"d": data}, {"d": ArrayType(_dtypes.int32, 2)})
    cols = np.arange(shape[1])
    assert got == (data[1:] - 3 * cols).max()


OTHER_DEVICES = [d for d in qd.__array_namespace_info__().devices() if str(d) != "cpu"]


@pytest.mark.skipif(not OTHER_DEVICES, reason="no device other than the CPU is present")
@pytest.mark.parametrize("n", [1000, 200_003])
def test_reducers_run_on_the_arrays_device(n):
    """The reducer is a kernel like any other: the device's code generator runs it."""
    device = OTHER_DEVICES[0]
    rng = np.random.default_rng(n)
    data = rng.integers(-(1 << 30), 1 << 30, n).astype(np.int32)
    grid = rng.integers(0, 500, (61, n // 61)).astype(np.int16)
    i, j = LoopVar(1, "i"), LoopVar(2, "j")
    one = MaxOverRange(i, Const(2), Const(n), Bin("+", Read("d", (i,)), Const(1)))
    two = MaxOverRange(i, Const(0), Const(61), MaxOverRange(j, Const(1), Const(grid.shape[1]),
                                                           Bin("-", Read("g", (i, j)), j)))
    for e, arrays, types, want in (
            (one, {"d": data}, {"d": ArrayType(_dtypes.int32, 1)}, data[2:].max() + 1),
            (two, {"g": grid}, {"g": ArrayType(_dtypes.int16, 2)},
             (grid[:, 1:].astype(np.int64) - np.arange(1, grid.shape[1])).max())):
        chain = chain_of(e)
        reducer = Reducer(chain, types, device.backend.target, device)
        assert reducer.strided
        values = {k: qd.asarray(v, device=device) for k, v in arrays.items()}
        begins = [reference(b, {}) for _, b, _ in chain.axes]
        extents = [reference(m, {}) - b for (_, _, m), b in zip(chain.axes, begins, strict=True)]
        assert reducer.run(values, [], begins, extents) == want


@pytest.mark.parametrize("shape", [(1000,), (7, 13), (3, 5, 11), (2, 1, 9), (6, 4), (5, 2, 3)])
def test_strided_layout_with_few_work_items(shape, monkeypatch):
    """The GPU layout on the interpreter: each of 9 work-items takes every 9th position
    (unrolled groups and a remainder), several axes advanced by carries."""
    import qdarray.ad.sizing.max_reducer as reducer_mod

    monkeypatch.setattr(reducer_mod, "STRIDED_ITEMS", 9)
    rng = np.random.default_rng(len(shape))
    data = rng.integers(-500, 500, shape).astype(np.int64)
    loop_vars = [LoopVar(k + 1, f"i{k}") for k in range(len(shape))]
    body = Bin("-", Read("d", tuple(loop_vars)), Bin("*", Const(2), loop_vars[-1]))
    e = body
    begins = [1] + [0] * (len(shape) - 1)                    # the first axis starts at 1
    for v, b, n in reversed(list(zip(loop_vars, begins, shape, strict=True))):
        e = MaxOverRange(v, Const(b), Const(n), e)
    chain = chain_of(e)
    reducer = Reducer(chain, {"d": ArrayType(_dtypes.int64, len(shape))}, INTERP,
                      strided=True)
    extents = [n - b for b, n in zip(begins, shape, strict=True)]
    got = reducer.run({"d": qd.asarray(data)}, [], begins, extents)
    last = np.arange(shape[-1]).reshape((1,) * (len(shape) - 1) + (-1,))
    assert got == (data - 2 * last)[1:].max()
