"""The kernel test suite's programs compiled by the numba.cuda generator and run on the CUDA
device, with the same NumPy oracles (and interpreter-defined semantics) as on the CPU."""

from __future__ import annotations

from device_harness import shared
from device_suites import ATOMICS, DEFAULT_FLOAT, LANGUAGE, OPS

globals().update(shared("cuda", "test_ops", OPS + (
    "test_float_floor_division_and_remainder_edges_match_numpy_bits",)))
globals().update(shared("cuda", "test_language", LANGUAGE))
globals().update(shared("cuda", "test_atomics", ATOMICS))
globals().update(shared("cuda", "test_default_float", DEFAULT_FLOAT))
