"""BufferView kernels on the CUDA device: windows, kernel-side subviews, transient views,
funcs and atomics through views give the same results as on the CPU."""

from __future__ import annotations

from device_harness import shared
from device_suites import VIEW_KERNELS

globals().update(shared("cuda", "test_view_devices", (
    "test_windows_and_subviews", "test_transient_views_never_go_stale",
    "test_debug_mode_messages"), "buffer_view"))
globals().update(shared("cuda", "test_view_kernels", VIEW_KERNELS, "buffer_view"))
