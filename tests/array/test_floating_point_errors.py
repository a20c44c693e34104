"""Floating-point exceptions give the standard's values and no RuntimeWarning (pytest runs with
filterwarnings=error, so any warning fails these tests), while NumPy's own error state, outside
qdarray calls, is left as the user set it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import qdarray as qd

F = np.array([-2.0, -0.0, 0.0, 1.0, np.inf, -np.inf, np.nan])
I = np.array([-3, 0, 2, 7])  # noqa: E741 - the integer operand

# (expression over qd / numpy, operands): each raises a floating-point exception in NumPy.
CASES = [
    ("divide", lambda m, a: m.divide(a, 0.0), F),
    ("divide by zero array", lambda m, a: a / m.zeros_like(a), F),
    ("int divide", lambda m, a: m.divide(a, 0), I),
    ("floor_divide int by zero", lambda m, a: m.floor_divide(a, 0), I),
    ("remainder int by zero", lambda m, a: m.remainder(a, 0), I),
    ("floor_divide float", lambda m, a: m.floor_divide(a, 0.0), F),
    ("log", lambda m, a: m.log(a), F),
    ("log1p", lambda m, a: m.log1p(a - 1.0), F),
    ("sqrt", lambda m, a: m.sqrt(a), F),
    ("acosh", lambda m, a: m.acosh(a), F),
    ("exp overflow", lambda m, a: m.exp(a * 1000.0), F),
    ("multiply overflow", lambda m, a: a * 1e308 * 10.0, F),
    ("inf minus inf", lambda m, a: a - a, F),
    ("pow", lambda m, a: m.pow(a, -0.5), F),
    ("reciprocal", lambda m, a: m.reciprocal(a), F),
    ("sum overflow", lambda m, a: m.sum(m.full(4, 1e308), axis=0) + a[0], F),
]


def _numpy_module() -> object:
    import array_api_compat.numpy as xp

    return xp


@pytest.mark.parametrize(("name", "expr", "values"), CASES, ids=[c[0] for c in CASES])
def test_exceptions_give_numpy_values_without_warnings(name: str, expr: object,
                                                       values: np.ndarray) -> None:
    xp = _numpy_module()
    with np.errstate(all="ignore"):
        expected = expr(xp, values.copy())  # type: ignore[operator]
    got = expr(qd, qd.asarray(values))  # type: ignore[operator]
    assert isinstance(got, qd.Array)
    assert got.dtype == qd.asarray(expected).dtype
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_nan_to_integer_cast_is_silent() -> None:
    got = qd.astype(qd.asarray([np.nan, 1.5]), qd.int64)
    assert got.dtype == qd.int64
    assert int(got[1]) == 1  # the NaN element is unspecified by the standard, as in NumPy


def test_narrowing_float_writes_overflow_to_inf_silently() -> None:
    # A float64 value beyond float32's range becomes inf, as NumPy's cast gives (with a warning).
    x = qd.zeros(3, dtype=qd.float32)
    x[0] = 1e300
    x[1:] = qd.asarray([-1e300, 2.0])
    np.testing.assert_array_equal(np.asarray(x), np.array([np.inf, -np.inf, 2.0], np.float32))
    for source in ([1e300, -2.5], np.array([1e300, -2.5]), qd.asarray([1e300, -2.5])):
        got = qd.asarray(source, dtype=qd.float32)
        assert got.dtype == qd.float32
        np.testing.assert_array_equal(np.asarray(got), np.array([np.inf, -2.5], np.float32))
    got = qd.asarray([1e300 + 1j], dtype=qd.complex64)
    assert complex(got[0]) == complex(np.inf, 1.0)


def test_in_place_operators_are_silent() -> None:
    x = qd.asarray([1.0, 0.0, -1.0])
    x /= 0.0
    np.testing.assert_array_equal(np.asarray(x), [np.inf, np.nan, -np.inf])
    y = qd.asarray([4, 5])
    y //= 0
    np.testing.assert_array_equal(np.asarray(y), [0, 0])


def test_linalg_and_fft_are_silent() -> None:
    got = qd.linalg.vector_norm(qd.asarray([1e200, 1e200]) * 1e200)
    assert float(got) == np.inf
    spectrum = qd.fft.fft(qd.asarray([np.inf, 0.0, 1.0, 2.0]))
    assert spectrum.shape == (4,)


def test_user_error_state_is_untouched() -> None:
    before = np.geterr()
    with np.errstate(all="raise"):
        # qdarray's results do not depend on the caller's NumPy error state ...
        got = qd.asarray([1.0]) / 0.0
        assert float(got[0]) == np.inf
        # ... and NumPy's own calls still see it.
        with pytest.raises(FloatingPointError):
            np.array([1.0]) / 0.0
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.array([1.0]) / 0.0


def test_error_state_is_restored_after_an_exception() -> None:
    before = np.geterr()
    with pytest.raises(ValueError):
        qd.add(qd.ones(2), qd.ones(3))
    assert np.geterr() == before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.array([0.0]) / 0.0
    assert [w.category for w in caught] == [RuntimeWarning]


def test_empty_reductions_keep_their_warning() -> None:
    # Not a floating-point exception: NumPy and CuPy both warn here, and so does qdarray.
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = qd.mean(qd.asarray([], dtype=qd.float64))
    assert np.isnan(float(got))
