"""The recording function written per kernel signature (qdarray/ad/tape/kernel_records.py) against
the general path it stands in for: the same records (inputs, snapshots, written memory), the
same gradients, and the same refusals, on the patterns simulations write (time-indexed state,
in-place steps, one array for two parameters, dataclass state, several writes into one
memory)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.tape.kernel_records import Launch


@qd.kernel
def advance(t: qd.int32, x: qd.Array[qd.float64, 2], v: qd.Array[qd.float64, 2]):
    for i in range(x.shape[1]):
        v[t + 1, i] = v[t, i] - 0.1 * x[t, i]
        x[t + 1, i] = x[t, i] + 0.1 * v[t + 1, i]


@qd.kernel
def inplace(x: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i] + 0.5


@qd.kernel
def kmul(a: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0


@qd.kernel
def shift(x: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0] - 1):
        out[i + 1] = x[i] * 3.0


@qd.kernel
def running_sum(x: qd.Array[qd.float64, 1]):
    for _ in range(1):
        for i in range(x.shape[0] - 1):  # a serial loop: reads what it wrote a step before
            x[i + 1] = x[i + 1] + x[i]


@qd.kernel
def clear(grid: qd.Array[qd.float64, 1]):
    for i in range(grid.shape[0]):
        grid[i] = 0.0


@qd.kernel
def scatter(x: qd.Array[qd.float64, 1], grid: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        grid[i % grid.shape[0]] += x[i] * x[i]


@qd.kernel
def gather(grid: qd.Array[qd.float64, 1], x: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] + 0.1 * grid[i % grid.shape[0]]


@dataclasses.dataclass(frozen=True)
class State:
    x: qd.Array[qd.float64, 2]
    v: qd.Array[qd.float64, 2]


@qd.kernel
def advance_state(t: qd.int32, s: State):
    for i in range(s.x.shape[1]):
        s.v[t + 1, i] = s.v[t, i] - 0.1 * s.x[t, i]
        s.x[t + 1, i] = s.x[t, i] + 0.1 * s.v[t + 1, i]


@qd.kernel
def total(x: qd.Array[qd.float64, 1], loss: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        loss[0] += x[i] * x[i]


def general_only(*kernels) -> None:
    """Make `kernels` record through the general path from now on."""
    for k in kernels:
        for table in k._launchers:
            for launcher in table.values():
                launcher.recorder = False


def generated(*kernels) -> bool:
    return all(callable(launcher.recorder) for k in kernels for table in k._launchers
               for launcher in table.values() if launcher.recorder is not None)


def program(kind: str):
    """(run the program on a tape, the arrays with gradients): each a fresh set of arrays."""
    T, N = 6, 5
    x0 = np.linspace(0.1, 0.9, N)
    if kind == "time":
        x = qd.zeros((T + 1, N), dtype=qd.float64, requires_grad=True)
        v = qd.zeros((T + 1, N), dtype=qd.float64, requires_grad=True)
        x[0] = qd.asarray(x0)

        def run():
            for t in range(T):
                advance(t, x, v)
            return qd.sum(x[T] * x[T])
        return run, (x, v), (advance,)
    if kind == "state":
        s = State(qd.zeros((T + 1, N), dtype=qd.float64, requires_grad=True),
                  qd.zeros((T + 1, N), dtype=qd.float64, requires_grad=True))
        s.x[0] = qd.asarray(x0)

        def run():
            for t in range(T):
                advance_state(t, s)
            return qd.sum(s.x[T] * s.x[T])
        return run, (s.x, s.v), (advance_state,)
    if kind == "inplace":
        x = qd.asarray(x0, requires_grad=True)
        loss = qd.zeros(1, dtype=qd.float64, requires_grad=True)

        def run():
            for _ in range(3):
                inplace(x)
            total(x, loss)
            return loss
        return run, (x,), (inplace, total)
    if kind == "same_array":
        y = qd.asarray(x0, requires_grad=True)
        loss = qd.zeros(1, dtype=qd.float64, requires_grad=True)

        def run():
            kmul(y, y)
            kmul(y, y)
            total(y, loss)
            return loss
        return run, (y,), (kmul, total)
    if kind == "shift":
        x = qd.asarray(x0, requires_grad=True)
        loss = qd.zeros(1, dtype=qd.float64, requires_grad=True)

        def run():
            shift(x, x)  # reads x[:-1], writes x[1:]: the overwritten part is kept
            total(x, loss)
            return loss
        return run, (x,), (shift, total)
    if kind == "grid":  # diffmpm's pattern: clear a grid, scatter into it, gather from it
        x = qd.asarray(x0, requires_grad=True)
        grid = qd.zeros(3, dtype=qd.float64, requires_grad=True)

        def run():
            for _ in range(3):
                clear(grid)
                scatter(x, grid)
                gather(grid, x)
            return qd.sum(x * x)
        return run, (x,), (clear, scatter, gather)
    if kind == "running_sum":
        x = qd.asarray(x0, requires_grad=True)

        def run():
            running_sum(x)
            return qd.sum(x)
        return run, (x,), (running_sum,)
    raise AssertionError(kind)


def recorded(kind: str, general: bool):
    run, grads, kernels = program(kind)
    if general:
        run_probe, _, _ = program(kind)  # compile (no tape), then switch these signatures
        run_probe()
        general_only(*kernels)
    with qd.ad.Tape() as tape:
        loss = run()
    launches = [r for r in tape.records if type(r) is Launch]
    summary = [(r.kernel.__name__, [(n, g, str(d)) for n, _, g, d in r.inputs],
                [(s.box, s.before, np.asarray(s.data).tolist()) for s in r.snaps],
                [(g0, g1, read) for _, g0, g1, read in r.chain]) for r in launches]
    tape.backward(loss)
    return summary, [np.asarray(g.grad).copy() for g in grads], kernels


@pytest.mark.parametrize("kind", ["time", "state", "inplace", "same_array", "shift", "grid"])
def test_generated_records_equal_general_ones(kind):
    fast, fast_grads, kernels = recorded(kind, general=False)
    assert generated(*kernels)
    slow, slow_grads, _ = recorded(kind, general=True)
    assert fast == slow
    for a, b in zip(fast_grads, slow_grads, strict=True):
        np.testing.assert_array_equal(a, b)
    for k in kernels:  # the next launches of these signatures record generated again
        for table in k._launchers:
            for launcher in table.values():
                launcher.recorder = None


def test_inplace_gradient_against_closed_form():
    """x <- x^2 + 0.5 three times, loss = sum(x^2): the chain rule by hand."""
    _, grads, _ = recorded("inplace", general=False)
    x = np.linspace(0.1, 0.9, 5)
    d = np.ones_like(x)
    for _ in range(3):
        d = d * 2 * x
        x = x * x + 0.5
    np.testing.assert_allclose(grads[0], d * 2 * x, rtol=1e-12)


def test_generated_path_refuses_what_the_general_path_refuses():
    """A serial loop that reads elements both before and after writing them is refused on a
    tape either way, with the same message."""
    messages = []
    for general in (False, True):
        with pytest.raises(qd.ad.AutodiffError) as info:
            recorded("running_sum", general)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "running_sum" in messages[0] and "both before and after" in messages[0]


def test_a_covered_region_is_copied_once():
    """clear(grid) overwrites all of what gather's reverse needs of the grid, so the tape
    copies it there; scatter's adds into the cleared grid then copy nothing (the clear's
    copy already brings back what the earlier reverses need). The gradient stays exact."""
    summary, grads, _ = recorded("grid", general=False)
    copies = {name: [len(snaps) for n, _, snaps, _ in summary if n == name]
              for name in ("clear", "scatter")}
    assert copies == {"clear": [0, 1, 1], "scatter": [0, 0, 0]}

    def loss(x0: np.ndarray) -> float:
        x = x0.copy()
        for _ in range(3):
            grid = np.zeros(3)
            np.add.at(grid, np.arange(len(x)) % 3, x * x)
            x = x + 0.1 * grid[np.arange(len(x)) % 3]
        return float(np.sum(x * x))

    x0, h = np.linspace(0.1, 0.9, 5), 1e-6
    want = [(loss(x0 + h * e) - loss(x0 - h * e)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(grads[0], want, rtol=1e-6)
