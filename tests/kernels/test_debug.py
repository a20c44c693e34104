"""Debug mode: every access is checked; failures name kernel, array, index, shape, thread
and the call stack, identically on every backend."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import qdarray as qd

FILE = __file__
with open(FILE) as _f:
    _LINES = _f.read().splitlines()


def line_of(marker: str) -> int:
    hits = [n for n, line in enumerate(_LINES, 1) if f"# {marker}" in line]
    assert len(hits) == 1, marker
    return hits[0]


@pytest.fixture(autouse=True)
def _debug_on():
    qd.set_debug(True)


@qd.func
def read_at(x, i):
    return x[i + 1]  # marker: read in func


@qd.func
def twice(x, i):
    return read_at(x, i) * 2.0  # marker: call read_at


@qd.kernel
def shifted(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = twice(x, i)  # marker: call twice


def test_out_of_bounds_read_in_a_func(launch):
    x = np.arange(5.0)
    y = np.zeros(5)
    with pytest.raises(qd.KernelIndexError) as info:
        launch(shifted, x, y)
    assert isinstance(info.value, IndexError)
    assert str(info.value) == (
        "Index (5,) is out of bounds for array 'x' of shape (5,) in kernel 'shifted' "
        "(thread 4).\n"
        "Call stack (kernel first):\n"
        f"  shifted ({FILE}:{line_of('marker: call twice')})\n"
        f"  twice ({FILE}:{line_of('marker: call read_at')})\n"
        f"  read_at ({FILE}:{line_of('marker: read in func')})\n"
        "Use indices in [0, x.shape[k]) on every axis k.")
    np.testing.assert_array_equal(y[:4], 2 * x[1:])  # the other threads ran


@qd.kernel
def corner(a: qd.Array[qd.int32, 2], k: int):
    a[k, 1] = 7  # marker: serial store


def test_serial_code_and_two_dimensions(launch):
    a = np.zeros((3, 2), np.int32)
    launch(corner, a, 2)
    assert a[2, 1] == 7
    with pytest.raises(qd.KernelIndexError) as info:
        launch(corner, a, 3)
    assert str(info.value) == (
        "Index (3, 1) is out of bounds for array 'a' of shape (3, 2) in kernel 'corner' "
        "(serial code).\n"
        "Call stack (kernel first):\n"
        f"  corner ({FILE}:{line_of('marker: serial store')})\n"
        "Use indices in [0, a.shape[k]) on every axis k.")


@qd.kernel
def scatter(idx: qd.Array[qd.int64, 1], out: qd.Array[qd.int64, 1]):
    for i in range(idx.shape[0]):
        out[idx[i]] += 1  # marker: scatter


def test_negative_index_and_atomics(launch):
    out = np.zeros(4, np.int64)
    with pytest.raises(qd.KernelIndexError, match=r"^Index \(-1,\) is out of bounds for array "
                                                  r"'out' of shape \(4,\) in kernel 'scatter' "
                                                  r"\(thread 2\)\."):
        launch(scatter, np.array([0, 3, -1, 1]), out)


def test_first_failure_wins(launch):
    out = np.zeros(4, np.int64)
    with pytest.raises(qd.KernelIndexError) as info:
        launch(scatter, np.array([9, 1, 8, 10, 0]), out)
    text = str(info.value)
    assert any(text.startswith(f"Index ({v},) is out of bounds for array 'out' of shape (4,) in "
                               f"kernel 'scatter' (thread {t}).") for v, t in ((9, 0), (8, 2),
                                                                               (10, 3)))


@qd.kernel
def scale(v: qd.BufferView[qd.float32], factor: qd.float32):
    for i in range(v.size + 1):
        v[i] = v[i] * factor  # marker: view access


def test_view_out_of_window(launch):
    data = qd.asarray(np.arange(32, dtype=np.float32))
    view = qd.BufferView(data, offset=16, size=8)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(scale, view, 2.0)
    assert isinstance(info.value, qd.KernelIndexError)
    assert str(info.value) == (
        "Index 8 is out of bounds for BufferView 'v' (offset 16, size 8) in kernel 'scale' "
        "(thread 8).\n"
        "Call stack (kernel first):\n"
        f"  scale ({FILE}:{line_of('marker: view access')})\n"
        "Use indices in [0, v.size).")
    host = np.asarray(data)
    np.testing.assert_array_equal(host[16:24], np.arange(16, 24) * 2)
    np.testing.assert_array_equal(host[24:], np.arange(24, 32))  # nothing past the window


def test_checks_cost_nothing_without_debug_mode():
    x = np.arange(5.0)
    qd.set_debug(False)
    assert "report_index_error(err" not in shifted.generated_source(x, x)
    qd.set_debug(True)
    assert "report_index_error(err" in shifted.generated_source(x, x)


def test_debug_mode_is_part_of_the_compile_key():
    out = np.zeros(4, np.int64)
    qd.set_debug(False)
    scatter(np.array([0, 1]), out)  # compiled without checks
    qd.set_debug(True)
    with pytest.raises(qd.KernelIndexError):
        scatter(np.array([0, 4]), out)
    assert qd.debug_mode()


def test_environment_variable_turns_debug_mode_on():
    code = "import qdarray as qd; print(qd.debug_mode())"
    for value, want in (("1", "True"), ("0", "False")):
        env = {**os.environ, "QDARRAY_DEBUG": value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == want


def test_set_debug_checks_its_argument():
    with pytest.raises(TypeError, match="set_debug takes True or False; got 1"):
        qd.set_debug(1)


@qd.kernel
def blur(u: qd.Array[qd.float64, 2], out: qd.Array[qd.float64, 2]):
    for i, j in qd.ndrange(u.shape[0], u.shape[1]):
        out[i, j] = u[i, j + 1]  # marker: blur read


def test_ndrange_threads_are_index_tuples(launch):
    u = np.zeros((2, 3))
    with pytest.raises(qd.KernelIndexError) as info:
        launch(blur, u, np.zeros((2, 3)))
    assert str(info.value).startswith(
        "Index (0, 3) is out of bounds for array 'u' of shape (2, 3) in kernel 'blur' "
        "(thread (0, 2)).\n") or str(info.value).startswith(
        "Index (1, 3) is out of bounds for array 'u' of shape (2, 3) in kernel 'blur' "
        "(thread (1, 2)).\n")


@qd.kernel
def two_tasks(idx: qd.Array[qd.int64, 1], out: qd.Array[qd.int64, 1], after: qd.Array[qd.int64, 1]):
    for i in range(idx.shape[0]):
        out[idx[i]] = i
    after[0] = 1  # marker: after the failing task


def test_a_failed_check_stops_its_thread_and_the_launch(launch):
    out = np.full(4, -1)
    after = np.zeros(1, np.int64)
    with pytest.raises(qd.KernelIndexError, match=r"thread 1\)"):
        launch(two_tasks, np.array([0, 9, 2, 3]), out, after)
    np.testing.assert_array_equal(out, [0, -1, 2, 3])  # the other threads ran
    assert after[0] == 0  # nothing after the failing parallel loop ran
