"""scikit-learn's Array API dispatch runs on qdarray arrays and matches NumPy inputs."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is a test extra")

from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.metrics import (  # noqa: E402
    accuracy_score,
    mean_squared_error,
    r2_score,
    zero_one_loss,
)
from sklearn.metrics.pairwise import rbf_kernel, polynomial_kernel  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y_class = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    y_reg = X @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(60)
    return X, y_class, y_reg


@pytest.fixture(autouse=True)
def dispatch():  # type: ignore[no-untyped-def]
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _host(x: object) -> np.ndarray:
    assert isinstance(x, qd.Array), f"expected a qdarray Array, got {type(x).__name__}"
    return np.asarray(x)


def test_pca_matches_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, _, _ = data
    ref = PCA(n_components=3, svd_solver="full").fit(X)
    got = PCA(n_components=3, svd_solver="full").fit(qd.asarray(X))
    np.testing.assert_allclose(_host(got.explained_variance_), ref.explained_variance_,
                               rtol=1e-10)
    np.testing.assert_allclose(np.abs(_host(got.transform(qd.asarray(X)))),
                               np.abs(ref.transform(X)), rtol=1e-8, atol=1e-10)


def test_lda_matches_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, y, _ = data
    ref = LinearDiscriminantAnalysis().fit(X, y)
    got = LinearDiscriminantAnalysis().fit(qd.asarray(X), qd.asarray(y))
    np.testing.assert_array_equal(_host(got.predict(qd.asarray(X))), ref.predict(X))
    np.testing.assert_allclose(_host(got.coef_), ref.coef_, rtol=1e-8)


def test_ridge_svd_matches_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, _, y = data
    ref = Ridge(alpha=0.5, solver="svd").fit(X, y)
    got = Ridge(alpha=0.5, solver="svd").fit(qd.asarray(X), qd.asarray(y))
    np.testing.assert_allclose(_host(got.coef_), ref.coef_, rtol=1e-10)
    np.testing.assert_allclose(_host(got.predict(qd.asarray(X))), ref.predict(X), rtol=1e-10)


@pytest.mark.parametrize("scaler", [StandardScaler, MinMaxScaler])
def test_scalers_match_numpy(data: tuple[np.ndarray, ...], scaler: type) -> None:
    X, _, _ = data
    ref = scaler().fit_transform(X)
    got = scaler().fit_transform(qd.asarray(X))
    np.testing.assert_allclose(_host(got), ref, rtol=1e-12, atol=1e-12)


def test_metrics_match_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, y, yr = data
    pred = (X[:, 0] > 0.1).astype(np.int64)
    assert float(accuracy_score(qd.asarray(y), qd.asarray(pred))) == pytest.approx(
        accuracy_score(y, pred))
    assert float(zero_one_loss(qd.asarray(y), qd.asarray(pred))) == pytest.approx(
        zero_one_loss(y, pred))
    yhat = yr + 0.3
    assert float(mean_squared_error(qd.asarray(yr), qd.asarray(yhat))) == pytest.approx(
        mean_squared_error(yr, yhat))
    assert float(r2_score(qd.asarray(yr), qd.asarray(yhat))) == pytest.approx(r2_score(yr, yhat))


@pytest.mark.parametrize("kernel", [rbf_kernel, polynomial_kernel])
def test_pairwise_kernels_match_numpy(data: tuple[np.ndarray, ...], kernel: object) -> None:
    X, _, _ = data
    ref = kernel(X[:10], X[10:20])  # type: ignore[operator]
    got = kernel(qd.asarray(X[:10]), qd.asarray(X[10:20]))  # type: ignore[operator]
    np.testing.assert_allclose(_host(got), ref, rtol=1e-10)
