"""The kernel test suite's programs compiled to OpenCL C and run on the OpenCL device, with
the same NumPy oracles (and interpreter-defined semantics) as on the CPU."""

from __future__ import annotations

from device_harness import shared
from device_suites import ATOMICS, DEFAULT_FLOAT, LANGUAGE, OPS, VIEW_KERNELS

globals().update(shared("opencl", "test_ops", OPS + ("test_log1p_of_tiny_values_is_the_value",)))
globals().update(shared("opencl", "test_language", LANGUAGE))
globals().update(shared("opencl", "test_atomics", ATOMICS))
globals().update(shared("opencl", "test_default_float", DEFAULT_FLOAT))
globals().update(shared("opencl", "test_view_kernels", VIEW_KERNELS, "buffer_view"))
