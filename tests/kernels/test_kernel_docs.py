"""docs/kernels.md: the printed compile error matches the page (tests/test_docs.py runs the
page's examples, like every page's)."""

from __future__ import annotations

from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def test_printed_error_matches_the_page():
    text = PAGE.read_text()
    shown = text.split("prints\n\n```text\n", 1)[1].split("```", 1)[0]
    lines = text.splitlines()
    n = next(k for k, line in enumerate(lines, 1) if line == "        x[i] = x[i] * 0.5")
    assert f'  File ".../docs/kernels.md", line {n}, in halve:' in shown
