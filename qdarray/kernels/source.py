"""A Python function's source as the frontend sees it: AST, file, lines, globals, closure."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .ir import SourceLoc


@dataclass
class FunctionSource:
    """The parsed source of a kernel or func (parsed once, shared by every compile)."""

    fn: Any
    name: str
    file: str
    tree: ast.FunctionDef
    globals: dict[str, Any]
    closure: dict[str, Any]
    assign_counts: Counter[str] = field(default_factory=Counter)
    returns: list[ast.Return] = field(default_factory=list)

    def loc(self, node: ast.AST, func: str, stack: tuple[Any, ...]) -> SourceLoc:
        """The SourceLoc of `node` (columns in characters of the original line)."""
        line = getattr(node, "lineno", self.tree.lineno)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None)
        text = linecache.getline(self.file, line)
        start = _char_col(text, col)
        if end_col is None or end_line != line:
            end = len(text.rstrip("\r\n"))
        else:
            end = _char_col(text, end_col)
        return SourceLoc(self.file, line, start, max(end, start + 1), func, stack)


def _char_col(text: str, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; carets count characters."""
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def parse_function(fn: Any) -> FunctionSource:
    """Parse `fn`'s source with line numbers and columns of the file it lives in."""
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        raise OSError(
            f"The source of {getattr(fn, '__qualname__', fn)!r} is not available ({exc}); "
            "kernels and funcs must be defined in a file (not in exec or an interactive "
            "prompt without sources)."
        ) from None
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    if indent:
        # Parse inside an `if 1:` so nodes keep the columns of the original lines.
        module = ast.parse("if 1:\n" + source)
        func_node = module.body[0].body[0]  # type: ignore[attr-defined]
        ast.increment_lineno(module, start - 2)
    else:
        module = ast.parse(textwrap.dedent(source))
        func_node = module.body[0]
        ast.increment_lineno(module, start - 1)
    if not isinstance(func_node, ast.FunctionDef):
        raise TypeError(f"{fn!r} is not a plain `def` function.")
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell (defined later in the enclosing scope)
                pass
    src = FunctionSource(fn, fn.__name__, file, func_node, fn.__globals__, closure)
    _count_assignments(src)
    return src


def _count_assignments(src: FunctionSource) -> None:
    """How often each name is a target of =, += or a for-loop; and the return statements."""
    counts: Counter[str] = Counter()

    def targets(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            counts[t.id] += 1
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)

    for node in ast.walk(src.tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                targets(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets(node.target)
        elif isinstance(node, ast.Return):
            src.returns.append(node)
    src.assign_counts = counts
