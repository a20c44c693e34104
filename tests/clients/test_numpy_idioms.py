"""NumPy behaviours beyond the standard that Array API clients (scikit-learn, SciPy) use on the
namespace they get from `array_namespace`, each checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from array_api_compat import array_namespace

import qdarray as qd

pytestmark = pytest.mark.usefixtures("each_default_device")

INTS = np.array([3, -1, 4, 0, 5, 9], dtype=np.int64)
FLOATS = np.array([0.5, 0.0, -2.25, 1.0, 0.0, 3.5])


def _check(got: object, expected: np.ndarray) -> None:
    assert isinstance(got, qd.Array)
    assert got.device == qd.get_default_device()
    assert got.dtype == qd.asarray(expected).dtype
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_array_namespace_is_qdarray() -> None:
    assert array_namespace(qd.asarray(INTS)) is qd
    assert array_namespace(qd.asarray(INTS), qd.asarray(FLOATS)) is qd


@pytest.mark.parametrize(("int_dtype", "float_dtype"), [
    ("int64", "float64"), ("int32", "float32"), ("int16", "float32"), ("uint8", "float64"),
    ("uint64", "float32"),
])
def test_mixed_integer_float_promotion(int_dtype: str, float_dtype: str) -> None:
    a = INTS.astype(int_dtype)
    b = FLOATS.astype(float_dtype)
    x, y = qd.asarray(a), qd.asarray(b)
    xp = array_namespace(x, y)
    _check(xp.add(x, y), a + b)
    _check(x * y, a * b)
    _check(xp.where(x > 0, x, y), np.where(a > 0, a, b))
    _check(x * 0.5, a * 0.5)  # a Python float with an integer array: float64, as in NumPy
    assert xp.result_type(x, y) == qd.asarray(a + b).dtype


def test_diff_with_positional_n() -> None:
    x = qd.asarray(INTS)
    _check(qd.diff(x, 2), np.diff(INTS, 2))
    m = INTS.reshape(2, 3)
    _check(qd.diff(qd.asarray(m), 1, axis=0), np.diff(m, 1, axis=0))


def test_one_argument_where_is_nonzero() -> None:
    got = qd.where(qd.asarray(FLOATS) > 0.2)
    expected = np.where(FLOATS > 0.2)
    assert isinstance(got, tuple) and len(got) == len(expected) == 1
    _check(got[0], expected[0])
    m = INTS.reshape(2, 3)
    for g, e in zip(qd.where(qd.asarray(m)), np.where(m), strict=True):
        _check(g, e)


@pytest.mark.parametrize("name", ["logical_or", "logical_and", "logical_xor"])
def test_logical_functions_on_non_boolean_arrays(name: str) -> None:
    got = getattr(qd, name)(qd.asarray(INTS), qd.asarray(FLOATS))
    _check(got, getattr(np, name)(INTS, FLOATS))
    _check(qd.logical_not(qd.asarray(FLOATS)), np.logical_not(FLOATS))
