"""BufferView kernels on the CUDA device: windows, kernel-side subviews, transient views,
funcs and atomics through views give the same results as on the CPU."""

from __future__ import annotations

from cuda_shared import load

_views = load("test_view_kernels", "buffer_view")
_devices = load("test_view_devices", "buffer_view")

test_windows_and_subviews = _devices.test_windows_and_subviews
test_transient_views_never_go_stale = _devices.test_transient_views_never_go_stale
test_debug_mode_messages = _devices.test_debug_mode_messages

test_array_slices_are_windows = _views.test_array_slices_are_windows
test_buffer_views_and_views_of_views = _views.test_buffer_views_and_views_of_views
test_plain_annotation_takes_the_dtype_from_the_argument = (
    _views.test_plain_annotation_takes_the_dtype_from_the_argument)
test_size_shape_len = _views.test_size_shape_len
test_two_views_of_one_array = _views.test_two_views_of_one_array
test_kernel_side_subviews_and_slices = _views.test_kernel_side_subviews_and_slices
test_nested_kernel_side_views = _views.test_nested_kernel_side_views
test_views_pass_to_funcs_and_back = _views.test_views_pass_to_funcs_and_back
test_atomics_through_subviews = _views.test_atomics_through_subviews
