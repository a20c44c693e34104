"""Only the arrays a kernel reads, writes or updates take a storage buffer on Vulkan: one it
does not use (a field of a dataclass argument, a gradient array a reverse kernel does not
touch) or whose shape alone it reads takes none, so a kernel taking a large dataclass stays
within the device's storage buffers per stage (maxPerStageDescriptorStorageBuffers: 32 on
lavapipe). examples/rigid_body.py's apply_spring_force met that limit: its reverse bound 49
buffers. A kernel that does use more arrays than the device binds still gets a VulkanError
that says so."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _binding, _instance

N_FIELDS = 40


# Forty arrays; the kernels below use a few of them, but for `sum_all`.
Wide = dataclasses.make_dataclass(
    "Wide", [(f"f{k}", qd.Array[qd.float32, 1]) for k in range(N_FIELDS)], frozen=True)


@qd.kernel
def copy_first(w: Wide):
    for i in range(w.f0.shape[0]):
        w.f1[i] = 2.0 * w.f0[i]


@qd.kernel
def sum_squares(w: Wide, y: qd.Array[qd.float32, 1]):
    for i in range(w.f2.shape[0]):  # the shape alone of f2
        y[0] += w.f0[i] * w.f0[i]


@qd.kernel
def sum_all(w: Wide):
    for i in range(w.f0.shape[0]):
        w.f0[i] = (w.f1[i] + w.f2[i] + w.f3[i] + w.f4[i] + w.f5[i] + w.f6[i] + w.f7[i] +
                   w.f8[i] + w.f9[i] + w.f10[i] + w.f11[i] + w.f12[i] + w.f13[i] + w.f14[i] +
                   w.f15[i] + w.f16[i] + w.f17[i] + w.f18[i] + w.f19[i] + w.f20[i] + w.f21[i] +
                   w.f22[i] + w.f23[i] + w.f24[i] + w.f25[i] + w.f26[i] + w.f27[i] + w.f28[i] +
                   w.f29[i] + w.f30[i] + w.f31[i] + w.f32[i] + w.f33[i] + w.f34[i] + w.f35[i] +
                   w.f36[i] + w.f37[i] + w.f38[i] + w.f39[i])


def wide(device: str, requires_grad: bool = False) -> Wide:
    limit = _instance.state(qd.Device(device).index).limits["maxPerStageDescriptorStorageBuffers"]
    if limit > N_FIELDS + 2:
        pytest.skip(f"{device} binds {limit} storage buffers per kernel: no limit to pass")
    values = np.arange(4, dtype=np.float32)
    return Wide(*(qd.asarray(values, device=device, requires_grad=requires_grad)
                  for _ in range(N_FIELDS)))


def host(x: qd.Array) -> list[float]:
    return np.asarray(x.to_device("cpu")).tolist()  # type: ignore[no-any-return]


def test_unused_fields_of_a_dataclass_take_no_storage_buffer(device) -> None:
    w = wide(device)
    copy_first(w)
    assert host(w.f1) == [0.0, 2.0, 4.0, 6.0]
    copy_first(w)  # again: the launch replayed
    assert host(w.f1) == [0.0, 2.0, 4.0, 6.0]


def test_a_reverse_binds_the_gradients_it_uses_alone(device) -> None:
    """The reverse of `sum_squares` takes the forty arrays and their forty gradients, and
    uses f0, its gradient and y's."""
    w = wide(device, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    with qd.ad.Tape(loss=y):
        sum_squares(w, y)
    assert host(y) == [14.0]
    assert host(w.f0.grad) == [0.0, 2.0, 4.0, 6.0]
    assert host(w.f2.grad) == [0.0] * 4


def test_a_kernel_using_more_arrays_than_the_device_binds_is_refused(device) -> None:
    w = wide(device)
    with pytest.raises(_binding.VulkanError, match="binds at most .* storage buffers per "
                       r"kernel; this kernel needs 4[23] \(one per array"):
        sum_all(w)
