"""`default_float`: the type Python floats take in a kernel where no other operand decides
(`imp = 0.0`, `float(i)`, `i / 3`, an integer times a literal), per kernel, per func and for
the package (`qd.set_default_float`); float64 unless set. tests/opencl and tests/vulkan run
the launching tests on their devices."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels import entries
from qdarray.kernels.ir import instrs
from qdarray.kernels.launch import signature

f32 = np.float32


@pytest.fixture(autouse=True)
def _restore_default_float() -> Iterator[None]:
    before = qd.default_float()
    yield
    qd.set_default_float(before)


def _relax(x, y):
    for i in range(x.shape[0]):
        imp = 0.0
        for _k in range(4):
            imp = imp * 0.5 + x[i] * 0.1 + 1e-3
        y[i] = imp / 3.0 + float(i % 3) / 7 + (i % 5) * 0.25


relax32 = qd.kernel(default_float=qd.float32)(_relax)
relax64 = qd.kernel(_relax)
relax_pkg = qd.kernel(_relax)  # follows qd.set_default_float


def _reference(x: np.ndarray) -> np.ndarray:
    """`_relax` in NumPy float32, operation by operation."""
    imp = np.zeros_like(x)
    for _ in range(4):
        imp = imp * f32(0.5) + x * f32(0.1) + f32(1e-3)
    i = np.arange(x.shape[0])
    return imp / f32(3.0) + (i % 3).astype(f32) / f32(7) + (i % 5).astype(f32) * f32(0.25)


X = np.linspace(0.0, 1.0, 1000, dtype=f32)


def test_literals_stay_float32_bit_for_bit(launch, backend):
    y32, y64 = np.zeros_like(X), np.zeros_like(X)
    launch(relax32, X, y32)
    launch(relax64, X, y64)
    want = _reference(X)
    if backend == "cuda":
        # NVVM may fuse a * b + c into one rounding (docs/cuda.md): float32 to a few ulp
        np.testing.assert_allclose(y32, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(y32, want)
    # with float64 literals the local is float64: the same formula rounds elsewhere
    assert (y64 != want).sum() > 100
    np.testing.assert_allclose(y64, want, rtol=1e-6)


def test_no_float64_in_the_ir():
    types32 = {i.result.type for i in instrs(relax32.ir(X, X).body) if i.result is not None}
    types64 = {i.result.type for i in instrs(relax64.ir(X, X).body) if i.result is not None}
    assert qd.float64 not in types32 and qd.float32 in types32
    assert qd.float64 in types64


def test_package_wide_setting(launch):
    y = np.zeros_like(X)
    launch(relax_pkg, X, y)
    assert (y != _reference(X)).any()
    qd.set_default_float(qd.float32)
    assert qd.default_float() is qd.float32
    launch(relax_pkg, X, y)
    np.testing.assert_array_equal(y, _reference(X))
    y64 = np.zeros_like(X)
    launch(qd.kernel(default_float=qd.float64)(_relax), X, y64)
    assert (y64 != _reference(X)).any()  # a kernel's own setting wins
    qd.set_default_float(qd.float64)
    launch(relax_pkg, X, y)  # compiled again (its float64 launcher is kept)
    assert (y != _reference(X)).any()


def test_part_of_the_cache_key():
    specs = signature(relax_pkg, (X, X))[0]
    key64 = entries.entry_key(relax_pkg, specs, "cpu", False, "forward")
    qd.set_default_float(qd.float32)
    key32 = entries.entry_key(relax_pkg, specs, "cpu", False, "forward")
    assert key64 is None or key64 != key32


@qd.func
def _scaled(v):
    w = 0.0  # the caller's default float
    w = v * 2.0
    return w


@qd.func(default_float=qd.float64)
def _scaled64(v):
    w = 0.0  # float64, whatever the caller's
    w = v * 2.0
    return w


@qd.kernel(default_float=qd.float32)
def use_funcs(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = _scaled(x[i]) + _scaled64(x[i]) + float(i)


def test_funcs_follow_the_caller_unless_set():
    ir = use_funcs.ir(X, np.zeros(X.shape, np.float64))
    w_types = sorted(i.attrs[0].dtype.name for i in instrs(ir.body)
                     if i.op.name == "STORE_VAR" and i.attrs[0].name == "w")
    assert set(w_types) == {"float32", "float64"}  # _scaled's w, _scaled64's w


def test_integer_division_and_math_of_integers():
    @qd.kernel(default_float=qd.float32)
    def k(n: qd.int32, out: qd.Array[qd.float32, 1]):
        for i in range(out.shape[0]):
            out[i] = i / n + qd.math.sqrt(i) + n * 0.5

    out = np.zeros(8, f32)
    k(3, out)
    i = np.arange(8)
    want = (i.astype(f32) / f32(3)) + np.sqrt(i.astype(f32)) + f32(3) * f32(0.5)
    np.testing.assert_array_equal(out, want)
    types = {x.result.type for x in instrs(k.ir(3, out).body) if x.result is not None}
    assert qd.float64 not in types


def test_reverse_mode(backend, request):
    device = "cpu" if backend in ("interp", "cpu") else request.getfixturevalue("device")

    @qd.kernel(default_float=qd.float32)
    def energy(x: qd.Array[qd.float32, 1], loss: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            e = 0.0
            for _k in range(3):
                e = e * 0.5 + x[i] * x[i] * 0.25
            loss[0] += e

    xs = np.linspace(-1, 1, 16, dtype=f32)
    x = qd.asarray(xs, device=device, requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    if backend == "interp":
        energy.interpret(x, loss)
        loss.grad[...] = 1.0
        energy.grad.interpret(x, loss)
    else:
        with qd.ad.Tape(loss=loss):
            energy(x, loss)
    # e = x^2 / 4 * (1 + 0.5 + 0.25): d/dx = x * 0.875
    got = np.asarray(x.grad.to_device("cpu"))
    assert got.dtype == f32
    np.testing.assert_allclose(got, xs * f32(0.875), rtol=1e-6)
    want_loss = np.sum(xs * xs * f32(0.4375), dtype=np.float64)
    np.testing.assert_allclose(np.asarray(loss.to_device("cpu"))[0], want_loss, rtol=1e-5)


@pytest.mark.parametrize("bad", [qd.int32, qd.float16 if hasattr(qd, "float16") else "int8",
                                 "double precision", 3])
def test_other_types_are_refused(bad):
    with pytest.raises(TypeError, match="qd.float32 or qd.float64"):
        qd.kernel(default_float=bad)(_relax)
    with pytest.raises(TypeError, match="qd.float32 or qd.float64"):
        qd.set_default_float(bad)


def test_names_and_numpy_types_are_accepted():
    assert qd.kernel(default_float="float32")(_relax).default_float is qd.float32
    assert qd.func(default_float=np.float64)(_relax).default_float is qd.float64


def test_pickled_by_value_keeps_the_option():
    def inner(x, y):
        for i in range(x.shape[0]):
            v = 0.0
            y[i] = v + x[i] * 0.1

    k = qd.kernel(default_float=qd.float32)(inner)
    back = pickle.loads(pickle.dumps(k))
    assert back.default_float is qd.float32


@qd.func(default_float=qd.float32)
def _halve(v: float):
    return v * 0.5


@qd.kernel
def calls_a_float32_func(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = _halve(x[i])  # `v: float` is float32 in _halve


def test_a_funcs_float_parameters_follow_its_setting():
    x, y = np.zeros(2), np.zeros(2)
    with pytest.raises(qd.KernelTypeError, match="Parameter 'v' of func '_halve' has type "
                                                 "float32"):
        calls_a_float32_func(x, y)  # a float64 value into a float32 parameter narrows

    @qd.kernel
    def weak_argument(y: qd.Array[qd.float64, 1]):
        for i in range(y.shape[0]):
            y[i] = _halve(0.1)

    weak_argument(y)
    assert y.tolist() == [float(np.float32(0.1) * np.float32(0.5))] * 2


@pytest.mark.parametrize("value,out", [("float32", "float32"), ("", "float64"),
                                       ("half", "QDARRAY_DEFAULT_FLOAT must be float32 or "
                                                "float64; got 'half'")])
def test_environment_variable(value, out):
    code = ("import qdarray as qd\n"
            "try:\n    print(qd.default_float().name)\n"
            "except Exception as e:\n    print(e)\n")
    env = {**os.environ, "QDARRAY_DEFAULT_FLOAT": value}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out in run.stdout + run.stderr
