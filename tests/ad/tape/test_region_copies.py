"""The copies a tape keeps of what a write overwrites (Backend.save_region /
restore_region): the CUDA backend copies a region that is one run of a C-contiguous array
with one device-to-device copy, found by `contiguous_span`, checked here against NumPy's
own layout for every box of small arrays; and the round trip on every device."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.base import contiguous_span


def boxes(shape: tuple[int, ...]):
    ranges = [[(a, z) for a in range(n + 1) for z in range(a, n + 1)] for n in shape]
    return itertools.product(*ranges)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (1, 3, 1, 2)])
def test_contiguous_span_is_the_run_numpy_lays_out(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    flat = a.reshape(-1)
    for box in boxes(shape):
        slices = tuple(slice(x, z) for x, z in box)
        picked = a[slices]
        span = contiguous_span(shape, a.itemsize, slices)
        if picked.size == 0:
            assert span is None
            continue
        first = int(picked.reshape(-1)[0])
        run = picked.size == int(picked.reshape(-1)[-1]) - first + 1 and \
            np.array_equal(picked.reshape(-1), flat[first:first + picked.size])
        if not run:
            assert span is None, (shape, box)
            continue
        assert span == (first * a.itemsize, picked.size * a.itemsize), (shape, box)


def test_save_and_restore_a_region_on_every_device():
    for device in qd.__array_namespace_info__().devices():
        x = qd.asarray(np.arange(24.0).reshape(2, 3, 4), device=device)
        backend = device.backend
        for box in (((1, 2), (0, 3), (0, 4)), ((0, 1), (1, 2), (1, 3)), ((0, 2), (1, 3), (0, 4))):
            slices = tuple(slice(a, z) for a, z in box)
            saved = backend.save_region(x._data, slices, device)
            before = np.asarray(x.to_device("cpu")).copy()
            x[...] = -1.0
            backend.restore_region(x._data, slices, saved)
            got = np.asarray(x.to_device("cpu"))
            want = np.full((2, 3, 4), -1.0)
            want[slices] = before[slices]
            np.testing.assert_array_equal(got, want, err_msg=f"{device} {box}")
            x[...] = qd.asarray(before, device=device)
