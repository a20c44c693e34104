"""The kernel test suite's programs compiled to SPIR-V and run on the Vulkan device, with the
same NumPy oracles (and interpreter-defined semantics) as on the CPU.

Not run here yet (docs/vulkan.md, "What runs where"): test_unary_math, test_binary_math and
test_math_of_ints_is_float64. GLSL.std.450, the shader math library, has transcendental
functions for 32-bit floats only and leaves their precision to the driver (lavapipe's asin and
atan2 are off by up to 4e-4); qdarray's own float32 and float64 expansions of them are the
next step. Everything else of the shared suites runs.
"""

from __future__ import annotations

from device_harness import shared
from device_suites import ATOMICS, LANGUAGE, OPS, VIEW_KERNELS

MATH = ("test_unary_math", "test_binary_math", "test_math_of_ints_is_float64")

globals().update(shared("vulkan", "test_ops", [t for t in OPS if t not in MATH]))
globals().update(shared("vulkan", "test_language", LANGUAGE))
globals().update(shared("vulkan", "test_atomics", ATOMICS))
globals().update(shared("vulkan", "test_view_kernels", VIEW_KERNELS, "buffer_view"))
