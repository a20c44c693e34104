"""qd.jit fusion: chains of elementwise calls as one generated kernel, against the eager
namespace (bit for bit where the ops are exact, within a few ulp for transcendental
functions, as kernels against NumPy: docs/guarantees.md) and NumPy in float64."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.jit import fusion
from qdarray.jit.fusion import Fused

RNG = np.random.default_rng(7)


def _array(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        return RNG.integers(1, 20, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _fused_steps(fn):
    (program,) = fn.programs.values()
    return [s for s in program.steps if type(s) is Fused]


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.kind == "f":
        assert np.array_equal(g, w, equal_nan=True), np.max(np.abs(g - w))
    else:
        assert np.array_equal(g, w)


def _check(f, *args, fused=1):
    """f jitted (traced, then replayed on fresh arrays of the same signature) against f
    eager on the same arrays."""
    jf = qd.jit(f)
    jf(*args)
    fresh = [qd.asarray(_array(a.shape, a.dtype._np)) if isinstance(a, qd.Array) else a
             for a in args]
    got = jf(*fresh)
    want = f(*fresh)
    assert len(_fused_steps(jf)) == fused and jf.traces == 1
    _check.last = jf
    return got, want


def chain(a, x, b):
    return ((a * x + b) * x - a) * 0.5 + b


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_arithmetic_chain_is_bitwise_the_eager_result(dtype):
    args = [qd.asarray(_array((1000,), dtype)) for _ in range(3)]
    got, want = _check(chain, *args)
    _same(got, want)


def test_chain_matches_numpy_in_float64():
    a, x, b = (_array((4096,), np.float32) for _ in range(3))
    got = qd.jit(chain)(*(qd.asarray(v) for v in (a, x, b)))
    a64, x64, b64 = (v.astype(np.float64) for v in (a, x, b))
    ref = ((a64 * x64 + b64) * x64 - a64) * 0.5 + b64
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), ()),
                                    ((5,), (1,))])
def test_broadcasting(shapes):
    s1, s2 = shapes

    def f(x, y):
        return (x - y) * (x + y) + 1.5

    got, want = _check(f, qd.asarray(_array(s1, np.float32)), qd.asarray(_array(s2,
                                                                               np.float32)))
    _same(got, want)


def test_mixed_dtypes_and_weak_python_scalars():
    def f(i8, f32, i64):
        a = i8 + 3            # int8 (weak int)
        b = f32 * 2.5         # float32 (weak float)
        c = i64 / 4           # float64 (integer division)
        d = a * b             # promotes int8 with float32 to float32
        e = (d < c) | (i8 > 10)
        return a, b, c, d, e, -f32 ** 2

    args = [qd.asarray(_array((64,), np.int8)), qd.asarray(_array((64,), np.float32)),
            qd.asarray(_array((64,), np.int64))]
    got, want = _check(f, *args)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    assert [g.dtype for g in got] == [qd.int8, qd.float32, qd.float64, qd.float32, qd.bool,
                                      qd.float32]


def test_integer_and_boolean_semantics():
    def f(x, y, m):
        return (x // y) * (x % y) + (x >> 1) - (~x & y), m & (x > y), m + m

    x = qd.asarray(np.array([-7, 7, 0, 9, -3, 100], np.int32))
    y = qd.asarray(np.array([2, -3, 5, 4, -1, 7], np.int32))
    m = qd.asarray(np.array([True, False, True, True, False, False]))
    got, want = _check(f, x, y, m)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


def test_special_values():
    def f(x, y):
        return qd.maximum(x, y) * 1.0 + qd.minimum(x, y) - qd.floor(x / y)

    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.0, -2.5], np.float32)
    x = qd.asarray(vals)
    y = qd.asarray(vals[::-1].copy())
    jf = qd.jit(f)
    jf(x, y)
    _same(jf(x, y), f(x, y))


@pytest.mark.parametrize("name", ["tanh", "exp", "sin", "log1p", "sqrt"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transcendental_functions_within_a_few_ulp(name, dtype, monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_LIBM", True)  # by default they stay NumPy's calls
    fn = getattr(qd, name)

    def f(x):
        return fn(qd.abs(x) * 0.5) + 1.0

    got, want = _check(f, qd.asarray(_array((2048,), dtype)))
    (fused,) = _fused_steps(_check.last)
    assert name in [c.name for c in fused.calls]
    assert got.dtype == want.dtype
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=4 * eps, atol=0)


def test_libm_functions_split_runs_by_default():
    def f(x):
        return qd.tanh(x * 2.0 + 1.0) * 0.5 + 0.5

    jf = qd.jit(f)
    x = qd.asarray(_array((64,), np.float32))
    jf(x)
    (program,) = jf.programs.values()
    kinds = [type(s).__name__ if type(s) is Fused else s.name for s in program.steps]
    assert kinds == ["Fused", "tanh", "Fused"]
    _same(jf(x), f(x))


def test_calls_that_write_nothing_move_out_of_a_run():
    def f(x, w):
        return (x * w[0] + w[1]) * qd.mean(x) - 1.0

    jf = qd.jit(f)
    x, w = qd.asarray(_array((64,), np.float32)), qd.asarray(_array((2,), np.float32))
    jf(x, w)
    assert len(_fused_steps(jf)) == 1
    _same(jf(x, w), f(x, w))


def test_a_kept_result_is_never_overwritten():
    def f(x):
        return x * 2.0 + 1.0

    jf = qd.jit(f)
    x = qd.asarray(np.arange(4.0))
    first = jf(x)
    view = np.asarray(jf(x))  # an export keeps the memory too
    third = jf(qd.asarray(np.arange(4.0) + 10.0))
    fourth = jf(x)
    assert np.array_equal(np.asarray(first), [1.0, 3.0, 5.0, 7.0])
    assert np.array_equal(view, [1.0, 3.0, 5.0, 7.0])
    assert np.array_equal(np.asarray(third), [21.0, 23.0, 25.0, 27.0])
    assert np.array_equal(np.asarray(fourth), [1.0, 3.0, 5.0, 7.0])
    del third
    fifth = jf(x)  # may take the dropped result's memory
    assert np.array_equal(np.asarray(fifth), [1.0, 3.0, 5.0, 7.0])
    assert np.array_equal(np.asarray(first), [1.0, 3.0, 5.0, 7.0])


def test_only_results_used_later_are_materialised():
    def f(x):
        t = x * 2.0
        u = t + 1.0
        v = u * u
        return v, qd.sum(t)

    jf = qd.jit(f)
    x = qd.asarray(_array((100,), np.float64))
    jf(x)
    (fused,) = _fused_steps(jf)
    assert len(fused.kernels) == 1 and len(fused.kernels[0].outs) == 2  # t and v, not u
    v, s = jf(x)
    _same(v, f(x)[0])
    assert float(s) == float(qd.sum(x * 2.0))


def test_a_fused_reduction_stores_only_what_is_read_later(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_REDUCTIONS", True)

    def f(x):
        t = x * 2.0
        u = t + 1.0
        v = u * u
        return v, qd.sum(t)

    jf = qd.jit(f)
    x = qd.asarray(_array((100,), np.float64))
    jf(x)
    (fused,) = _fused_steps(jf)
    # v is stored; t is only summed, in the same loop; u is never stored
    assert len(fused.kernels) == 1 and len(fused.kernels[0].outs) == 1
    v, s = jf(x)
    _same(v, f(x)[0])
    assert np.isclose(float(s), float(qd.sum(x * 2.0)), rtol=1e-13)


def test_results_of_two_shapes_get_a_kernel_each():
    def f(x, m):
        t = x * 2.0 + 1.0
        return t, (t + m) * 3.0

    jf = qd.jit(f)
    x, m = qd.asarray(_array((4,), np.float32)), qd.asarray(_array((3, 4), np.float32))
    jf(x, m)
    (fused,) = _fused_steps(jf)
    assert sorted(k.shape for k in fused.kernels) == [(3, 4), (4,)]
    for g, w in zip(jf(x, m), f(x, m), strict=True):
        _same(g, w)


def test_non_contiguous_inputs_take_the_strided_kernel():
    def f(x, y):
        return x * y + y

    jf = qd.jit(f)
    base = qd.asarray(_array((8, 8), np.float64))
    jf(base[:, :4], base[:, 4:])
    _same(jf(base[:, :4], base[:, 4:]), f(base[:, :4], base[:, 4:]))
    assert jf.traces == 1


def test_type_errors_are_the_namespace_errors():
    def f(x):
        return qd.bitwise_and(x * 2.0, 1)

    with pytest.raises(TypeError, match="Only integer or boolean dtypes"):
        qd.jit(f)(qd.asarray(_array((4,), np.float32)))

    def g(x, y):
        return x * 2 + y

    with pytest.raises(ValueError):
        qd.jit(g)(qd.ones(3), qd.ones(4))


def test_empty_and_zero_dimensional_arrays():
    def f(x):
        return x * 2.0 + 1.0

    for shape in [(0,), (), (3, 0)]:
        x = qd.asarray(_array(shape, np.float32))
        _same(qd.jit(f)(x), f(x))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_reduction_consuming_a_chain_is_fused(op, dtype, monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_REDUCTIONS", True)
    fn = getattr(qd, op)

    def f(x, y):
        return fn((x * y + 1.0) * x - y)

    n = 100_003  # several partials, a ragged last share
    args = [qd.asarray(_array((n,), dtype)) for _ in range(2)]
    got, want = _check(f, *args)
    (fused,) = _fused_steps(_check.last)
    assert fused.reduce is not None and fused.kernels[0].outs == []
    assert got.dtype == want.dtype and got.shape == ()
    if op in ("max", "min"):
        _same(got, want)
    else:  # reassociated: strided partial sums, then NumPy's pairwise sum of the partials
        x, y = (np.asarray(a).astype(np.float64) for a in args)
        terms = (x * y + 1.0) * x - y
        bound = 4 * np.finfo(dtype).eps * np.sum(np.abs(terms)) / (n if op == "mean" else 1)
        assert abs(float(got) - float(want)) <= bound


def test_reductions_keep_their_semantics_where_they_do_not_fuse(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_REDUCTIONS", True)
    def f(x):
        t = x * 2.0 + 1.0
        return qd.sum(t, axis=0), qd.max(t, keepdims=True), qd.sum(t[:, ::2])

    jf = qd.jit(f)
    x = qd.asarray(_array((4, 6), np.float32))
    jf(x)
    for g, w in zip(jf(x), f(x), strict=True):
        _same(g, w)


def test_a_fused_reduction_over_strided_inputs_runs_as_the_namespace(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_REDUCTIONS", True)
    def f(x):
        return qd.max(x * 2.0 - 1.0)

    jf = qd.jit(f)
    base = qd.asarray(_array((8, 8), np.float64))
    jf(base[:, :4])
    _same(jf(base[:, 4:]), f(base[:, 4:]))


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_where_fuses_with_numpys_promotion(dtype):
    def f(x, y, b):
        relu = qd.where(x > 0, x, 0)              # a weak int: x's dtype
        mixed = qd.where(x > y, x * 2, y)         # two arrays (row broadcast)
        both = qd.where(b, 1.5, -0.5)             # two scalars: float64, as NumPy
        return relu + 1, mixed - y, both * 2.0

    x = qd.asarray(_array((3, 5), dtype) - (5 if dtype == "int16" else 0))
    y = qd.asarray(_array((5,), dtype))
    b = qd.asarray(_array((3, 5), np.bool_))
    got, want = _check(f, x, y, b)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    (fused,) = _fused_steps(_check.last)
    assert sum(c.name == "where" for c in fused.calls) == 3
