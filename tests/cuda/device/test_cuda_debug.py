"""The kernel test suite's debug-mode tests on the CUDA device: every access checked, the
error record read back after the launch, the same messages as on the CPU."""

from __future__ import annotations

from cuda_shared import load

_debug = load("test_debug")

_view_debug = load("test_view_debug", "buffer_view")

_debug_on = _debug._debug_on  # autouse: debug mode on for every test here

test_out_of_bounds_read_in_a_func = _debug.test_out_of_bounds_read_in_a_func
test_serial_code_and_two_dimensions = _debug.test_serial_code_and_two_dimensions
test_negative_index_and_atomics = _debug.test_negative_index_and_atomics
test_first_failure_wins = _debug.test_first_failure_wins
test_view_out_of_window = _debug.test_view_out_of_window
test_ndrange_threads_are_index_tuples = _debug.test_ndrange_threads_are_index_tuples
test_a_failed_check_stops_its_thread_and_the_launch = (
    _debug.test_a_failed_check_stops_its_thread_and_the_launch)

test_upper_bound = _view_debug.test_upper_bound
test_lower_bound_and_an_array_slice_argument = (
    _view_debug.test_lower_bound_and_an_array_slice_argument)
test_top_level_access = _view_debug.test_top_level_access
test_access_through_a_subview = _view_debug.test_access_through_a_subview
test_subview_out_of_its_parent = _view_debug.test_subview_out_of_its_parent
test_slices_at_top_level = _view_debug.test_slices_at_top_level
test_call_stack_through_nested_funcs_keeps_same_named_funcs = (
    _view_debug.test_call_stack_through_nested_funcs_keeps_same_named_funcs)
test_no_false_positives_at_the_edges = _view_debug.test_no_false_positives_at_the_edges
