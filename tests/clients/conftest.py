"""The client tests run with each device as the default device: the CPU, and the first OpenCL
(PoCL in CI) and CUDA devices where present. Arrays the tests make with `qd.asarray(numpy_data)`,
and those SciPy and scikit-learn make without `device=`, are then on that device."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import qdarray as qd

DEVICES = ["cpu"]
for _kind in ("opencl", "cuda"):
    DEVICES += [str(d) for d in qd.__array_namespace_info__().devices() if d.kind == _kind][:1]


@pytest.fixture(params=DEVICES)
def each_default_device(request: pytest.FixtureRequest) -> Iterator[str]:
    with qd.default_device(request.param) as device:
        yield str(device)
