"""Reverse mode on the Vulkan device beyond the shared suites: gradients against the CPU at
scale, Tape ordering and validation mode, the reverse kernel, the max-reducer and the counting
pass as SPIR-V kernels, adstack heaps as Vulkan buffers that grow by doubling with the
exact-size fallback, the memory guard from the device's heap, overflow flags cleared between
launches, the sizing cache and the loop-bound mutation check on Vulkan arrays, and a device
without 64-bit atomics."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import device_grad, load
from device_suites import no_capacity_override as no_capacity_override
from hypothesis import given, settings
from hypothesis import strategies as st

import qdarray as qd
from qdarray.ad.device_buffers import pool_for
from qdarray.ad.launch import prepare_reverse
from qdarray.ad.sizing import at_launch as sizer
from qdarray.backends.vulkan import _instance
from qdarray.backends.vulkan._array import VkArray
from qdarray.backends.vulkan.target import VulkanLauncher

_transform = load("vulkan", "test_transform", "ad")
_sizing = load("vulkan", "test_sizing", "ad")
_tape = load("vulkan", "test_tape", "ad")
_programs = load("vulkan", "programs", "ad")
_cache = load("vulkan", "test_sizing_cache", "ad")
_sizing_scale = load("vulkan", "test_sizing_scale", "ad")
logistic = _sizing.logistic
collatz = _sizing.collatz
compute = _cache.compute
fill = _cache.fill


def _on(device, a, **kw):
    return qd.asarray(a, device=device, **kw)


def _host(x):
    return np.asarray(x.to_device("cpu"))


@settings(max_examples=3)
@given(source=_programs.program_sources(), seed=st.integers(0, 2**16))
def test_random_programs(program_dir, device, source, seed):
    kern = _programs.load_program(source, program_dir)
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, 4), rng.uniform(-1, 1, 4)
    a = rng.integers(0, 5, 4).astype(np.int32)
    device_grad("vulkan", device).check(kern, lambda: {"x": x.copy(), "z": z.copy(), "a": a,
                                            "y": np.zeros(4)},
                             ("x", "z"), ("y",), seed=seed, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_match_the_cpu_over_thousands_of_threads(device, dtype):
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
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(grads[device], grads["cpu"], rtol=rtol)
    expect = _transform.closed_form(x_np.astype(np.float64), a_np)
    np.testing.assert_allclose(grads[device], expect, rtol=1e-4 if dtype == "float32" else 1e-12)


def test_tape_and_validation_mode_on_device_launches(device):
    x0 = np.array([0.1, -0.7, 1.3])
    x = _on(device, x0, requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        _tape.square(x, y)
        _tape.total(y, loss)
    np.testing.assert_allclose(_host(x.grad), np.cos(x0 * x0) * 2 * x0, rtol=1e-12)
    x = _on(device, np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(qd.AutodiffError, match=r"overwrites x\[1\] in thread \(2,\)"), \
            qd.ad.Tape(loss=loss, validation=True):
        _tape.shift_left(x)
    np.testing.assert_array_equal(_host(x), [1.0, 2.0, 3.0])  # the launch did not run


def test_reverse_counting_and_reducers_are_spirv_kernels(device):
    x = qd.ones(5, dtype=qd.float64, device=device, requires_grad=True)
    y = qd.zeros(5, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, np.array([3, 0, 4, 1, 2], np.int32))
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    assert launcher.target.name == "spirv" and type(launcher.run) is VulkanLauncher
    assert launcher.sizer.size([x, a, y], (x, a, y)) == ([5], [5])
    assert [type(n.reducer.compiled()) for n in launcher.sizer.nodes.values()] == [
        VulkanLauncher]
    starts = np.array([1, 2, 3, 6, 7, 27])
    x6 = _on(device, np.full(6, 0.3), requires_grad=True)
    y6 = qd.zeros(6, dtype=qd.float64, device=device, requires_grad=True)
    s = _on(device, starts)
    before = qd.ad.stats()["counting_passes"]
    counted = prepare_reverse(collatz, (x6, s, y6), None, False)
    caps, threads = counted.sizer.size([x6, s, y6], (x6, s, y6))
    assert type(counted.counter) is VulkanLauncher
    assert caps == [1 + max(_sizing.collatz_steps(int(v)) for v in starts)] and threads == [6]
    assert qd.ad.stats()["counting_passes"] == before + 1


def test_heaps_are_vulkan_buffers_that_grow_by_doubling(device):
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
    assert sizes == [27, 54, 54, 108]   # packed: the sum of 1 + a[i], top + 17, doubling
    assert all(type(b) is VkArray for b in pool.buffers.values())
    assert np.all(np.isfinite(_host(x.grad))) and np.all(_host(x.grad) != 0)


def test_memory_guard_uses_the_devices_memory(device):
    dev = qd.Device(device)
    avail = dev.backend.available_bytes(dev)
    assert 0 < avail <= max(_instance.state(dev.index).heap_sizes)
    big = 1 << 40
    x = _on(device, np.full(3, 0.5), requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
    kern = _sizing_scale.long_branch  # a loop checkpointing cannot take: the figures
    kern(x, _on(device, np.array([3, 1, 7])), y)
    with pytest.raises(MemoryError) as info:
        kern.grad(x, _on(device, np.array([3, big, 7])), y)
    msg = str(info.value)
    assert (f"(the capacities of 3 threads, each at most {big + 1}) x 8 bytes over 1 stacks"
            in msg and "Try" in msg)
    assert np.all(_host(x.grad) == 0)


def test_a_failed_allocation_falls_back_to_the_exact_size(device, monkeypatch):
    dev = qd.Device(device)
    pool = pool_for(dev)
    pool.clear()
    backend = dev.backend
    too_big = max(_instance.state(dev.index).heap_sizes) // 8 + 1
    tried = []

    def alloc(n, dtype):
        tried.append(n)
        if n > 150:  # the doubled size does not fit: a real refusal by the device
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


@pytest.mark.parametrize("write", ["host", "kernel", "slice view", "bufferview", "in-place op"])
def test_one_dispatch_then_none_until_a_bound_array_is_written(device, write):
    x = _on(device, np.full(5, 0.5, np.float32), requires_grad=True)
    a = _on(device, np.array([3, 0, 7, 2, 5], np.int32))
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    y.grad[...] = 1.0
    before = qd.ad.stats()["max_reducer_dispatches"]
    for _ in range(3):
        compute(x, a, y)
        compute.grad(x, a, y)
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 1
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
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 2
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
    assert np.all(_host(x.grad) == 0)  # nothing ran
    compute(x, a, y)
    fill(a, 2)  # a kernel write on the device
    with pytest.raises(qd.ad.AdStackSizingError, match="'a'"):
        compute.grad(x, a, y)


def test_adstacks_need_64_bit_atomics(device):
    @qd.kernel
    def steps(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = qd.math.cos(v)
            y[i] = v

    _instance.set_override(qd.Device(device).index, int64_atomics=False)
    try:
        x = _on(device, np.full(3, 0.5), requires_grad=True)
        y = qd.zeros(3, dtype=qd.float64, device=device, requires_grad=True)
        y.grad[...] = 1.0
        with pytest.raises(TypeError, match=r"64-bit atomics \(shaderBufferInt64Atomics\)"):
            steps.grad(x, _on(device, np.array([1, 2, 3], np.int32)), y)
    finally:
        _instance.set_override(qd.Device(device).index, int64_atomics=None)
