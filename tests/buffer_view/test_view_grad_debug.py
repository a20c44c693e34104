"""Debug mode in reverse kernels: `kernel.grad` checks views like the forward launch does.

An Array slice passed for a view is reported with its true offset in the root array, kernel-
side subviews that leave their parent and accesses that leave a subview (while staying in
the parameter view) raise the forward kernel's BufferViewIndexError messages, and valid
launches give the closed-form gradients. On the interpreter and the CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.ir import Op, instrs

FILE = __file__
_LINES = Path(FILE).read_text().splitlines()


def line_of(marker: str) -> int:
    hits = [n for n, line in enumerate(_LINES, 1) if f"# {marker}" in line]
    assert len(hits) == 1, marker
    return hits[0]


def frame(func: str, marker: str) -> str:
    return f"  {func} ({FILE}:{line_of(marker)})"


@pytest.fixture(autouse=True)
def _debug_on():
    qd.set_debug(True)


def make_x(n: int = 16) -> qd.Array:
    x = qd.zeros(n, dtype=qd.float64, requires_grad=True)
    x[...] = qd.arange(n, dtype=qd.float64) + 1.0
    return x


def seeded(n: int = 1) -> qd.Array:
    out = qd.zeros(n, dtype=qd.float64, requires_grad=True)
    out.grad[...] = 1.0
    return out


@qd.kernel
def shifted(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1], k: int):
    for i in range(v.size):
        out[0] += v[i + k] * v[i + k]  # marker: shifted square


@qd.kernel
def cube_inner(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1], a: int, n: int):
    w = v.subview(a, n)  # marker: inner subview
    u = w[1:]
    for i in range(u.size):
        out[0] += u[i] * u[i] * u[i]


@qd.kernel
def window_sums(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1], n: int, k: int):
    for i in range(out.shape[0]):
        w = v.subview(i, n)
        out[i] += w[k] * w[k]  # marker: read through window


def test_an_array_slice_is_reported_at_its_offset_in_the_root(launch_grad):
    x = make_x()
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch_grad(shifted, x[4:12], seeded(), 1)
    assert str(info.value) == (
        "Index 8 is out of bounds for BufferView 'v' (offset 4, size 8) in kernel "
        "'shifted_reverse' (thread 7).\n"
        "Call stack (kernel first):\n"
        f"{frame('shifted', 'marker: shifted square')}\n"
        "Use indices in [0, v.size).")


def test_a_subview_outside_its_parent_raises_in_the_reverse(launch_grad):
    x = make_x()
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch_grad(cube_inner, qd.BufferView(x, 2, 12), seeded(), 3, 11)
    assert str(info.value) == (
        "Subview 'v.subview(a, n)' (offset 3, size 11) is out of bounds for its parent "
        "BufferView 'v' (offset 2, size 12) in kernel 'cube_inner_reverse' (serial code).\n"
        "Call stack (kernel first):\n"
        f"{frame('cube_inner', 'marker: inner subview')}\n"
        "Use offset >= 0, size >= 0 and offset + size <= 12.")


def test_a_read_outside_a_subview_but_inside_the_view_raises(launch_grad):
    x = make_x()
    out = seeded(3)
    with pytest.raises(qd.BufferViewIndexError) as info:
        launch_grad(window_sums, qd.BufferView(x, 5, 10), out, 4, 4)  # w[4] of size-4 windows
    text = str(info.value)
    thread = int(text.split("(thread ")[1].split(")")[0])
    assert text == (
        f"Index 4 is out of bounds for BufferView 'v.subview(i, n)' (offset {5 + thread}, "
        f"size 4) in kernel 'window_sums_reverse' (thread {thread}).\n"
        "Call stack (kernel first):\n"
        f"{frame('window_sums', 'marker: read through window')}\n"
        "Use indices in [0, v.subview(i, n).size).")


def test_valid_launches_give_the_closed_form_gradients(launch_grad):
    x = make_x()
    xs = np.asarray(x).copy()
    launch_grad(cube_inner, qd.BufferView(x, 2, 12), seeded(), 3, 5)  # u = x[6:10]
    want = np.zeros(16)
    want[6:10] = 3 * xs[6:10] ** 2
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)
    x.grad[...] = 0.0
    launch_grad(window_sums, qd.BufferView(x, 5, 10), seeded(3), 4, 3)  # x[8], x[9], x[10]
    want = np.zeros(16)
    want[8:11] = 2 * xs[8:11]
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)
    x.grad[...] = 0.0
    launch_grad(shifted, x[4:12], seeded(), 0)  # an Array slice, packed at its true offset
    want = np.zeros(16)
    want[4:12] = 2 * xs[4:12]
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-12)


def test_the_reverse_has_subview_checks_only_in_debug_mode():
    x = make_x()
    args = (qd.BufferView(x, 2, 12), seeded(), 3, 5)

    def checks() -> list[tuple]:
        rev = cube_inner.grad.ir(*args)
        return [i.attrs for i in instrs(rev.kernel.body) if i.op is Op.CHECK_INDEX]

    qd.set_debug(False)
    assert checks() == []
    qd.set_debug(True)
    kinds = [a[2] for a in checks()]
    assert kinds.count("subview") == 2 and "view" in kinds  # v.subview(a, n), w[1:], u[i]
