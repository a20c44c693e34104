"""Adstacks in per-worker scratch (`StackLayout.scratch`, the CPU target's layout): each
worker of numba's pool owns one region of lane-group width x capacity entries per stack,
reused by every group it runs. Gradients are those of the packed layout and of the scalar
code bit for bit (lanes at different depths, zero-trip lanes and groups, break and
continue, nested dynamic loops, divergent branches, skewed workloads, launches large enough
to run on every worker, stacks of serial code beside them), match finite differences, and
overflows are still reported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from typing import Any

import numba
import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.launch import launch_reverse
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.cpu.target import PARALLEL_MIN, SCALAR, TARGET, CpuKernels
from qdarray.kernels.interp import INTERP
from qdarray.kernels.target import StackLayout

PACKED = CpuKernels()
PACKED.adstack = StackLayout()  # the same code generator, the packed layout
# large enough for the parallel entry: every worker of the pool runs groups
PAR = PARALLEL_MIN + 1234


def gradients(kern: Any, make: Any, target: Any, wrt: int = 0) -> np.ndarray:
    """d sum(last argument) / d argument `wrt`: forward, then the reverse on `target`."""
    args = [qd.asarray(a, copy=True) for a in make()]
    args[wrt] = qd.asarray(make()[wrt], copy=True, requires_grad=True)
    args[-1] = qd.asarray(make()[-1], copy=True, requires_grad=True)
    kern(*args)
    args[-1].grad[...] = 1.0
    launch_reverse(kern, args, target)
    return np.asarray(args[wrt].grad).copy()


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    bits = np.uint64 if got.dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def every_layout(kern: Any, make: Any, interp: bool = True) -> np.ndarray:
    """The gradients in lanes with scratch, asserted equal bit for bit to the scalar code's
    (scratch of one lane), the packed layout's and (small launches) the interpreter's."""
    got = gradients(kern, make, TARGET)
    same_bits(got, gradients(kern, make, SCALAR))
    same_bits(got, gradients(kern, make, PACKED))
    if interp:
        same_bits(got, gradients(kern, make, INTERP))
    return got


def test_the_cpu_target_keeps_adstacks_in_scratch():
    for t in (TARGET, SCALAR):
        assert t.adstack.scratch and t.adstack.regions() >= 1
    assert TARGET.adstack.group == (TARGET.lanes or 1) and SCALAR.adstack.group == 1
    assert not INTERP.adstack.scratch


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def logistic_grad(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """d sum / d x in float64, by the chain rule."""
    v, d = x.astype(np.float64), np.ones(len(x))
    for k in range(int(a.max(initial=0))):
        live = k < a
        d = np.where(live, d * (1 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    return d


@pytest.mark.parametrize("kind", ["uniform", "zero groups", "skewed"])
@pytest.mark.parametrize("n", [77, PAR])
def test_dynamic_loop_in_every_layout(kind, n):
    rng = np.random.default_rng(n)
    x = rng.uniform(0.1, 0.9, n).astype(np.float32)
    if kind == "uniform":
        a = rng.integers(0, 64, n)
    elif kind == "zero groups":  # whole groups and single lanes without trips
        a = rng.integers(0, 6, n)
        a[:70] = 0
        a[n // 2:n // 2 + 200] = 0
    else:  # 1% of the threads loop long, the rest 0..10
        a = rng.integers(0, 11, n)
        a[rng.random(n) < 0.01] = 700
    a = a.astype(np.int32)
    got = every_layout(logistic, lambda: (x, a, np.zeros(1, np.float32)), interp=n < 1000)
    np.testing.assert_allclose(got, logistic_grad(x, a), rtol=3e-4, atol=1e-6)


@qd.kernel
def nested(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], b: qd.Array[qd.int32, 1],
           y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for k in range(b[i] + j % 3 - 1):  # inner trips differ by lane and by j
                v = qd.math.sin(v) * 1.1 + 0.05 * k
            if j % 2 == 0:
                v = v * v * 0.5 + 0.3
        y[i] = v


@qd.kernel
def exits(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            if v > 0.9:
                v = v * 0.5
                continue
            v = v * (1.0 + 0.1 * j) + 0.05
            if v > 1.6:
                break
        w = 0
        while w < a[i] % 4:  # a data-dependent while loop after it
            v = qd.math.exp(-v) + v
            w += 1
        y[i] = v * v


def central_differences(kern: Any, make: Any, h: float = 1e-6) -> np.ndarray:
    args = make()

    def total(x: np.ndarray) -> float:
        out = [qd.asarray(a, copy=True) for a in args[:-1]] + [qd.asarray(args[-1], copy=True)]
        out[0] = qd.asarray(x, copy=True)
        kern(*out)
        return float(np.asarray(out[-1]).sum())

    x = args[0]
    fd = np.empty_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = (total(x + e) - total(x - e)) / (2 * h)
    return fd


def nested_args(n: int, seed: int = 5) -> Any:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 0.8, n)
    a = rng.integers(0, 5, n).astype(np.int32)
    b = rng.integers(0, 4, n).astype(np.int32)
    a[:9] = 0
    return lambda: (x, a, b, np.zeros(n))


def exits_args(n: int, seed: int = 6) -> Any:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.2, n)
    a = rng.integers(0, 9, n).astype(np.int32)
    return lambda: (x, a, np.zeros(n))


@pytest.mark.parametrize("kern,make", [(nested, nested_args), (exits, exits_args)],
                         ids=["nested loops", "break continue while"])
def test_control_flow_against_finite_differences(kern, make):
    args = make(61)
    got = every_layout(kern, args)
    np.testing.assert_allclose(got, central_differences(kern, args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kern,make", [(nested, nested_args), (exits, exits_args)],
                         ids=["nested loops", "break continue while"])
def test_control_flow_on_every_worker(kern, make):
    every_layout(kern, make(PAR), interp=False)


@qd.kernel
def serial_and_parallel(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1],
                        s: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    c = s[0]
    k = 0
    while k < a[0]:  # a dynamic loop of the serial code: its stack stays packed
        c = c * c * 0.9 + 0.01
        k += 1
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - c * v * v
        y[0] += v


def test_serial_stacks_beside_scratch():
    n = 300
    rng = np.random.default_rng(8)
    x = rng.uniform(0.1, 0.9, n).astype(np.float32)
    a = rng.integers(0, 20, n).astype(np.int32)
    a[0] = 13
    make = lambda: (x, a, np.array([0.3], np.float32), np.zeros(1, np.float32))  # noqa: E731
    for wrt in (0, 2):
        got = gradients(serial_and_parallel, make, TARGET, wrt)
        for other in (SCALAR, PACKED, INTERP):
            same_bits(got, gradients(serial_and_parallel, make, other, wrt))


def test_scratch_takes_workers_x_lanes_x_capacity():
    for n, trips in ((10, 5), (PAR, 40)):
        a = np.full(n, 3, np.int32)
        a[n // 3] = trips
        args = (np.full(n, 0.5, np.float32), a, np.zeros(1, np.float32))
        gradients(logistic, lambda args=args: args, TARGET)
        lanes = min(TARGET.adstack.group, n)
        want = TARGET.adstack.regions() * lanes * (trips + 1) * 4
        assert qd.ad.stats()["adstack_bytes"] == want


@pytest.mark.parametrize("target", [TARGET, SCALAR], ids=["lanes", "scalar"])
@pytest.mark.parametrize("n", [100, PAR])
def test_overflow_is_detected_in_scratch(target, n):
    a = np.zeros(n, np.int32)
    a[[3, 40, n - 23]] = [2, 9, 5]  # lanes of three groups outgrow a capacity of 4
    sizer._TEST_CAPACITY_OVERRIDE = 4
    try:
        with pytest.raises(qd.ad.AdStackOverflowError, match="capacity 4.*depth reached 10"):
            gradients(logistic, lambda: (np.full(n, 0.5, np.float32), a,
                                         np.zeros(1, np.float32)), target)
    finally:
        sizer._TEST_CAPACITY_OVERRIDE = None
    # the next launch with its own capacities is right again
    got = gradients(logistic, lambda: (np.full(n, 0.5, np.float32), a,
                                       np.zeros(1, np.float32)), target)
    np.testing.assert_allclose(got, logistic_grad(np.full(n, 0.5, np.float32), a), rtol=1e-5)


def test_a_new_process_runs_the_cached_reverse(tmp_path):
    """The reverse's machine code, loaded from numba's cache by another process, finds the
    worker index (numba's threading layer) it calls."""
    src = tmp_path / "scratch_kernel.py"
    src.write_text(textwrap.dedent("""
        import numpy as np
        import qdarray as qd

        @qd.kernel
        def k(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
            for i in range(x.shape[0]):
                v = x[i]
                for _ in range(a[i]):
                    v = v * 0.5 + 1.0
                y[0] += v

        x = qd.asarray(np.linspace(0, 1, 50), requires_grad=True)
        a = qd.asarray(np.arange(50, dtype=np.int32) % 7)
        y = qd.zeros(1, requires_grad=True)
        with qd.ad.Tape(loss=y):
            k(x, a, y)
        print(repr(np.asarray(x.grad).tolist()))
        """))
    want = repr((0.5 ** (np.arange(50) % 7)).tolist())
    for _ in range(2):  # the second process loads what the first compiled
        out = subprocess.run([sys.executable, str(src)], capture_output=True, text=True,
                             timeout=600, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == want


def test_reverse_launches_from_several_threads_and_pool_sizes():
    """Python threads launching the same reverse at once on their own data, and launches
    after numba.set_num_threads changed the pool's active workers (each worker's region
    is placed by numba's thread index, below NUMBA_NUM_THREADS): every gradient is the
    chain rule's."""
    rng = np.random.default_rng(11)
    cases = [(rng.uniform(0.1, 0.9, PAR).astype(np.float32),
              rng.integers(0, 12 + 9 * k, PAR).astype(np.int32)) for k in range(3)]
    got: list[Any] = [None] * len(cases)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            x, a = cases[k]
            for _ in range(2):
                got[k] = gradients(logistic, lambda: (x, a, np.zeros(1, np.float32)), TARGET)
        except BaseException as e:  # (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (x, a), g in zip(cases, got, strict=True):
        np.testing.assert_allclose(g, logistic_grad(x, a), rtol=3e-4, atol=1e-6)
    before = numba.get_num_threads()
    try:
        for workers in {1, before}:
            numba.set_num_threads(workers)
            x, a = cases[workers % len(cases)]
            g = gradients(logistic, lambda x=x, a=a: (x, a, np.zeros(1, np.float32)), TARGET)
            np.testing.assert_allclose(g, logistic_grad(x, a), rtol=3e-4, atol=1e-6)
    finally:
        numba.set_num_threads(before)
