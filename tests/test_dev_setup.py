"""The test command's setup: dev.py's Debian packages step and the devices-tested lines that
end every test run (tests/device_summary.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from device_summary import summarize

ROOT = Path(__file__).resolve().parents[1]


def _dev() -> Any:
    spec = importlib.util.spec_from_file_location("qdarray_dev_script", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


needs_dpkg = pytest.mark.skipif(shutil.which("dpkg") is None or sys.platform != "linux",
                                reason="dev.py's package step runs on Debian-like Linux only")


@needs_dpkg
def test_missing_packages_are_named_with_the_command_to_install_them(monkeypatch, capsys):
    dev = _dev()
    monkeypatch.delenv("QDARRAY_NO_APT", raising=False)
    monkeypatch.setattr(dev, "SYSTEM_PACKAGES", {"Widget (the test's)": (
        "dpkg", "qdarray-no-such-package")})
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # not root: nothing is installed
    dev.system_packages()
    out = capsys.readouterr().out
    assert "the Widget (the test's) tests need qdarray-no-such-package" in out
    assert "apt-get install qdarray-no-such-package" in out
    assert "dpkg," not in out  # installed packages are not named


@needs_dpkg
def test_nothing_is_said_when_the_packages_are_installed(monkeypatch, capsys):
    dev = _dev()
    monkeypatch.delenv("QDARRAY_NO_APT", raising=False)
    monkeypatch.setattr(dev, "SYSTEM_PACKAGES", {"Widget": ("dpkg",)})
    dev.system_packages()
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(dev, "SYSTEM_PACKAGES", {"Widget": ("qdarray-no-such-package",)})
    monkeypatch.setenv("QDARRAY_NO_APT", "1")  # the opt-out
    dev.system_packages()
    assert capsys.readouterr().out == ""


def test_ci_runs_the_readme_command() -> None:
    assert "python3 dev.py test" in (ROOT / "README.md").read_text()
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("python3 dev.py test")


@dataclass
class Report:
    nodeid: str
    when: str = "call"
    longrepr: Any = None
    user_properties: list[tuple[str, Any]] = field(default_factory=list)


def test_devices_tested_lines() -> None:
    skip = ("tests/vulkan/test_x.py", 3, "Skipped: no usable Vulkan device (none)")
    stats = {
        "passed": [Report("tests/array/test_a.py::t1"), Report("tests/array/test_a.py::t2"),
                   Report("tests/array/test_a.py::t2", when="setup"),  # not counted
                   Report("tests/opencl/test_o.py::t"),
                   Report("tests/cuda/test_cuda_simulator.py::t",
                          user_properties=[("simulated CUDA tests", "90 passed")])],
        "failed": [Report("tests/opencl/test_o.py::u")],
        "skipped": [Report("tests/vulkan/test_x.py::a", "setup", skip),
                    Report("tests/vulkan/test_x.py::b", "setup", skip),
                    Report("tests/kernels/test_k.py::c", "setup",
                           ("f", 1, "Skipped: jax is not installed"))],
    }
    lines = summarize(stats)
    assert lines == [
        "cpu: 2 passed, 1 skipped; skipped: jax is not installed",
        "opencl: 1 passed, 1 failed",
        "cuda (numba's simulator, no GPU): 1 passed (the CUDA test set in a simulated "
        "subprocess: 90 passed)",
        "vulkan: NOT TESTED, 2 skipped; skipped: no usable Vulkan device (none)",
    ]
