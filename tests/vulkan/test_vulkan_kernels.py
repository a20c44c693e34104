"""The kernel test suite's programs compiled to SPIR-V and run on the Vulkan device, with the
same NumPy oracles (and interpreter-defined semantics) as on the CPU.

The math tests run for float32 only: GLSL.std.450, the shader math library, has
transcendental functions for 32-bit floats only, so float64 `sin`, `exp`, ... raise a
KernelTypeError on Vulkan (qdarray's own float64 expansions are the next step); `asin`,
`acos`, `atan`, `atan2`, `pow`, `expm1`, `log1p`, `cbrt`, `hypot` and `fmod` are qdarray's
own spellings, the rest the driver's.
"""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import load, shared
from device_suites import ATOMICS, LANGUAGE, OPS, VIEW_KERNELS

import qdarray as qd
from qdarray.backends.vulkan import _instance

MATH = ("test_unary_math", "test_binary_math", "test_math_of_ints_is_float64")

globals().update(shared("vulkan", "test_ops", [t for t in OPS if t not in MATH]))
_ops = load("vulkan", "test_ops")


def test_unary_math_float32(launch):
    _ops.test_unary_math(launch, np.float32)


def test_binary_math_float32(launch):
    _ops.test_binary_math(launch, np.float32)


def test_float64_transcendentals_are_refused_with_the_reason(launch):
    with pytest.raises(qd.KernelTypeError, match="sin on float64 is not available on device "
                       r"vulkan:0 .*32-bit floats only"):
        _ops.test_unary_math(launch, np.float64)
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
