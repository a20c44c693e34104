"""A Griffe extension for the API reference (mkdocs.yml): docstrings' `Example::` blocks render
as Python code.

The docstrings follow the house style (STYLE.md, Google style with `Example::` and an indented
block, as Sphinx reads it). Griffe's Google parser knows `Examples:` sections of `>>>` lines
only, so without this the title and the block came out as literal text. Each `Example::` (or
`Examples::`) line followed by an indented block becomes a bold "Example" and a fenced Python
code block of the dedented lines; the rest of the docstring is left as written.

The reference pages list members of the package itself (`::: qdarray` with `members:`), and
each such directive would open with the package's docstring (the Kernels page began with it);
the extension drops the root package's docstring from the reference, whose index page
introduces the package instead.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_TITLE = re.compile(r"^(\s*)(Examples?)::\s*$")


def fence_examples(text: str) -> str:
    """`text` with every `Example::` + indented block made a title and a fenced code block."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        found = _TITLE.match(lines[i])
        if found is None:
            out.append(lines[i])
            i += 1
            continue
        indent = len(found.group(1))
        block: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or
                                  len(lines[i]) - len(lines[i].lstrip()) > indent):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            block.pop()
        code = textwrap.dedent("\n".join(b for b in block)).strip("\n")
        pad = found.group(1)
        out += [f"{pad}**{found.group(2)}**", "", f"{pad}```python",
                *(f"{pad}{c}" if c else "" for c in code.splitlines()), f"{pad}```", ""]
    return "\n".join(out)


class ExampleBlocks(griffe.Extension):
    """Rewrites `Example::` blocks of every docstring once the object tree is complete."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "::" in obj.docstring.value:
            obj.docstring.value = fence_examples(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        pkg.docstring = None
