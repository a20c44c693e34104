"""examples/smoke.py at a small size: the loss decreases, the gradients equal float64
central differences, and every device computes the same values."""

from __future__ import annotations

import example_modules
import numpy as np
import pytest

import qdarray as qd

N_GRID = 32  # two checkerboard squares of 16 cells a side
STEPS = 8


def initial_velocity(seed: int = 0) -> dict[str, np.ndarray]:
    """A random v[0], of about a cell a step: at v = 0 every sample point is a cell centre,
    where the bilinear interpolation has a kink and central differences average its sides."""
    return {"v0": 0.5 * np.random.default_rng(seed).standard_normal((N_GRID, N_GRID, 2))}


def test_loss_decreases() -> None:
    smoke = example_modules.load("smoke")
    sim = smoke.Smoke(N_GRID, STEPS)
    losses = [sim.step() for _ in range(3)]
    assert losses[2] < losses[1] < losses[0], losses


def test_gradients_equal_central_differences() -> None:
    """float64 throughout: the tape's gradient by v[0] (through 7 steps of advection and
    pressure projection) against (L(v + h) - L(v - h)) / 2h on sampled entries."""
    smoke = example_modules.load("smoke", "float64")
    sim = smoke.Smoke(N_GRID, STEPS)
    p0 = initial_velocity()
    sim.set_params(p0)
    sim.forward_backward()
    g = sim.grads()["v0"]
    rng = np.random.default_rng(1)
    flat = np.flatnonzero(np.abs(g) > 1e-2 * np.abs(g).max())
    h = 1e-6
    for k in rng.choice(flat, 6, replace=False):
        idx = np.unravel_index(k, g.shape)
        values = []
        for sign in (1, -1):
            v0 = p0["v0"].copy()
            v0[idx] += sign * h
            sim.set_params({"v0": v0})
            sim.forward()
            values.append(float(sim.loss[0]))
        fd = (values[0] - values[1]) / (2 * h)
        # float64 central differences: truncation ~h^2, round-off ~1e-16 / h = 1e-10
        assert fd == pytest.approx(g[idx], rel=1e-5, abs=1e-9), idx


@pytest.mark.parametrize("device", ["opencl:0", "vulkan:0"])
def test_same_values_on_every_device(device: str) -> None:
    if qd.Device(device) not in qd.__array_namespace_info__().devices():
        pytest.skip(f"{device} is not present")
    smoke = example_modules.load("smoke")
    results = []
    for where in ("cpu", device):
        sim = smoke.Smoke(N_GRID, STEPS, device=where)
        sim.set_params(initial_velocity())
        results.append((sim.forward_backward(), sim.grads()["v0"]))
    (loss, g), (other_loss, other_g) = results
    # float32; the loss is an atomic sum, whose order differs between devices
    assert other_loss == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(other_g, g, rtol=1e-4, atol=1e-4 * np.abs(g).max())
