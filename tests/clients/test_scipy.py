"""SciPy functions with Array API support accept qdarray arrays (SCIPY_ARRAY_API=1, set in
tests/conftest.py before SciPy is imported) and match NumPy inputs."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

scipy = pytest.importorskip("scipy", reason="SciPy is a test extra")

import scipy.fft  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

X = np.linspace(0.1, 3.0, 17)


def _host(x: object) -> np.ndarray:
    assert isinstance(x, qd.Array), f"expected a qdarray Array, got {type(x).__name__}"
    return np.asarray(x)


@pytest.mark.parametrize("name", ["erf", "gammaln", "expit", "logit", "ndtr", "i0e"])
def test_special_functions(name: str) -> None:
    f = getattr(scipy.special, name)
    arg = X / 4 if name == "logit" else X
    np.testing.assert_allclose(_host(f(qd.asarray(arg))), f(arg), rtol=1e-12)


def test_special_logsumexp() -> None:
    got = scipy.special.logsumexp(qd.asarray(X))
    np.testing.assert_allclose(_host(got), scipy.special.logsumexp(X), rtol=1e-12)


def test_stats_moments_and_zscore() -> None:
    np.testing.assert_allclose(_host(scipy.stats.zscore(qd.asarray(X))), scipy.stats.zscore(X),
                               rtol=1e-12)
    np.testing.assert_allclose(_host(scipy.stats.skew(qd.asarray(X))), scipy.stats.skew(X),
                               rtol=1e-10)
    np.testing.assert_allclose(_host(scipy.stats.moment(qd.asarray(X), order=3)),
                               scipy.stats.moment(X, order=3), rtol=1e-10)


@pytest.mark.parametrize("name", ["fft", "rfft", "ifft", "dct"])
def test_fft(name: str) -> None:
    f = getattr(scipy.fft, name)
    np.testing.assert_allclose(_host(f(qd.asarray(X))), f(X), rtol=1e-10, atol=1e-12)
