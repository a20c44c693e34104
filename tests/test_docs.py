"""Every example in docs/*.md and README.md runs as written: one harness for every page.

Examples are fenced ```python (or ```py) blocks. Blocks in one page share a namespace and run
in order, so a page can build on earlier blocks. Each block is compiled with the page itself
as its file name and its own line numbers (blank lines pad it to where it starts), so
kernels and funcs defined in a block can read their source (kernels need it) and compile
errors and debug-mode call stacks point at real lines of the page.

A block whose first line is `# not run: <reason>` is skipped (for blocks that need a GPU).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import qdarray as qd

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```(?:python|py)\n(.*?)^```", re.S | re.M)


def run_page(page: Path) -> int:
    """Run every example of `page` in order; return how many ran."""
    text = page.read_text()
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    ran = 0
    for match in BLOCK.finditer(text):
        block = match.group(1)
        if block.startswith("# not run:"):
            continue
        first_line = text.count("\n", 0, match.start(1)) + 1
        code = compile("\n" * (first_line - 1) + block, str(page), "exec")
        exec(code, namespace)  # noqa: S102 - the docs are this repository's own text
        ran += 1
    return ran


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page: Path) -> None:
    debug = qd.debug_mode()
    try:
        run_page(page)
    finally:
        qd.set_debug(debug)


def test_pages_with_kernels_have_their_examples(tmp_path: Path) -> None:
    """The harness finds both fences, and a kernel in a block reads its source from the page."""
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nimport qdarray as qd\n\n@qd.kernel\ndef k(x: qd.Array[qd.int64, 1]):\n"
        "    x[0] = 7\n```\n\n```py\nimport numpy as np\nx = np.zeros(1, np.int64)\nk(x)\n"
        "assert x[0] == 7\nassert k.source().file == PAGE\n```\n\n"
        "```python\n# not run: needs a GPU\nraise AssertionError\n```\n"
        .replace("PAGE", repr(str(page))))
    assert run_page(page) == 2
