"""Repository rules checked on every run: module sizes (STYLE.md §7) and test module names."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

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
