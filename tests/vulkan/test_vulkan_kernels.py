"""The kernel test suite's programs compiled to SPIR-V and run on the Vulkan device, with the
same NumPy oracles (and interpreter-defined semantics) as on the CPU: the whole shared suite,
math included (float32 and float64 transcendental functions; GLSL.std.450 has 32-bit ones
only, so float64 ones are qdarray's own, kernels/codegen/spirv/libm.py)."""

from __future__ import annotations

import numpy as np
import pytest
from device_harness import shared
from device_suites import ATOMICS, DEFAULT_FLOAT, LANGUAGE, OPS, VIEW_KERNELS

import qdarray as qd
from qdarray.backends.vulkan import _instance

globals().update(shared("vulkan", "test_ops", OPS + ("test_log1p_of_tiny_values_is_the_value",)))
globals().update(shared("vulkan", "test_language", LANGUAGE))
globals().update(shared("vulkan", "test_atomics", ATOMICS))
globals().update(shared("vulkan", "test_default_float", DEFAULT_FLOAT))
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


@qd.kernel
def sum_range(lo: qd.int32, hi: qd.int32, out: qd.Array[qd.int64, 1]):
    for i in range(out.shape[0]):
        for j in range(lo, hi):
            out[i] += j


@qd.kernel
def sum_range_wide(lo: qd.int64, out: qd.Array[qd.int64, 1]):
    for i in range(out.shape[0]):
        for j in range(lo, lo + 3):
            out[i] += j


def _counter_types(kernel) -> set[str]:  # type: ignore[no-untyped-def]
    """The integer types of the Function variables in `kernel`'s first compiled modules,
    but for the parallel stages' grid-stride counter `qd_flat` (always 64 bits)."""
    import shutil
    import subprocess
    import tempfile

    dis = shutil.which("spirv-dis")
    if dis is None:
        pytest.skip("spirv-dis is not installed (Debian: apt-get install spirv-tools)")
    launcher = next(iter(kernel._launchers[False].values()))
    found = set()
    for stage in next(iter(launcher.variants.values())).program.stages:
        with tempfile.NamedTemporaryFile(suffix=".spv") as fh:
            fh.write(stage.spirv)
            fh.flush()
            text = subprocess.run([dis, fh.name], capture_output=True, text=True).stdout
        lines = [line for line in text.splitlines() if "%qd_flat " not in line]
        found |= {t for t in ("int", "long") for line in lines
                  if f"OpVariable %_ptr_Function_{t} " in line}
    return found


def test_loops_with_32_bit_bounds_count_in_32_bits_up_to_int32_max(device):
    # The counter stays within [begin, end]: a 32-bit one cannot overflow even at the top of
    # the range, and 32-bit arithmetic is what a CPU implementation vectorizes best.
    top = 2**31 - 1
    out = qd.zeros(3, dtype=qd.int64, device=device)
    sum_range(top - 4, top, out)
    want = [sum(range(top - 4, top))] * 3
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), want)
    out = qd.zeros(2, dtype=qd.int64, device=device)
    sum_range(-(2**31), -(2**31) + 2, out)
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")),
                                  [2 * -(2**31) + 1] * 2)
    assert _counter_types(sum_range) == {"int"}
    wide = qd.zeros(2, dtype=qd.int64, device=device)
    sum_range_wide(2**40, wide)  # 64-bit bounds: a 64-bit counter
    np.testing.assert_array_equal(np.asarray(wide.to_device("cpu")), [3 * 2**40 + 3] * 2)
    assert _counter_types(sum_range_wide) == {"long"}
