"""Launch caching never replays a stale window: a view made for one call and freed before the
next (CPython then often reuses its address) is packed afresh on every call, at top level
and inside frozen dataclass arguments."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import qdarray as qd


@qd.kernel
def mark(v: qd.BufferView[qd.int32], value: qd.int32):
    for i in range(v.size):
        v[i] = value


@dataclass(frozen=True)
class Window:
    v: qd.BufferView
    value: int


@dataclass(frozen=True)
class Outer:
    inner: Window


@qd.kernel
def mark_struct(w: Window):
    for i in range(w.v.size):
        w.v[i] = w.value


@qd.kernel
def mark_nested(o: Outer):
    for i in range(o.inner.v.shape[0]):
        o.inner.v[i] = o.inner.value


WINDOWS = [(0, 16), (16, 32), (3, 9), (9, 10), (20, 20), (0, 32), (30, 32)]


def expected(upto: int) -> np.ndarray:
    want = np.zeros(32, np.int32)
    for k, (a, b) in enumerate(WINDOWS[:upto + 1]):
        want[a:b] = k + 1
    return want


def run_all(launch, make_arg, kern) -> list[int]:
    """Launch once per window with a fresh argument; return the argument ids seen."""
    data = qd.zeros(32, dtype=qd.int32)
    ids = []
    for k, (a, b) in enumerate(WINDOWS):
        def call(k: int = k, a: int = a, b: int = b) -> None:
            arg = make_arg(data, a, b, k + 1)
            ids.append(id(arg))
            launch(kern, *((arg, k + 1) if kern is mark else (arg,)))
        call()  # the argument is freed when call() returns
        np.testing.assert_array_equal(np.asarray(data), expected(k), err_msg=str((a, b)))
    return ids


def test_transient_array_slices(launch):
    ids: list[int] = []
    for _ in range(4):  # whether CPython reuses an address depends on its allocator's state
        ids += run_all(launch, lambda d, a, b, k: d[a:b], mark)
        if len(set(ids)) < len(ids):
            break
    assert len(set(ids)) < len(ids)  # addresses were reused, and nothing went stale


def test_transient_buffer_views(launch):
    run_all(launch, lambda d, a, b, k: qd.BufferView(d, a, b - a), mark)
    run_all(launch, lambda d, a, b, k: qd.BufferView(d)[a:b], mark)
    run_all(launch, lambda d, a, b, k: qd.BufferView(d, 0, 32).subview(a, b - a), mark)


def test_transient_views_in_a_frozen_dataclass(launch):
    ids = run_all(launch, lambda d, a, b, k: Window(qd.BufferView(d, a, b - a), k),
                  mark_struct)
    assert len(set(ids)) < len(ids)
    run_all(launch, lambda d, a, b, k: Window(d[a:b], k), mark_struct)
    run_all(launch, lambda d, a, b, k: Outer(Window(qd.BufferView(d)[a:b], k)), mark_nested)


def test_one_view_object_reused_after_its_base_changes(launch):
    data = qd.zeros(8, dtype=qd.int32)
    v = qd.BufferView(data, 2, 3)
    launch(mark, v, 1)
    launch(mark, v.subview(1, 2), 2)
    launch(mark, v, 3)
    np.testing.assert_array_equal(np.asarray(data), [0, 0, 3, 3, 3, 0, 0, 0])
