"""docs/autodiff.md runs as written.

Its examples are ```py blocks run here, compiled with the markdown file as their file name and
their own line numbers, so kernels defined in them can read their source. Blocks share one
namespace, in order.
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "autodiff.md"
BLOCK = re.compile(r"^```py\n(.*?)^```", re.S | re.M)


def test_autodiff_page_examples_run():
    text = PAGE.read_text()
    namespace: dict[str, object] = {"__name__": "docs_autodiff"}
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) >= 9
    for match in blocks:
        first_line = text.count("\n", 0, match.start(1)) + 1
        code = compile("\n" * (first_line - 1) + match.group(1), str(PAGE), "exec")
        exec(code, namespace)  # noqa: S102 - the docs are this repository's own text
