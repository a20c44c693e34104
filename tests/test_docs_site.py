"""The documentation site (mkdocs.yml): the guide in docs/ and the API reference generated from
the docstrings (docs/reference/) build with warnings as errors, and the reference covers the
public API."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qdarray as qd
from qdarray.kernels import qdmath

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: (\S+)\n((?:    .*\n|\n)*)", re.M)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="mkdocs and mkdocstrings are not installed (they come with the `test` extra)")


def documented() -> dict[str, set[str]]:
    """Target -> the member names its `:::` directives in docs/reference list."""
    import yaml

    found: dict[str, set[str]] = {}
    for page in sorted(REFERENCE.glob("*.md")):
        for target, body in DIRECTIVE.findall(page.read_text()):
            options = (yaml.safe_load(body) or {}).get("options", {}) if body.strip() else {}
            found.setdefault(target, set()).update(options.get("members") or ())
    return found


# Names of `qd.__all__` documented in prose rather than by a directive of their own.
IN_PROSE = {
    "__array_api_version__", "__version__", "e", "inf", "nan", "newaxis", "pi",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
    "fft", "linalg", "ad", "math", "jit",  # a page each
    # docs/vectors.md (the types' reference is qdarray.kernels.vector_types)
    "types", "vec2", "vec3", "vec4", "mat2", "mat3", "mat4", "vec2d", "vec3d", "vec4d",
    "mat2d", "mat3d", "mat4d",
}


def test_the_reference_covers_the_public_api() -> None:
    found = documented()
    missing = set(qd.__all__) - IN_PROSE - found.get("qdarray", set())
    assert not missing, f"add these to a page of docs/reference: {sorted(missing)}"
    for module, target in ((qd.linalg, "qdarray.linalg"), (qd.fft, "qdarray.fft"),
                           (qd.ad, "qdarray.ad")):
        missing = set(module.__all__) - found.get(target, set())
        assert not missing, f"add these to the {target} directive: {sorted(missing)}"
    functions = {n for n in dir(qdmath) if not n.startswith("_") and callable(
        getattr(qdmath, n)) and getattr(getattr(qdmath, n), "__module__", "") == qdmath.__name__}
    missing = functions - found.get("qdarray.kernels.qdmath", set())
    assert not missing, f"add these to the qd.math directive: {sorted(missing)}"


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    site = tmp_path / "site"
    assert (site / "index.html").exists() and (site / "kernels" / "index.html").exists()
    # The API reference has every function with its docstring, the generated ones included.
    elementwise = (site / "reference" / "elementwise" / "index.html").read_text()
    assert 'id="qdarray.sin"' in elementwise and "Sine of each element" in elementwise
    linalg = (site / "reference" / "linear_algebra" / "index.html").read_text()
    assert 'id="qdarray.linalg.solve"' in linalg
    kernels = (site / "reference" / "kernels" / "index.html").read_text()
    assert 'id="qdarray.kernel"' in kernels and 'id="qdarray.BufferView"' in kernels
    # Docstrings' `Example::` blocks render as highlighted code (tools/griffe_examples.py),
    # and no page opens with the package docstring.
    for page in (site / "reference").glob("*/index.html"):
        text = page.read_text()
        assert "Example::" not in text, f"{page}: an Example:: block rendered literally"
        assert "reverse-mode autodiff through kernels with data-dependent loops" not in text
    creation = (site / "reference" / "creation" / "index.html").read_text()
    assert '<strong>Example</strong></p>\n<div class="highlight"><pre>' in creation
