"""The kernel test suite's debug-mode tests on the Vulkan device: every access checked, the
error record read back after the launch, the same messages as on the CPU."""

from __future__ import annotations

from device_harness import shared
from device_suites import DEBUG, VIEW_DEBUG

globals().update(shared("vulkan", "test_debug", DEBUG))
globals().update(shared("vulkan", "test_view_debug", VIEW_DEBUG, "buffer_view"))
