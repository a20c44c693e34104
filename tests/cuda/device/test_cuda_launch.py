"""Repeated launches on the CUDA device. On a GPU the first launch of a signature with given
array layouts goes through numba's dispatcher and later ones pack their parameters directly
(backends/cuda/direct_launch.py); most kernel tests launch a signature once, so this file launches
each signature several times, with new values every time, against NumPy. Under the simulator
every launch goes through numba's simulator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SIMULATED

import qdarray as qd
from qdarray.backends.cuda.direct_launch import DirectLaunch


@qd.kernel
def mixed(a: qd.int8, b: qd.uint16, c: qd.bool, d: qd.float32, e: qd.float64, f: int,
          z: qd.Array[qd.float64, 0], x: qd.Array, v: qd.BufferView[qd.int32],
          out: qd.Array, count: qd.Array[qd.int64, 1]):
    s = z[()] * 2.0  # a serial stage: its value is carried to the parallel one
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        w = x[i, j] * d + e + a + b + s + f
        if c:
            w = -w
        out[i, j] = w + v[j % v.size]
        count[0] += 1


def _want(a: Any, b: Any, c: bool, d: Any, e: float, f: int, z: float, x: np.ndarray,
          v: np.ndarray) -> np.ndarray:
    w = x.astype(np.float32) * np.float32(d)
    w = w.astype(np.float64) + e + int(a) + int(b) + 2.0 * z + f
    w = -w if c else w
    return w + v[np.arange(x.shape[1]) % v.size]


def _launchers(kern: Any) -> list[Any]:
    return [launcher for table in kern._launchers for launcher in table.values()]


def _layouts(rng: np.random.Generator) -> list[np.ndarray]:
    base = rng.normal(size=(6, 10)).astype(np.float32)
    return [base, np.asfortranarray(base), base[:, ::3], base[::2].T, base[:1, :]]


def test_every_launch_packs_its_own_values(device):
    rng = np.random.default_rng(3)
    raw = np.arange(40, dtype=np.int32) * 3
    data = qd.asarray(raw, device=device)
    for round_ in range(2):
        for k, x in enumerate(_layouts(rng)):
            a, b, c = np.int8(-3 - k), np.uint16(60000 + k), bool((k + round_) % 2)
            d, e, f, z = np.float32(0.5 + k), 1.25 * k, 7 - k * round_, 0.75 * round_ - k
            out = qd.zeros(x.shape, dtype=qd.float64, device=device)
            count = qd.zeros(1, dtype=qd.int64, device=device)
            v = qd.BufferView(data, offset=2 * k + round_, size=5 + k)
            mixed(a, b, c, d, e, f, qd.asarray(np.array(z), device=device),
                  qd.asarray(x, device=device), v, out, count)
            want = _want(a, b, c, d, e, f, z, x, raw[2 * k + round_:][:5 + k])
            np.testing.assert_allclose(np.asarray(out.to_device("cpu")), want, rtol=1e-6,
                                       err_msg=f"layout {k}, round {round_}")
            assert int(np.asarray(count.to_device("cpu"))[0]) == x.size
    found = [direct for launcher in _launchers(mixed) for direct in launcher.direct.values()]
    if SIMULATED:
        assert found == []  # the simulator runs numba's path every time
    else:
        reasons = {launcher.why_not_direct for launcher in _launchers(mixed)}
        assert found and all(isinstance(d, DirectLaunch) for d in found), reasons


@qd.kernel
def clamp_count(x: qd.Array[qd.float32, 1], lo: float, hi: float, hits: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        if x[i] < lo or x[i] > hi:
            hits[0] += 1
            x[i] = min(max(x[i], lo), hi)


@pytest.mark.parametrize("debug", [False, True])
def test_launches_of_a_signature_see_new_sizes_and_grids(device, debug):
    """The grid follows each launch's trip count (0 iterations launch nothing), debug mode's
    error record included."""
    qd.set_debug(debug)
    rng = np.random.default_rng(4)
    for n in (1000, 0, 1, 70_001 if not SIMULATED else 2049, 17):
        xs = rng.normal(size=n).astype(np.float32) * 3
        x = qd.asarray(xs, device=device)
        hits = qd.zeros(1, dtype=qd.int32, device=device)
        clamp_count(x, -1.0, 2.0, hits)
        np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), np.clip(xs, -1.0, 2.0))
        want = int(np.count_nonzero((xs < -1.0) | (xs > 2.0)))
        assert int(np.asarray(hits.to_device("cpu"))[0]) == want, n


def test_an_index_error_on_a_later_launch_is_reported(device):
    @qd.kernel
    def gather(x: qd.Array[qd.float32, 1], idx: qd.Array[qd.int64, 1],
               out: qd.Array[qd.float32, 1]):
        for i in range(idx.shape[0]):
            out[i] = x[idx[i]]

    qd.set_debug(True)
    x = qd.asarray(np.arange(5, dtype=np.float32), device=device)
    out = qd.zeros(3, dtype=qd.float32, device=device)
    for _ in range(2):
        gather(x, qd.asarray(np.array([4, 0, 2]), device=device), out)
        np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), [4.0, 0.0, 2.0])
    with pytest.raises(IndexError, match=r"Index \(9,\) is out of bounds .* \(thread 1\)"):
        gather(x, qd.asarray(np.array([1, 9, 2]), device=device), out)


@qd.kernel
def signs(a: float, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.math.copysign(1.0, a) * x[i] + y[i]


def test_repeated_launches_follow_every_change_of_their_arguments(device):
    """On a GPU a launch that packs exactly as the last one did is issued again without
    packing: every change of an argument (a scalar's value or sign, an array's memory,
    offset, length or strides) must still reach the kernel."""
    base = np.arange(32, dtype=np.float32)
    x = qd.asarray(base, device=device)
    y = qd.zeros(32, dtype=qd.float32, device=device)
    want = np.zeros(32, np.float32)
    steps = [(2.0, x, y, base, slice(None)), (2.0, x, y, base, slice(None)),
             (-0.0, x, y, base, slice(None)), (0.0, x, y, base, slice(None)),
             (0.0, x, y, base, slice(None))]
    for a, xs, ys, xh, sl in steps:
        signs(a, xs, ys)
        want[sl] += np.copysign(1.0, a) * xh
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), want, err_msg=str(a))
    other = qd.asarray(base * 3, device=device)   # new memory, the same shape
    for _ in range(2):
        signs(1.0, other, y)
        want += base * 3
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), want)
    for lo in (0, 8, 8, 16):                      # views: offsets and lengths
        signs(1.0, x[lo:lo + 8], y[lo:lo + 8])
        want[lo:lo + 8] += base[lo:lo + 8]
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), want, err_msg=str(lo))
    signs(1.0, x[::2], y[:16])                    # strided
    want[:16] += base[::2]
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), want)
