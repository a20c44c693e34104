"""Every ```python block in docs/*.md and README.md runs as written.

Blocks in one page share a namespace and run in order, so a page can build on earlier blocks.
A block whose first line is `# not run: <reason>` is skipped (for blocks that need a GPU).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for n, block in enumerate(BLOCK.findall(page.read_text())):
        if block.startswith("# not run:"):
            continue
        code = compile(block, f"{page.name}[block {n}]", "exec")
        exec(code, namespace)  # noqa: S102 - the docs are this repository's own text
