"""SciPy functions with Array API support accept qdarray arrays (SCIPY_ARRAY_API=1, set in
tests/conftest.py before SciPy is imported) and match NumPy inputs."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

pytestmark = pytest.mark.usefixtures("each_default_device")

scipy = pytest.importorskip("scipy", reason="SciPy is a test extra")

import scipy.cluster.vq  # noqa: E402, F811 - submodules of the module importorskip returned
import scipy.fft  # noqa: E402
import scipy.integrate  # noqa: E402
import scipy.ndimage  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

X = np.linspace(0.1, 3.0, 17)
RNG = np.random.default_rng(0)
A = RNG.standard_normal(40)
B = RNG.standard_normal(40) + 0.3
M = RNG.standard_normal((8, 5))


def _host(x: object) -> np.ndarray:
    assert isinstance(x, qd.Array), f"expected a qdarray Array, got {type(x).__name__}"
    assert x.device == qd.get_default_device()
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
    # The skew and third moment of evenly spaced values are 0 up to rounding, which depends on
    # the summation order (the OpenCL device sums in another order than NumPy).
    np.testing.assert_allclose(_host(scipy.stats.skew(qd.asarray(X))), scipy.stats.skew(X),
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(_host(scipy.stats.moment(qd.asarray(X), order=3)),
                               scipy.stats.moment(X, order=3), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", ["fft", "rfft", "ifft", "irfft", "hfft", "dct", "idct", "dst",
                                  "fftshift"])
def test_fft(name: str) -> None:
    f = getattr(scipy.fft, name)
    np.testing.assert_allclose(_host(f(qd.asarray(X))), f(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["fft2", "rfftn", "dctn"])
def test_fft_nd(name: str) -> None:
    f = getattr(scipy.fft, name)
    np.testing.assert_allclose(_host(f(qd.asarray(M))), f(M), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "rel_entr", "kl_div", "gammainc",
                                  "gammaincc", "betaln", "stdtr", "boxcox1p", "binom"])
def test_special_binary_functions(name: str) -> None:
    f = getattr(scipy.special, name)
    x, y = X, X[::-1] + 0.5
    np.testing.assert_allclose(_host(f(qd.asarray(x), qd.asarray(y))), f(x, y), rtol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_special_reductions_along_an_axis(name: str) -> None:
    f = getattr(scipy.special, name)
    np.testing.assert_allclose(_host(f(qd.asarray(M), axis=1)), f(M, axis=1), rtol=1e-12)


@pytest.mark.parametrize("name", ["kurtosis", "sem", "variation", "gmean", "hmean", "entropy",
                                  "iqr", "rankdata"])
def test_stats_descriptive(name: str) -> None:
    f = getattr(scipy.stats, name)
    x = np.abs(A) + 1.0  # positive, for the means and the entropy
    np.testing.assert_allclose(_host(f(qd.asarray(x))), f(x), rtol=1e-10)


@pytest.mark.parametrize("name", ["ttest_ind", "pearsonr", "skewtest", "normaltest",
                                  "jarque_bera"])
def test_stats_tests(name: str) -> None:
    f = getattr(scipy.stats, name)
    args = (A, B) if name in ("ttest_ind", "pearsonr") else (A,)
    ref = f(*args)
    got = f(*(qd.asarray(a) for a in args))
    np.testing.assert_allclose(_host(got.statistic), ref.statistic, rtol=1e-10)
    np.testing.assert_allclose(_host(got.pvalue), ref.pvalue, rtol=1e-9)


def test_stats_one_sample_t_test() -> None:
    # SciPy creates arrays without device= here: on the default device.
    ref = scipy.stats.ttest_1samp(A, 0.1)
    got = scipy.stats.ttest_1samp(qd.asarray(A), 0.1)
    np.testing.assert_allclose(_host(got.statistic), ref.statistic, rtol=1e-10)
    np.testing.assert_allclose(_host(got.pvalue), ref.pvalue, rtol=1e-9)


def test_stats_quantile() -> None:
    got = scipy.stats.quantile(qd.asarray(A), qd.asarray([0.1, 0.5, 0.9]))
    np.testing.assert_allclose(_host(got), scipy.stats.quantile(A, np.array([0.1, 0.5, 0.9])),
                               rtol=1e-12)


@pytest.mark.parametrize("name", ["convolve", "fftconvolve", "oaconvolve", "correlate"])
def test_signal_convolutions(name: str) -> None:
    f = getattr(scipy.signal, name)
    np.testing.assert_allclose(_host(f(qd.asarray(A), qd.asarray(B[:5]))), f(A, B[:5]),
                               rtol=1e-10, atol=1e-12)


def test_signal_filters() -> None:
    b, a = np.array([1.0, 0.5]), np.array([1.0, -0.2])
    np.testing.assert_allclose(_host(scipy.signal.lfilter(qd.asarray(b), qd.asarray(a),
                                                          qd.asarray(A))),
                               scipy.signal.lfilter(b, a, A), rtol=1e-12)
    sos = scipy.signal.butter(2, 0.3, output="sos")
    np.testing.assert_allclose(_host(scipy.signal.sosfilt(qd.asarray(sos), qd.asarray(A))),
                               scipy.signal.sosfilt(sos, A), rtol=1e-12, atol=1e-14)
    for name in ["detrend", "hilbert"]:
        f = getattr(scipy.signal, name)
        np.testing.assert_allclose(_host(f(qd.asarray(A))), f(A), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["filtfilt", "sosfiltfilt", "savgol_filter", "medfilt",
                                  "wiener", "resample", "resample_poly"])
def test_signal_smoothing_and_resampling(name: str) -> None:
    b, a = np.array([1.0, 0.5]), np.array([1.0, -0.2])
    sos = scipy.signal.butter(2, 0.3, output="sos")
    calls = {
        "filtfilt": lambda x, m: scipy.signal.filtfilt(m.asarray(b), m.asarray(a), x),
        "sosfiltfilt": lambda x, m: scipy.signal.sosfiltfilt(m.asarray(sos), x),
        "savgol_filter": lambda x, m: scipy.signal.savgol_filter(x, 5, 2),
        "medfilt": lambda x, m: scipy.signal.medfilt(x),
        "wiener": lambda x, m: scipy.signal.wiener(x),
        "resample": lambda x, m: scipy.signal.resample(x, 20),
        "resample_poly": lambda x, m: scipy.signal.resample_poly(x, 2, 3),
    }
    ref = calls[name](A, np)
    got = calls[name](qd.asarray(A), qd)
    np.testing.assert_allclose(_host(got), ref, rtol=1e-10, atol=1e-12)


def test_integrate_ndimage_and_cluster() -> None:
    np.testing.assert_allclose(_host(scipy.integrate.trapezoid(qd.asarray(A))),
                               scipy.integrate.trapezoid(A), rtol=1e-12)
    np.testing.assert_allclose(_host(scipy.integrate.cumulative_trapezoid(qd.asarray(A))),
                               scipy.integrate.cumulative_trapezoid(A), rtol=1e-12)
    np.testing.assert_allclose(_host(scipy.ndimage.gaussian_filter(qd.asarray(M), 1.0)),
                               scipy.ndimage.gaussian_filter(M, 1.0), rtol=1e-12)
    np.testing.assert_allclose(_host(scipy.cluster.vq.whiten(qd.asarray(M))),
                               scipy.cluster.vq.whiten(M), rtol=1e-12)
