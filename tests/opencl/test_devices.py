"""OpenCL devices: order, capabilities, float64 refusal on devices without it, atomics that
need 64-bit support, and the generated source."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.opencl import _runtime
from qdarray.kernels.codegen.c.opencl_c import render_opencl_c
from qdarray.kernels.ir import Op
from qdarray.kernels.launch import build_ir, signature
from qdarray.kernels.passes.stages import plan_stages


@pytest.fixture
def no_fp64(device: str) -> Iterator[str]:
    """The test device, pretending to report no double precision."""
    index = qd.Device(device).index
    _runtime.set_override(index, fp64=False)
    yield device
    _runtime.set_override(index, fp64=None)


def test_devices_are_listed_in_a_stable_documented_order(device):
    states = _runtime.devices()
    ranks = [{"GPU": 0, "CPU": 1}.get(s.kind, 2) for s in states]
    assert ranks == sorted(ranks)
    assert [s.index for s in states] == list(range(len(states)))
    listed = qd.__array_namespace_info__().devices()
    assert [d for d in listed if d.kind == "opencl"] == [qd.Device(f"opencl:{s.index}")
                                                         for s in states]
    with pytest.raises(ValueError, match=r"no OpenCL device opencl:99; present: opencl:0"):
        qd.zeros(3, device="opencl:99")


def test_capabilities_name_the_host_functions(device):
    caps = qd.Device(device).backend.capabilities(qd.Device(device))
    assert caps["boolean indexing"] and caps["data-dependent shapes"]
    assert "fft.*" in caps["host functions"] and "isin" in caps["host functions"]
    assert "nonzero" not in caps["host functions"]  # a scan and a compaction on the device
    assert isinstance(caps["float64"], bool) and caps["device name"]


def test_float64_is_refused_on_a_device_without_it(no_fp64):
    dev = qd.Device(no_fp64)
    with pytest.raises(TypeError, match=rf"{no_fp64}.*does not support dtype .*float64"):
        qd.zeros(3, dtype=qd.float64, device=no_fp64)
    with pytest.raises(TypeError, match="float64"):
        qd.asarray([1.0, 2.0], device=no_fp64)  # Python floats default to float64
    info = qd.__array_namespace_info__()
    assert info.default_dtypes(device=dev)["real floating"] == qd.float32
    assert "float64" not in info.dtypes(device=dev)
    x = qd.asarray(np.arange(4, dtype=np.int32), device=no_fp64)
    with pytest.raises(TypeError, match="float64"):
        x / x  # int32 division computes in float64
    y = qd.asarray(np.ones(4, np.float32), device=no_fp64)
    np.testing.assert_array_equal(np.asarray((y * 2.0).to_device("cpu")), 2.0)


@qd.kernel
def scale64(x: qd.Array[qd.float32, 1], factor: float):
    for i in range(x.shape[0]):
        x[i] = x[i] * factor


@qd.kernel
def scale32(x: qd.Array[qd.float32, 1], factor: qd.float32):
    for i in range(x.shape[0]):
        x[i] = x[i] * factor


def test_kernels_using_float64_are_refused_on_a_device_without_it(no_fp64):
    x = qd.asarray(np.ones(4, np.float32), device=no_fp64)
    with pytest.raises(TypeError, match=rf"scale64.*float64.*{no_fp64}.*does not support"):
        scale64(x, 3.0)  # an unannotated Python float is a float64 parameter
    scale32(x, 3.0)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), 3.0)


@qd.kernel
def count64(x: qd.Array[qd.float64, 1], total: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        total[0] += x[i]


def _ir(kern, *args):
    return build_ir(kern, signature(kern, args)[0], debug=False, lower=True)[0]


def test_64_bit_atomics_need_the_extension(device):
    args = (qd.zeros(3, device=device), qd.zeros(1, device=device))
    ir = _ir(count64, *args)
    src = render_opencl_c(ir, caps={"int64_atomics": True, "int64_minmax": True})
    assert "atom_cmpxchg" in src and "cl_khr_int64_base_atomics" in src
    with pytest.raises(TypeError, match="float64 needs 64-bit atomics.*my device"):
        render_opencl_c(ir, caps={"int64_atomics": False, "device": "my device"})


@qd.kernel
def phases(x: qd.Array[qd.int64, 1]):
    n = x[0]
    for i in range(n):
        x[i + 1] = i


def test_stages_and_carried_values(device):
    x = qd.zeros(6, dtype=qd.int64, device=device)
    x[0] = 4
    p = plan_stages(_ir(phases, x))
    assert [bool(s.loops) for s in p.stages] == [False, True]
    assert len(p.carried_values) == 1  # n, read by the parallel stage's bound
    phases(x)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), [4, 0, 1, 2, 3, 0])


def test_unusable_devices_are_reported_not_used():
    assert all("(" in entry for entry in _runtime.unusable())


@qd.kernel
def square_sum(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i] * x[i]


def test_reverse_mode_runs_on_the_device(device):
    """(tests/opencl/test_opencl_autodiff.py tests reverse mode on the device in depth.)"""
    x = qd.asarray(np.array([1.0, -2.0, 0.5, 3.0], np.float32), device=device,
                   requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    with qd.ad.Tape(loss=y):
        square_sum(x, y)
    assert float(y[0]) == 14.25
    assert x.grad.device == qd.Device(device)
    np.testing.assert_array_equal(np.asarray(x.grad.to_device("cpu")), [2.0, -4.0, 1.0, 6.0])


def test_the_code_generator_spells_what_the_cpu_generator_spells():
    from qdarray.kernels.codegen.c.opencl_ops import TABLE
    from qdarray.kernels.codegen.numba import cpu as numba_cpu

    # the C walker (codegen/c/csource.py) writes the structured statements itself; the host's
    # worker and lane (per-worker adstack scratch) exist on the CPU only
    statements = {Op.IF, Op.FOR, Op.WHILE, Op.BREAK, Op.CONTINUE}
    assert set(TABLE) | statements == set(numba_cpu.TABLE) - {Op.WORKER, Op.LANE}
