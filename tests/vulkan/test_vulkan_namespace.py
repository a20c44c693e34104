"""The array namespace on the Vulkan device: its IR-built kernels compiled to SPIR-V, against
the same calls on the CPU (NumPy). These are the OpenCL device's namespace tests
(tests/opencl/test_namespace*.py, test_indexing_manipulation.py, test_reductions_sorting.py),
run here with the Vulkan device's fixtures: the namespace code is one for both devices, only
the renderer differs."""

from __future__ import annotations

from device_harness import load

# OpenCL C text is not what the Vulkan device renders (its SPIR-V is checked by spirv-val).
_OPENCL_ONLY = {"test_namespace_kernels_are_rendered_by_the_kernel_compiler"}

for _name in ("test_namespace", "test_indexing_manipulation", "test_reductions_sorting",
              "test_namespace_kernels"):
    _module = load("vulkan", _name, "opencl")
    globals().update({k: v for k, v in vars(_module).items()
                      if k.startswith("test_") and k not in _OPENCL_ONLY})
