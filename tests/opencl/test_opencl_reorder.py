"""Reordering threads by capacity (ad/transform/reorder.py) on the OpenCL device (PoCL in CI): the
tests of tests/ad/transform/test_reorder.py with every launch on the device and the device's own
target (groups of 32 threads): reordered gradients equal the unreordered ones bit for bit, overflows
are reported, the threshold decides both ways, the order is reused from the sizing cache and
the counting sort runs as device kernels."""

from __future__ import annotations

import pytest
from device_harness import load, shared
from device_suites import REORDER

_reorder = load("opencl", "test_reorder", "ad")

globals().update(shared("opencl", "test_reorder", REORDER, "ad"))


@pytest.fixture
def where(device: str) -> object:
    return _reorder.Where(device=device)
