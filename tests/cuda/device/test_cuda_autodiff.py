"""Reverse mode on the CUDA device: the reverse-mode test suite's gradients (finite
differences, closed forms), adstacks in device memory with the overflow flag read back after
the launch, the max-reducer and the counting pass as device kernels, and the sizing cache."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import load, shared
from device_suites import ADSTACK, CHECKPOINT, SIZING, TRANSFORM, rule_tests
from device_suites import no_capacity_override as no_capacity_override

import qdarray as qd
from qdarray.ad.device_buffers import pool_for
from qdarray.ad.launch import prepare_reverse
from qdarray.ad.sizing import at_launch as sizer

_sizing = load("cuda", "test_sizing", "ad")

globals().update(shared("cuda", "test_transform", TRANSFORM, "ad"))
globals().update(shared("cuda", "test_adstack", ADSTACK, "ad"))
globals().update(shared("cuda", "test_checkpoint", CHECKPOINT, "ad"))
globals().update(shared("cuda", "test_sizing", SIZING, "ad"))
test_rules_against_finite_differences = rule_tests(load("cuda", "test_rules", "ad"))


# -- device-side sizing, heaps and overflow ---------------------------------------------------

logistic = _sizing.logistic
collatz = _sizing.collatz


def _on(device, a, **kw):
    return qd.asarray(a, device=device, **kw)


def test_max_reducer_runs_on_the_device_and_is_cached(device):
    rng = np.random.default_rng(5)
    a_np = rng.integers(0, 40, 301).astype(np.int32)
    x = qd.ones(301, dtype=qd.float64, device=device, requires_grad=True)
    y = qd.zeros(301, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, a_np)
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    assert launcher.target.name == "numba_cuda"
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


def test_heaps_layout_and_overflow_flags_live_on_the_device(device):
    dev = qd.Device(device)
    native = type(qd.zeros(1, device=device)._data)
    x = _on(device, np.full(5, 0.5), requires_grad=True)
    y = qd.zeros(1, dtype=qd.float64, device=device, requires_grad=True)
    a = _on(device, np.array([3, 0, 8, 1, 2], np.int32))
    with qd.ad.Tape(loss=y):
        logistic(x, a, y)
    assert np.all(np.asarray(x.grad.to_device("cpu")) != 0)
    heaps = pool_for(dev).buffers
    assert heaps and all(type(b) is native for b in heaps.values())
    launcher = prepare_reverse(logistic, (x, a, y), None, False)
    assert type(launcher.overflow) is native
    assert launcher.buffers.device is dev


def test_overflow_names_the_kernel_at_the_next_synchronisation(device):
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
    assert np.all(np.isfinite(np.asarray(x.grad.to_device("cpu"))))
