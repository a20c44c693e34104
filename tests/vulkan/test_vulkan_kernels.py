"""The kernel test suite's programs compiled to SPIR-V and run on the Vulkan device, with the
same NumPy oracles (and interpreter-defined semantics) as on the CPU.

Not run here yet (docs/vulkan.md, "What runs where"): test_unary_math, test_binary_math and
test_math_of_ints_is_float64. GLSL.std.450, the shader math library, has transcendental
functions for 32-bit floats only and leaves their precision to the driver (lavapipe's asin and
atan2 are off by up to 4e-4); qdarray's own float32 and float64 expansions of them are the
next step. Everything else of the shared suites runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import shared
from device_suites import ATOMICS, LANGUAGE, OPS, VIEW_KERNELS

import qdarray as qd
from qdarray.backends.vulkan import _instance

MATH = ("test_unary_math", "test_binary_math", "test_math_of_ints_is_float64")

globals().update(shared("vulkan", "test_ops", [t for t in OPS if t not in MATH]))
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
