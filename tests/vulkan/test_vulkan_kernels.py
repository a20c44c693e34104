"""The kernel test suite's programs compiled to SPIR-V and run on the Vulkan device, with the
same NumPy oracles (and interpreter-defined semantics) as on the CPU: the whole shared suite,
math included (float32 and float64 transcendental functions; GLSL.std.450 has 32-bit ones
only, so float64 ones are qdarray's own, kernels/codegen/spirv_libm.py)."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import shared
from device_suites import ATOMICS, LANGUAGE, OPS, VIEW_KERNELS

import qdarray as qd
from qdarray.backends.vulkan import _instance

globals().update(shared("vulkan", "test_ops", OPS))
globals().update(shared("vulkan", "test_language", LANGUAGE))
globals().update(shared("vulkan", "test_atomics", ATOMICS))
globals().update(shared("vulkan", "test_view_kernels", VIEW_KERNELS, "buffer_view"))


@qd.kernel
def scaled_sum(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1],
               total: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = 2.0 * x[i] + y[i]
        total[0] += x[i]


def test_arrays_past_the_binding_range_go_through_device_addresses(device, monkeypatch):
    # A binding covers at most maxStorageBufferRange bytes (128 MiB on lavapipe); larger
    # arrays are reached through their buffer device address. Forced here with a 4 KiB range.
    st = _instance.state(qd.Device(device).index)
    if not st.features["buffer_device_address"]:
        pytest.skip(f"{st.label} has no buffer device addresses")
    monkeypatch.setitem(st.limits, "maxStorageBufferRange", 4096)
    n = 10_000
    xs = np.arange(n, dtype=np.float32) % 7
    x = qd.asarray(xs, device=device)
    y = qd.ones(n, dtype=qd.float32, device=device)
    total = qd.zeros(1, dtype=qd.float32, device=device)
    scaled_sum(x, y, total)
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), 2 * xs + 1)
    assert float(total[0]) == float(xs.sum())
