"""Reverse mode on the Vulkan device: the reverse-mode suite's gradients (finite differences,
closed forms) with every launch on the device, adstack heaps in Vulkan buffers with the
overflow flags read back after the launch, the max-reducer and the counting pass as SPIR-V
kernels, the sizing cache and the loop-bound mutation check.

The shared suites run whole, the adjoint-rule table of math functions included (float64
transcendental functions are qdarray's own in SPIR-V, kernels/codegen/spirv/libm.py).
"""

from __future__ import annotations

import numpy as np
from device_harness import load, shared
from device_suites import ADSTACK, SIZING, TRANSFORM, rule_tests
from device_suites import no_capacity_override as no_capacity_override

import qdarray as qd

globals().update(shared("vulkan", "test_transform", TRANSFORM + (
    "test_long_and_zero_trip_loops", "test_shared_reads_accumulate_atomically",
    "test_atomic_add_and_plus_equals", "test_atomic_min_max_flow_to_the_winner",
    "test_two_parallel_loops_through_an_intermediate",
    "test_serial_code_without_parallel_loop", "test_serial_local_read_by_threads",
    "test_casts_between_floats_and_through_ints", "test_ndrange_nest",
    "test_bufferview_gradients_are_windows", "test_dataclass_arguments",
    "test_several_tasks_dtypes_and_serial_stacks",
    "test_nested_loops_with_pushed_starts_and_counted_trips"), "ad"))
globals().update(shared("vulkan", "test_adstack", ADSTACK, "ad"))
globals().update(shared("vulkan", "test_sizing", SIZING + (
    "test_capacities_are_exact_for_the_first_launch",), "ad"))
globals().update(shared("vulkan", "test_tape", (
    "test_kernel_grad_accumulates", "test_exception_in_the_block_skips_the_reverse",
    "test_atomic_result_needed_by_the_reverse"), "ad"))
test_rules_against_finite_differences = rule_tests(load("vulkan", "test_rules", "ad"))


@qd.kernel
def relax(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(a.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def test_dynamic_loop_gradient_matches_the_cpu_and_sizing_is_cached(device):
    rng = np.random.default_rng(3)
    n = 20_000
    xs = rng.uniform(0, 1, n).astype(np.float32)
    trips = rng.integers(0, 64, n).astype(np.int32)
    grads = []
    for dev in (device, "cpu"):
        x = qd.asarray(xs, device=dev, requires_grad=True)
        a = qd.asarray(trips, device=dev)
        y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
        with qd.ad.Tape(loss=y):
            relax(x, a, y)
        grads.append(np.array(x.grad.to_device("cpu"), copy=True))
        before = qd.ad.stats()["max_reducer_dispatches"]
        with qd.ad.Tape(loss=y):  # unchanged bounds: the sizing cache answers
            relax(x, a, y)
        assert qd.ad.stats()["max_reducer_dispatches"] == before
        a[:10] = 70  # a bound changed: sized afresh, the new depth fits
        with qd.ad.Tape(loss=y):
            relax(x, a, y)
        assert qd.ad.stats()["max_reducer_dispatches"] > before
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_adstack_heaps_past_the_binding_range(device, monkeypatch):
    # An adstack heap of N threads x capacity outgrows one binding (128 MiB on lavapipe at
    # N = 1e6, a[i] < 64): it is reached through its device address. Forced with 64 KiB.
    from qdarray.backends.vulkan import _instance

    st = _instance.state(qd.Device(device).index)
    if not st.features["buffer_device_address"]:
        import pytest

        pytest.skip(f"{st.label} has no buffer device addresses")
    monkeypatch.setitem(st.limits, "maxStorageBufferRange", 1 << 16)
    rng = np.random.default_rng(5)
    xs = rng.uniform(0, 1, 5000).astype(np.float32)
    trips = rng.integers(0, 64, 5000).astype(np.int32)
    x = qd.asarray(xs, device=device, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    with qd.ad.Tape(loss=y):
        relax(x, qd.asarray(trips, device=device), y)
    want = np.ones_like(xs, dtype=np.float64)
    v = xs.astype(np.float64)
    for k in range(64):
        live = k < trips
        want = np.where(live, want * (1.0 - 0.2 * v), want)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    np.testing.assert_allclose(np.asarray(x.grad.to_device("cpu")), want, rtol=1e-4,
                               atol=1e-6)
