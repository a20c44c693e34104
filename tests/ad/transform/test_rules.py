"""Every float op's adjoint rule: a table of `GradSpec` rows, each checked elementwise against
central differences and by a vector-Jacobian product in one random direction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.kernels.ir import Op
from qdarray.kernels.ops import OPS


@dataclass(frozen=True)
class GradSpec:
    name: str
    fn: Any
    nargs: int
    lo: float
    hi: float


def unary_kernel(fn: Any) -> Any:
    @qd.kernel
    def k(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            y[i] = fn(x[i])
    return k


def binary_kernel(fn: Any) -> Any:
    @qd.kernel
    def k(x: qd.Array[qd.float64, 1], z: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            y[i] = fn(x[i], z[i])
    return k


@qd.func
def add(a, b):
    return a + b


@qd.func
def sub(a, b):
    return a - b


@qd.func
def mul(a, b):
    return a * b


@qd.func
def div(a, b):
    return a / b


@qd.func
def mod(a, b):
    return a % b


@qd.func
def floordiv(a, b):
    return a // b


@qd.func
def power(a, b):
    return a ** b


@qd.func
def neg(a):
    return -a


@qd.func
def clip(a):
    return qd.math.clip(a, -0.5, 0.5)


@qd.func
def select(a, b):
    return qd.select(a > b, a * b, b - a)


@qd.func
def cast32(a):
    return qd.float64(qd.float32(a) * qd.float32(3.0))


m = qd.math
SPECS = [
    GradSpec("sin", m.sin, 1, -3, 3), GradSpec("cos", m.cos, 1, -3, 3),
    GradSpec("tan", m.tan, 1, -1.2, 1.2), GradSpec("asin", m.asin, 1, -0.9, 0.9),
    GradSpec("acos", m.acos, 1, -0.9, 0.9), GradSpec("atan", m.atan, 1, -3, 3),
    GradSpec("sinh", m.sinh, 1, -2, 2), GradSpec("cosh", m.cosh, 1, -2, 2),
    GradSpec("tanh", m.tanh, 1, -2, 2), GradSpec("asinh", m.asinh, 1, -3, 3),
    GradSpec("acosh", m.acosh, 1, 1.2, 4), GradSpec("atanh", m.atanh, 1, -0.9, 0.9),
    GradSpec("exp", m.exp, 1, -2, 2), GradSpec("exp2", m.exp2, 1, -2, 2),
    GradSpec("expm1", m.expm1, 1, -2, 2), GradSpec("log", m.log, 1, 0.1, 4),
    GradSpec("log2", m.log2, 1, 0.1, 4), GradSpec("log10", m.log10, 1, 0.1, 4),
    GradSpec("log1p", m.log1p, 1, -0.5, 3), GradSpec("sqrt", m.sqrt, 1, 0.1, 4),
    GradSpec("rsqrt", m.rsqrt, 1, 0.1, 4), GradSpec("cbrt", m.cbrt, 1, -4, 4),
    GradSpec("floor", m.floor, 1, -3, 3), GradSpec("ceil", m.ceil, 1, -3, 3),
    GradSpec("trunc", m.trunc, 1, -3, 3), GradSpec("round", m.round, 1, -3, 3),
    GradSpec("sign", m.sign, 1, -3, 3), GradSpec("abs", abs, 1, -3, 3),
    GradSpec("neg", neg, 1, -3, 3), GradSpec("clip", clip, 1, -1, 1),
    GradSpec("atan2", m.atan2, 2, -2, 2), GradSpec("hypot", m.hypot, 2, -2, 2),
    GradSpec("copysign", m.copysign, 2, -2, 2), GradSpec("fmod", m.fmod, 2, 0.3, 3),
    GradSpec("min", min, 2, -2, 2), GradSpec("max", max, 2, -2, 2),
    GradSpec("add", add, 2, -2, 2), GradSpec("sub", sub, 2, -2, 2),
    GradSpec("mul", mul, 2, -2, 2), GradSpec("div", div, 2, 0.5, 2),
    GradSpec("mod", mod, 2, 0.3, 3), GradSpec("floordiv", floordiv, 2, 0.3, 3),
    GradSpec("pow", power, 2, 0.2, 2), GradSpec("select", select, 2, -2, 2),
]
KERNELS = {s.name: (unary_kernel if s.nargs == 1 else binary_kernel)(s.fn) for s in SPECS}


def _inputs(spec: GradSpec, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    xs = [rng.uniform(spec.lo, spec.hi, n) for _ in range(spec.nargs)]
    if spec.name in ("floor", "ceil", "trunc", "round", "mod", "fmod", "floordiv", "clip"):
        xs[0] = np.round(xs[0] * 4) / 4 + 0.1  # away from the jumps and the clip bounds
    if spec.name == "copysign":
        xs[1] = np.where(np.abs(xs[1]) < 0.2, 0.5, xs[1])
    return xs


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_rule_against_finite_differences(grad, spec):
    kern = KERNELS[spec.name]
    names = ["x", "z"][:spec.nargs]
    rng = np.random.default_rng(abs(hash(spec.name)) % 2**32)
    xs = _inputs(spec, rng, 6)
    make = lambda: {**dict(zip(names, (x.copy() for x in xs), strict=True)), "y": np.zeros(6)}  # noqa: E731
    got = grad.check(kern, make, tuple(names), ("y",), rtol=1e-5, atol=1e-7)
    # one random direction: <J^T w, d> against (f(x + h d) - f(x - h d)) / 2h
    d = [rng.normal(size=6) for _ in names]
    w = np.random.default_rng(0).normal(size=6)  # the weights grad.check used (seed 0)
    h = 1e-6

    def f(shift: float) -> float:
        args = [qd.asarray(x + shift * dx) for x, dx in zip(xs, d, strict=True)]
        y = qd.zeros(6)
        grad.forward(kern, *args, y)
        return float(w @ host(y))

    numeric = (f(h) - f(-h)) / (2 * h)
    analytic = sum(float(got[nm] @ dx) for nm, dx in zip(names, d, strict=True))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "tanh", "pow", "atan2"])
def test_float32_against_float64(backend, name):
    """The float32 reverse agrees with the float64 one to float32 precision."""
    spec = next(s for s in SPECS if s.name == name)
    rng = np.random.default_rng(3)
    xs = _inputs(spec, rng, 16)
    results = {}
    for dtype in ("float32", "float64"):
        kern = KERNELS32[name] if dtype == "float32" else KERNELS[name]
        args = [qd.asarray(x.astype(dtype), requires_grad=True) for x in xs]
        y = qd.zeros(16, dtype=getattr(qd, dtype), requires_grad=True)
        run = kern.interpret if backend == "interp" else kern
        run(*args, y)
        y.grad[...] = qd.asarray(np.ones(16, dtype))
        (kern.grad.interpret if backend == "interp" else kern.grad)(*args, y)
        results[dtype] = [host(a.grad) for a in args]
        assert results[dtype][0].dtype == np.dtype(dtype)
    for g32, g64 in zip(results["float32"], results["float64"], strict=True):
        np.testing.assert_allclose(g32, g64, rtol=2e-5, atol=1e-6)


CAST = unary_kernel(cast32)


def test_cast_rule(backend):
    """float64 -> float32 -> float64: the gradient converts back and forth (differences
    cannot see it through float32 rounding, so the closed form)."""
    x = qd.asarray(np.linspace(-2, 2, 7), requires_grad=True)
    y = qd.zeros(7, requires_grad=True)
    w = np.linspace(0.5, 2.0, 7)
    (CAST.interpret if backend == "interp" else CAST)(x, y)
    y.grad[...] = qd.asarray(w)
    (CAST.grad.interpret if backend == "interp" else CAST.grad)(x, y)
    expect = (w.astype(np.float32) * np.float32(3.0)).astype(np.float64)
    np.testing.assert_array_equal(host(x.grad), expect)


def unary32(fn: Any) -> Any:
    @qd.kernel
    def k(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            y[i] = fn(x[i])
    return k


def binary32(fn: Any) -> Any:
    @qd.kernel
    def k(x: qd.Array[qd.float32, 1], z: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            y[i] = fn(x[i], z[i])
    return k


KERNELS32 = {s.name: (unary32 if s.nargs == 1 else binary32)(s.fn) for s in SPECS
             if s.name in ("sin", "exp", "sqrt", "tanh", "pow", "atan2")}


def test_every_float_op_has_a_rule():
    """Every op whose result can be a float (all of qd.math but the predicates, arithmetic,
    casts, select) and every global memory op has a rule; the others (integer and bool ops,
    control flow, locals, adstacks) declare adjoint=None."""
    from qdarray.kernels.ops.math import PREDICATES

    required = {op for op, d in OPS.items() if d.family == "math" and op not in PREDICATES}
    required |= {Op.ADD, Op.SUB, Op.MUL, Op.TRUEDIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.NEG,
                 Op.ABS, Op.MIN, Op.MAX, Op.CAST, Op.SELECT, Op.LOAD, Op.STORE, Op.ATOMIC_ADD,
                 Op.ATOMIC_MIN, Op.ATOMIC_MAX}
    missing = sorted(op.name for op in required if not callable(OPS[op].adjoint))
    assert not missing, f"ops without an adjoint rule: {missing}"
    for op in (Op.EQ, Op.LT, Op.BIT_AND, Op.NOT, Op.ISNAN, Op.SHAPE, Op.LOAD_VAR,
               Op.STORE_VAR, Op.FOR, Op.ADSTACK_PUSH, Op.ADSTACK_TOP):
        assert OPS[op].adjoint is None, op
