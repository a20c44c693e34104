"""BufferView kernels on every other device the kernel compiler supports (OpenCL through
PoCL in CI): windows, kernel-side subviews, transient views and debug-mode checks give the
same results and messages as on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

DEVICES = [str(d) for d in qd.__array_namespace_info__().devices() if str(d) != "cpu"]
PARAMS = DEVICES or [pytest.param(None, marks=pytest.mark.skip(
    reason="no device other than the CPU is present (pip install 'qdarray[pocl]' gives an "
           "OpenCL CPU device)"))]


@qd.kernel
def halves(v: qd.BufferView[qd.float32], lo_value: qd.float32, hi_value: qd.float32):
    half = v.size // 2
    lo = v[:half]
    hi = v.subview(half, v.size - half)
    for i in range(lo.size):
        lo[i] = lo_value + qd.float32(i)
    for i in range(hi.size):
        hi[i] = hi_value


@qd.kernel
def window_store(v: qd.BufferView[qd.float32], o: int, k: int):
    for i in range(2):
        w = v.subview(o, 4)
        w[i + k] = 1.0  # marker: device store


def on_host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


@pytest.mark.parametrize("device", PARAMS)
def test_windows_and_subviews(device):
    for make in (lambda d: qd.BufferView(d, 4, 9), lambda d: d[4:13],
                 lambda d: qd.BufferView(d)[2:15][2:11]):
        data = qd.zeros(20, dtype=qd.float32, device=device)
        halves(make(data), 1.0, -2.0)
        want = np.zeros(20, np.float32)
        want[4:8] = 1.0 + np.arange(4)
        want[8:13] = -2.0
        np.testing.assert_array_equal(on_host(data), want)


@pytest.mark.parametrize("device", PARAMS)
def test_transient_views_never_go_stale(device):
    data = qd.zeros(12, dtype=qd.float32, device=device)
    for k, (a, b) in enumerate([(0, 4), (4, 8), (8, 12)]):
        halves(data[a:b], float(k), float(k))
    want = np.array([0, 1, 0, 0, 1, 2, 1, 1, 2, 3, 2, 2], np.float32)
    np.testing.assert_array_equal(on_host(data), want)


@pytest.mark.parametrize("device", PARAMS)
def test_debug_mode_messages(device):
    data = qd.zeros(20, dtype=qd.float32, device=device)
    qd.set_debug(True)
    with pytest.raises(qd.BufferViewIndexError) as info:
        window_store(data[3:12], 7, 0)
    assert str(info.value).splitlines()[0] == (
        "Subview 'v.subview(o, 4)' (offset 7, size 4) is out of bounds for its parent "
        "BufferView 'v' (offset 3, size 9) in kernel 'window_store' (thread 0).")
    with pytest.raises(qd.BufferViewIndexError) as info:
        window_store(qd.BufferView(data, 3, 9), 2, 3)
    assert str(info.value).splitlines()[0] == (
        "Index 4 is out of bounds for BufferView 'v.subview(o, 4)' (offset 5, size 4) in "
        "kernel 'window_store' (thread 1).")
