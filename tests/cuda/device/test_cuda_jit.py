"""qd.jit on CUDA: runs of elementwise calls fuse into one generated kernel compiled by numba
for the GPU (multiplies uncontracted, so exact chains equal the eager results bit for bit);
results stay on the device. The tests are tests/jit/test_jit_devices.py's."""

from __future__ import annotations

from device_harness import shared

globals().update(shared("cuda", "test_jit_devices", [
    "test_a_chain_is_one_kernel_and_the_eager_result_bit_for_bit",
    "test_transcendental_functions_fuse_with_the_eager_values",
    "test_integer_division_remainder_and_mixed_dtypes_keep_numpy_semantics",
    "test_broadcast_inputs_kept_intermediates_and_comparisons",
    "test_a_result_kept_by_the_caller_is_not_reused",
    "test_runs_split_by_device_and_zero_d_operands_stay_eager",
    "test_gradients_through_a_jitted_function_equal_the_eager_tape",
    "test_a_time_stepped_vec3_program_replays_and_differentiates",
], "jit"))
