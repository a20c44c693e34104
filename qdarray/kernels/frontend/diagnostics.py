"""Compile errors: what is wrong, where (file, line, source line, caret), what to do instead."""

from __future__ import annotations

import linecache

from ..._errors import KernelSyntaxError, KernelTypeError
from ..ir import SourceLoc


class CompileError(Exception):
    """Raised inside the frontend; `build` turns it into the public error exactly once."""

    def __init__(self, kind: str, what: str, hint: str, loc: SourceLoc) -> None:
        super().__init__(what)
        self.kind = kind
        self.what = what
        self.hint = hint
        self.loc = loc


def format_location(loc: SourceLoc) -> str:
    """`File "f.py", line N, in func:`, the source line and a caret under the columns."""
    text = linecache.getline(loc.file, loc.line).rstrip("\r\n")
    stripped = text.lstrip()
    cut = len(text) - len(stripped)
    start = max(loc.col - cut, 0)
    end = max(min(loc.end_col - cut, len(stripped)), start + 1)
    lines = [f'  File "{loc.file}", line {loc.line}, in {loc.func}:',
             f"    {stripped}",
             f"    {' ' * start}{'^' * (end - start)}"]
    for frame in reversed(loc.stack):
        lines.append(f"  called from {frame}")
    return "\n".join(lines)


def format_error(what: str, loc: SourceLoc, hint: str) -> str:
    """The three-part message: what is wrong, where it is, what to do next."""
    parts = [what, format_location(loc)]
    if hint:
        parts.append(hint)
    return "\n".join(parts)


def public_error(err: CompileError) -> Exception:
    cls = KernelTypeError if err.kind == "type" else KernelSyntaxError
    return cls(format_error(err.what, err.loc, err.hint))
