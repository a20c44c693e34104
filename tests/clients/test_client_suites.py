"""scikit-learn's and SciPy's own Array API tests, with qdarray as the backend and each device
as the default device (the CPU, and the first OpenCL, Vulkan and CUDA devices present).

Each run is a separate pytest process over the installed suites (`--pyargs`), with the plugin
`qdarray_backend.py` adding qdarray to the backends they know and `-k qdarray` selecting the
tests it parametrizes; `QDARRAY_DEFAULT_DEVICE` puts the arrays the suites create on the
device under test. Every selected test must pass or be skipped by the suite's own markers (or
by the plugin's short list of tests that cannot pass for reasons not of qdarray's, each with
its reason).

The size is bounded so that the project's suite stays fast on 2 cores: on the CPU, all of
scikit-learn's Array API tests (about 500, a minute) and a cross-section of SciPy's (about
5,700 from special, stats, fft, ndimage, integrate, optimize, interpolate, cluster and its
array-API helpers, 45 s); on OpenCL and Vulkan a cross-section of each (about 280
scikit-learn tests in 20 s, and 2,500 SciPy tests in 70-110 s, SciPy's `cpu_only` tests
included: they pass through the host-export rule). `QDARRAY_CLIENT_SUITES=full` runs
both suites' complete Array API test sets on every device instead (about 30,000 SciPy tests a
device, 7 minutes on the CPU and more elsewhere; the counts are in docs/conformance.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qdarray as qd

pytest.importorskip("sklearn", reason="scikit-learn is a test extra")
pytest.importorskip("scipy", reason="SciPy is a test extra")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

DEVICES = ["cpu"]
for _kind in ("opencl", "vulkan", "cuda"):
    DEVICES += [str(d) for d in qd.__array_namespace_info__().devices() if d.kind == _kind][:1]

# scikit-learn's test modules with Array API tests (those that parametrize with its
# yield_namespace* helpers, and the estimator checks of test_common).
SKLEARN_ALL = [f"sklearn.{m}" for m in (
    "_loss.tests.test_link", "_loss.tests.test_loss", "decomposition.tests.test_pca",
    "linear_model._glm.tests.test_glm", "linear_model.tests.test_base",
    "linear_model.tests.test_logistic", "linear_model.tests.test_ridge",
    "metrics.cluster.tests.test_common", "metrics.cluster.tests.test_supervised",
    "metrics.tests.test_classification", "metrics.tests.test_common",
    "metrics.tests.test_pairwise", "mixture.tests.test_gaussian_mixture",
    "model_selection.tests.test_search", "model_selection.tests.test_split",
    "model_selection.tests.test_validation", "preprocessing.tests.test_data",
    "preprocessing.tests.test_label", "preprocessing.tests.test_polynomial",
    "tests.test_calibration", "tests.test_common", "tests.test_kernel_approximation",
    "tests.test_naive_bayes", "tests.test_pipeline", "utils.tests.test_array_api",
    "utils.tests.test_extmath", "utils.tests.test_indexing", "utils.tests.test_multiclass",
    "utils.tests.test_optimize", "utils.tests.test_stats", "utils.tests.test_validation")]
# Off the CPU: the array API helpers, the metrics (most of the host-export cases), scalers,
# PCA, ridge and naive Bayes.
SKLEARN_DEVICE = [f"sklearn.{m}" for m in (
    "utils.tests.test_array_api", "metrics.tests.test_common", "preprocessing.tests.test_data",
    "decomposition.tests.test_pca", "linear_model.tests.test_ridge", "tests.test_naive_bayes")]
SCIPY_CPU = [f"scipy.{m}" for m in (
    "_lib.tests.test_array_api", "special.tests.test_support_alternative_backends",
    "special.tests.test_logsumexp", "stats.tests.test_stats", "stats.tests.test_device_dtype",
    "fft.tests.test_basic", "ndimage.tests.test_filters", "integrate.tests.test_tanhsinh",
    "optimize.tests.test_bracket", "interpolate.tests.test_rbfinterp", "cluster.tests.test_vq")]
# Off the CPU the elementwise iterative solvers (optimize's bracket tests: 3 minutes of small
# launches on PoCL) are left to the full run; tanhsinh stands for them.
SCIPY_DEVICE = [f"scipy.{m}" for m in (
    "_lib.tests.test_array_api", "special.tests.test_logsumexp", "stats.tests.test_device_dtype",
    "fft.tests.test_basic", "integrate.tests.test_tanhsinh", "interpolate.tests.test_rbfinterp",
    "cluster.tests.test_vq")]
# At least this many must pass (a suite that collected nothing must not look green).
MINIMUM = {("sklearn", "cpu"): 450, ("sklearn", "device"): 250, ("scipy", "cpu"): 3000,
           ("scipy", "device"): 2000}


def _modules(suite: str, device: str) -> list[str]:
    full = os.environ.get("QDARRAY_CLIENT_SUITES") == "full"
    if suite == "sklearn":
        return SKLEARN_ALL if full or device == "cpu" else SKLEARN_DEVICE
    if full:
        return _scipy_all()
    return SCIPY_CPU if device == "cpu" else SCIPY_DEVICE


def _scipy_all() -> list[str]:
    """Every SciPy test module that uses the `xp` fixture."""
    import scipy

    base = Path(scipy.__file__).parent
    uses = re.compile(r"\(self, xp\b|\(xp[,)]|, xp[,)]")
    return sorted("scipy." + ".".join(p.relative_to(base).with_suffix("").parts)
                  for p in base.rglob("tests/test_*.py") if uses.search(p.read_text()))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("suite", ["sklearn", "scipy"])
def test_client_suite_passes_with_the_default_device(suite: str, device: str,
                                                     tmp_path: Path) -> None:
    ini = tmp_path / "pytest.ini"  # the suites' own settings, not this project's
    ini.write_text("[pytest]\nmarkers =\n    array_api_backends\n    thread_unsafe\n"
                   "    skip_xp_backends\n    xfail_xp_backends\n")
    # SciPy's cpu_only tests run off the CPU too: their functions convert to NumPy inside,
    # which works on every device by the host-export rule (docs/numpy.md).
    # (the caller's PYTHONPATH stays behind ours: the packages may come from it)
    path = [str(ROOT), str(HERE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, QDARRAY_DEFAULT_DEVICE=device, SCIPY_ARRAY_API="1",
               QDARRAY_SCIPY_CPU_ONLY="run", PYTHONPATH=os.pathsep.join(path))
    cmd = [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(tmp_path),
           "-p", "qdarray_backend", "-p", "no:cacheprovider", "-q", "-k", "qdarray", "-rf",
           "-W", "ignore::pytest.PytestRemovedIn10Warning", "--pyargs",
           *_modules(suite, device)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"{suite} on {device}:\n{tail}"
    found = re.search(r"(\d+) passed", done.stdout)
    passed = int(found.group(1)) if found else 0
    floor = MINIMUM[(suite, "cpu" if device == "cpu" else "device")]
    assert passed >= floor, f"{suite} on {device}: only {passed} passed\n{tail}"
    print(f"\n{suite} on {device}: {done.stdout.strip().splitlines()[-1]}")  # (shown by -s)
