"""The numba CPU generator against the interpreter: random kernels, and the module layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_programs import arguments, kernel_sources, load_kernel

import qdarray as qd
from qdarray.backends.cpu import target as cpu_kernels


@settings(max_examples=12)
@given(source=kernel_sources(), seed=st.integers(0, 2**16))
def test_generated_code_matches_the_interpreter(program_dir, source, seed):
    kern = load_kernel(source, program_dir)
    args = arguments(seed)
    try:
        kern.interpret(*args)
    except qd.KernelSyntaxError as exc:  # e.g. a constant division by zero
        assume("constant expression" not in str(exc))
        raise
    want = args[-1].copy()
    args[-1][:] = 0
    kern(*args)
    np.testing.assert_array_equal(args[-1], want, err_msg=source)


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def scalar_source(kern, *args):
    from qdarray.kernels.launch import build_ir, signature

    specs, device = signature(kern, args)
    target = cpu_kernels.SCALAR
    ir = build_ir(kern, specs, debug=False, lower=True)[0]
    return target.render(ir, debug=False, device=device)


def test_module_layout():
    x = np.zeros(4, np.float32)
    src = scalar_source(saxpy, 2.0, x, x)
    assert "def _body_0(_t0, v0, v1, v2):" in src
    assert "for _t0 in prange(" in src and "for _t0 in range(" in src
    assert src.count("cache=True") == 3
    assert "def work(a0, a1, a2):\n    v1 = a1\n    v3 = v1.shape[0]" in src
    # in lanes (the CPU's default): groups of threads, in the same entries
    lanes = saxpy.generated_source(2.0, x, x)
    width = cpu_kernels.TARGET.lanes
    assert "def _lanes_0(_g, _n, v0, v1, v2):" in lanes
    assert f"for _q in prange((max(_e - _b, 0) + {width - 1}) // {width}):" in lanes
    assert f"for _g in range(_b, _e, {width}):" in lanes
    assert lanes.count("cache=True") == 4


def test_small_launches_run_serially(monkeypatch):
    calls = []
    x = np.ones(8, np.float32)
    saxpy(1.0, x, x)
    launcher = next(iter(saxpy._launchers[qd.debug_mode()].values()))
    for name in ("serial", "parallel"):
        entry = getattr(launcher, name)
        monkeypatch.setattr(launcher, name,
                            lambda *a, _e=entry, _n=name: (calls.append(_n), _e(*a)))
    saxpy(1.0, x, x)
    big = np.ones(cpu_kernels.PARALLEL_MIN, np.float32)
    saxpy(1.0, big, big)
    assert calls == ["serial", "parallel"]
    np.testing.assert_array_equal(x, 4.0)
    np.testing.assert_array_equal(big, 2.0)


@qd.kernel
def rows(u: qd.Array[qd.float32, 2], out: qd.Array[qd.float32, 1]):
    for i in range(u.shape[0]):
        acc = 0.0
        for j in range(u.shape[1]):
            acc += u[i, j]
        for _ in range(i):  # bounds the host cannot know without the thread: counts once
            acc += 0.0
        out[i] = acc


def test_launches_go_parallel_by_total_work(monkeypatch):
    """Few threads with long loops: the threads times their loops' iterations decide."""
    calls = []
    u = np.ones((8, 16), np.float32)
    out = np.zeros(8, np.float32)
    rows(u, out)
    launcher = next(iter(rows._launchers[qd.debug_mode()].values()))
    assert launcher.work(u, out) == 8 * (16 + 1)
    for name in ("serial", "parallel"):
        entry = getattr(launcher, name)
        monkeypatch.setattr(launcher, name,
                            lambda *a, _e=entry, _n=name: (calls.append(_n), _e(*a)))
    rows(u, out)
    threads = 64
    wide = np.ones((threads, cpu_kernels.PARALLEL_MIN // threads), np.float32)
    wide_out = np.zeros(threads, np.float32)
    rows(wide, wide_out)
    assert calls == ["serial", "parallel"]
    np.testing.assert_array_equal(out, 16.0)
    np.testing.assert_array_equal(wide_out, wide.shape[1])


@qd.kernel
def data_dependent(n: qd.Array[qd.int64, 1], out: qd.Array[qd.int64, 1]):
    m = n[0]
    for i in range(m):
        out[i] = i


def test_bounds_the_host_cannot_compute_run_in_parallel():
    src = data_dependent.generated_source(np.array([3]), np.zeros(3, np.int64))
    assert "return 1 << 62" in src
    out = np.zeros(3, np.int64)
    data_dependent(np.array([3]), out)
    np.testing.assert_array_equal(out, [0, 1, 2])


@qd.kernel
def constants(out: qd.Array[qd.float32, 1]):
    out[0] = qd.float32(0.1)
    out[1] = qd.math.inf
    out[2] = -qd.math.inf
    out[3] = qd.float32(qd.math.nan)


@pytest.mark.parametrize("backend_name", ["interp", "cpu"])
def test_special_constants(backend_name):
    out = np.zeros(4, np.float32)
    (constants.interpret if backend_name == "interp" else constants)(out)
    assert out[0] == np.float32(0.1) and out[1] == np.inf and out[2] == -np.inf
    assert np.isnan(out[3])


@qd.kernel
def module_constants(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * 0.1 + (-0.0)
        big = -qd.math.inf
        if y[i] > 0.5:
            big = qd.math.inf
        y[i] = big + 1e-300 * -1.0


def test_constants_are_module_level_numpy_scalars():
    """A kernel's constants are bound once at module level (numba types them as constants;
    a call `np.float32(0.1)` at each use cost a long kernel a third of its compile time)
    and keep their exact values: float32 rounding, -0.0, infinities."""
    x = np.array([0.0, -0.0, 3.0, 1e-40], np.float32)
    y = np.array([0.0, 1.0, -2.0, 0.75])
    src = module_constants.generated_source(x, y)
    body = src[:src.index("# the kernel's constants")]
    assert "np.float32(0.1)" not in body and "_K0" in body
    assert "_K0 = " in src[src.index("# the kernel's constants"):]
    wx, wy = x * np.float32(0.1) + np.float32(-0.0), np.where(y > 0.5, np.inf, -np.inf)
    module_constants(x, y)
    np.testing.assert_array_equal(x, wx)
    assert np.signbit(x[1]) == np.signbit(wx[1])
    np.testing.assert_array_equal(y, wy)
