"""examples/mass_spring.py at a small size: the loss decreases, the gradients equal float64
central differences, and every device computes the same values."""

from __future__ import annotations

from types import ModuleType

import example_modules
import numpy as np
import pytest

import qdarray as qd

STEPS = 30


def load(precision: str) -> ModuleType:
    return example_modules.load("mass_spring", precision)


def test_loss_decreases() -> None:
    ms = load("float32")
    sim = ms.MassSpring(robot_id=2, steps=STEPS)
    sim.init_weights()
    losses = [sim.step()[0] for _ in range(4)]
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses


def test_gradients_equal_central_differences() -> None:
    """float64 throughout: the reverse's gradient against (L(w + h) - L(w - h)) / 2h on
    sampled entries of each of the controller's parameters."""
    ms = load("float64")
    sim = ms.MassSpring(robot_id=2, steps=STEPS)
    sim.init_weights()
    w0 = sim.weights()
    sim.forward_backward()
    grads = sim.grads()
    rng = np.random.default_rng(0)
    h = 1e-6
    for name in ("weights1", "bias1", "weights2", "bias2"):
        flat = np.flatnonzero(np.abs(grads[name]) > 1e-3 * np.abs(grads[name]).max())
        for k in rng.choice(flat, 2, replace=False):
            idx = np.unravel_index(k, w0[name].shape)
            values = []
            for sign in (1, -1):
                w = {n: a.copy() for n, a in w0.items()}
                w[name][idx] += sign * h
                sim.set_weights(w)
                sim.clear()
                sim.forward()
                values.append(float(sim.loss[0]))
            fd = (values[0] - values[1]) / (2 * h)
            # float64 central differences: truncation ~h^2, round-off ~1e-16 / h = 1e-10
            assert fd == pytest.approx(grads[name][idx], rel=1e-5, abs=1e-9), (name, idx)


def run_on(device: str) -> tuple[float, dict[str, np.ndarray]]:
    ms = load("float32")
    sim = ms.MassSpring(robot_id=2, steps=STEPS, device=device)
    sim.init_weights()
    loss = sim.forward_backward()
    return loss, sim.grads()


@pytest.mark.parametrize("device", [d for d in ("opencl:0", "vulkan:0")])
def test_same_values_on_every_device(device: str) -> None:
    if qd.Device(device) not in qd.__array_namespace_info__().devices():
        pytest.skip(f"{device} is not present")
    loss, grads = run_on("cpu")
    other_loss, other_grads = run_on(device)
    # float32; the spring impulses are atomic sums, whose order differs between devices
    assert other_loss == pytest.approx(loss, rel=1e-6)
    for name, g in grads.items():
        np.testing.assert_allclose(other_grads[name], g, rtol=1e-4, atol=1e-4 * np.abs(g).max())
