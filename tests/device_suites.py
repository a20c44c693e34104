"""The tests of tests/kernels, tests/buffer_view and tests/ad that every device directory runs
on its device (tests/cuda/device, tests/opencl), by module; a directory adds what only its
device runs. A device test module takes them with `device_harness.shared`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

OPS = (
    "test_unary_math", "test_sign_of_zeros_is_positive_zero", "test_predicates",
    "test_binary_math", "test_math_of_ints_is_float64",
    "test_arithmetic", "test_bitwise_shifts_and_integer_power",
    "test_integer_overflow_wraps_around_as_numpy", "test_true_division",
    "test_cast_semantics_match_numpy", "test_casts_in_kernels",
)

LANGUAGE = (
    "test_if_elif_else_and_ternary", "test_short_circuit_and_lazy_ternary",
    "test_loops_break_continue_step_while", "test_continue_ends_a_thread",
    "test_top_level_statements_run_in_order", "test_kernel_without_loop_runs_once",
    "test_ndrange_parallel_and_nested", "test_static_unrolling_and_static_if",
    "test_funcs_inline_with_returns_anywhere", "test_tuples_and_shapes",
    "test_frozen_dataclass_arguments", "test_zero_dimensional_array",
    "test_python_scalar_arguments_are_weak", "test_keyword_and_default_arguments",
    "test_non_contiguous_arrays", "test_typed_scalar_bounds", "test_parallel_ndrange_shapes",
)

ATOMICS = (
    "test_one_element_under_contention", "test_atomic_add_returns_distinct_old_values",
    "test_histogram", "test_min_max", "test_min_max_return_the_value_they_replaced",
    "test_nan_never_wins_min_max",
    "test_multidimensional_atomics",
)

# tests/kernels/test_default_float.py (its fixture restores the package-wide setting)
DEFAULT_FLOAT = (
    "_restore_default_float", "test_literals_stay_float32_bit_for_bit",
    "test_package_wide_setting", "test_reverse_mode",
)

VIEW_KERNELS = (
    "test_array_slices_are_windows", "test_buffer_views_and_views_of_views",
    "test_plain_annotation_takes_the_dtype_from_the_argument", "test_size_shape_len",
    "test_two_views_of_one_array", "test_kernel_side_subviews_and_slices",
    "test_nested_kernel_side_views", "test_views_pass_to_funcs_and_back",
    "test_atomics_through_subviews",
)

# `_debug_on` is the module's autouse fixture: debug mode on for every test beside it.
DEBUG = (
    "_debug_on", "test_out_of_bounds_read_in_a_func", "test_serial_code_and_two_dimensions",
    "test_negative_index_and_atomics", "test_first_failure_wins", "test_view_out_of_window",
    "test_ndrange_threads_are_index_tuples",
    "test_a_failed_check_stops_its_thread_and_the_launch",
)

VIEW_DEBUG = (
    "test_upper_bound", "test_lower_bound_and_an_array_slice_argument",
    "test_top_level_access", "test_access_through_a_subview", "test_subview_out_of_its_parent",
    "test_slices_at_top_level", "test_call_stack_through_nested_funcs_keeps_same_named_funcs",
    "test_no_false_positives_at_the_edges",
)

TRANSFORM = (
    "test_overwritten_local_in_dynamic_loop", "test_closed_form_float32_and_float64",
    "test_design_example", "test_if_elif_else", "test_branches_without_loops_need_no_stack",
    "test_integer_locals_of_a_loop_are_replayed", "test_branches_inside_dynamic_loops",
    "test_nested_dependent_loops", "test_while_loop", "test_break_and_continue",
    "test_static_loop", "test_func_calls_with_returns",
    "test_atomic_min_max_move_the_gradient_off_a_replaced_element",
    "test_atomic_max_ties_give_the_gradient_once",
)

ADSTACK = (
    "test_overflow_is_reported_after_the_launch", "test_no_overflow_with_computed_capacities",
)

REORDER = (  # with the `threshold` fixture; a device module defines `where`
    "threshold", "test_reordered_gradients_equal_the_unreordered_ones",
    "test_group_efficiency_of_a_sorted_uniform_workload",
    "test_two_dynamic_loops_keyed_by_total_entries", "test_a_2d_launch",
    "test_equal_capacities_and_a_high_threshold_never_reorder",
    "test_the_order_is_reused_from_the_sizing_cache", "test_overflow_is_still_detected",
    "test_the_order_is_a_stable_sort_largest_first",
)

CHECKPOINT = (  # with the `limit` fixture
    "limit", "test_checkpointed_reverse_equals_the_stored_one",
    "test_several_states_nested_and_consecutive_loops",
    "test_a_loop_reading_a_local_assigned_after_it",
)

SIZING = (
    "test_counting_pass_sizes_what_expressions_cannot",
    "test_gradients_through_every_sized_form",
)

WHOLE_PROGRAM = ("test_vjp_against_jax_and_finite_differences",
                 "test_a_nan_extremum_gives_its_nan_inputs_nan")

WHOLE_PROGRAM_KERNELS = (
    "test_mixed_program_equals_the_float64_reference",
    "test_kernel_outputs_get_companions_and_interleave",
    "test_the_loss_form_with_namespace_operations_before_the_kernel",
    "test_a_kernel_output_used_through_another_array_raises", "test_gradients_cross_devices",
)

TIME_STEPPING = (
    "test_time_indexed_state_needs_no_copies", "test_in_place_steps",
    "test_one_array_for_a_read_and_a_written_parameter", "test_rows_passed_as_views",
    "test_namespace_write_of_what_a_launch_read",
)

VECTORS = (
    "test_vector_operators", "test_matrix_operators", "test_integer_vectors_and_promotion",
    "test_locals_branches_loops_and_funcs",
    "test_arrays_of_vectors_load_store_and_atomic_updates",
    "test_componentwise_math_ternary_select_and_atomics",
)

VECTOR_MATH = (
    "test_small_functions_values", "test_small_functions_gradients",
    "test_decompositions_2x2_values", "test_decompositions_2x2_gradients",
    "test_decompositions_3x3_on_devices", "test_gradients_through_a_dynamic_loop_of_vectors",
    "test_mass_spring_step_vector_and_component_forms_agree", "test_mass_spring_forces_equal",
    "test_polar_decomposition_of_a_deformation_gradient_forms_agree",
)

RULES = ("sin", "exp", "sqrt", "tanh", "log", "atan2", "pow", "hypot", "floor", "mod", "select")


def rule_tests(rules: ModuleType) -> Callable[..., None]:
    """tests/ad/transform/test_rules.py's finite-difference check of the adjoint rules in RULES, as
    one test parametrized by rule (with the device's `grad` fixture)."""
    specs = [s for s in rules.SPECS if s.name in RULES]

    @pytest.mark.parametrize("spec", specs, ids=[s.name for s in specs])
    def test_rules_against_finite_differences(grad: Any, spec: Any) -> None:
        rules.test_rule_against_finite_differences(grad, spec)

    return test_rules_against_finite_differences


@pytest.fixture(autouse=True)
def no_capacity_override() -> Iterator[None]:
    """Clears the adstack capacity a test forced (`sizer._TEST_CAPACITY_OVERRIDE`)."""
    from qdarray.ad.sizing import at_launch as sizer

    yield
    sizer._TEST_CAPACITY_OVERRIDE = None
