"""scikit-learn's Array API dispatch runs on qdarray arrays and matches NumPy inputs."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

pytestmark = pytest.mark.usefixtures("each_default_device")

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is a test extra")

from sklearn import metrics  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.metrics import (  # noqa: E402
    accuracy_score,
    confusion_matrix,
    f1_score,
    mean_squared_error,
    multilabel_confusion_matrix,
    r2_score,
    zero_one_loss,
)
from sklearn.metrics.pairwise import (  # noqa: E402
    cosine_similarity,
    euclidean_distances,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.mixture import GaussianMixture  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    LabelEncoder,
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)


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
    assert x.device == qd.get_default_device()
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


def test_confusion_matrices_match_numpy() -> None:
    # These create arrays without device= inside scikit-learn: on the default device.
    rng = np.random.default_rng(1)
    y, pred = rng.integers(0, 3, 30), rng.integers(0, 3, 30)
    for f in (multilabel_confusion_matrix, confusion_matrix):
        np.testing.assert_array_equal(_host(f(qd.asarray(y), qd.asarray(pred))), f(y, pred))
    assert float(f1_score(qd.asarray(y), qd.asarray(pred), average="macro")) == pytest.approx(
        f1_score(y, pred, average="macro"))


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


@pytest.mark.parametrize("kernel", [rbf_kernel, polynomial_kernel, euclidean_distances,
                                    cosine_similarity])
def test_pairwise_kernels_match_numpy(data: tuple[np.ndarray, ...], kernel: object) -> None:
    X, _, _ = data
    ref = kernel(X[:10], X[10:20])  # type: ignore[operator]
    got = kernel(qd.asarray(X[:10]), qd.asarray(X[10:20]))  # type: ignore[operator]
    np.testing.assert_allclose(_host(got), ref, rtol=1e-10)


# LogisticRegression dispatches to the Array API with its default solver, lbfgs; the optimizer
# sees the same float64 values from both inputs, so the fits agree to rounding.
@pytest.mark.parametrize("classes", [2, 3])
def test_logistic_regression_matches_numpy(data: tuple[np.ndarray, ...], classes: int) -> None:
    X, y, _ = data
    if classes == 3:
        y = np.digitize(X[:, 0], [-0.5, 0.5])
    ref = LogisticRegression(C=0.7).fit(X, y)
    got = LogisticRegression(C=0.7).fit(qd.asarray(X), qd.asarray(y))
    assert got.coef_.shape == ref.coef_.shape == (1 if classes == 2 else 3, X.shape[1])
    np.testing.assert_allclose(_host(got.coef_), ref.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_host(got.intercept_), ref.intercept_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_host(got.predict_proba(qd.asarray(X))), ref.predict_proba(X),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(_host(got.predict(qd.asarray(X))), ref.predict(X))


# GaussianMixture supports the Array API for init_params "random" and "random_from_data"
# (k-means initialisation is NumPy-only); the same random_state draws the same start.
@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical", "tied"])
def test_gaussian_mixture_matches_numpy(data: tuple[np.ndarray, ...],
                                        covariance_type: str) -> None:
    X, _, _ = data
    kwargs = {"n_components": 3, "covariance_type": covariance_type,
              "init_params": "random_from_data", "random_state": 0}
    ref = GaussianMixture(**kwargs).fit(X)
    got = GaussianMixture(**kwargs).fit(qd.asarray(X))
    assert got.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(_host(got.weights_), ref.weights_, rtol=1e-7)
    np.testing.assert_allclose(_host(got.means_), ref.means_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(_host(got.covariances_), ref.covariances_, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(_host(got.predict(qd.asarray(X))), ref.predict(X))
    assert float(got.score(qd.asarray(X))) == pytest.approx(ref.score(X), rel=1e-9)


def test_gaussian_nb_matches_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, y, _ = data
    ref = GaussianNB().fit(X, y)
    got = GaussianNB().fit(qd.asarray(X), qd.asarray(y))
    np.testing.assert_allclose(_host(got.theta_), ref.theta_, rtol=1e-12)
    np.testing.assert_allclose(_host(got.predict_proba(qd.asarray(X))), ref.predict_proba(X),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("transformer", [
    MaxAbsScaler(), Normalizer(), PolynomialFeatures(degree=2),
    Nystroem(n_components=10, random_state=0),
], ids=lambda t: type(t).__name__)
def test_transformers_match_numpy(data: tuple[np.ndarray, ...], transformer: object) -> None:
    X, _, _ = data
    ref = transformer.fit_transform(X)  # type: ignore[attr-defined]
    got = transformer.fit_transform(qd.asarray(X))  # type: ignore[attr-defined]
    np.testing.assert_allclose(_host(got), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scaler", [StandardScaler, MinMaxScaler, MaxAbsScaler, Normalizer])
def test_degenerate_features_match_numpy(scaler: type) -> None:
    # A constant column (zero variance and range) and an all-zero row make the scalers divide
    # zero by zero on the way; scikit-learn silences NumPy's warnings for NumPy input only, so
    # qdarray must not warn either (pytest turns warnings into errors).
    X = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, -1.0], [1.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
    ref = scaler().fit_transform(X)
    got = scaler().fit_transform(qd.asarray(X))
    np.testing.assert_allclose(_host(got), ref, rtol=1e-12, atol=1e-12)


def test_label_encoder_matches_numpy() -> None:
    y = np.array([7, 3, 3, 9, 7, 1])
    enc = LabelEncoder().fit(qd.asarray(y))
    np.testing.assert_array_equal(_host(enc.classes_), [1, 3, 7, 9])
    np.testing.assert_array_equal(_host(enc.transform(qd.asarray(y))),
                                  LabelEncoder().fit_transform(y))


@pytest.mark.parametrize("name", ["f1_score", "precision_score", "recall_score",
                                  "jaccard_score", "balanced_accuracy_score",
                                  "cohen_kappa_score", "hamming_loss"])
def test_classification_metrics_match_numpy(data: tuple[np.ndarray, ...], name: str) -> None:
    X, _, _ = data
    y_true = np.digitize(X[:, 0], [-0.5, 0.5])
    y_pred = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.5, 0.5])
    metric = getattr(metrics, name)
    kwargs = {"average": "macro"} if name.endswith(("f1_score", "precision_score",
                                                     "recall_score", "jaccard_score")) else {}
    got = metric(qd.asarray(y_true), qd.asarray(y_pred), **kwargs)
    assert float(got) == pytest.approx(metric(y_true, y_pred, **kwargs), rel=1e-12)
    cm = metrics.confusion_matrix(qd.asarray(y_true), qd.asarray(y_pred))
    np.testing.assert_array_equal(_host(cm), metrics.confusion_matrix(y_true, y_pred))


def test_probabilistic_metrics_match_numpy(data: tuple[np.ndarray, ...]) -> None:
    X, y, _ = data
    proba = np.clip(0.5 + 0.2 * X[:, 0], 0.01, 0.99)
    for name in ["log_loss", "brier_score_loss"]:
        metric = getattr(metrics, name)
        got = metric(qd.asarray(y), qd.asarray(proba))
        assert float(got) == pytest.approx(metric(y, proba), rel=1e-12)


@pytest.mark.parametrize("name", ["mean_absolute_error", "median_absolute_error",
                                  "mean_pinball_loss", "explained_variance_score",
                                  "d2_absolute_error_score", "mean_tweedie_deviance"])
def test_regression_metrics_match_numpy(data: tuple[np.ndarray, ...], name: str) -> None:
    _, _, y = data
    y_true = np.abs(y) + 1.0  # positive, for the Tweedie deviance
    y_pred = y_true * 1.1 + 0.05
    metric = getattr(metrics, name)
    got = metric(qd.asarray(y_true), qd.asarray(y_pred))
    assert float(got) == pytest.approx(metric(y_true, y_pred), rel=1e-12)
