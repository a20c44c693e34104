"""Repository rules checked on every run: module sizes (STYLE.md §7), test module names and a
clean strict type check of the package."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARD_LIMIT = 800


def _python_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_above_the_line_limit() -> None:
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in _python_files("qdarray") + _python_files("tests") + _python_files("benchmarks")
        if (n := len(p.read_text().splitlines())) > HARD_LIMIT
    }
    assert not too_long, f"split these modules along their responsibilities: {too_long}"


def test_test_modules_have_unique_basenames() -> None:
    # pytest's default import mode puts each test directory on sys.path, so two test modules
    # with one basename in different directories cannot be collected in one run.
    names = Counter(p.name for p in _python_files("tests") if p.name.startswith("test_"))
    assert not [n for n, c in names.items() if c > 1], names.most_common(3)


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (it comes with the `test` extra)")
def test_package_type_checks() -> None:
    # [tool.mypy] in pyproject.toml: strict, over qdarray/. From a cold cache about 7 s of
    # CPU (20 s wall beside a busy test run); under a second with the cache in .mypy_cache/.
    run = subprocess.run([sys.executable, "-m", "mypy", "qdarray"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout, run.stdout
