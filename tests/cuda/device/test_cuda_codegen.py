"""What is particular to the CUDA generator and launcher: block-reduced atomics into one
element, atomics the device lacks, stages that carry values, grids smaller than the work
(grid-stride loops), launches on several devices' arrays and arguments passed without
copies."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SIMULATED

import qdarray as qd
from qdarray.kernels.launch import prepare


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


@qd.kernel
def reductions(x: qd.Array[qd.float32, 1], k: qd.Array[qd.int64, 1],
               s: qd.Array[qd.float32, 1], total: qd.Array[qd.int64, 1],
               hi: qd.Array[qd.float32, 1], lo: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        s[0] += x[i]
        total[0] += k[i]
        qd.atomic_max(hi, 0, x[i])
        qd.atomic_min(lo, 0, k[i])


def test_block_reduced_atomics_match_numpy(device):
    n = 700 if SIMULATED else 1_000_003
    rng = np.random.default_rng(4)
    x_np = rng.uniform(-1, 1, n).astype(np.float32)
    x_np[n // 3] = np.nan  # never wins a max
    k_np = rng.integers(-(1 << 40), 1 << 40, n)
    x, k = qd.asarray(x_np, device=device), qd.asarray(k_np, device=device)
    s = qd.zeros(1, dtype=qd.float32, device=device)
    total = qd.asarray(np.array([5], np.int64), device=device)
    hi = qd.asarray(np.array([-np.inf], np.float32), device=device)
    lo = qd.asarray(np.array([1 << 50], np.int64), device=device)
    reductions(x, k, s, total, hi, lo)
    finite = np.nan_to_num(x_np, nan=0.0).astype(np.float64)
    assert np.isnan(host(s)[0])  # the NaN propagates through the sum, as in any order
    assert host(total)[0] == 5 + int(k_np.sum())  # integer sums are exact (wrapping)
    assert host(hi)[0] == np.nanmax(x_np)
    assert host(lo)[0] == k_np.min()
    x2 = qd.asarray(np.nan_to_num(x_np, nan=0.0), device=device)
    s2 = qd.zeros(1, dtype=qd.float32, device=device)
    reductions(x2, k, s2, total, hi, lo)
    np.testing.assert_allclose(host(s2)[0], finite.sum(), rtol=1e-4, atol=1e-3)


def test_a_block_with_nothing_to_add_leaves_negative_zero(device):
    @qd.kernel
    def add_some(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                y[0] += x[i]

    y = qd.asarray(np.array([-0.0]), device=device)
    add_some(qd.asarray(-np.ones(300), device=device), y)
    assert np.signbit(host(y)[0])  # -0.0 + (-0.0 from every block) stays -0.0


def test_narrow_atomics_raise_naming_the_dtype(device):
    @qd.kernel
    def count8(x: qd.Array[qd.int8, 1], c: qd.Array[qd.int8, 1]):
        for i in range(x.shape[0]):
            c[x[i] % 2] += 1

    with pytest.raises(qd.KernelTypeError, match=r"atomic add on a int8 array .*not supported "
                                                 r"on CUDA devices.*int32"):
        count8(qd.zeros(4, dtype=qd.int8, device=device), qd.zeros(2, dtype=qd.int8,
                                                                   device=device))


@qd.kernel
def carried(a: qd.Array[qd.int32, 1], out: qd.Array[qd.int32, 1]):
    n = a[0] * 2           # a serial stage computes the bound on the device
    acc = 0
    j = 0
    while j < 3:           # serial (only the outermost for loops are parallel)
        acc += a[j]
        j += 1
    for i in range(n):     # the host cannot know the trip count: the largest grid
        out[i] = i + acc
    out[out.shape[0] - 1] = n


def test_values_carried_between_stages(device):
    a = qd.asarray(np.array([40, 1, 2], np.int32), device=device)
    out = qd.zeros(100, dtype=qd.int32, device=device)
    carried(a, out)
    got = host(out)
    np.testing.assert_array_equal(got[:80], np.arange(80) + 43)
    assert got[-1] == 80 and np.all(got[80:-1] == 0)


def test_grid_stride_covers_more_iterations_than_threads(device):
    @qd.kernel
    def fill(y: qd.Array[qd.int64, 2]):
        for i, j in qd.ndrange(y.shape[0], y.shape[1]):
            y[i, j] = i * 1000 + j

    shape = (37, 53) if SIMULATED else (3001, 4099)
    y = qd.zeros(shape, dtype=qd.int64, device=device)
    fill(y)
    want = np.arange(shape[0])[:, None] * 1000 + np.arange(shape[1])
    np.testing.assert_array_equal(host(y), want)


def test_arguments_are_passed_without_copies(device):
    @qd.kernel
    def scale(v: qd.BufferView[qd.float32], x: qd.Array[qd.float32, 2]):
        for i in range(v.size):
            v[i] = v[i] * 2.0 + x[0, 0]

    data = qd.ones(64, dtype=qd.float32, device=device)
    x = qd.zeros((3, 4), dtype=qd.float32, device=device)[1:, ::2]  # a strided view
    launcher = prepare(scale, (data[8:40], x), None, False)
    native = launcher.pack((data[8:40], x))
    args, _, copies = launcher._args(native, 0)
    assert not copies

    def ptr(a):
        a = getattr(a, "_ary", a)  # the simulator's wrapper (no copy) around the NumPy array
        face = a.__array_interface__ if SIMULATED else a.__cuda_array_interface__
        return face["data"][0]

    # the view's base (or the slice's own memory) and the strided array itself
    assert ptr(args[0]) in (ptr(data._data), ptr(data._data) + 8 * 4)
    assert ptr(args[3]) == ptr(x._data)
    scale(data[8:40], x)
    want = np.ones(64, np.float32)
    want[8:40] = 2.0
    np.testing.assert_array_equal(host(data), want)


def test_kernels_follow_their_arrays_device(device):
    devices = [d for d in qd.__array_namespace_info__().devices() if d.kind == "cuda"]
    if len(devices) < 2:
        pytest.skip("one CUDA device: launches on a second device's arrays need two GPUs")

    @qd.kernel
    def inc(x: qd.Array[qd.int32, 1]):
        for i in range(x.shape[0]):
            x[i] += 1

    for d in devices:
        x = qd.zeros(1000, dtype=qd.int32, device=d)
        inc(x)
        assert x.device == d and host(x).sum() == 1000
        y = x.to_device(devices[0])
        assert y.device == devices[0] and host(y).sum() == 1000
