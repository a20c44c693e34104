"""Writes between a forward launch and its reverse are detected, however they are made
(issue 18): through another wrapper of the same NumPy memory, after many other launches, to a
float array used as a loop bound, to a plain NumPy array inside a Tape; and validation mode
sees an overwrite through a second parameter bound to the same array.

Oracles: the documented errors; where the reverse does run, closed-form gradients."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.tape.validate import check_launch


@qd.kernel
def damp(x: qd.Array[qd.float64, 1], n: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(n[i]):
            v = v * 0.5 + 1.0
        y[i] += v


@qd.kernel
def damp_float_bound(x: qd.Array[qd.float64, 1], nf: qd.Array[qd.float64, 1],
                     y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(int(nf[i])):
            v = v * 0.5 + 1.0
        y[i] += v


@qd.kernel
def damp_sum(x: qd.Array[qd.float64, 1], n: qd.Array[qd.int32, 1], loss: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(n[i]):
            v = v * 0.5 + 1.0
        loss[0] += v


@qd.kernel
def sq_acc(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] += x[i] * x[i]


@qd.kernel
def shifted_acc(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(1, x.shape[0]):
        y[i - 1] += x[i] * x[i]


def _operands(n: np.ndarray) -> tuple[qd.Array, qd.Array]:
    x = qd.asarray(np.linspace(0.1, 0.5, n.size), requires_grad=True)
    y = qd.zeros(n.size, dtype=qd.float64, requires_grad=True)
    return x, y


def _reverse(kern, *args) -> None:
    args[-1].grad[...] = 1.0
    kern.grad(*args)


def test_a_write_through_another_wrapper_of_the_same_memory_is_seen():
    n = np.array([1, 2, 3], np.int32)
    first, second = qd.asarray(n), qd.asarray(n)
    x, y = _operands(n)
    damp(x, first, y)
    second[0] = 7  # the same memory, another Array
    with pytest.raises(qd.AdStackSizingError, match="'n', an array kernel 'damp' read"):
        _reverse(damp, x, first, y)


@pytest.mark.parametrize("wrap", ["from_dlpack", "np.asarray of an Array", "BufferView"])
def test_every_wrapper_of_one_memory_shares_one_write_count(wrap):
    n = qd.asarray(np.array([1, 2, 3], np.int32))
    if wrap == "from_dlpack":
        other = qd.from_dlpack(np.asarray(n)[1:])
    elif wrap == "np.asarray of an Array":
        other = qd.asarray(np.asarray(n)[1:])
    else:
        other = qd.asarray(qd.BufferView(n, offset=1, size=2))
    before = n._buffer.generation
    other[0] = 9
    assert n._buffer is other._buffer and n._buffer.generation > before
    assert int(n[1]) == 9


def test_wrapping_numpy_memory_from_several_threads_at_once():
    # The table of memory pieces changes as arrays are wrapped and as the ndarrays die (their
    # weak references' callbacks run on whichever thread frees them): 4 threads wrapping and
    # dropping arrays together raised KeyError / IndexError there, and dropped pieces.
    import threading

    def work(errors: list[str]) -> None:
        try:
            for i in range(3000):
                a = np.empty(8 + i % 5)
                x, y = qd.asarray(a), qd.asarray(a[1:])
                if x._buffer is not y._buffer:
                    errors.append(f"two tokens for one memory at step {i}")
                del a, x, y
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(repr(exc))

    errors: list[str] = []
    threads = [threading.Thread(target=work, args=(errors,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    a = np.zeros(4)
    first = qd.asarray(a)
    assert qd.asarray(a[2:])._buffer is first._buffer  # the table still works after them


def test_a_write_after_many_other_launches_is_still_seen():
    n = qd.asarray(np.array([1, 2, 3], np.int32))
    x, y = _operands(np.zeros(3))
    damp(x, n, y)
    for k in range(300):  # each with arrays of its own: more tokens than the old table held
        other = qd.asarray(np.array([k % 3, 1, 0], np.int32))
        damp(*_operands(np.zeros(3))[:1], other, qd.zeros(3, dtype=qd.float64))
    n[2] = 0
    with pytest.raises(qd.AdStackSizingError):
        _reverse(damp, x, n, y)


def test_a_float_array_used_as_a_loop_bound_is_watched():
    nf = qd.asarray(np.array([1.0, 2.0, 3.0]))
    x, y = _operands(np.zeros(3))
    damp_float_bound(x, nf, y)
    nf[1] = 6.0
    with pytest.raises(qd.AutodiffError, match="'nf', an array kernel 'damp_float_bound'"):
        _reverse(damp_float_bound, x, nf, y)


def test_an_unchanged_bound_runs_the_reverse():
    n = qd.asarray(np.array([1, 2, 3], np.int32))
    x, y = _operands(np.zeros(3))
    damp(x, n, y)
    _reverse(damp, x, n, y)
    np.testing.assert_allclose(np.asarray(x.grad), [0.5, 0.25, 0.125], rtol=1e-14)


def test_a_plain_numpy_bound_written_inside_a_tape_is_seen():
    n = np.array([1, 2, 3], np.int32)
    x = qd.asarray(np.linspace(0.1, 0.5, 3), requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    with pytest.raises(qd.AdStackSizingError, match="'n', an argument kernel 'damp_sum'"):
        with qd.ad.Tape(loss=loss):
            damp_sum(x, n, loss)
            n[0] = 4
    n[0] = 1
    x.grad[...] = 0.0
    with qd.ad.Tape(loss=loss):
        damp_sum(x, n, loss)
    np.testing.assert_allclose(np.asarray(x.grad), [0.5, 0.25, 0.125], rtol=1e-14)


def test_validation_sees_an_overwrite_through_a_second_parameter_on_the_same_array():
    x = qd.asarray(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(qd.AutodiffError, match=r"overwrites y\[1\] in thread \(2,\) after "
                       r"thread \(1,\)"):
        check_launch(shifted_acc, (x, x))
    data = np.array([1.0, 2.0, 3.0])
    with pytest.raises(qd.AutodiffError, match="overwrites"):
        check_launch(shifted_acc, (data, data[:]))
    check_launch(shifted_acc, (x, qd.zeros(3, dtype=qd.float64)))  # separate memory: fine
    check_launch(sq_acc, (x, x))    # each thread its own element: the tape copies it
