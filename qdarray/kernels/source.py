"""A Python function's source as the frontend sees it: AST, file, lines, globals, closure."""

from __future__ import annotations
import __future__

import ast
import inspect
import io
import linecache
import textwrap
import tokenize
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._errors import KernelSourceError
from .ir import SourceLoc


@dataclass
class FunctionSource:
    """The parsed source of a kernel or func (parsed once, shared by every compile)."""

    fn: Any
    name: str
    file: str
    tree: ast.FunctionDef
    globals: dict[str, Any]
    assign_counts: Counter[str] = field(default_factory=Counter)
    component_counts: Counter[str] = field(default_factory=Counter)
    returns: list[ast.Return] = field(default_factory=list)

    @property
    def closure(self) -> dict[str, Any]:
        """The closure's values now (like globals, read when a compile runs)."""
        fn = self.fn
        out = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
                try:
                    out[name] = cell.cell_contents
                except ValueError:  # an empty cell (defined later in the enclosing scope)
                    pass
        return out

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
    """Parse `fn`'s source with line numbers and columns of the file it lives in.

    Raises:
        KernelSourceError: the source is not available, or the file no longer holds the
            function's code (it was edited after the module was imported).
    """
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        raise KernelSourceError(
            f"The source of {getattr(fn, '__qualname__', fn)!r} is not available ({exc}); "
            "kernels and funcs must be defined in a file (not in exec or an interactive "
            "prompt without sources)."
        ) from None
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    # Parsed inside an `if 1:` when indented, so nodes keep the columns of the original lines.
    text = "if 1:\n" + source if indent else textwrap.dedent(source)
    try:
        module = ast.parse(text)
        func_node = module.body[0].body[0] if indent else module.body[0]  # type: ignore[attr-defined]
    except (SyntaxError, IndexError, AttributeError):
        func_node = None
    if not _same_code(source, fn):
        _edited(fn, file, start)
    if not isinstance(func_node, ast.FunctionDef):
        raise TypeError(f"{fn!r} is not a plain `def` function.")
    ast.increment_lineno(module, start - (2 if indent else 1))
    src = FunctionSource(fn, fn.__name__, file, func_node, fn.__globals__)
    _count_assignments(src)
    return src


def _code_of(consts: tuple[Any, ...], name: str) -> Any:
    """The code object named `name` among `consts` or in nested code (the def inside an
    `if 1:`)."""
    for c in consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name:
                return c
            found = _code_of(c.co_consts, name)
            if found is not None:
                return found
    return None


def _shape(code: Any) -> tuple[Any, ...]:
    """What identifies a code object's source, without its position in the file: names,
    constants, parameters and how many lines it spans. (Not the bytecode itself: tools that
    compile modules from a rewritten AST, such as pytest's assertion rewriting, can emit other
    instructions for the same text.)"""
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    lines = [line for _, _, line in code.co_lines() if line is not None]
    span = max(lines, default=code.co_firstlineno) - code.co_firstlineno
    return (code.co_name, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            code.co_varnames, code.co_freevars, tuple(sorted(set(code.co_names))), consts,
            span)


# Python 3.12 splits f-strings into tokens; a multi-line one spans FSTRING_START to FSTRING_END.
FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
FSTRING_END = getattr(tokenize, "FSTRING_END", -1)

_FUTURE = [getattr(__future__, name).compiler_flag for name in __future__.all_feature_names]


def _same_code(source: str, fn: Any) -> bool:
    """Whether `source` (the text found for `fn`) compiles to `fn`'s code: the file the
    source is read from may have been edited since the module was imported. The text is
    compiled inside a function binding `fn`'s free variables (so closures compile to the same
    cell accesses; inside a class body in it, so that the def's own name stays a global for
    its body), with the `__future__` flags of `fn`'s module."""
    code = fn.__code__
    outer = "def __qd_enclosing__():\n"
    outer += "".join(f"    {name} = None\n" for name in code.co_freevars)
    outer += "    class __qd_scope__:\n"
    outer += _reindent(source, "        ")
    flags = 0
    for flag in _FUTURE:
        if code.co_flags & flag:
            flags |= flag
    try:
        module = compile(outer, "<kernel source>", "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    found = _code_of(module.co_consts, code.co_name)
    return found is not None and _shape(found) == _shape(code)


def _reindent(source: str, prefix: str) -> str:
    """`source` dedented, then indented by `prefix`, line by line as textwrap does, except the
    lines that continue a multi-line string (a docstring's second line): their leading blanks
    are the string's text, and changing them would change the code's constants."""
    lines = source.splitlines(keepends=True)
    inside: set[int] = set()  # 0-based indices of lines that start inside a string
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("if 1:\n" + source).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []  # not Python: the compile in _same_code fails and says so
    # Token rows count from 1 and from the `if 1:` line: source line k is row k + 2, so a
    # string from row a to row b makes lines a - 1 ... b - 2 start inside it.
    starts: list[int] = []
    for tok in tokens:
        if tok.type == tokenize.STRING:
            inside.update(range(tok.start[0] - 1, tok.end[0] - 1))
        elif tok.type == FSTRING_START:
            starts.append(tok.start[0])
        elif tok.type == FSTRING_END and starts:
            inside.update(range(starts.pop() - 1, tok.end[0] - 1))
    code = [line for k, line in enumerate(lines) if k not in inside and line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in code), default=0)
    return "".join(line if k in inside or not line.strip() else prefix + line[margin:]
                   for k, line in enumerate(lines))


def _edited(fn: Any, file: str, start: int) -> NoReturn:
    raise KernelSourceError(
        f"The source file of '{fn.__qualname__}' ({file}) changed after it was imported: "
        f"the text at line {start} no longer compiles to the code that runs. Restart Python "
        "(or reload the module) to use the edited code.")


def _count_assignments(src: FunctionSource) -> None:
    """How often each name is a target of =, += or a for-loop, and how often a component
    of it is (`v[k] = s`, `v.x = s`: a vector local that is updated so is a mutable local);
    and the return statements."""
    counts: Counter[str] = Counter()
    components: Counter[str] = Counter()

    def targets(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            counts[t.id] += 1
        elif isinstance(t, (ast.Subscript, ast.Attribute)) and isinstance(t.value, ast.Name):
            components[t.value.id] += 1
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
    src.component_counts = components
