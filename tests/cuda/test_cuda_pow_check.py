"""The CUDA namespace's integer-power check on its own (no device needed): CuPy computes an
integer to a negative integer power where NumPy raises, so `checked_pow` raises first. The
wrapped function here computes as CuPy does (no error), so only the check can raise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from qdarray.backends.cuda.namespace import checked_pow

calls: list[tuple[Any, Any]] = []


def _like_cupy(x1: Any, x2: Any) -> Any:
    calls.append((x1, x2))
    with np.errstate(all="ignore"):
        return np.power(np.asarray(x1, np.float64), x2)  # never raises


POW = checked_pow(_like_cupy, np.ndarray)


@pytest.mark.parametrize(("x1", "x2"), [
    (np.array([2, 3]), np.array([1, -1])),
    (np.array([2, 3], np.uint16), np.array([0, -4], np.int8)),
    (np.array([2, 3]), -1),
    (2, np.array([1, -2], np.int32)),
    (np.int64(5), np.array([-1])),
])
def test_negative_integer_exponents_raise_value_error(x1, x2):
    calls.clear()
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        POW(x1, x2)
    assert not calls


def test_negative_python_int_with_unsigned_base_raises_overflow_error():
    with pytest.raises(OverflowError, match="-1 out of bounds for uint8"):
        POW(np.array([2], np.uint8), -1)


@pytest.mark.parametrize(("x1", "x2"), [
    (np.array([2, 3]), np.array([1, 2])),
    (np.array([2, 3]), np.array([1, 200], np.uint8)),  # unsigned exponents are never negative
    (np.array([2.0, 3.0]), np.array([1, -1])),          # float bases give float results
    (np.array([2, 3]), np.array([-1.0, 0.5])),          # float exponents too
    (np.array([2]), np.zeros(0, np.int64)),
    (np.array([2, 3]), 2),
    (np.array([2, 3]), True),
    (2.0, np.array([-1, -2])),
])
def test_other_powers_reach_the_wrapped_function(x1, x2):
    calls.clear()
    POW(x1, x2)
    assert len(calls) == 1
