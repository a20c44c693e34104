"""The client tests run with each device as the default device: the CPU, and the first OpenCL
device when one is present (PoCL in CI). Arrays the tests make with `qd.asarray(numpy_data)`, and
those SciPy and scikit-learn make without `device=`, are then on that device."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import qdarray as qd

DEVICES = ["cpu"] + [str(d) for d in qd.__array_namespace_info__().devices()
                     if d.kind == "opencl"][:1]


@pytest.fixture(params=DEVICES)
def each_default_device(request: pytest.FixtureRequest) -> Iterator[str]:
    with qd.default_device(request.param) as device:
        yield str(device)
