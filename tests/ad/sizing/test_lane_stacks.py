"""Adstack depths in SIMD lanes (passes/lane_stacks.py): a lane group shares one depth where
its lockstep pushes and pops are its deepest lanes' (one dynamic loop pushing, its reverse
end-aligned), else each lane keeps its own. Both give the scalar reverse's gradients bit for
bit: data-dependent trip counts with zero-trip lanes, all-zero groups, tails where N is not a
multiple of the group width, while loops, loops that run uniform inner loops, break and
continue, nested and sequential dynamic loops, a dynamic loop run again by an outer loop,
divergent branches, skewed workloads, one and two workers; finite differences agree, and an
overflow of a shared depth is reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest
from test_scratch import central_differences, gradients, same_bits

import qdarray as qd
from qdarray.ad.launch import _CACHE
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.cpu.target import PARALLEL_MIN, SCALAR, TARGET

PAR = PARALLEL_MIN + 1237  # the parallel entry, and not a multiple of any group width
SHARED = "a lane group shares its adstack depths"
OWN = "each lane keeps its own adstack depths"


def layout_of(kern: Any) -> str:
    """The lane-stack comment of the reverse kernel of `kern` compiled for TARGET."""
    for launcher in _CACHE[kern].values():
        if launcher.target is TARGET:
            with open(launcher.run.module.__file__) as f:
                text = f.read()
            if SHARED in text:
                return "shared"
            if OWN in text:
                return "own"
    raise AssertionError("no lane reverse kernel compiled")


def check(kern: Any, make: Any, layout: str, ref: Any = None) -> np.ndarray:
    got = gradients(kern, make, TARGET)
    assert layout_of(kern) == layout
    same_bits(got, gradients(kern, make, SCALAR))
    if ref is not None:
        np.testing.assert_allclose(got, ref(*make()[:-1]), rtol=3e-4, atol=1e-6)
    return got


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def logistic_grad(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    v, d = x.astype(np.float64), np.ones(len(x))
    for k in range(int(a.max(initial=0))):
        live = k < a
        d = np.where(live, d * (1 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    return d


def trips(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        a = rng.integers(0, 64, n)
    elif kind == "zero lanes and groups":
        a = rng.integers(0, 6, n)
        a[rng.random(n) < 0.3] = 0
        a[:96] = 0                    # whole groups
        a[n // 2:n // 2 + 200] = 0
    elif kind == "all zero":
        a = np.zeros(n, np.int64)
    else:  # skewed: 1% of the threads loop long, the rest 0..10
        a = rng.integers(0, 11, n)
        a[rng.random(n) < 0.01] = 500
    return a.astype(np.int32)


@pytest.mark.parametrize("kind", ["uniform", "zero lanes and groups", "all zero", "skewed"])
@pytest.mark.parametrize("n", [45, 1000, PAR])
def test_one_dynamic_loop_shares_depths(kind, n):
    x = np.random.default_rng(n).uniform(0.1, 0.9, n).astype(np.float32)
    a = trips(kind, n, n + 1)
    check(logistic, lambda: (x, a, np.zeros(1, np.float32)), "shared", logistic_grad)


@pytest.mark.parametrize("workers", [1, 2])
def test_shared_depths_on_one_and_two_workers(workers):
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))
        x = np.random.default_rng(3).uniform(0.1, 0.9, PAR).astype(np.float32)
        a = trips("uniform", PAR, 4)
        check(logistic, lambda: (x, a, np.zeros(1, np.float32)), "shared", logistic_grad)
    finally:
        numba.set_num_threads(before)


@qd.kernel
def halving(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = a[i]
        while k > 0:
            v = v - 0.1 * v * v + 0.01
            k = k // 2
        y[i] = v


@qd.kernel
def inner_uniform(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                  y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for k in range(3):  # every lane runs it alike
                v = qd.math.sin(v) * 0.9 + 0.01 * (j + k)
        y[i] = v * v


@qd.kernel
def breaks(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            v = v * (1.0 + 0.1 * j) + 0.05
            if v > 1.6:
                break
        y[i] = v


@qd.kernel
def continues(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
              y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            if v > 0.9:
                v = v * 0.5
                continue
            v = v * v + 0.3
        y[i] = v


@qd.kernel
def sequential(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
               y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * v * 0.5 + 0.3
        for _ in range(a[i] % 3):
            v = qd.math.exp(-v) + v
        y[i] = v


@qd.kernel
def nested(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(a[i]):
            for _ in range(a[i] - j):
                v = qd.math.sin(v) * 1.1 + 0.05
        y[i] = v


@qd.kernel
def branchy(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            if v > 0.5:  # a push under a branch that lanes take differently (a branch
                v = v * v  # outside loops needs no stack)
            v = v * 0.9 + 0.1 * v * v
        y[i] = v


@qd.kernel
def rerun(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(3):  # uniform, but it runs the dynamic loop again: with a shared depth
            for _ in range(a[i]):  # the second run read slots its shorter lanes never wrote
                v = v * 1.05 + 0.1 * qd.math.cos(v)
        y[i] = v


@qd.kernel
def rerun_while(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = 0
        while k < 2:
            for _ in range(a[i]):
                v = v * 1.05 + 0.1 * qd.math.cos(v)
                if v > 1.5:
                    break
            k += 1
        y[i] = v


KERNELS = {"while": (halving, "shared"), "uniform inner loop": (inner_uniform, "shared"),
           "break": (breaks, "shared"), "continue": (continues, "own"),
           "sequential loops": (sequential, "own"), "nested loops": (nested, "own"),
           "divergent branch": (branchy, "own"), "rerun in a for": (rerun, "own"),
           "rerun in a while": (rerun_while, "own")}


def args_of(n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.2, n)
    a = rng.integers(0, 9, n).astype(np.int32)
    a[rng.random(n) < 0.2] = 0
    return lambda: (x, a, np.zeros(n))


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_construct_in_its_layout(name):
    kern, layout = KERNELS[name]
    for n in (37, PAR):
        check(kern, args_of(n, n), layout)


@pytest.mark.parametrize("name", ["while", "break", "nested loops", "rerun in a for",
                                  "rerun in a while"])
def test_against_finite_differences(name):
    kern, layout = KERNELS[name]
    make = args_of(29, 2)
    got = check(kern, make, layout)
    np.testing.assert_allclose(got, central_differences(kern, make), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [100, PAR])
def test_overflow_of_a_shared_depth_is_reported(n):
    a = np.zeros(n, np.int32)
    a[[3, 40, n - 23]] = [2, 9, 5]  # lanes of three groups outgrow a capacity of 4
    make = lambda: (np.full(n, 0.5, np.float32), a, np.zeros(1, np.float32))  # noqa: E731
    sizer._TEST_CAPACITY_OVERRIDE = 4
    try:
        with pytest.raises(qd.ad.AdStackOverflowError, match="capacity 4.*depth reached 10"):
            gradients(logistic, make, TARGET)
    finally:
        sizer._TEST_CAPACITY_OVERRIDE = None
    assert layout_of(logistic) == "shared"
    check(logistic, make, "shared", logistic_grad)


def test_packed_stacks_keep_per_lane_depths():
    """A lane group shares its depths only in the scratch layout: in the packed one each
    thread's entries are where its group's table row says."""
    from qdarray.backends.cpu.target import CpuKernels
    from qdarray.kernels.target import StackLayout

    packed = CpuKernels()
    packed.adstack = StackLayout()
    x = np.random.default_rng(9).uniform(0.1, 0.9, 300).astype(np.float32)
    a = trips("uniform", 300, 10)
    make = lambda: (x, a, np.zeros(1, np.float32))  # noqa: E731
    got = gradients(logistic, make, packed)
    texts = [Path(la.run.module.__file__).read_text() for la in _CACHE[logistic].values()
             if la.target is packed]
    assert texts and all("the adstacks are packed" in t for t in texts)
    same_bits(got, gradients(logistic, make, SCALAR))
