"""scikit-learn's parallel and persistence machinery on qdarray input: worker processes
(`n_jobs=2`, joblib's loky backend) receive pickled arrays, and fitted estimators holding
qdarray arrays round-trip through `joblib.dump` / `joblib.load`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qdarray as qd

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is a test extra")
joblib = pytest.importorskip("joblib", reason="joblib comes with scikit-learn")

from sklearn.decomposition import PCA  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.standard_normal((90, 4))
Y = X @ np.array([1.5, -2.0, 0.5, 0.0]) + 0.2 * RNG.standard_normal(90)
FOLDS = KFold(n_splits=3, shuffle=True, random_state=0)


@pytest.fixture(autouse=True)
def dispatch():  # type: ignore[no-untyped-def]
    with sklearn.config_context(array_api_dispatch=True):
        yield


def test_cross_val_score_in_two_worker_processes() -> None:
    ref = cross_val_score(Ridge(alpha=0.5, solver="svd"), X, Y, cv=FOLDS, n_jobs=2)
    got = cross_val_score(Ridge(alpha=0.5, solver="svd"), qd.asarray(X), qd.asarray(Y),
                          cv=FOLDS, n_jobs=2)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), ref, rtol=1e-10)


def test_grid_search_in_two_worker_processes() -> None:
    grid = {"alpha": [0.01, 1.0, 30.0]}
    ref = GridSearchCV(Ridge(solver="svd"), grid, cv=FOLDS, n_jobs=2).fit(X, Y)
    got = GridSearchCV(Ridge(solver="svd"), grid, cv=FOLDS, n_jobs=2).fit(qd.asarray(X),
                                                                          qd.asarray(Y))
    assert got.best_params_ == ref.best_params_
    assert float(got.best_score_) == pytest.approx(ref.best_score_, rel=1e-10)
    np.testing.assert_allclose(np.asarray(got.cv_results_["mean_test_score"], dtype=float),
                               ref.cv_results_["mean_test_score"], rtol=1e-10)
    coef = got.best_estimator_.coef_
    assert isinstance(coef, qd.Array)
    np.testing.assert_allclose(np.asarray(coef), ref.best_estimator_.coef_, rtol=1e-10)


def test_fitted_estimators_round_trip_through_joblib(tmp_path: Path) -> None:
    pca = PCA(n_components=2, svd_solver="full").fit(qd.asarray(X))
    scaler = StandardScaler().fit(qd.asarray(X))
    joblib.dump((pca, scaler), tmp_path / "fitted.joblib")
    pca2, scaler2 = joblib.load(tmp_path / "fitted.joblib")
    for before, after in [(pca.components_, pca2.components_), (scaler.mean_, scaler2.mean_)]:
        assert isinstance(after, qd.Array) and after.device == before.device
        np.testing.assert_array_equal(np.asarray(after), np.asarray(before))
    np.testing.assert_allclose(np.asarray(pca2.transform(qd.asarray(X))),
                               np.asarray(pca.transform(qd.asarray(X))), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(scaler2.transform(qd.asarray(X))),
                               np.asarray(scaler.transform(qd.asarray(X))), rtol=1e-12)
