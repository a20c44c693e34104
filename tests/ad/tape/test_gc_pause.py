"""Tapes pause CPython's cyclic garbage collector while they record and run their reverses
(qdarray/ad/tape/gc_pause.py), and give it back as it was: after the block, after an error in it,
after nested tapes and tapes of other threads, and not at all when the user turned it off."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import qdarray as qd


@qd.kernel
def scale(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = 3.0 * x[i]


@pytest.fixture(autouse=True)
def _gc_restored():
    was = gc.isenabled()
    gc.enable()
    yield
    qd.ad.pause_gc(True)
    (gc.enable if was else gc.disable)()


def arrays():
    x = qd.asarray(np.arange(4.0), requires_grad=True)
    return x, qd.zeros(4, dtype=qd.float64, requires_grad=True)


def test_paused_while_recording_and_in_the_reverse_then_restored():
    x, y = arrays()
    seen = []
    with qd.ad.Tape() as tape:
        seen.append(gc.isenabled())
        scale(x, y)
        loss = qd.sum(y)
    seen.append(gc.isenabled())  # between the block and backward
    tape.backward(loss)
    seen.append(gc.isenabled())
    assert seen == [False, True, True]
    np.testing.assert_array_equal(np.asarray(x.grad), np.full(4, 3.0))


def test_paused_through_backward_run_by_the_block():
    x, y = arrays()
    loss = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    states = []

    @qd.kernel
    def total(y: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
        for i in range(y.shape[0]):
            out[0] += y[i]

    with qd.ad.Tape(loss=loss):
        scale(x, y)
        total(y, loss)
        states.append(gc.isenabled())
    assert states == [False] and gc.isenabled()
    np.testing.assert_array_equal(np.asarray(x.grad), np.full(4, 3.0))


def test_restored_after_an_error_in_the_block_and_in_nested_tapes():
    x, y = arrays()
    with pytest.raises(ZeroDivisionError):
        with qd.ad.Tape():
            scale(x, y)
            1 / 0  # noqa: B018
    assert gc.isenabled()
    with qd.ad.Tape() as outer:
        with qd.ad.Tape() as inner:
            scale(x, y)
            inner_loss = qd.sum(y)
        assert not gc.isenabled()  # the outer tape still records
        inner.backward(inner_loss)
        assert not gc.isenabled()
        loss = qd.sum(y * y)
    outer.backward(loss)
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    x, y = arrays()
    with qd.ad.Tape() as tape:
        scale(x, y)
        loss = qd.sum(y)
    tape.backward(loss)
    assert not gc.isenabled()


def test_pause_gc_false_keeps_the_collector_running():
    assert qd.ad.pause_gc() is True
    assert qd.ad.pause_gc(False) is False
    x, y = arrays()
    with qd.ad.Tape() as tape:
        assert gc.isenabled()
        scale(x, y)
        loss = qd.sum(y)
    tape.backward(loss)
    assert gc.isenabled()
    with pytest.raises(TypeError, match="True, False or nothing"):
        qd.ad.pause_gc(0)  # type: ignore[arg-type]


def test_tapes_of_two_threads_restore_it_once_both_are_done():
    started, release = threading.Event(), threading.Event()
    errors = []

    def other():
        try:
            x, y = arrays()
            with qd.ad.Tape() as tape:
                scale(x, y)
                loss = qd.sum(y)
                started.set()
                release.wait(30)
            tape.backward(loss)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            started.set()

    t = threading.Thread(target=other)
    t.start()
    started.wait(30)
    x, y = arrays()
    with qd.ad.Tape() as tape:
        scale(x, y)
        loss = qd.sum(y)
    assert not gc.isenabled()  # the other thread's tape still records
    release.set()
    t.join(30)
    assert not errors and gc.isenabled()
    tape.backward(loss)
    assert gc.isenabled()


def test_cycles_made_in_the_block_are_collected_after_it():
    class Cyclic:
        pass

    x, y = arrays()
    with qd.ad.Tape() as tape:
        c = Cyclic()
        c.me = c  # type: ignore[attr-defined]
        gone = weakref.ref(c)
        del c
        scale(x, y)
        loss = qd.sum(y)
        assert gone() is not None  # a cycle waits for the collector while the tape records
    tape.backward(loss)
    gc.collect()
    assert gone() is None
