"""A global or attribute a kernel reads, rebound between a launch recorded on a tape and its
reverse: the reverse compiles with the values the forward read (`Kernel.snapshot_constants`,
kept with the launch; `launch_reverse(..., constants=)`), so the gradient is the forward's.
It used to recompile with the new value: GAIN 2 -> 5 gave [10, 20] for x = [1, 2] where the
forward's 2 x GAIN x is [4, 8], and two launches with different values both got the last."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.launch import launch_reverse

GAIN = 2.0


class _Config:
    dt = 2.0
    reps = 2


cfg = _Config()


@qd.kernel
def gain_square(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] += GAIN * x[i] * x[i]


@qd.kernel
def step_square(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] += cfg.dt * x[i] * x[i]


REPS = 2


@qd.kernel
def repeated_square(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        for _ in qd.static(range(REPS)):
            y[i] += x[i] * x[i]


@qd.kernel
def configured_square(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        for _ in qd.static(range(cfg.reps)):
            y[i] += x[i] * x[i]


@pytest.fixture(autouse=True)
def _restore() -> None:
    global GAIN, REPS
    yield
    GAIN = 2.0
    REPS = 2
    cfg.dt = 2.0
    cfg.reps = 2


def _pair() -> tuple[qd.Array, qd.Array]:
    return (qd.asarray([1.0, 2.0], requires_grad=True),
            qd.zeros(2, dtype=qd.float64, requires_grad=True))


@pytest.mark.parametrize("kernel", [gain_square, step_square])
def test_the_reverse_compiles_with_the_constants_of_its_forward(kernel) -> None:
    global GAIN
    x, y = _pair()
    kernel(x, y)
    constants = kernel.snapshot_constants()
    GAIN = 5.0
    cfg.dt = 5.0
    y.grad[...] = 1.0
    launch_reverse(kernel, (x, y), None, constants=constants)
    np.testing.assert_array_equal(np.asarray(x.grad), [4.0, 8.0])
    x.grad[...] = 0.0
    launch_reverse(kernel, (x, y), None, constants=kernel.snapshot_constants())  # the new
    np.testing.assert_array_equal(np.asarray(x.grad), [10.0, 20.0])
    x.grad[...] = 0.0
    launch_reverse(kernel, (x, y), None, constants=constants)      # kept: no compile again
    np.testing.assert_array_equal(np.asarray(x.grad), [4.0, 8.0])


def test_qd_static_replays_globals_and_refuses_rebound_attributes() -> None:
    """qd.static(range(REPS)) evaluates with the forward's REPS; an attribute read inside
    qd.static cannot be replayed (the expression reads it itself), so its rebinding raises
    rather than giving the new value's gradient ([10, 20] for 5 repetitions)."""
    global REPS
    x, y = _pair()
    repeated_square(x, y)
    constants = repeated_square.snapshot_constants()
    REPS = 5
    y.grad[...] = 1.0
    launch_reverse(repeated_square, (x, y), None, constants=constants)
    np.testing.assert_array_equal(np.asarray(x.grad), [4.0, 8.0])
    x, y = _pair()
    configured_square(x, y)
    constants = configured_square.snapshot_constants()
    cfg.reps = 5
    y.grad[...] = 1.0
    with pytest.raises(qd.AutodiffError, match=r"qd.static\(range\(cfg.reps\)\) reads "
                                               r"cfg.reps, which was rebound"):
        launch_reverse(configured_square, (x, y), None, constants=constants)


@pytest.mark.parametrize("kernel", [gain_square, step_square])
def test_a_tape_differentiates_each_launch_with_its_own_constants(kernel) -> None:
    global GAIN
    x, y = _pair()
    with qd.ad.Tape() as tape:
        kernel(x, y)
        loss = qd.sum(y)
    GAIN = 5.0
    cfg.dt = 5.0
    tape.backward(loss)
    np.testing.assert_array_equal(np.asarray(x.grad), [4.0, 8.0])   # was [10, 20]

    GAIN = 2.0
    cfg.dt = 2.0
    x, y = _pair()
    with qd.ad.Tape() as tape:
        kernel(x, y)                       # 2 x^2
        GAIN = 3.0
        cfg.dt = 3.0
        kernel(x, y)                       # + 3 x^2
        loss = qd.sum(y)
    tape.backward(loss)
    np.testing.assert_array_equal(np.asarray(x.grad), [10.0, 20.0])  # was 2 x 6 x
