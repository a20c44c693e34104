"""examples/electric.py at a small size: the loss decreases, the gradients equal float64
central differences, and every device computes the same values."""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import example_modules
import numpy as np
import pytest

import qdarray as qd

STEPS = 64


@pytest.fixture
def short_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two segments of 32 steps (the original's are 256 of 512), so the goal moves at this
    size too; seg_size is read on the host only, by initialize()."""
    for precision in ("float32", "float64"):
        monkeypatch.setattr(load(precision), "seg_size", STEPS // 2)


def load(precision: str) -> ModuleType:
    return example_modules.load("electric", precision)


def make(precision: str, device: str = "cpu") -> Any:
    el = load(precision)
    rng = random.Random(0)
    sim = el.Electric(steps=STEPS, device=device)
    sim.init_weights(rng)
    sim.initialize(rng)
    return sim


@pytest.mark.usefixtures("short_segments")
def test_loss_decreases() -> None:
    """Steps on one task (the original draws a new one per iteration), after a first forward
    as the original's, so every step's controller reads a previous trajectory."""
    sim = make("float32")
    sim.forward()
    losses = [sim.step() for _ in range(4)]
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses


@pytest.mark.usefixtures("short_segments")
def test_gradients_equal_central_differences() -> None:
    """float64 throughout: the tape's gradient against (L(w + h) - L(w - h)) / 2h on sampled
    entries of each parameter. The controller reads x[t] and v[t] before advance(t) writes
    them (the previous forward's values, as in the original), so each evaluation starts from
    the same previous trajectory; the tape keeps what nn1 read, so its gradient is exact."""
    sim = make("float64")
    sim.forward()                 # a previous trajectory for nn1 to read
    previous = sim.trajectory()
    w0 = sim.weights()
    sim.forward_backward()
    grads = sim.grads()
    rng = np.random.default_rng(0)
    h = 1e-6
    for name in ("weight1", "bias1", "weight2", "bias2"):
        flat = np.flatnonzero(np.abs(grads[name]) > 1e-3 * np.abs(grads[name]).max())
        for k in rng.choice(flat, 2, replace=False):
            idx = np.unravel_index(k, w0[name].shape)
            values = []
            for sign in (1, -1):
                w = {n: a.copy() for n, a in w0.items()}
                w[name][idx] += sign * h
                sim.set_weights(w)
                sim.set_trajectory(previous)
                sim.forward()
                values.append(float(sim.loss[0]))
            fd = (values[0] - values[1]) / (2 * h)
            # float64 central differences: truncation ~h^2, round-off ~1e-16 / h = 1e-10
            assert fd == pytest.approx(grads[name][idx], rel=1e-5, abs=1e-9), (name, idx)


@pytest.mark.usefixtures("short_segments")
@pytest.mark.parametrize("device", ["opencl:0", "vulkan:0"])
def test_same_values_on_every_device(device: str) -> None:
    if qd.Device(device) not in qd.__array_namespace_info__().devices():
        pytest.skip(f"{device} is not present")
    results = []
    for where in ("cpu", device):
        sim = make("float32", where)
        sim.forward()
        results.append((sim.forward_backward(), sim.grads()))
    (loss, grads), (other_loss, other_grads) = results
    assert other_loss == pytest.approx(loss, rel=1e-6)
    for name, g in grads.items():
        np.testing.assert_allclose(other_grads[name], g, rtol=1e-4, atol=1e-4 * np.abs(g).max())
