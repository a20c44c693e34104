"""Time-stepped state on one tape: the regions kernels read and write (kernels/regions.py),
and the snapshots the tape keeps of what later writes overwrite (ad/tape/snapshots.py). Gradients
against float64 central differences; the device directories run the tests taking `device`
(tests/device_suites.py: TIME_STEPPING)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.regions import compile_boxes, derive

T, N = 5, 4
X0 = np.linspace(0.1, 0.9, N)
EPS = 1e-6


@pytest.fixture
def device() -> str:
    """The CPU here; the device directories bring their own."""
    return "cpu"


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def central(f, x0: np.ndarray) -> np.ndarray:
    return np.array([(f(x0 + EPS * e) - f(x0 - EPS * e)) / (2 * EPS) for e in np.eye(len(x0))])


@qd.kernel
def collide(t: qd.int32, x: qd.Array[qd.float32, 2], imp: qd.Array[qd.float32, 2]):
    for i in range(x.shape[1]):
        imp[t + 1, i] = 0.5 * x[t, i]


@qd.kernel
def advance(t: qd.int32, x: qd.Array[qd.float32, 2], imp: qd.Array[qd.float32, 2]):
    for i in range(x.shape[1]):
        x[t + 1, i] = x[t, i] * 1.1 + imp[t + 1, i]


@qd.kernel
def loss_at(t: qd.int32, x: qd.Array[qd.float32, 2], loss: qd.Array[qd.float32, 1]):
    for i in range(x.shape[1]):
        loss[0] += x[t, i] * x[t, i]


@qd.kernel
def step(dt: float, x: qd.Array):  # the dtype is the argument's (float32 or float64)
    for i in range(x.shape[0]):
        v = x[i]
        x[i] = v - dt * v * v + dt * qd.math.sin(v)


@qd.kernel
def sumsq(x: qd.Array[qd.float32, 1], loss: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        loss[0] += x[i] * x[i]


@qd.kernel
def kmul(a: qd.Array, out: qd.Array):
    for i in range(a.shape[0]):
        out[i] = a[i] * a[i] * 3.0


@qd.kernel
def row_step(src: qd.Array[qd.float32, 1], dst: qd.Array[qd.float32, 1]):
    for i in range(src.shape[0]):
        dst[i] = src[i] * src[i] * 0.5 + src[i]


def _stepped(v: np.ndarray, steps: int) -> float:
    x = v.copy()
    for _ in range(steps):
        x = x - 0.1 * x * x + 0.1 * np.sin(x)
    return float((x * x).sum())


# -- what the compiler derives -----------------------------------------------------------------


def _boxes(kern, *args):
    """{name: [box of each read]}, {name: [box of each write]} of one launch's arguments."""
    summary = derive(kern.ir(*args))
    reads, writes = compile_boxes(summary, tuple(kern.param_names))(args)
    out = []
    for table, boxes in (("reads", reads), ("writes", writes)):
        found: dict[str, list] = {}
        for (name, _), (_, b) in zip(summary[table], boxes, strict=True):
            found.setdefault(name, []).append(b)
        out.append(found)
    return out[0], out[1], summary["order"]


@qd.kernel
def strided(a: qd.int32, b: qd.int32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(a, b):
        y[2 * i + 1] = x[i - a] + x[min(i + 1, x.shape[0] - 1)]


@qd.kernel
def gathered(idx: qd.Array[qd.int32, 1], x: qd.Array[qd.float32, 2], y: qd.Array[qd.float32, 1]):
    for i in range(y.shape[0]):
        y[i] = x[idx[i], i]


@qd.kernel
def relaxed(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        for _ in range(3):
            x[i] = x[i] * 0.5 + 1.0


def test_regions_affine_in_arguments_and_loop_ranges() -> None:
    x = qd.zeros((T + 1, N), dtype=qd.float32)
    imp = qd.zeros((T + 1, N), dtype=qd.float32)
    reads, writes, order = _boxes(advance, 2, x, imp)
    assert reads == {"x": [((2, 3), (0, N))], "imp": [((3, 4), (0, N))]}
    assert writes == {"x": [((3, 4), (0, N))]}
    assert {rel for _, _, rel in order} == {"rbw"}


def test_regions_strided_clamped_and_unknown() -> None:
    x, y = qd.zeros(10, dtype=qd.float32), qd.zeros(30, dtype=qd.float32)
    reads, writes, _ = _boxes(strided, 3, 7, x, y)
    assert writes == {"y": [((7, 14),)]}                 # 2i + 1 for i in [3, 7)
    assert reads == {"x": [((0, 8),)]}         # i - 3 and min(i + 1, 9): x is only read
    idx = qd.zeros(4, dtype=qd.int32)
    reads, writes, _ = _boxes(gathered, idx, qd.zeros((6, 4), dtype=qd.float32),
                              qd.zeros(4, dtype=qd.float32))
    assert reads["x"] == [((0, 6), (0, 4))]              # a loaded index: the whole axis
    assert reads["idx"] == [((0, 4),)] and writes == {"y": [((0, 4),)]}
    two = qd.zeros((T + 1, N), dtype=qd.float32)
    reads, _, _ = _boxes(advance, -1, two, two)
    assert reads["x"] == [((0, T + 1), (0, N))]          # may count from the end: the whole axis


def test_read_write_order_within_a_thread() -> None:
    x = qd.zeros(4, dtype=qd.float32)
    assert [rel for _, _, rel in derive(step.ir(0.1, x))["order"]] == ["rbw"]
    assert [rel for _, _, rel in derive(relaxed.ir(x))["order"]] == ["mixed"]


# -- gradients of time-stepped programs ----------------------------------------------------------


def test_time_indexed_state_needs_no_copies(device: str) -> None:
    x = qd.zeros((T + 1, N), dtype=qd.float32, requires_grad=True, device=device)
    imp = qd.zeros((T + 1, N), dtype=qd.float32, requires_grad=True, device=device)
    x[0] = qd.asarray(X0.astype(np.float32), device=device)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True, device=device)
    with qd.ad.Tape(loss=loss) as tape:
        for t in range(T):
            collide(t, x, imp)
            advance(t, x, imp)
        loss_at(T, x, loss)

    def f(v):
        for _ in range(T):
            v = v * 1.1 + 0.5 * v
        return float((v * v).sum())

    np.testing.assert_allclose(host(x.grad)[0], central(f, X0), rtol=1e-4)
    assert tape.stats()["snapshot_bytes"] == 0
    np.testing.assert_allclose(host(x)[T], X0 * 1.6 ** T, rtol=1e-5)  # the final state


@pytest.mark.parametrize("steps", [1, 3])
def test_in_place_steps(device: str, steps: int) -> None:
    x = qd.asarray(X0.astype(np.float32), requires_grad=True, device=device)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True, device=device)
    with qd.ad.Tape(loss=loss) as tape:
        for _ in range(steps):
            step(0.1, x)
        sumsq(x, loss)
    np.testing.assert_allclose(host(x.grad), central(lambda v: _stepped(v, steps), X0),
                               rtol=1e-4)
    assert tape.stats()["snapshot_bytes"] == steps * N * 4   # each step's overwritten state
    expect = X0.astype(np.float32)
    for _ in range(steps):
        expect = expect - np.float32(0.1) * expect * expect + np.float32(0.1) * np.sin(expect)
    np.testing.assert_allclose(host(x), expect, rtol=1e-5)   # x holds its final values


def test_one_array_for_a_read_and_a_written_parameter(device: str) -> None:
    y = qd.asarray(X0.astype(np.float32), requires_grad=True, device=device)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True, device=device)
    with qd.ad.Tape(loss=loss):
        kmul(y, y)
        sumsq(y, loss)
    np.testing.assert_allclose(host(y.grad), 36 * X0 ** 3, rtol=1e-5)
    np.testing.assert_allclose(host(y), 3 * X0 ** 2, rtol=1e-6)


def test_rows_passed_as_views(device: str) -> None:
    """Kernels given views x[t] and x[t + 1] (other layouts than x): compared by the bytes
    they cover, which do not meet."""
    x = qd.zeros((T + 1, N), dtype=qd.float32, requires_grad=True, device=device)
    x[0] = qd.asarray(X0.astype(np.float32), device=device)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True, device=device)
    with qd.ad.Tape(loss=loss) as tape:
        for t in range(T):
            row_step(x[t], x[t + 1])
        sumsq(x[T], loss)

    def f(v):
        for _ in range(T):
            v = v * v * 0.5 + v
        return float((v * v).sum())

    np.testing.assert_allclose(host(x.grad)[0], central(f, X0), rtol=1e-4)
    assert tape.stats()["snapshot_bytes"] == 0


def test_namespace_write_of_what_a_launch_read(device: str) -> None:
    x = qd.asarray(X0.astype(np.float32), requires_grad=True, device=device)
    y = qd.zeros(N, dtype=qd.float32, requires_grad=True, device=device)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True, device=device)
    with qd.ad.Tape(loss=loss) as tape:
        row_step(x, y)
        x[1:3] = 0.0                 # overwrites what row_step's reverse needs: copied first
        sumsq(y, loss)
    assert tape.stats()["snapshot_bytes"] == 8
    v = X0 * X0 * 0.5 + X0
    np.testing.assert_allclose(host(x.grad), 2 * v * (X0 + 1.0), rtol=1e-5)
    np.testing.assert_array_equal(host(x)[1:3], [0.0, 0.0])


def test_a_write_the_tape_does_not_see_still_raises() -> None:
    x = qd.asarray(X0)
    y = qd.zeros(N, requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with pytest.raises(qd.AutodiffError, match="'src', an argument kernel 'row64' only "
                       "reads, was written .* by a write the tape did not see"), \
            qd.ad.Tape(loss=loss):
        row64(x, y)
        np.asarray(x)[0] = 5.0       # through an export: no copy can be taken
        sum64(y, loss)


@qd.kernel
def row64(src: qd.Array[qd.float64, 1], dst: qd.Array[qd.float64, 1]):
    for i in range(src.shape[0]):
        dst[i] = src[i] * src[i]


@qd.kernel
def sum64(x: qd.Array[qd.float64, 1], loss: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        loss[0] += x[i]


@dataclasses.dataclass(frozen=True)
class State:
    x: qd.Array
    v: qd.Array
    scratch: qd.Array


@qd.kernel
def kick(s: State):
    for i in range(s.x.shape[0]):
        s.v[i] = s.x[i] * 2.0


@qd.kernel
def fill_scratch(s: State):
    for i in range(s.scratch.shape[0]):
        s.scratch[i] = 1.0


def test_group_arrays_a_kernel_never_touches_are_not_its_arguments() -> None:
    s = State(qd.asarray(X0, requires_grad=True), qd.zeros(N, requires_grad=True),
              qd.zeros(N))
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss) as tape:
        kick(s)
        fill_scratch(s)              # writes an array of the group kick never reads
        sum64(s.v, loss)
    np.testing.assert_allclose(host(s.x.grad), 2.0)
    assert tape.stats()["snapshot_bytes"] == 0


def test_reads_and_writes_in_either_order_raise() -> None:
    x = qd.asarray(X0, requires_grad=True)
    with pytest.raises(qd.AutodiffError, match="'relaxed64' reads elements of 'x' both before "
                       "and after writing them"), qd.ad.Tape():
        relaxed64(x)
    np.testing.assert_array_equal(host(x), X0)   # refused before it ran


@qd.kernel
def relaxed64(x: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        for _ in range(3):
            x[i] = x[i] * 0.5 + 1.0


def test_copies_count_against_the_memory_limit() -> None:
    x = qd.asarray(np.linspace(0.1, 0.9, 64).astype(np.float32), requires_grad=True)
    qd.ad.set_memory_limit(600)
    try:
        with pytest.raises(MemoryError, match=r"overwrites 256 bytes .* already keep 512 bytes"
                           r" .* 600 bytes of qd.ad.set_memory_limit"), qd.ad.Tape():
            for _ in range(3):
                step(0.1, x)
    finally:
        qd.ad.set_memory_limit(None)


def test_zero_grads() -> None:
    x = qd.asarray(X0, requires_grad=True)
    y = qd.zeros(N, requires_grad=True)
    for _ in range(2):
        loss = qd.zeros(1, requires_grad=True)
        with qd.ad.Tape(loss=loss, zero_grads=True):
            row64(x, y)
            sum64(y, loss)
        np.testing.assert_allclose(host(x.grad), 2 * X0)   # not 4 * X0 the second time
    qd.ad.zero_grad(x, y)
    np.testing.assert_array_equal(host(x.grad), 0.0)
    with pytest.raises(TypeError, match="zero_grad takes qdarray Arrays"):
        qd.ad.zero_grad(np.ones(3))


def test_kernel_grad_outside_a_tape_refuses_an_in_place_launch() -> None:
    y = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    kmul(y, y)
    y.grad[...] = 1.0
    with pytest.raises(qd.AutodiffError, match="'kmul' overwrites elements of 'out' that its "
                       "threads read.*Record the launch on a qd.ad.Tape"):
        kmul.grad(y, y)
    z = qd.zeros(2, requires_grad=True)      # separate memory: fine
    kmul(y, z)
    z.grad[...] = 1.0
    kmul.grad(y, z)
    np.testing.assert_allclose(host(y.grad), 1.0 + 6.0 * np.array([3.0, 12.0]))


def test_in_place_operator_on_an_array_a_launch_read() -> None:
    x = qd.asarray(X0.copy())                # no gradient of its own
    y = qd.zeros(N, requires_grad=True)
    w = qd.asarray(X0.copy(), requires_grad=True)
    loss = qd.zeros(1, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        scaled(x, w, y)
        x += 1.0                             # recorded: what scaled's reverse needs is copied
        sum64(y, loss)
    np.testing.assert_allclose(host(w.grad), X0)
    np.testing.assert_allclose(host(x), X0 + 1.0)


@qd.kernel
def scaled(x: qd.Array[qd.float64, 1], w: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] * w[i]


@qd.kernel
def shift_add(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0] - 1):
        y[i + 1] = y[i + 1] + x[i] * 0.5


def test_in_place_launches_and_writes_among_namespace_operations() -> None:
    """Operations keeping an array, launches updating it in place, slice writes and
    read-modify-write launches on one tape: float64 central differences."""

    def program(v):
        x, y = v.copy(), np.zeros_like(v)
        s = np.sin(x)
        x = x - 0.1 * x * x + 0.1 * np.sin(x)
        x[1:3] = x[1:3] * 2.0
        y[1:] = y[1:] + x[:-1] * 0.5
        x = x - 0.2 * x * x + 0.2 * np.sin(x)
        y2 = y * x
        x[0] = 3.0
        return float((s * y2).sum() + (x * x).sum())

    x0 = np.linspace(0.2, 0.8, 5)
    x = qd.asarray(x0.copy(), requires_grad=True)
    y = qd.zeros(5, requires_grad=True)
    with qd.ad.Tape() as tape:
        s = qd.sin(x)                 # keeps x
        step(0.1, x)                # overwrites it: a copy for sin's rule and its own reverse
        x[1:3] = x[1:3] * 2.0
        shift_add(x, y)               # reads and writes y
        step(0.2, x)
        y2 = y * x                    # keeps both
        x[0] = 3.0
        loss = qd.sum(s * y2) + qd.sum(x * x)
    assert float(loss) == pytest.approx(program(x0), rel=1e-14)
    tape.backward(loss)
    np.testing.assert_allclose(host(x.grad), central(program, x0), rtol=1e-6, atol=1e-8)
