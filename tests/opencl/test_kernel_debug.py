"""The kernel test suite's debug-mode tests on the OpenCL device: every access checked, the
error record read back after the launch, the same messages as on the CPU."""

from __future__ import annotations

from shared_kernel_tests import load

_debug = load("test_debug")

_debug_on = _debug._debug_on  # autouse: debug mode on for every test here

test_out_of_bounds_read_in_a_func = _debug.test_out_of_bounds_read_in_a_func
test_serial_code_and_two_dimensions = _debug.test_serial_code_and_two_dimensions
test_negative_index_and_atomics = _debug.test_negative_index_and_atomics
test_first_failure_wins = _debug.test_first_failure_wins
test_view_out_of_window = _debug.test_view_out_of_window
test_ndrange_threads_are_index_tuples = _debug.test_ndrange_threads_are_index_tuples
test_a_failed_check_stops_its_thread_and_the_launch = (
    _debug.test_a_failed_check_stops_its_thread_and_the_launch)
