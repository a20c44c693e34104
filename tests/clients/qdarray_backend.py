"""A pytest plugin that adds qdarray as an Array API backend to scikit-learn's and SciPy's own
test suites (`pytest -p qdarray_backend --pyargs sklearn.utils.tests.test_array_api ...`).

Both suites list their backends by name in their own code; this plugin adds "qdarray" there
and leaves everything else to the suites (their markers, skips and tolerances):

- scikit-learn parametrizes its Array API tests with `yield_namespaces()` (through
  `yield_namespace_device_dtype_combinations`, `yield_mixed_namespace_input_permutations`, ...),
  read when its test modules are imported: the plugin replaces it, before collection, with one
  that yields "qdarray" alone, and `_array_api_for_tests("qdarray")` then imports qdarray.
- SciPy parametrizes its `xp` fixture, in `scipy/conftest.py`, with `xp_available_backends`:
  the plugin gives that fixture the one parameter qdarray (with SciPy's own fixture body, which
  applies `skip_xp_backends` / `xfail_xp_backends`) and adds "qdarray" to the backends SciPy
  knows, so `np_only=True` markers skip it as they skip every library but NumPy. Where the
  default device is not the CPU, qdarray also counts as a non-CPU backend for `cpu_only=True`,
  as PyTorch on a GPU does (QDARRAY_SCIPY_CPU_ONLY=run runs those tests too: SciPy's functions
  that convert to NumPy inside, which work on qdarray through the host-export rule).

The arrays the suites create without `device=` are on qdarray's default device: run with
QDARRAY_DEFAULT_DEVICE=opencl:0 (or vulkan:0, cuda:0) to test a device (tests/clients/
test_client_suites.py does, for each device present).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

import qdarray as qd

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before SciPy or scikit-learn is imported


def _only_qdarray(include_numpy_namespaces: bool = True) -> Iterator[str]:
    yield "qdarray"


def _patch_sklearn() -> None:
    try:
        from sklearn.utils import _array_api
    except ImportError:
        return
    _array_api.yield_namespaces = _only_qdarray


_patch_sklearn()


# Tests of the suites that cannot pass on qdarray for a reason that is not a qdarray fault,
# by a regular expression on their node ids: skipped with the reason, so that the rest must
# pass. Kept narrow: a pattern names the failing parameters, not the test's other ones.
_SCALAR = r"(1|1\.0|\(1\+1j\))"
NOT_FOR_QDARRAY = {
    r"(TestBracketRoot::test_dtype|TestBracketMinimum::test_dtypes|TestChandrupatlaMinimize::"
    r"test_dtype)\[.*float16|test_gaussian_filter_float16":
        "qdarray has no float16 (docs/arrays.md); the test reads xp.float16 and skips only "
        "the libraries it names",
    r"TestContainsNaN::test_array_api_lazy":
        "a test for lazy arrays that names each eager library to skip; qdarray is eager",
    rf"test_xp_result_type_force_floating\[qdarray-{_SCALAR}-{_SCALAR}\]":
        "two Python scalars: expects, as a regular expression, the message of an error raised "
        "with other arguments; qdarray's names its arguments, in parentheses",
    r"test_complex_data\[":
        "calls NumPy's ndarray.view(float) on a complex array; qdarray views only between "
        "dtypes of one size (docs/numpy.md)",
    r"TestDerivative::test_initial_step":
        "uses xp.logspace, which is NumPy's, not the standard's",
}


# The same, for one device kind (the default device's).
NOT_ON_KIND = {
    "vulkan": {
        r"TestNSum::test_vectorization": "compares a batched sum with per-element ones to "
                                        "rtol=1e-15; Vulkan's maths follows NumPy "
                                        "to within a few ulp (docs/vulkan.md): 1.3e-15 here",
    },
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    table = {**NOT_FOR_QDARRAY, **NOT_ON_KIND.get(qd.get_default_device().kind, {})}
    for item in items:
        reason = next((why for key, why in table.items() if re.search(key, item.nodeid)), None)
        if reason is not None and "qdarray" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: Any, plugin_name: str) -> None:
    """Give SciPy's `xp` fixture the backend qdarray, when `scipy/conftest.py` is registered
    (pytest reads a conftest's fixtures later, when it collects the conftest's directory)."""
    if not (plugin_name or "").replace(os.sep, "/").endswith("scipy/conftest.py"):
        return
    plugin.xp_known_backends.add("qdarray")
    if qd.get_default_device().kind != "cpu" and os.environ.get(
            "QDARRAY_SCIPY_CPU_ONLY") != "run":
        plugin.xp_skip_cpu_only_backends.add("qdarray")
    body = plugin.xp._get_wrapped_function()
    param = pytest.param(qd, id="qdarray", marks=pytest.mark.array_api_backends)
    plugin.xp = pytest.fixture(params=[param], name="xp")(body)

    # SciPy's `devices` fixture appends None to `devices()` as to a list (the standard's
    # 2025.12 revision, qdarray's, returns a tuple), and its device-propagation tests then
    # make arrays on every device. SciPy creates some intermediates without `device=` (on the
    # default device), which PyTorch tolerates for 0-d CPU tensors beside CUDA ones and
    # qdarray refuses by design (docs/devices.md): the propagation tests run on the default
    # device, which is the device under test.
    def devices(xp: Any) -> list[Any]:
        return [qd.get_default_device(), None]

    plugin.devices = pytest.fixture(name="devices")(devices)
