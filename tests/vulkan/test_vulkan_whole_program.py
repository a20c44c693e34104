"""Reverse mode over whole programs on the Vulkan device: every namespace operation's VJP
against jax.grad and finite differences, and the mixed program (namespace preprocessing, the
dynamic-loop kernel, a reduction) against its float64 reference, with every array, cotangent
and kernel launch on the device (the shared suites of tests/ad, as on OpenCL)."""

from __future__ import annotations

from device_harness import shared
from device_suites import TIME_STEPPING, WHOLE_PROGRAM, WHOLE_PROGRAM_KERNELS

globals().update(shared("vulkan", "test_whole_program", WHOLE_PROGRAM, "ad"))
globals().update(shared("vulkan", "test_whole_program_kernels", WHOLE_PROGRAM_KERNELS, "ad"))
globals().update(shared("vulkan", "test_time_stepping", TIME_STEPPING, "ad"))
