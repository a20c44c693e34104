"""qd.ad.Tape, kernel.grad and the errors reverse mode raises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gradcheck import host

import qdarray as qd
from qdarray.kernels.ir import Op
from qdarray.kernels.ops import OPS


@qd.kernel
def square(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]


@qd.kernel
def total(y: qd.Array[qd.float64, 1], loss: qd.Array[qd.float64, 1]):
    for i in range(y.shape[0]):
        loss[0] += qd.math.sin(y[i])


def test_tape_runs_the_reverses_last_first(grad):
    x0 = np.array([0.1, -0.7, 1.3])
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(3, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        grad.forward(square, x, y)
        grad.forward(total, y, loss)
    np.testing.assert_allclose(host(loss), [np.sin(x0 ** 2).sum()])
    np.testing.assert_allclose(host(x.grad), np.cos(x0 ** 2) * 2 * x0)
    np.testing.assert_allclose(host(loss.grad), [1.0])


def test_kernel_grad_accumulates(grad):
    x = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    grad.forward(square, x, y)
    y.grad[...] = 1.0
    grad.reverse(square, x, y)
    y.grad[...] = 1.0        # the store cleared it: the old value of y had no effect
    grad.reverse(square, x, y)
    np.testing.assert_allclose(host(x.grad), [4.0, 8.0])
    np.testing.assert_allclose(host(y.grad), [0.0, 0.0])


def test_loss_without_grad():
    with pytest.raises(qd.AutodiffError, match="has no gradient.*requires_grad=True"):
        qd.ad.Tape(loss=qd.zeros(1))
    with pytest.raises(ValueError, match="one element; got shape \\(3,\\)"):
        qd.ad.Tape(loss=qd.zeros(3, requires_grad=True))


def test_exception_in_the_block_skips_the_reverse(grad):
    x = qd.asarray(np.array([1.0]), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    with pytest.raises(KeyError), qd.ad.Tape(loss=y):
        grad.forward(square, x, y)
        raise KeyError("stop")
    assert host(x.grad)[0] == 0.0


@qd.kernel
def through_int(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = float(int(x[i] * 4.0))


@qd.kernel
def copy_to(x: qd.Array[qd.float64, 1], tmp: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        tmp[i] = x[i] * 2.0


def test_gradient_that_cannot_flow(grad):
    x = qd.asarray(np.array([0.3, 0.6]), requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    grad.forward(through_int, x, y)
    with pytest.raises(qd.AutodiffError) as info:
        grad.reverse(through_int, x, y)
    msg = str(info.value)
    assert "gradient of 'x' cannot flow" in msg and "integer conversion" in msg
    assert "int(x[i] * 4.0)" in msg and "^" in msg
    tmp = qd.zeros(2)
    grad.forward(copy_to, x, tmp)
    with pytest.raises(qd.AutodiffError, match="reach only 'tmp', which has no gradient"):
        grad.reverse(copy_to, x, tmp)


def test_nothing_to_differentiate():
    with pytest.raises(qd.AutodiffError, match="no argument has a gradient"):
        square.grad(qd.zeros(2), qd.zeros(2))


@qd.kernel
def cube_root(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.math.cbrt(x[i]) + x[i]


def test_op_without_derivative_names_op_and_line(grad, monkeypatch):
    monkeypatch.setitem(OPS, Op.CBRT, dataclasses.replace(OPS[Op.CBRT], adjoint=None))
    x = qd.asarray(np.array([0.3]), requires_grad=True)
    y = qd.zeros(1, requires_grad=True)
    with pytest.raises(qd.AutodiffError) as info:
        grad.reverse(cube_root, x, y)
    msg = str(info.value)
    line = cube_root.fn.__code__.co_firstlineno + 3
    assert "cannot differentiate CBRT" in msg and f"line {line}" in msg
    assert "qd.math.cbrt(x[i])" in msg and "Try" in msg
    assert isinstance(info.value, NotImplementedError)


@qd.kernel
def compaction(x: qd.Array[qd.float64, 1], count: qd.Array[qd.int64, 1],
               out: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            k = qd.atomic_add(count[0], 1)
            out[k] = x[i]


def test_atomic_result_needed_by_the_reverse(grad):
    x = qd.asarray(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    out = qd.zeros(3, requires_grad=True)
    count = qd.zeros(1, dtype=qd.int64)
    grad.forward(compaction, x, count, out)
    with pytest.raises(qd.AutodiffError, match="value returned by ATOMIC_ADD"):
        grad.reverse(compaction, x, count, out)


@qd.kernel
def in_place(x: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]


@qd.kernel
def shift_left(x: qd.Array[qd.float64, 1]):
    for i in range(1, x.shape[0]):
        x[i - 1] = x[i] * 2.0


@qd.kernel
def accumulate(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i]
    y[1] = y[0] * 2.0          # reads y[0] after the loop: fine, nothing overwrites it


def test_validation_mode_finds_overwrites_of_what_other_threads_read(grad):
    x = qd.asarray(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(qd.AutodiffError) as info, qd.ad.Tape(validation=True):
        grad.forward(shift_left, x)
    msg = str(info.value)
    line = shift_left.fn.__code__.co_firstlineno + 3
    assert "overwrites x[1] in thread (2,) after thread (1,)" in msg and f"line {line}" in msg
    assert "Use a separate output array" in msg
    np.testing.assert_array_equal(host(x), [1.0, 2.0, 3.0])   # the launch did not run


def test_validation_mode_accepts_what_the_tape_copies(grad):
    x = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss, validation=True):
        grad.forward(in_place, x)               # each thread overwrites what it read
        grad.forward(total, x, loss)
    np.testing.assert_allclose(host(x.grad), np.cos([1.0, 4.0]) * [2.0, 4.0])


def test_validation_mode_accepts_read_after_write(grad):
    x = qd.asarray(np.array([1.0, 2.0, 4.0]), requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    with qd.ad.Tape(loss=y[1:2], validation=True):
        grad.forward(accumulate, x, y)
    np.testing.assert_allclose(host(x.grad), [2.0, 2.0, 2.0])


@qd.kernel
def bounded(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * v * 0.5 + 0.25
        y[i] = v


def _bounded_reference(x0, counts):
    """x.grad of sum(sin(bounded(x))) in float64, by central differences."""
    def f(x):
        v = x.copy()
        for i, c in enumerate(counts):
            for _ in range(c):
                v[i] = v[i] * v[i] * 0.5 + 0.25
        return np.sin(v).sum()
    eps = 1e-6
    return np.array([(f(x0 + eps * e) - f(x0 - eps * e)) / (2 * eps) for e in np.eye(len(x0))])


def test_a_recorded_write_to_a_bound_array_is_undone_for_the_reverse(grad):
    x0 = np.array([0.5, 0.7])
    x = qd.asarray(x0, requires_grad=True)
    a = qd.asarray(np.array([2, 3], np.int32))
    y = qd.zeros(2, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss) as tape:
        grad.forward(bounded, x, a, y)
        a[0] = 7                        # recorded: the tape keeps a[0] as the launch saw it
        grad.forward(total, y, loss)
    np.testing.assert_allclose(host(x.grad), _bounded_reference(x0, [2, 3]), rtol=1e-6)
    np.testing.assert_array_equal(host(a), [7, 3])  # the final values are back
    assert tape.stats()["snapshot_bytes"] == 4     # one int32


def test_bound_array_changed_behind_the_tapes_back(grad):
    x = qd.asarray(np.array([0.5, 0.7]), requires_grad=True)
    a = qd.asarray(np.array([2, 3], np.int32))
    y = qd.zeros(2, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with pytest.raises(qd.ad.AdStackSizingError, match="'a'.*only reads"), \
            qd.ad.Tape(loss=loss):
        grad.forward(bounded, x, a, y)
        np.asarray(a)[0] = 7            # a host write through an export: the tape cannot see it
        grad.forward(total, y, loss)


@qd.kernel
def fill_counts(a: qd.Array[qd.int32, 1]):
    for i in range(a.shape[0]):
        a[i] = i % 3


def test_launches_without_gradients_are_skipped(grad):
    a = qd.zeros(2, dtype=qd.int32)
    x = qd.asarray(np.array([0.5, 0.6]), requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        grad.forward(fill_counts, a)
        grad.forward(bounded, x, a, y)
        grad.forward(total, y, loss)
    assert host(x.grad)[0] != 0.0


def test_tapes_record_their_own_thread(grad):
    import threading

    x = qd.asarray(np.array([0.5, 1.5]), requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    other = qd.zeros(2, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss) as tape:
        worker = threading.Thread(target=grad.forward, args=(square, x, other))
        worker.start()
        worker.join()                    # launched by another thread: not on this tape
        grad.forward(square, x, y)
        grad.forward(total, y, loss)
    assert [launch.kernel for launch in tape.launches] == [square, total]
    np.testing.assert_allclose(host(x.grad), np.cos(np.array([0.25, 2.25])) * [1.0, 3.0])


def test_a_reverse_running_in_another_thread_hides_no_launch(grad, monkeypatch):
    # While a thread runs its tape's reverse, a marker that pauses recording is on the tape
    # stack; a launch another thread makes inside its own tape then still goes on that tape.
    import threading

    from qdarray.ad.tape import tape as tape_module

    entered, release = threading.Event(), threading.Event()
    run = tape_module.Tape._run

    def paused_run(self):  # type: ignore[no-untyped-def]
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            release.wait(30)
        run(self)

    monkeypatch.setattr(tape_module.Tape, "_run", paused_run)
    x0 = np.array([0.5, 1.5])
    results = {}

    def reverse_elsewhere() -> None:
        x = qd.asarray(x0, requires_grad=True)
        y = qd.zeros(2, requires_grad=True)
        loss = qd.zeros(1, requires_grad=True)
        with qd.ad.Tape(loss=loss):
            grad.forward(square, x, y)
            grad.forward(total, y, loss)
        results["other"] = host(x.grad)

    worker = threading.Thread(target=reverse_elsewhere)
    x = qd.asarray(x0, requires_grad=True)
    y = qd.zeros(2, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    try:
        with qd.ad.Tape(loss=loss) as tape:
            worker.start()
            assert entered.wait(30)      # the worker's reverse began after this tape did
            grad.forward(square, x, y)
            grad.forward(total, y, loss)
            release.set()
        assert [launch.kernel for launch in tape.launches] == [square, total]
    finally:
        release.set()
        worker.join()
    want = np.cos(x0 ** 2) * 2 * x0
    np.testing.assert_allclose(host(x.grad), want)
    np.testing.assert_allclose(results["other"], want)
