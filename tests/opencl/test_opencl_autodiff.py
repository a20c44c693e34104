"""Reverse mode on the OpenCL device: the reverse-mode suite's gradients (finite differences,
closed forms) with every launch on the device, the gradients of larger launches against the
CPU's, adstack heaps in device buffers with the overflow flags read back after the launch,
the max-reducer and the counting pass as OpenCL kernels, the sizing cache's dispatch counts,
the loop-bound mutation check, the memory guard and devices without float64 or 64-bit
atomics."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import device_grad, load, shared
from device_suites import ADSTACK, CHECKPOINT, SIZING, TRANSFORM, rule_tests
from device_suites import no_capacity_override as no_capacity_override
from hypothesis import given, settings
from hypothesis import strategies as st

import qdarray as qd
from qdarray.ad.device_buffers import pool_for
from qdarray.ad.launch import prepare_reverse
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.opencl import _runtime as runtime
from qdarray.backends.opencl.namespace import ClArray
from qdarray.backends.opencl.target import OpenCLLauncher

_transform = load("opencl", "test_transform", "ad")
_sizing = load("opencl", "test_sizing", "ad")
_tape = load("opencl", "test_tape", "ad")
_programs = load("opencl", "programs", "ad")
_cache = load("opencl", "test_sizing_cache", "ad")
_sizing_scale = load("opencl", "test_sizing_scale", "ad")


# -- the reverse-mode suite on the device ---------------------------------------------------

globals().update(shared("opencl", "test_transform", TRANSFORM + (
    "test_long_and_zero_trip_loops", "test_shared_reads_accumulate_atomically",
    "test_atomic_add_and_plus_equals", "test_atomic_min_max_flow_to_the_winner",
    "test_two_parallel_loops_through_an_intermediate",
    "test_serial_code_without_parallel_loop", "test_serial_local_read_by_threads",
    "test_casts_between_floats_and_through_ints", "test_ndrange_nest",
    "test_bufferview_gradients_are_windows", "test_dataclass_arguments",
    "test_several_tasks_dtypes_and_serial_stacks",
    "test_nested_loops_with_pushed_starts_and_counted_trips"), "ad"))
globals().update(shared("opencl", "test_adstack", ADSTACK, "ad"))
globals().update(shared("opencl", "test_checkpoint", CHECKPOINT, "ad"))
globals().update(shared("opencl", "test_sizing", SIZING + (
    "test_capacities_are_exact_for_the_first_launch",), "ad"))
globals().update(shared("opencl", "test_tape", (
    "test_kernel_grad_accumulates", "test_exception_in_the_block_skips_the_reverse",
    "test_atomic_result_needed_by_the_reverse"), "ad"))
test_rules_against_finite_differences = rule_tests(load("opencl", "test_rules", "ad"))


@settings(max_examples=3)
@given(source=_programs.program_sources(), seed=st.integers(0, 2**16))
def test_random_programs(program_dir, device, source, seed):
    kern = _programs.load_program(source, program_dir)
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, 4), rng.uniform(-1, 1, 4)
    a = rng.integers(0, 5, 4).astype(np.int32)
    device_grad("opencl", device).check(kern, lambda: {"x": x.copy(), "z": z.copy(), "a": a,
                                            "y": np.zeros(4)},
                             ("x", "z"), ("y",), seed=seed, rtol=1e-4, atol=1e-6)


# -- the device against the CPU at scale ----------------------------------------------------

logistic = _sizing.logistic
collatz = _sizing.collatz
windowed = _sizing.windowed


def _on(device, a, **kw):
    return qd.asarray(a, device=device, **kw)


def _host(x):
    return np.asarray(x.to_device("cpu"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_match_the_cpu_over_thousands_of_threads(device, dtype):
    """The design example's nonlinear loop, 4099 threads, trip counts in [0, 64)."""
    kern = _transform.logistic32 if dtype == "float32" else _transform.logistic
    rng = np.random.default_rng(11)
    n = 4099
    a_np = rng.integers(0, 64, n).astype(np.int32)
    x_np = rng.uniform(0.1, 1.0, n).astype(dtype)
    grads = {}
    for where in ("cpu", device):
        x = qd.asarray(x_np, device=where, requires_grad=True)
        y = qd.zeros(1, dtype=getattr(qd, dtype), device=where, requires_grad=True)
        with qd.ad.Tape(loss=y):
            kern(x, qd.asarray(a_np, device=where), y)
        grads[where] = _host(x.grad)
        assert x.grad.device == qd.Device(where) and grads[where].dtype == np.dtype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(grads[device], grads["cpu"], rtol=rtol)
    expect = _transform.closed_form(x_np.astype(np.float64), a_np)
    np.testing.assert_allclose(grads[device], expect, rtol=1e-4 if dtype == "float32" else 1e-12)


def test_tape_of_device_launches_runs_the_reverses_last_first(device):
    x0 = np.array([0.1, -0.7, 1.3])
    x = _on(device, x0, requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        _tape.square(x, y)
        _tape.total(y, loss)
    np.testing.assert_allclose(_host(x.grad), np.cos(x0 * x0) * 2 * x0, rtol=1e-12)
    assert x.grad.device == qd.Device(device)


def test_validation_mode_checks_device_launches(device):
    x = _on(device, np.array([1.0, 2.0]), requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    x = _on(device, np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(qd.AutodiffError, match=r"overwrites x\[1\] in thread \(2,\)"), \
            qd.ad.Tape(loss=loss, validation=True):
        _tape.shift_left(x)
    np.testing.assert_array_equal(_host(x), [1.0, 2.0, 3.0])   # the launch did not run
    x = _on(device, np.array([1.0, 2.0, 4.0]), requires_grad=True)
    y = qd.zeros(2, dtype=qd.float64, device=device, requires_grad=True)
    with qd.ad.Tape(loss=y[1:2], validation=True):
        _tape.accumulate(x, y)
    np.testing.assert_allclose(_host(x.grad), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(_host(y), [7.0, 14.0])


# -- where things run and live --------------------------------------------------------------


def test_reverse_counting_and_reducers_are_opencl_kernels(device):
    x = qd.ones(5, dtype=qd.float64, device=device, requires_grad=True)
    y = qd.zeros(5, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, np.array([3, 0, 4, 1, 2], np.int32))
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    assert launcher.target.name == "opencl_c" and type(launcher.run) is OpenCLLauncher
    assert launcher.sizer.size([x, a, y], (x, a, y)) == ([5], [5])
    assert [type(n.reducer.compiled()) for n in launcher.sizer.nodes.values()] == [OpenCLLauncher]
    s = _on(device, np.array([1, 2, 3, 6, 7, 27]))
    x6 = qd.ones(6, dtype=qd.float64, device=device, requires_grad=True)
    y6 = qd.zeros(6, dtype=qd.float64, device=device, requires_grad=True)
    counted = prepare_reverse(collatz, (x6, s, y6), None, False)
    counted.sizer.size([x6, s, y6], (x6, s, y6))
    assert type(counted.counter) is OpenCLLauncher


def test_max_reducer_runs_on_the_device_and_is_cached(device):
    rng = np.random.default_rng(5)
    a_np = rng.integers(0, 40, 301).astype(np.int32)
    x = qd.ones(301, dtype=qd.float64, device=device, requires_grad=True)
    y = qd.zeros(301, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, a_np)
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    before = qd.ad.stats()["max_reducer_dispatches"]
    assert launcher.sizer.size([x, a, y], (x, a, y)) == ([1 + int(a_np.max())], [301])
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 1
    launcher.sizer.size([x, a, y], (x, a, y))  # unchanged bounds: from the cache
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 1
    a[7] = 99  # a host write to the device array bumps its generation
    assert launcher.sizer.size([x, a, y], (x, a, y))[0] == [100]
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 2


def test_counting_pass_runs_on_the_device(device):
    starts = np.array([1, 2, 3, 6, 7, 27])
    x = _on(device, np.full(6, 0.3), requires_grad=True)
    y = qd.zeros(6, dtype=qd.float64, device=device, requires_grad=True)
    s = _on(device, starts)
    before = qd.ad.stats()["counting_passes"]
    launcher = prepare_reverse(collatz, (x, s, y), None, False)
    caps, threads = launcher.sizer.size([x, s, y], (x, s, y))
    assert caps == [1 + max(_sizing.collatz_steps(int(v)) for v in starts)] and threads == [6]
    assert qd.ad.stats()["counting_passes"] == before + 1
    launcher.sizer.size([x, s, y], (x, s, y))  # unchanged starts: from the cache
    assert qd.ad.stats()["counting_passes"] == before + 1


def test_views_and_constant_index_bounds_are_read_on_the_device(device):
    """A BufferView bound is read at its offset; a bound at a constant index is one element
    read from the device."""
    data = _on(device, np.array([50, 4, 0, 9, 2, 50], np.int32))
    x = qd.ones(4, dtype=qd.float64, device=device, requires_grad=True)
    y = qd.zeros(4, dtype=qd.float64, device=device, requires_grad=True)
    view = qd.BufferView(data, offset=1, size=4)
    launcher = prepare_reverse(windowed, (x, view, y), None, False)
    assert launcher.sizer.size([x, view, y], (x, view, y)) == ([10], [4])

    @qd.kernel
    def first_bound(x: qd.Array[qd.float64, 1], n: qd.Array[qd.int32, 1],
                    y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(n[2]):
                v = qd.math.sin(v)
            y[i] = v

    launcher = prepare_reverse(first_bound, (x, data, y), None, False)
    before = qd.ad.stats()["max_reducer_dispatches"]
    assert launcher.sizer.size([x, data, y], (x, data, y)) == ([1], [4])
    assert qd.ad.stats()["max_reducer_dispatches"] == before   # no kernel for one element


def test_heaps_layout_and_flags_are_device_buffers_that_grow_by_doubling(device):
    dev = qd.Device(device)
    pool = pool_for(dev)
    pool.clear()
    x = _on(device, np.full(8, 0.5), requires_grad=True)
    y = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    sizes = []
    for top in (10, 14, 3, 40):
        a = _on(device, np.array([top, 0, 2, 1, 3, 0, 1, 2], np.int32))
        with qd.ad.Tape(loss=y):
            logistic(x, a, y)
        sizes.append(pool.buffers[qd.float64].size)
        if top == 10:
            first = pool.buffers[qd.float64]
    # packed: the sum of 1 + a[i], top + 17: exact at first (27), doubled when 31 does not
    # fit in 27, kept for smaller launches, doubled again for 57
    assert sizes == [27, 54, 54, 108]
    assert all(type(b) is ClArray for b in pool.buffers.values())
    assert first.size == 27
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    assert type(launcher.overflow) is ClArray and launcher.buffers.device is dev
    assert np.all(np.isfinite(_host(x.grad))) and np.all(_host(x.grad) != 0)


def test_memory_guard_uses_the_devices_memory(device):
    dev = qd.Device(device)
    st = runtime.state(dev.index)
    avail = dev.backend.available_bytes(dev)
    assert 0 < avail <= min(st.cl_device.max_mem_alloc_size, st.cl_device.global_mem_size)
    big = 1 << 40
    x = _on(device, np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
    kern = _sizing_scale.long_branch  # a loop checkpointing cannot take: the figures
    kern(x, _on(device, np.array([3, 1, 7])), y)
    heaps = dict(pool_for(dev).buffers)
    with pytest.raises(MemoryError) as info:
        kern.grad(x, _on(device, np.array([3, big, 7])), y)
    msg = str(info.value)
    entries = (1 + 3) + (1 + big) + (1 + 7)   # packed: each thread its own capacity
    assert f"need {entries * 8} bytes of float64 storage: {entries} entries" in msg
    assert f"(the capacities of 3 threads, each at most {big + 1}) x 8 bytes over 1 stacks" in msg
    assert "the device can give about" in msg and "Try" in msg
    for dtype, buf in pool_for(dev).buffers.items():     # nothing that size was allocated
        assert dtype not in heaps or buf is heaps[dtype]
    assert np.all(_host(x.grad) == 0)


def test_a_failed_allocation_falls_back_to_the_exact_size(device, monkeypatch):
    dev = qd.Device(device)
    pool = pool_for(dev)
    pool.clear()
    backend = dev.backend
    too_big = runtime.state(dev.index).cl_device.max_mem_alloc_size // 8 + 1
    tried = []

    def alloc(n, dtype):
        tried.append(n)
        if n > 150:   # the doubled size does not fit: a real refusal by the device
            return backend.empty((too_big,), dtype, dev)
        return backend.empty((n,), dtype, dev)

    monkeypatch.setattr(pool, "alloc", alloc)
    assert pool.get(qd.float64, 80, None).size == 80
    assert pool.get(qd.float64, 100, None).size == 100 and tried == [80, 160, 100]
    pool.clear()


def test_overflow_names_the_kernel_and_clears_the_flags(device):
    sizer._TEST_CAPACITY_OVERRIDE = 3
    x = _on(device, np.full(4, 0.5), requires_grad=True)
    y = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, np.array([1, 7, 2, 0], np.int32))
    logistic(x, a, y)
    y.grad[...] = 1.0
    with pytest.raises(qd.AdStackOverflowError, match=r"'v'.*kernel 'logistic' overflowed: "
                                                      r"capacity 3, depth reached 8"):
        logistic.grad(x, a, y)
    sizer._TEST_CAPACITY_OVERRIDE = None
    x.grad[...] = 0.0
    logistic.grad(x, a, y)  # the flags were cleared: the next launch runs normally
    xc = qd.asarray(np.full(4, 0.5), requires_grad=True)
    yc = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    yc.grad[...] = 1.0
    logistic.grad(xc, qd.asarray(np.array([1, 7, 2, 0], np.int32)), yc)
    np.testing.assert_allclose(_host(x.grad), _host(xc.grad), rtol=1e-12)


# -- the sizing cache and the mutation check on device arrays -------------------------------

compute = _cache.compute
fill = _cache.fill


def _dispatches() -> int:
    return qd.ad.stats()["max_reducer_dispatches"]


@pytest.mark.parametrize("write", ["host", "kernel", "slice view", "bufferview", "in-place op"])
def test_one_dispatch_then_none_until_a_bound_array_is_written(device, write):
    x = _on(device, np.full(5, 0.5, np.float32), requires_grad=True)
    a = _on(device, np.array([3, 0, 7, 2, 5], np.int32))
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    y.grad[...] = 1.0
    before = _dispatches()
    compute(x, a, y)
    compute.grad(x, a, y)
    assert _dispatches() == before + 1
    for _ in range(3):
        compute(x, a, y)
        compute.grad(x, a, y)
    assert _dispatches() == before + 1
    if write == "host":
        a[1] = 9
    elif write == "kernel":
        fill(a, 9)
    elif write == "slice view":
        a[1:3][0] = 9
    elif write == "bufferview":
        qd.BufferView(a, offset=1, size=2)[0] = 9
    else:
        a += 1
    compute(x, a, y)
    x.grad[...] = 0.0
    compute.grad(x, a, y)
    assert _dispatches() == before + 2
    a_now = _host(a)
    v = np.full(5, 0.5)
    d = np.ones(5)
    for k in range(int(a_now.max())):
        step = a_now > k
        d = np.where(step, d * v, d)
        v = np.where(step, v * v * 0.5 + 0.5, v)
    np.testing.assert_allclose(_host(x.grad), d, rtol=1e-5)


def test_a_bound_array_written_between_forward_and_grad_raises(device):
    x = _on(device, np.full(3, 0.5, np.float32), requires_grad=True)
    a = _on(device, np.array([3, 0, 7], np.int32))
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    compute(x, a, y)
    a[1] = 40
    with pytest.raises(qd.ad.AdStackSizingError, match=r"'a'.*'compute'.*Run compute"):
        compute.grad(x, a, y)
    assert np.all(_host(x.grad) == 0)                 # nothing ran
    compute(x, a, y)
    fill(a, 2)                                        # a kernel write on the device
    with pytest.raises(qd.ad.AdStackSizingError, match="'a'"):
        compute.grad(x, a, y)
    a[...] = qd.asarray(np.array([3, 0, 7], np.int32), device=device)
    grads = []
    for write in (False, True):             # a write the tape records is undone for the reverse
        x.grad[...] = 0.0
        y[...] = 0.0
        with qd.ad.Tape(loss=y):
            compute(x, a, y)
            if write:
                a[0] = 30
        grads.append(_host(x.grad))
    np.testing.assert_array_equal(grads[1], grads[0])
    np.testing.assert_array_equal(_host(a), [30, 0, 7])


# -- devices without float64 or 64-bit atomics ----------------------------------------------


@pytest.fixture
def no_fp64(device):
    index = qd.Device(device).index
    runtime.set_override(index, fp64=False)
    yield
    runtime.set_override(index, fp64=None)


def test_float32_gradients_on_a_device_without_float64(device, no_fp64):
    @qd.kernel
    def steps32(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1],
                y: qd.Array[qd.float32, 1]):
        for i in range(a.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v * v * qd.float32(0.5) + qd.float32(0.25)
            y[0] += v

    a_np = np.array([1, 2, 3, 0, 4], np.int32)
    x_np = np.linspace(0.1, 0.9, 5).astype(np.float32)
    x = _on(device, x_np, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    with qd.ad.Tape(loss=y):
        steps32(x, _on(device, a_np), y)
    v, d = x_np.astype(np.float64), np.ones(5)
    for k in range(4):
        step = a_np > k
        d = np.where(step, d * v, d)
        v = np.where(step, v * v * 0.5 + 0.25, v)
    np.testing.assert_allclose(_host(x.grad), d, rtol=1e-5)


def test_float64_scratch_of_serial_locals_needs_float64(device, no_fp64):
    @qd.kernel
    def scaled32(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
        scale = x[0] * qd.float32(2.0)
        for i in range(x.shape[0]):
            y[i] = x[i] * scale

    x = _on(device, np.linspace(0.1, 0.9, 5).astype(np.float32), requires_grad=True)
    y = qd.zeros(5, dtype=qd.float32, device=device, requires_grad=True)
    scaled32(x, y)
    y.grad[...] = 1.0
    with pytest.raises(TypeError, match=rf"reverse of kernel 'scaled32'.*float64.*{device}.*"
                                        r"Try assigning such locals inside the parallel loop"):
        scaled32.grad(x, y)


def test_adstacks_need_64_bit_atomics(device, monkeypatch):
    @qd.kernel
    def steps(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = qd.math.cos(v)
            y[i] = v

    monkeypatch.setattr(runtime.state(qd.Device(device).index), "int64_atomics", False)
    x = _on(device, np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
    y.grad[...] = 1.0
    with pytest.raises(TypeError, match=rf"64-bit atomics \(cl_khr_int64_base_atomics\).*"
                                        rf"{device}.*Use CPU arrays"):
        steps.grad(x, _on(device, np.array([1, 2, 3], np.int32)), y)


def test_an_array_above_the_largest_buffer_is_a_memory_error(device):
    # some drivers (NVIDIA's) accept such a buffer and fail later; qdarray refuses it first
    largest = runtime.state(qd.Device(device).index).cl_device.max_mem_alloc_size
    with pytest.raises(MemoryError, match=r"largest single buffer is \d+ bytes "
                                          r"\(CL_DEVICE_MAX_MEM_ALLOC_SIZE\)"):
        qd.empty(largest // 4 + 1, dtype=qd.float32, device=device)
