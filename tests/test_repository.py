"""Repository rules checked on every run: module sizes (STYLE.md §7), test module names, a
clean strict type check of the package and its layers (DESIGN.md section 6)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

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


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (it comes with the `test` extra)")
def test_package_type_checks() -> None:
    # [tool.mypy] in pyproject.toml: strict, over qdarray/. From a cold cache about 7 s of
    # CPU (20 s wall beside a busy test run); under a second with the cache in .mypy_cache/.
    run = subprocess.run([sys.executable, "-m", "mypy", "qdarray"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout, run.stdout


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed (it comes with the `test` extra)")
def test_repository_lints_clean() -> None:
    # [tool.ruff] in pyproject.toml, over the whole repository (package, tests, benchmarks,
    # examples, tools); a second or two.
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


# -- layers (DESIGN.md section 6) ------------------------------------------------------------

_GROUPS = ("kernels", "backends", "ad")  # every other module of qdarray/ is the package root


def _module_names() -> dict[str, Path]:
    names = {}
    for p in _python_files("qdarray"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = p
    return names


def _type_checking(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING")


def _body_imports(body: list[ast.stmt], lazy: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports `body` runs: at import time (class bodies, `if` / `try` blocks, but not
    `if TYPE_CHECKING:`), and with `lazy` also every one inside a function (at any depth)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _type_checking(node):
                yield from _body_imports(node.body + node.orelse, lazy)
        elif isinstance(node, ast.Try):
            yield from _body_imports(node.body + node.orelse + node.finalbody, lazy)
            for handler in node.handlers:
                yield from _body_imports(handler.body, lazy)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _body_imports(node.body, lazy)
        elif lazy and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield inner


def _import_graph(lazy: bool) -> dict[str, set[str]]:
    """module -> the modules of qdarray it imports (`from pkg import sub` names `pkg.sub`)."""
    modules = _module_names()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in _body_imports(ast.parse(path.read_text()).body, lazy):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    graph[m].add(t)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in _GROUPS else "root"


@pytest.mark.parametrize("lazy", [False, True], ids=["module level", "with functions'"])
def test_no_import_circle_across_layers(lazy: bool) -> None:
    # Circles inside one layer (a package and its family modules) are allowed; one that ties
    # kernels/, backends/, ad/ or the package root to another is not, whether its imports run
    # when a module loads or when a function first runs (a lazy import hides a circle from
    # the interpreter, not from the design).
    across = [c for c in _circles(_import_graph(lazy=lazy))
              if len({_group(m) for m in c}) > 1]
    assert not across, f"import circles across layers: {across}"


def test_no_circle_of_files_in_kernels_backends_ad_or_jit() -> None:
    # Inside a layer too, each file imports only files that do not import it back (lazy
    # imports included): a package's family files take what they share from a module of
    # its own, not from the package. The namespace layer (the array and the standard's
    # functions, which call one another) is the one place left where files form a circle.
    circles = [c for c in _circles(_import_graph(lazy=True))
               if any(_group(m) != "root" or m.startswith(("qdarray.jit", "qdarray.dask"))
                      for m in c)]
    assert not circles, f"import circles of files: {circles}"


def _layer(module: str) -> int:
    """The layers as the imports stand (DESIGN.md section 6): the array and its namespace
    (which every layer imports), kernels/, backends/, ad/, then the package itself, `qd.jit`
    and the integrations above it."""
    if module == "qdarray" or module.startswith(("qdarray.dask", "qdarray.jit")):
        return 5
    return {"root": 1, "kernels": 2, "backends": 3, "ad": 4}[_group(module)]


def test_function_level_imports_point_down() -> None:
    # An import inside a function (to load a part on first use) may only name a lower layer
    # (or its own); reaching up goes through a hook the upper layer registers, as
    # `Kernel.grad` reaches reverse mode and `Array.__array_namespace__` the package.
    top, every = _import_graph(lazy=False), _import_graph(lazy=True)
    upward = sorted(f"{m} -> {t}" for m, targets in every.items() for t in targets
                    if t not in top[m] and _layer(t) > _layer(m))
    assert not upward, f"function-level imports of a higher layer: {upward}"


def test_kernels_import_neither_backends_nor_ad() -> None:
    graph = _import_graph(lazy=True)  # lazy imports count: they would hide a circle
    wrong = {m: sorted(t for t in targets if _group(t) in ("backends", "ad"))
             for m, targets in graph.items() if _group(m) == "kernels"}
    assert not {m: t for m, t in wrong.items() if t}, wrong
