"""A kernel binds a storage buffer for every array parameter, the fields of a dataclass it
does not use included, so a kernel taking a large dataclass (or its reverse, which adds a
gradient array per differentiable one) passes the device's limit on storage buffers
(maxPerStageDescriptorStorageBuffers: 32 on lavapipe) although it uses few of them.
examples/rigid_body.py's apply_spring_force meets it: its reverse binds 49 buffers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _binding, _instance

N_FIELDS = 40


# Forty arrays; the kernel below uses the first two.
Wide = dataclasses.make_dataclass(
    "Wide", [(f"f{k}", qd.Array[qd.float32, 1]) for k in range(N_FIELDS)], frozen=True)


@qd.kernel
def copy_first(w: Wide):
    for i in range(w.f0.shape[0]):
        w.f1[i] = 2.0 * w.f0[i]


@pytest.mark.xfail(strict=True, raises=_binding.VulkanError,
                   reason="every array parameter is bound, the unused ones included")
def test_unused_fields_of_a_dataclass_take_no_storage_buffer(device) -> None:
    limit = _instance.state(qd.Device(device).index).limits["maxPerStageDescriptorStorageBuffers"]
    if limit > N_FIELDS + 2:
        pytest.skip(f"{device} binds {limit} storage buffers per kernel: no limit to pass")
    w = Wide(*(qd.arange(4, dtype=qd.float32, device=device) for _ in range(N_FIELDS)))
    copy_first(w)
    assert np.asarray(w.f1.to_device("cpu")).tolist() == [0.0, 2.0, 4.0, 6.0]
