"""Vector and matrix types on the Vulkan device: the shared tests of tests/kernels
(test_vector_types.py, test_vector_math.py), values and gradients."""

from __future__ import annotations

from device_harness import shared
from device_suites import VECTOR_MATH, VECTORS

globals().update(shared("vulkan", "test_vector_types", VECTORS))
globals().update(shared("vulkan", "test_vector_math", VECTOR_MATH))
