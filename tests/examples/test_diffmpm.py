"""examples/diffmpm.py at a small size: the loss decreases, the gradients equal float64
central differences, and every device computes the same values."""

from __future__ import annotations

import gc

import example_modules
import numpy as np
import pytest

import qdarray as qd

STEPS = 100  # fewer, and the actuation has not yet moved the solid (gradients near 1e-11)


def test_loss_decreases() -> None:
    mpm = example_modules.load("diffmpm")
    sim = mpm.DiffMPM(steps=STEPS)
    sim.init_weights()
    losses = [sim.step() for _ in range(3)]
    assert losses[2] < losses[1] < losses[0], losses


def test_gradients_equal_central_differences() -> None:
    """float64 throughout: the tape's gradient (through the grid's automatic snapshots and
    the polar decomposition) against (L(w + h) - L(w - h)) / 2h on sampled entries."""
    mpm = example_modules.load("diffmpm", "float64")
    sim = mpm.DiffMPM(steps=STEPS)
    sim.init_weights()
    p0 = sim.params()
    sim.forward_backward()
    grads = sim.grads()
    h = 1e-6
    for name, idx in (("bias", (0,)), ("bias", (3,)), ("weights", (1, 2)), ("weights", (2, 0))):
        values = []
        for sign in (1, -1):
            p = {n: a.copy() for n, a in p0.items()}
            p[name][idx] += sign * h
            sim.set_params(p)
            sim.forward()
            values.append(float(sim.loss[0]))
        fd = (values[0] - values[1]) / (2 * h)
        # float64 central differences: truncation ~h^2, round-off ~1e-16 / h = 1e-10
        assert fd == pytest.approx(grads[name][idx], rel=1e-5, abs=1e-9), (name, idx)


@pytest.mark.parametrize("device", ["opencl:0", "vulkan:0"])
def test_same_values_on_every_device(device: str) -> None:
    if qd.Device(device) not in qd.__array_namespace_info__().devices():
        pytest.skip(f"{device} is not present")
    mpm = example_modules.load("diffmpm")
    results = []
    for where, k in (("cpu", None), (device, None), (device, 16)):  # 16: --checkpoint-steps
        sim = mpm.DiffMPM(steps=STEPS, device=where, checkpoint_steps=k)
        sim.init_weights()
        results.append((sim.forward_backward(), sim.grads()))
    (loss, grads), *others = results
    # float32; the particle-to-grid transfer is a sum of atomic adds, whose order differs,
    # and Vulkan's sqrt, sin and tanh (GLSL.std.450) round differently: the losses (the mean x,
    # about 0.25) differ by up to 3e-7 over 100 steps, the motion itself being about 1e-5
    for other_loss, other_grads in others:
        assert other_loss == pytest.approx(loss, abs=1e-6)
        for name, g in grads.items():
            np.testing.assert_allclose(other_grads[name], g, rtol=1e-3,
                                       atol=1e-3 * np.abs(g).max())


def test_checkpointed_gradients_equal_one_tape() -> None:
    """--checkpoint-steps: the segments recomputed on their own tapes give the gradient of one
    tape over all steps bit for bit (the same launches and reverses in the same order, and the
    seeding kernel passes the arriving gradient on exactly), while a tape holds one segment."""
    mpm = example_modules.load("diffmpm")
    results = []
    for k in (None, 16):
        sim = mpm.DiffMPM(steps=STEPS, checkpoint_steps=k)
        sim.init_weights()
        stats: list[dict[str, int]] = []
        results.append((sim.forward_backward(stats), sim.grads(), stats))
    (loss, grads, one), (ck_loss, ck_grads, segments) = results
    assert ck_loss == loss
    for name, g in grads.items():
        assert np.array_equal(ck_grads[name], g), name
    assert len(one) == 1 and len(segments) == 7     # 99 steps: six segments of 16, one of 3
    step_bytes = one[0]["snapshot_bytes"] // (STEPS - 2)  # the first step copies nothing
    assert max(s["snapshot_bytes"] for s in segments) == 15 * step_bytes
    # the particles' arrays hold 17 steps, not max_steps (2048), and 15 steps' copies of the
    # grid, not 98: the tape holds less than a tenth (about 1/30 at 100 steps)
    assert max(s["bytes_held"] for s in segments) < one[0]["bytes_held"] / 10


def test_memory_limit_chooses_the_segments() -> None:
    """--memory-limit: one tape over all steps passes qd.ad.set_memory_limit and raises; the
    segments chosen from the bytes a step copies stay within it."""
    mpm = example_modules.load("diffmpm")
    limit = 10 * mpm.DiffMPM(3, checkpoint_steps=2).step_snapshot_bytes()
    qd.ad.set_memory_limit(limit)
    try:
        sim = mpm.DiffMPM(steps=40)
        sim.init_weights()
        with pytest.raises(MemoryError, match="set_memory_limit"):
            sim.forward_backward()
        gc.collect()  # the failed tape (its copies count against the limit while it lives)
        k = mpm.DiffMPM.segment_within(limit)
        assert k == 10
        sim = mpm.DiffMPM(steps=40, checkpoint_steps=k)
        sim.init_weights()
        stats: list[dict[str, int]] = []
        sim.forward_backward(stats)
        assert max(s["snapshot_bytes"] for s in stats) <= limit
    finally:
        qd.ad.set_memory_limit(None)
