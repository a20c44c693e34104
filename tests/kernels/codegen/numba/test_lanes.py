"""SIMD lanes on the CPU (kernels/codegen/numba/lanes.py): parallel loops run in groups of
consecutive threads, one thread per vector lane, with the thread-by-thread code's results bit
for bit (cpu_kernels.SCALAR), forward and reverse; loops that lanes cannot run so keep the
thread-by-thread code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_programs import arguments, kernel_sources, load_kernel

import qdarray as qd
from qdarray import _dtypes as D
from qdarray.ad.launch import launch_reverse, prepare_reverse
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.cpu import target as cpu_kernels
from qdarray.backends.cpu.target import SCALAR, TARGET, lane_width
from qdarray.kernels.args import ArgSpec
from qdarray.kernels.codegen.numba.cpu import render_numba_cpu
from qdarray.kernels.emit import Emitter, block
from qdarray.kernels.ir import For, KernelIR, Op, Param
from qdarray.kernels.launch import build_ir, compile_ir, prepare, signature
from qdarray.kernels.library import complex_math
from qdarray.kernels.passes import pipeline
from qdarray.kernels.types import ArrayType

WIDTH = TARGET.lanes
BIG = cpu_kernels.PARALLEL_MIN * 3 + 7  # parallel entries, a partial last group


def run(kern: Any, args: tuple[Any, ...], target: Any) -> None:
    prepare(kern, args, target, qd.debug_mode())(args)


def both(kern: Any, make: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The arguments after a launch in lanes and after one thread by thread."""
    lanes, scalar = make(), make()
    run(kern, lanes, TARGET)
    run(kern, scalar, SCALAR)
    return lanes, scalar


def same_bits(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    for g, w in zip(got, want, strict=True):
        if isinstance(g, np.ndarray):
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def source(kern: Any, *args: Any, debug: bool = False) -> str:
    specs, _ = signature(kern, args)
    ir = build_ir(kern, specs, debug=debug, lower=True)[0]
    return render_numba_cpu(ir, debug=debug, lanes=WIDTH)


def test_the_cpu_target_runs_in_lanes():
    assert WIDTH is not None and WIDTH % 8 == 0 and SCALAR.lanes is None
    assert TARGET.name == "numba_cpu"  # the disk cache keeps its entries


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def logistic_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.integers(0, 64, n).astype(np.int32)


def logistic_reference(x: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each thread's final v and d v / d x in float64."""
    v, d = x.astype(np.float64), np.ones(x.size)
    for k in range(int(a.max(initial=0))):
        live = k < a
        d = np.where(live, d * (1.0 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    return v, d


@pytest.mark.parametrize("n", [5, 1000, BIG])
def test_dynamic_loop_sum_is_the_scalar_sum(n):
    x, a = logistic_inputs(n)
    lanes, scalar = both(logistic, lambda: (x, a, np.zeros(1, np.float32)))
    same_bits(lanes, scalar)
    v, _ = logistic_reference(x, a)
    np.testing.assert_allclose(lanes[2][0], v.sum(), rtol=1e-5)
    assert "_lanes_0" in source(logistic, x, a, lanes[2])


@qd.kernel
def control(x: qd.Array[qd.float64, 1], k: qd.Array[qd.int32, 1], perm: qd.Array[qd.int64, 1],
            out: qd.Array[qd.float64, 1], ints: qd.Array[qd.int64, 1],
            hist: qd.Array[qd.int64, 1], small: qd.Array[qd.int8, 1]):
    for i in range(x.shape[0]):
        v = x[perm[i]]                  # a gather
        m = k[i]
        if m % 3 == 0:                  # varying if / else
            v = qd.math.sqrt(abs(v)) + qd.math.exp(-v * v)
        else:
            v = qd.math.sin(v) * m
        w = 0
        while True:                     # a varying while with a break
            w += 1
            if w * w > m:
                break
            v = v * 0.5 + w
        for j in range(m):              # a varying for with a continue
            if j % 2 == 1:
                continue
            v -= j / (m + 1.0)
        q = m // 7 - m % 5 + (m >> 2)   # integer division, modulo and shifts per lane
        out[perm[i]] = v                # a scatter
        ints[i] = q + qd.int64(m) * i
        qd.atomic_add(hist[m % 8], 1)   # an exact atomic at a data-dependent index
        small[i] = qd.int8(m * 37)      # a wrapping narrow cast
        if m == 5:
            continue                    # a top-level continue
        out[perm[i]] += 1.0


def control_args(n: int, seed: int = 1) -> Any:
    def make() -> tuple[Any, ...]:
        r = np.random.default_rng(seed)
        return (r.normal(size=n) * 3, r.integers(-4, 40, n).astype(np.int32),
                r.permutation(n).astype(np.int64), np.zeros(n), np.zeros(n, np.int64),
                np.zeros(8, np.int64), np.zeros(n, np.int8))
    return make


def control_reference(x, k, perm):  # noqa: ANN001, ANN201
    out = np.zeros(x.size)
    ints = np.zeros(x.size, np.int64)
    for i in range(x.size):
        v = float(x[perm[i]])
        m = int(k[i])
        v = (np.sqrt(abs(v)) + np.exp(-v * v)) if m % 3 == 0 else np.sin(v) * m
        w = 0
        while True:
            w += 1
            if w * w > m:
                break
            v = v * 0.5 + w
        for j in range(0, max(m, 0), 2):
            v -= j / (m + 1.0)
        out[perm[i]] = v + (m != 5)
        ints[i] = m // 7 - m % 5 + (m >> 2) + m * i
    return out, ints


@pytest.mark.parametrize("n", [37, BIG])
def test_control_flow_memory_and_atomics_match_the_scalar_code(n):
    make = control_args(n)
    lanes, scalar = both(control, make)
    same_bits(lanes, scalar)
    x, k, perm = make()[:3]
    out, ints = control_reference(x, k, perm)
    np.testing.assert_allclose(lanes[3], out, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(lanes[4], ints)
    np.testing.assert_array_equal(lanes[5], np.bincount(k % 8, minlength=8))
    np.testing.assert_array_equal(lanes[6], (k.astype(np.int64) * 37).astype(np.int8))
    src = source(control, *make())
    assert "_lanes_0" in src and "runs thread by thread" not in src


@qd.kernel
def grid(a: qd.Array[qd.int32, 2], out: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange(a.shape[0], a.shape[1]):
        v = qd.float32(i) - qd.float32(j) * 0.5
        for _ in range(a[i, j]):
            v = v * 0.75 + 1.0
        out[i, j] = v


@pytest.mark.parametrize("shape", [(3, 45), (70, 33), (600, 101)])
def test_nests_run_in_lanes_along_their_innermost_axis(shape):
    a = np.random.default_rng(2).integers(0, 9, shape).astype(np.int32)
    lanes, scalar = both(grid, lambda: (a, np.zeros(shape, np.float32)))
    same_bits(lanes, scalar)
    i, j = np.indices(shape)
    want = (i - j * 0.5).astype(np.float64)
    for step in range(int(a.max())):
        want = np.where(step < a, want * 0.75 + 1.0, want)
    np.testing.assert_allclose(lanes[1], want, rtol=1e-5)


@qd.kernel
def float_atomics_in_a_loop(k: qd.Array[qd.int32, 1], x: qd.Array[qd.float32, 1],
                            bins: qd.Array[qd.float32, 1]):
    for i in range(k.shape[0]):
        for j in range(k[i]):
            qd.atomic_add(bins[(i + j) % 4], x[i])


def complex_product() -> KernelIR:
    """out[i] = x[i] * y[i] over complex64 arrays (kernels of qdarray's namespace have complex
    values; user kernels do not)."""
    em = Emitter(0, 0)
    params = [Param(name, em.value(ArrayType(D.complex64, 1))) for name in ("out", "x", "y")]
    i = em.value(D.int64)
    with em.region() as inner:
        x, y = (em.emit(Op.LOAD, p.value, i) for p in params[1:])
        em.emit(Op.STORE, params[0].value, i, complex_math.mul(em, D.complex64, [x, y]))
    n = em.emit(Op.SHAPE, params[0].value, attrs=(0,))
    em.stmt(For(i, em.i64(0), n, block(inner), True))
    return KernelIR("complex_product", tuple(params), block(em.out))


def test_loops_lanes_cannot_run_bit_for_bit_keep_the_scalar_code():
    k = np.arange(50, dtype=np.int32) % 5
    x = np.linspace(0.1, 3.0, 50, dtype=np.float32)
    src = source(float_atomics_in_a_loop, k, x, np.zeros(4, np.float32))
    assert "runs thread by thread: a float ATOMIC_ADD" in src and "_lanes_0" not in src
    lanes, scalar = both(float_atomics_in_a_loop, lambda: (k, x, np.zeros(4, np.float32)))
    same_bits(lanes, scalar)
    want = np.zeros(4)
    for i in range(50):
        for j in range(k[i]):
            want[(i + j) % 4] += x[i]
    np.testing.assert_allclose(lanes[2], want, rtol=1e-5)

    ir = complex_product()
    assert "complex numbers have no SIMD lanes" in render_numba_cpu(ir, lanes=WIDTH)
    z = (np.arange(40) + 1j * np.arange(40)[::-1]).astype(np.complex64)
    w = (np.linspace(-1, 1, 40) - 0.5j).astype(np.complex64)
    out = np.zeros(40, np.complex64)
    specs = [ArgSpec("array", p.value.type) for p in ir.params]
    compile_ir(ir, specs, ["out", "x", "y"], TARGET, False, [], qd.Device("cpu"))([out, z, w])
    np.testing.assert_array_equal(out, z * w)


def test_debug_mode_runs_thread_by_thread():
    x, a = logistic_inputs(40)
    src = source(logistic, x, a, np.zeros(1, np.float32), debug=True)
    assert "runs thread by thread: debug mode" in src and "_lanes_0" not in src


def test_lane_setting():
    assert lane_width("0") is None and lane_width("24") == 24
    assert lane_width("auto") == lane_width("") in (16, 32)
    for bad in ("65", "-8", "wide", "1.5"):
        with pytest.raises(ValueError, match=f"QDARRAY_CPU_LANES='{bad}'.*from 1 to 64"):
            lane_width(bad)


@settings(max_examples=15, derandomize=True, deadline=None)
@given(source=kernel_sources(), seed=st.integers(0, 2**16))
def test_random_kernels_in_lanes_match_the_interpreter(program_dir, source, seed):
    kern = load_kernel(source, program_dir)
    args = arguments(seed, n=77)  # two full groups and a partial one
    try:
        kern.interpret(*args)
    except qd.KernelSyntaxError as exc:
        assume("constant expression" not in str(exc))
        raise
    want = args[-1].copy()
    args[-1][:] = 0
    run(kern, args, TARGET)
    np.testing.assert_array_equal(args[-1], want, err_msg=source)


# -- reverse kernels ------------------------------------------------------------------------


def grad_of(kern: Any, x: np.ndarray, rest: tuple[Any, ...], out: np.ndarray, target: Any
            ) -> np.ndarray:
    """d sum(out) / d x from the reverse of `kern` on `target`."""
    xq = qd.asarray(x, copy=True, requires_grad=True)
    oq = qd.asarray(out, copy=True, requires_grad=True)
    oq.grad[...] = 1.0
    launch_reverse(kern, (xq, *rest, oq), target)
    return np.asarray(xq.grad).copy()


def reverse_source(kern: Any, *args: Any) -> str:
    launcher = prepare_reverse(kern, args, TARGET, False)
    return render_numba_cpu(pipeline(launcher.rev.kernel, debug=False, lower=True),
                            lanes=WIDTH)


@pytest.mark.parametrize("n", [45, BIG])
def test_dynamic_loop_gradient_is_the_scalar_gradient(n):
    x, a = logistic_inputs(n, seed=3)
    aq = qd.asarray(a)
    lanes = grad_of(logistic, x, (aq,), np.zeros(1, np.float32), TARGET)
    scalar = grad_of(logistic, x, (aq,), np.zeros(1, np.float32), SCALAR)
    np.testing.assert_array_equal(lanes.view(np.uint32), scalar.view(np.uint32))
    _, d = logistic_reference(x, a)
    np.testing.assert_allclose(lanes, d, rtol=2e-5, atol=1e-6)
    src = reverse_source(logistic, qd.asarray(x, requires_grad=True), aq,
                         qd.zeros(1, dtype=qd.float32, requires_grad=True))
    assert "_lanes_0" in src and "runs thread by thread" not in src


@qd.kernel
def branchy(x: qd.Array[qd.float64, 1], k: qd.Array[qd.int32, 1], out: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        w = 0
        while w < k[i]:
            if v > 0.5:
                v = qd.math.sin(v) * 1.5
            else:
                v = v * v + 0.25
            w += 1
        for j in range(k[i] % 3):
            v = v * (1.0 + j * 0.1) - qd.math.exp(-v)
        out[i] = v * v


def test_reverse_with_varying_control_against_finite_differences():
    n = 101
    rng = np.random.default_rng(4)
    x = rng.uniform(-1.0, 1.5, n)
    k = rng.integers(0, 12, n).astype(np.int32)
    kq = qd.asarray(k)
    lanes = grad_of(branchy, x, (kq,), np.zeros(n), TARGET)
    scalar = grad_of(branchy, x, (kq,), np.zeros(n), SCALAR)
    np.testing.assert_array_equal(lanes.view(np.uint64), scalar.view(np.uint64))
    h = 1e-6

    def forward(xs: np.ndarray) -> np.ndarray:
        out = np.zeros(n)
        run(branchy, (xs, k, out), TARGET)
        return out

    fd = (forward(x + h) - forward(x - h)) / (2 * h)
    np.testing.assert_allclose(lanes, fd, rtol=1e-5, atol=1e-6)
    assert "_lanes_0" in reverse_source(branchy, qd.asarray(x, requires_grad=True), kq,
                                        qd.zeros(n, requires_grad=True))


@pytest.mark.parametrize("target", [TARGET, SCALAR], ids=["lanes", "scalar"])
def test_adstack_overflow_is_detected_in_lanes(target):
    n = 100
    a = np.zeros(n, np.int32)
    a[[3, 40, 77]] = [2, 9, 5]  # one lane of three groups outgrows a capacity of 4
    sizer._TEST_CAPACITY_OVERRIDE = 4
    try:
        with pytest.raises(qd.ad.AdStackOverflowError, match="capacity 4.*depth reached 10"):
            grad_of(logistic, np.full(n, 0.5, np.float32), (qd.asarray(a),),
                    np.zeros(1, np.float32), target)
    finally:
        sizer._TEST_CAPACITY_OVERRIDE = None


@qd.kernel
def converge(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * (1.0 - v)
            if v < 0.2:
                break
        y[i] = v


def test_a_group_leaves_its_loop_when_its_lanes_have_broken_or_ended():
    # lanes past their own (small) bound leave the group's loop: the lanes that break early
    # under a bound of 10**12 then end it, as one thread at a time does
    n = BIG
    x = np.linspace(0.3, 0.6, n)
    a = np.where(np.arange(n) % 3 == 0, 10**12, np.arange(n) % 5).astype(np.int64)
    lanes, scalar = both(converge, lambda: (x, a, np.zeros(n)))
    same_bits(lanes, scalar)
    v = x.copy()
    for k in range(8):  # every lane with the huge bound breaks within 8 steps from [0.3, 0.6]
        live = (k < a) & (v >= 0.2)
        v = np.where(live, v * (1.0 - v), v)
    np.testing.assert_array_equal(lanes[2], v)
