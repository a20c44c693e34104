"""docs/kernels.md runs as written.

Its examples are ```py blocks run here, compiled with the markdown file as their file name
and their own line numbers, so kernels defined in them can read their source (kernels need
it; tests/test_docs.py runs ```python blocks as anonymous strings) and compile errors point
at real lines of the page. Blocks share one namespace, in order.
"""

from __future__ import annotations

import re
from pathlib import Path

import qdarray as qd

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"
BLOCK = re.compile(r"^```py\n(.*?)^```", re.S | re.M)


def test_kernels_page_examples_run():
    text = PAGE.read_text()
    namespace: dict[str, object] = {"__name__": "docs_kernels"}
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) >= 8
    for match in blocks:
        first_line = text.count("\n", 0, match.start(1)) + 1
        code = compile("\n" * (first_line - 1) + match.group(1), str(PAGE), "exec")
        exec(code, namespace)  # noqa: S102 - the docs are this repository's own text
    assert not qd.debug_mode()


def test_printed_error_matches_the_page():
    text = PAGE.read_text()
    shown = text.split("prints\n\n```text\n", 1)[1].split("```", 1)[0]
    lines = text.splitlines()
    n = next(k for k, line in enumerate(lines, 1) if line == "        x[i] = x[i] * 0.5")
    assert f'  File ".../docs/kernels.md", line {n}, in halve:' in shown
