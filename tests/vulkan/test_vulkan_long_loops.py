"""Loops longer than 65,535 iterations on the Vulkan device.

Mesa's llvmpipe (lavapipe, the CI's device) stops every shader invocation after 65,535 loop
iterations in all (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS, counts the back edges
of all the invocation's loops together), silently: the loop just ends. The namespace keeps each
work-item's serial loops below STEPS iterations, so its results hold on such a device (and on
every other); a user kernel whose invocation loops longer raises LoopLimitError there at the
next synchronisation (backends/vulkan/_loop_guard.py), and kernels under the limit are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.kernel_xp import reductions
from qdarray.backends.kernel_xp.reductions import STEPS

# 2**23 + 4097 elements: 128 work-items (lavapipe's split on 2 cores) would each loop 65,568
# times over one row; int8 keeps the arrays at 8 MiB.
N = 2**23 + 4097


@pytest.fixture(scope="module")
def data(device):
    a = np.zeros(N, np.int8)
    a[5], a[N - 2000], a[N - 1] = 1, -3, 7
    return a, qd.asarray(a, device=device)


def host(x):
    return np.asarray(qd.asarray(x).to_device("cpu"))


REDUCTIONS = {
    "sum": (qd.sum, np.sum), "max": (qd.max, np.max), "min": (qd.min, np.min),
    "any": (lambda v, **k: qd.any(v == 7, **k), lambda v, **k: np.any(v == 7, **k)),
    "all": (lambda v, **k: qd.all(v != 7, **k), lambda v, **k: np.all(v != 7, **k)),
    "count_nonzero": (qd.count_nonzero, np.count_nonzero),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_over_long_rows(data, name):
    a, x = data
    fn, ref = REDUCTIONS[name]
    assert host(fn(x)) == ref(a)
    half = N // 2  # two long rows
    rows = qd.reshape(x[: 2 * half], (2, half))
    np.testing.assert_array_equal(host(fn(rows, axis=1)), ref(a[: 2 * half].reshape(2, -1),
                                                             axis=1))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_over_long_rows(data, name):
    a, x = data
    assert host(getattr(qd, name)(x)) == getattr(np, name)(a)


def test_scans_over_long_rows(data):
    a, x = data
    got = host(qd.cumulative_sum(x))
    np.testing.assert_array_equal(got, np.cumsum(a, dtype=np.int64))
    nz = host(qd.nonzero(x)[0])
    np.testing.assert_array_equal(nz, np.nonzero(a)[0])


def test_matmul_with_a_long_inner_dimension(device):
    # One work-item per output element runs the inner loop: it is split into STEPS-long
    # pieces, each resuming from the partial sum the previous one stored.
    k = 5 * STEPS + 3  # past 65,535
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, k)).astype(np.float32)
    b = rng.standard_normal((k, 3)).astype(np.float32)
    got = host(qd.asarray(a, device=device) @ qd.asarray(b, device=device))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    ones = qd.ones(k, dtype=qd.int32, device=device)
    assert host(qd.vecdot(ones, ones)) == k
    assert host(qd.matmul(ones, ones)) == k


def test_every_split_round_with_a_tiny_step_bound(device, monkeypatch):
    # STEPS = 4 takes small arrays through every round the bound adds: partials of partials,
    # best pairs of best pairs, scans of the chunk totals (three levels deep) and matmul's
    # inner loop in pieces.
    monkeypatch.setattr(reductions, "STEPS", 4)
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, (3, 2001)).astype(np.int32)
    a[1, 1500] = 99
    x = qd.asarray(a, device=device)
    np.testing.assert_array_equal(host(qd.sum(x, axis=1)), a.sum(axis=1))
    np.testing.assert_array_equal(host(qd.max(x, axis=1)), a.max(axis=1))
    assert host(qd.sum(x)) == a.sum()
    np.testing.assert_array_equal(host(qd.argmax(x, axis=1)), a.argmax(axis=1))
    np.testing.assert_array_equal(host(qd.argmin(x, axis=1)), a.argmin(axis=1))
    assert host(qd.argmax(x)) == a.argmax()
    np.testing.assert_array_equal(host(qd.cumulative_sum(x, axis=1)), np.cumsum(a, axis=1))
    np.testing.assert_array_equal(host(qd.cumulative_sum(x, axis=1, include_initial=True)),
                                  np.concatenate([np.zeros((3, 1), np.int64),
                                                  np.cumsum(a, axis=1)], axis=1))
    f = rng.standard_normal((5, 37))
    g = rng.standard_normal((37, 4))
    np.testing.assert_allclose(host(qd.asarray(f, device=device) @ qd.asarray(g, device=device)),
                               f @ g, rtol=1e-12)


def _llvmpipe() -> bool:
    """Whether vulkan:0 is Mesa's llvmpipe (whose loop limiter cuts long loops)."""
    try:
        from qdarray.backends.vulkan import _instance

        devices = sorted(_instance.physical_devices(), key=lambda p: p.position)
        first = qd.Device("vulkan:0")
        name = first.backend.capabilities(first)["device name"]
    except Exception:  # no binding, loader or device: the tests skip
        return False
    return bool(devices) and "llvmpipe" in name


LLVMPIPE = _llvmpipe()


def cut(kernel: str):
    """What a launch whose loops llvmpipe cut raises at the next synchronisation."""
    return pytest.raises(qd.LoopLimitError,
                         match=rf"Kernel '{kernel}' ran loops that device vulkan:0 \(.*llvmpipe"
                               r".* ended early.*after 65,535 iterations.*Split the work over "
                               r"more threads.*another device")


@qd.kernel
def count_to(n: qd.int64, out: qd.Array[qd.int64, 1]):
    for j in range(2):
        c = 0
        for _ in range(n):
            c += 1
        out[j] = c


def test_loops_under_the_limit_in_lockstep_are_exact(device):
    out = qd.zeros(2, dtype=qd.int64, device=device)
    count_to(60_000, out)
    assert host(out).tolist() == [60_000, 60_000]


def test_a_kernel_loop_past_65535_iterations(device):
    out = qd.zeros(2, dtype=qd.int64, device=device)
    count_to(70_000, out)
    if not LLVMPIPE:
        assert host(out).tolist() == [70_000, 70_000]
        return
    with cut("count_to"):
        host(out)
    assert issubclass(qd.LoopLimitError, RuntimeError)
    # reported once: the device works on, and a launch under the limit is exact
    count_to(1_000, out)
    assert host(out).tolist() == [1_000, 1_000]


@qd.kernel
def count_debug(n: qd.int64, out: qd.Array[qd.int64, 1]):
    for j in range(2):
        c = 0
        for _ in range(n):
            c += 1
        out[j] = c


def test_a_cut_loop_in_debug_mode_raises_at_the_launch(device):
    # a debug launch reads its own error record (where its stages report the cut) after it
    qd.set_debug(True)
    try:
        out = qd.zeros(2, dtype=qd.int64, device=device)
        if LLVMPIPE:
            with cut("count_debug"):
                count_debug(70_000, out)
        count_debug(500, out)
        assert host(out).tolist() == [500, 500]
    finally:
        qd.set_debug(False)



@qd.kernel
def branches(a: qd.Array[qd.int32, 1], out: qd.Array[qd.int64, 1]):
    for i in range(out.shape[0]):
        c = 0
        if i % 2 == 0:
            for _ in range(a[0]):
                c += 1
        else:
            for _ in range(a[1]):
                c += 2
        out[i] = c


@pytest.mark.parametrize("trips", [(30_000, 30_000), (60_000, 0), (0, 60_000), (64_000, 1)])
def test_threads_of_one_batch_in_different_loops_under_the_limit(device, trips):
    # Even and odd threads loop in different loops; a batch runs both (llvmpipe: its SIMD
    # lanes, the limiter counting both loops' passes): 60,000 in all is exact.
    out = qd.zeros(16, dtype=qd.int64, device=device)
    branches(qd.asarray(np.array(trips, np.int32), device=device), out)
    assert host(out).tolist() == [trips[0], 2 * trips[1]] * 8


def test_threads_of_one_batch_in_different_loops_past_the_limit(device):
    # 40,000 iterations each, in two loops: every thread's own loop fits, the batch's
    # 80,000 passes do not.
    out = qd.zeros(16, dtype=qd.int64, device=device)
    branches(qd.asarray(np.array([40_000, 40_000], np.int32), device=device), out)
    if not LLVMPIPE:
        assert host(out).tolist() == [40_000, 80_000] * 8
        return
    with cut("branches"):
        host(out)


@qd.kernel
def iterate(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 1e-5 * v * v + 1e-6
        y[0] += v


def _gradient(dev, trips):
    x = qd.asarray(np.full(2, 0.5), device=dev, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float64, device=dev, requires_grad=True)
    with qd.ad.Tape(loss=y):
        iterate(x, qd.asarray(trips, device=dev), y)
    return host(y), host(x.grad)


def test_a_reverse_whose_sweeps_stay_under_65535_iterations(device):
    trips = np.array([20_000, 5], np.int32)
    (y_cpu, g_cpu), (y_dev, g_dev) = _gradient("cpu", trips), _gradient(device, trips)
    np.testing.assert_allclose(y_dev, y_cpu, rtol=1e-12)
    np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-10)


def test_a_reverse_whose_sweeps_pass_65535_iterations(device):
    # 40,000 trips: the forward kernel's loop fits, the reverse kernel's forward sweep and
    # reverse sweep together (80,000) do not; the short thread beside it is cut as well
    # (llvmpipe's lanes share one limiter).
    trips = np.array([40_000, 5], np.int32)
    if LLVMPIPE:
        with cut("iterate_reverse"):
            _gradient(device, trips)
        return
    (y_cpu, g_cpu), (y_dev, g_dev) = _gradient("cpu", trips), _gradient(device, trips)
    np.testing.assert_allclose(y_dev, y_cpu, rtol=1e-12)
    np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-10)


def test_only_a_limiting_driver_gets_the_guard(device):
    from qdarray.backends.vulkan import _instance, _probes
    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    st = _instance.state(0)
    assert _probes.loop_limit(st) == (65_535 if LLVMPIPE else 0)
    args = (5, qd.zeros(2, dtype=qd.int64, device=device))
    kernel = build_ir(count_to, signature(count_to, args)[0], debug=False, lower=True)[0]
    plain = render_spirv(kernel)
    guarded = render_spirv(kernel, caps={"max_push": 128, "int64_atomics": True,
                                         "loop_guard": 3})
    assert all(b"qd_left_loop" not in s.spirv for s in plain.stages)
    assert any(b"qd_left_loop" in s.spirv for s in guarded.stages)


@qd.kernel
def until(a: qd.Array[qd.int64, 1], out: qd.Array[qd.int64, 1]):
    for i in range(out.shape[0]):
        c = 0
        while True:
            c += 1
            if c >= a[0]:
                break
        out[i] = c


@qd.kernel
def serial_count(n: qd.int64, out: qd.Array[qd.int64, 1]):
    c = 0
    if n > 0:
        for _ in range(n):
            c += 1
    out[0] = c


@pytest.mark.parametrize("trips", [60_000, 70_000])
def test_a_while_loop_left_by_break(device, trips):
    # The cut of a loop inside a parallel body is reported through the grid-stride loop's
    # guard, which every thread passes after each item.
    out = qd.zeros(3, dtype=qd.int64, device=device)
    until(qd.asarray(np.array([trips]), device=device), out)
    if LLVMPIPE and trips > 65_535:
        with cut("until"):
            host(out)
        return
    assert host(out).tolist() == [trips] * 3


@pytest.mark.parametrize("trips", [60_000, 70_000])
def test_a_loop_of_a_serial_stage(device, trips):
    out = qd.zeros(1, dtype=qd.int64, device=device)
    serial_count(trips, out)
    if LLVMPIPE and trips > 65_535:
        with cut("serial_count"):
            host(out)
        return
    assert host(out).tolist() == [trips]


@qd.kernel
def scale(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = 2.0 * x[i]


def test_a_parallel_stage_without_loops_in_its_body_is_not_guarded(device):
    # Its grid-stride loop runs once per item; the launcher refuses more items per invocation
    # than the limit, so the guard (a store per item) is left out there, and kept where the
    # body loops (until's while).
    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    caps = {"max_push": 128, "int64_atomics": True, "loop_guard": 3}
    x = qd.zeros(4, dtype=qd.float32, device=device)
    flat = build_ir(scale, signature(scale, (x, x))[0], debug=False, lower=True)[0]
    assert all(b"qd_left_loop" not in s.spirv for s in render_spirv(flat, caps=caps).stages)
    args = (qd.zeros(1, dtype=qd.int64, device=device), qd.zeros(2, dtype=qd.int64,
                                                                 device=device))
    looping = build_ir(until, signature(until, args)[0], debug=False, lower=True)[0]
    assert any(b"qd_left_loop" in s.spirv for s in render_spirv(looping, caps=caps).stages)
    h = np.arange(40_000, dtype=np.float32)
    y = qd.zeros(40_000, dtype=qd.float32, device=device)
    scale(qd.asarray(h, device=device), y)
    np.testing.assert_array_equal(host(y), 2 * h)


def test_more_items_per_invocation_than_the_limit_are_refused(device, monkeypatch):
    # 65,535 workgroups of 256 invocations: past (limit - 1) items each, the grid loop itself
    # would be cut (over 10**12 items); one invocation of one item per group here brings the
    # launcher's bound down to 65,534 items.
    if not LLVMPIPE:
        pytest.skip("only a driver with a loop limit refuses (this device has none)")
    from qdarray.backends.vulkan import target as _kernels

    x = qd.zeros(70_000, dtype=qd.float32, device=device)
    y = qd.zeros(70_000, dtype=qd.float32, device=device)
    monkeypatch.setattr(_kernels, "GROUPS", 1)
    monkeypatch.setattr(_kernels, "LOCAL", 1)
    with pytest.raises(qd.LoopLimitError, match="Kernel 'scale'"):
        scale(x, y)
