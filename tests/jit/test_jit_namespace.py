"""Namespace functions under qd.jit: each traces, replays on new values of the same signature
and gives the eager result (values, dtype, shape), or raises a clear error."""

from __future__ import annotations

import dis

import numpy as np
import pytest

import qdarray as qd

RNG = np.random.default_rng(11)


def _new(shape, dtype=np.float64):
    if np.dtype(dtype).kind in "iu":
        return qd.asarray(RNG.integers(0, 5, shape).astype(dtype))
    if np.dtype(dtype) == np.bool_:
        return qd.asarray(RNG.random(shape) < 0.5)
    return qd.asarray(RNG.standard_normal(shape).astype(dtype))


# (name, function of arrays, shapes and dtypes of its array arguments)
CASES = [
    ("sum axis", lambda x: qd.sum(x, axis=1, keepdims=True), [((3, 4), "f8")]),
    ("mean std var", lambda x: (qd.mean(x), qd.std(x, correction=1), qd.var(x, axis=0)),
     [((3, 4), "f4")]),
    ("max min prod", lambda x: (qd.max(x, axis=0), qd.min(x), qd.prod(x, axis=1)),
     [((3, 4), "f8")]),
    ("cumulative_sum", lambda x: qd.cumulative_sum(x, axis=1), [((3, 4), "f8")]),
    ("argmax argsort sort", lambda x: (qd.argmax(x, axis=1), qd.argsort(x), qd.sort(x)),
     [((3, 4), "f8")]),
    ("where clip", lambda x, y: (qd.where(x > y, x, y * 2.0), qd.clip(x, -0.5, 0.5)),
     [((5,), "f8"), ((5,), "f8")]),
    ("any all", lambda x: (qd.any(x > 0, axis=0), qd.all(x < 2.0)), [((3, 4), "f8")]),
    ("matmul tensordot vecdot", lambda a, b: (a @ b, qd.tensordot(a, b, axes=1),
                                              qd.vecdot(a, b.T)), [((3, 3), "f8"),
                                                                   ((3, 3), "f8")]),
    ("linalg", lambda a: (qd.linalg.inv(a + 4.0 * qd.eye(3)), qd.linalg.vector_norm(a),
                          qd.linalg.solve(a + 4.0 * qd.eye(3), a[:, 0])),
     [((3, 3), "f8")]),
    ("fft", lambda x: qd.abs(qd.fft.fft(x)), [((8,), "f8")]),
    ("reshape permute concat stack", lambda x, y: (
        qd.reshape(x, (4, 3)), qd.permute_dims(x, (1, 0)), qd.concat([x, y], axis=0),
        qd.stack([x, y]), qd.expand_dims(x, axis=0), qd.flip(x, axis=1), qd.roll(x, 1)),
     [((3, 4), "f8"), ((3, 4), "f8")]),
    ("broadcast tile repeat", lambda x: (qd.broadcast_to(x, (2, 4)), qd.tile(x, (2,)),
                                         qd.repeat(x, 2)), [((4,), "f8")]),
    ("indexing", lambda x, i: (x[1:, ::2], x[..., 0], x[None, 1], qd.take(x, i % 4, axis=1),
                               x[:, i % 4]), [((3, 4), "f8"), ((2,), "i8")]),  # i in [0, 5)
    ("astype creation", lambda x: (qd.astype(x, qd.float32), qd.zeros_like(x) + x,
                                   qd.arange(x.shape[0]) * x[:, 0], qd.full(x.shape, 2.0) * x,
                                   qd.linspace(0, 1, x.shape[1]) + x),
     [((3, 4), "f8")]),
    ("setitem", lambda x, y: _setitem(x, y), [((3, 4), "f8"), ((4,), "f8")]),
    ("complex", lambda x: qd.real(qd.exp(1j * x)) + qd.imag(qd.astype(x, qd.complex128)),
     [((4,), "f8")]),
    ("integer ops", lambda x, y: (x // (y + 1), x % (y + 1), x ** 2, x << 1, x & y),
     [((6,), "i4"), ((6,), "i4")]),
    ("numpy functions", lambda x: (np.sin(x), np.sum(x, axis=0), np.mean(x)),
     [((3, 4), "f8")]),
    ("unique sizes fixed", lambda x: qd.unique_values(qd.astype(x > 0, qd.int8)),
     [((6,), "f8")]),
]


def _setitem(x, y):
    z = qd.asarray(x, copy=True)
    z[0] = y
    z[1:, 1] = -1.0
    z *= 2.0
    return z


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _flat(v)]
    return [x]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_jitted_equals_eager(case):
    _, f, specs = case
    jf = qd.jit(f)
    jf(*(_new(s, d) for s, d in specs))
    args = [_new(s, d) for s, d in specs]
    if case[0] == "unique sizes fixed":  # the same number of unique values: replayable
        args = [qd.asarray(np.array([1.0, -1.0, 2.0, -2.0, 0.5, -0.5]))]
    got, want = _flat(jf(*args)), _flat(f(*args))
    assert jf.traces == 1
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_what_cannot_be_replayed_raises_clearly():
    def unique_count(x):
        return qd.unique_values(x).shape[0] * x

    jf = qd.jit(unique_count)
    jf(qd.asarray(np.array([1.0, 1.0, 2.0])))
    with pytest.raises(qd.jit.JitTraceError, match="depends on the values"):
        jf(qd.asarray(np.array([1.0, 3.0, 2.0])))

    def host_round_trip(x):
        return qd.asarray(x.tolist())

    with pytest.raises(qd.jit.TracerConversionError, match="x.tolist()"):
        qd.jit(host_round_trip)(qd.ones(3))


def test_an_exception_in_the_function_leaves_no_trace_behind():
    import sys

    def f(x):
        raise RuntimeError("boom")

    before = sys.getprofile()
    with pytest.raises(RuntimeError, match="boom"):
        qd.jit(f)(qd.ones(2))
    assert sys.getprofile() is before
    assert np.array_equal(np.asarray(qd.jit(lambda x: x + 1.0)(qd.ones(2))), [2.0, 2.0])


def test_a_jitted_function_called_inside_another():
    inner = qd.jit(lambda x: x * 2.0 + 1.0)

    @qd.jit
    def outer(x):
        return inner(x) - inner(x * 3.0)

    x = _new((5,))
    outer(x)
    x2 = _new((5,))
    assert np.array_equal(np.asarray(outer(x2)),
                          np.asarray((x2 * 2.0 + 1.0) - (x2 * 3.0 * 2.0 + 1.0)))
    assert outer.traces == 1


def test_every_way_a_function_returns_counts_as_a_return():
    # The tracer tells a call that returned None (an in-place write, a kernel launch) from one
    # that raised by the last instruction its frame ran; each interpreter spells returns its
    # own way (Python 3.12 added RETURN_CONST for `return None`).
    from qdarray.jit.trace import RETURNS

    def implicit(a):
        a[0] = 1

    def explicit_none(a):
        a[0] = 1
        return None

    def constant():
        return 5

    def value(a):
        return a

    for fn in (implicit, explicit_none, constant, value):
        last = list(dis.get_instructions(fn))[-1]
        assert fn.__code__.co_code[last.offset] in RETURNS, (fn.__name__, last.opname)


def test_in_place_writes_and_kernel_launches_replay():
    @qd.jit
    def f(x0):
        x = qd.zeros((3, 5), dtype=qd.float64)
        x[0] = x0  # returns None: replayed, not taken for a call that raised
        _double_row(x, 0)
        x[2] += 1.0
        return x

    for _ in range(3):
        x0 = _new((5,))
        want = np.zeros((3, 5))
        want[0], want[1], want[2] = np.asarray(x0), 2 * np.asarray(x0), 1.0
        assert np.array_equal(np.asarray(f(x0)), want)
    (program,) = f.programs.values()
    assert [s.name for s in program.steps][:3] == ["zeros", "Array.__setitem__",
                                                   "Kernel.__call__"]


@qd.kernel
def _double_row(x: qd.Array[qd.float64, 2], t: int):
    for i in range(x.shape[1]):
        x[t + 1, i] = 2.0 * x[t, i]


def test_a_call_that_raised_and_was_caught_is_not_replayed():
    @qd.jit
    def f(x, y):
        try:
            y[...] = qd.ones((7,))  # raises: shapes (3,) and (7,)
        except ValueError:
            pass
        return x + y

    x, y = _new((3,)), _new((3,))
    f(x, y)
    x2, y2 = _new((3,)), _new((3,))
    assert np.array_equal(np.asarray(f(x2, y2)), np.asarray(x2 + y2))
    (program,) = f.programs.values()
    names = [s.name for s in program.steps]
    assert names == ["ones", "_binary_operator.<locals>.method"], names
