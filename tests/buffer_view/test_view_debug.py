"""Debug mode (`qd.set_debug(True)`, `QDARRAY_DEBUG=1`): every access through a BufferView and
every kernel-side subview is checked; a failure raises BufferViewIndexError naming the kernel,
the thread, the index, the view's offset and size (or the subview's offset and size and its
parent's) and the call stack. Exact messages, on the interpreter and the CPU."""

from __future__ import annotations

from pathlib import Path

import bv_helpers as helpers  # a module beside this one (pytest puts its folder on sys.path)
import numpy as np
import pytest

import qdarray as qd

FILE = __file__
HELPERS = str(Path(helpers.__file__))
_LINES = Path(FILE).read_text().splitlines()


def line_of(marker: str, path: str = FILE) -> int:
    lines = _LINES if path == FILE else Path(path).read_text().splitlines()
    hits = [n for n, line in enumerate(lines, 1) if f"# {marker}" in line]
    assert len(hits) == 1, marker
    return hits[0]


def frame(func: str, marker: str, path: str = FILE) -> str:
    return f"  {func} ({path}:{line_of(marker, path)})"


@pytest.fixture(autouse=True)
def _debug_on():
    qd.set_debug(True)


def data32() -> qd.Array:
    return qd.asarray(np.arange(32, dtype=np.float32))


@qd.kernel
def shift_read(v: qd.BufferView[qd.float32], out: qd.Array[qd.float32, 1], k: int):
    for i in range(v.size):
        out[i] = v[i + k]  # marker: shifted read


def test_upper_bound(launch):
    out = np.zeros(8, np.float32)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(shift_read, qd.BufferView(data32(), 16, 8), out, 1)
    assert isinstance(info.value, IndexError)
    assert str(info.value) == (
        "Index 8 is out of bounds for BufferView 'v' (offset 16, size 8) in kernel "
        "'shift_read' (thread 7).\n"
        "Call stack (kernel first):\n"
        f"{frame('shift_read', 'marker: shifted read')}\n"
        "Use indices in [0, v.size).")
    np.testing.assert_array_equal(out[:7], np.arange(17, 24))  # the other threads ran


def test_lower_bound_and_an_array_slice_argument(launch):
    data = data32()
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(shift_read, data[4:12], np.zeros(8, np.float32), -1)
    assert str(info.value) == (
        "Index -1 is out of bounds for BufferView 'v' (offset 4, size 8) in kernel "
        "'shift_read' (thread 0).\n"
        "Call stack (kernel first):\n"
        f"{frame('shift_read', 'marker: shifted read')}\n"
        "Use indices in [0, v.size).")


@qd.kernel
def top_level(v: qd.BufferView[qd.float32], k: int):
    v[k] = 1.0  # marker: top-level store


def test_top_level_access(launch):
    v = qd.BufferView(data32(), 3, 5)
    launch(top_level, v, 4)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(top_level, v, 5)
    assert str(info.value) == (
        "Index 5 is out of bounds for BufferView 'v' (offset 3, size 5) in kernel "
        "'top_level' (serial code).\n"
        "Call stack (kernel first):\n"
        f"{frame('top_level', 'marker: top-level store')}\n"
        "Use indices in [0, v.size).")


@qd.kernel
def windows(v: qd.BufferView[qd.float32], o: int, n: int, k: int):
    for i in range(2):
        w = v.subview(o + i, n)  # marker: subview in loop
        w[k] = 5.0  # marker: store through subview


@qd.kernel
def top_windows(v: qd.BufferView[qd.float32], o: int, n: int):
    w = v[o:o + n]  # marker: top-level slice
    x = w[1:]  # marker: slice of slice
    x[0] = 1.0


def test_access_through_a_subview(launch):
    v = qd.BufferView(data32(), 10, 12)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(windows, v, 2, 4, 4)
    text = str(info.value)
    assert text == (
        "Index 4 is out of bounds for BufferView 'v.subview(o + i, n)' (offset 12, size 4) in "
        "kernel 'windows' (thread 0).\n"
        "Call stack (kernel first):\n"
        f"{frame('windows', 'marker: store through subview')}\n"
        "Use indices in [0, v.subview(o + i, n).size).") or text == (
        "Index 4 is out of bounds for BufferView 'v.subview(o + i, n)' (offset 13, size 4) in "
        "kernel 'windows' (thread 1).\n"
        "Call stack (kernel first):\n"
        f"{frame('windows', 'marker: store through subview')}\n"
        "Use indices in [0, v.subview(o + i, n).size).")


@pytest.mark.parametrize(("o", "n", "thread", "offset", "size"), [
    (8, 4, 1, 9, 4),     # 9 + 4 > 12
    (-1, 4, 0, -1, 4),   # negative offset
    (2, -3, 0, 2, -3),   # negative size
    (13, 0, 0, 13, 0),   # offset beyond the parent
])
def test_subview_out_of_its_parent(launch, o, n, thread, offset, size):
    v = qd.BufferView(data32(), 10, 12)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(windows, v, o, n, 0)
    assert str(info.value) == (
        f"Subview 'v.subview(o + i, n)' (offset {offset}, size {size}) is out of bounds for "
        "its parent BufferView 'v' (offset 10, size 12) in kernel 'windows' "
        f"(thread {thread}).\n"
        "Call stack (kernel first):\n"
        f"{frame('windows', 'marker: subview in loop')}\n"
        "Use offset >= 0, size >= 0 and offset + size <= 12.")


def test_slices_at_top_level(launch):
    data = data32()
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(top_windows, data[4:20], 10, 8)
    assert str(info.value) == (
        "Subview 'v[o:o + n]' (offset 10, size 8) is out of bounds for its parent BufferView "
        "'v' (offset 4, size 16) in kernel 'top_windows' (serial code).\n"
        "Call stack (kernel first):\n"
        f"{frame('top_windows', 'marker: top-level slice')}\n"
        "Use offset >= 0, size >= 0 and offset + size <= 16.")
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(top_windows, data[4:20], 3, 0)  # w[1:] of an empty w: size -1
    assert str(info.value) == (
        "Subview 'w[1:]' (offset 1, size -1) is out of bounds for its parent BufferView "
        "'v[o:o + n]' (offset 7, size 0) in kernel 'top_windows' (serial code).\n"
        "Call stack (kernel first):\n"
        f"{frame('top_windows', 'marker: slice of slice')}\n"
        "Use offset >= 0, size >= 0 and offset + size <= 0.")
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(top_windows, data[4:20], 3, 1)  # x = w[1:] is empty: x[0] is outside
    assert str(info.value).startswith(
        "Index 0 is out of bounds for BufferView 'w[1:]' (offset 8, size 0) in kernel "
        "'top_windows' (serial code).\n")


@qd.func
def store(w, i, value):
    helpers.store(w[1:], i, value)  # marker: call helpers.store


@qd.func
def middle(w, i):
    store(w.subview(2, 4), i, 7.0)  # marker: call store


@qd.kernel
def deep(v: qd.BufferView[qd.float32], k: int):
    for i in range(3):
        middle(v, i + k)  # marker: call middle


def test_call_stack_through_nested_funcs_keeps_same_named_funcs(launch):
    data = data32()
    launch(deep, qd.BufferView(data, 0, 8), 0)
    np.testing.assert_array_equal(np.asarray(data)[3:6], [7.0, 7.0, 7.0])
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch(deep, qd.BufferView(data, 0, 8), 1)
    assert str(info.value) == (
        "Index 3 is out of bounds for BufferView 'w[1:]' (offset 3, size 3) in kernel 'deep' "
        "(thread 2).\n"
        "Call stack (kernel first):\n"
        f"{frame('deep', 'marker: call middle')}\n"
        f"{frame('middle', 'marker: call store')}\n"
        f"{frame('store', 'marker: call helpers.store')}\n"
        f"{frame('store', 'marker: helpers store', HELPERS)}\n"
        "Use indices in [0, w[1:].size).")


@qd.kernel
def edges(v: qd.BufferView[qd.int32], out: qd.Array[qd.int32, 1]):
    n = v.size
    whole = v.subview(0, n)
    empty_end = v[n:]
    empty_start = v.subview(0, 0)
    last = v[n - 1:n]
    out[0] = whole[0] + whole[n - 1] + last[0] + empty_end.size + empty_start.size
    for i in range(n):
        w = v[i:]
        out[1] += w[0] + w[w.size - 1]
        x = w.subview(w.size - 1, 1)
        out[2] += x[0]


def test_no_false_positives_at_the_edges(launch):
    data = qd.asarray(np.arange(10, dtype=np.int32))
    out = np.zeros(3, np.int32)
    launch(edges, qd.BufferView(data, 2, 6), out)
    vals = np.arange(2, 8)
    assert out.tolist() == [2 + 7 + 7, vals.sum() + 6 * 7, 6 * 7]


def test_checks_cost_nothing_without_debug_mode():
    data = qd.asarray(np.arange(10, dtype=np.int32))
    args = (qd.BufferView(data, 2, 6), np.zeros(3, np.int32))
    qd.set_debug(False)
    source = edges.generated_source(*args)
    assert "report_index_error(err" not in source and "if not (0 <=" not in source
    from qdarray.kernels.ir import Op, instrs

    assert not [i for i in instrs(edges.ir(*args).body) if i.op is Op.CHECK_INDEX]
    qd.set_debug(True)
    assert "report_index_error(err" in edges.generated_source(*args)
