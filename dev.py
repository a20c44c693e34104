#!/usr/bin/env python3
"""The project's two commands, each setting itself up on a fresh machine.

    python3 dev.py demo    a short showcase of qdarray on the default device
    python3 dev.py test    the whole test suite

Both create a virtual environment in `.venv/` (once) and install qdarray into it.
Extra arguments after `test` go to pytest.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".qdarray-installed"


def _run(*cmd: str | os.PathLike[str], **kwargs: object) -> None:
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)  # type: ignore[call-overload]


def _make_venv() -> None:
    if PYTHON.exists():
        return
    try:
        _run(sys.executable, "-m", "venv", VENV)
    except subprocess.CalledProcessError:
        # Debian's python3 without python3-venv: fall back to virtualenv from PyPI.
        _run(sys.executable, "-m", "pip", "install", "--user", "--quiet", "virtualenv")
        _run(sys.executable, "-m", "virtualenv", "--quiet", VENV)


def setup() -> None:
    """Create .venv and install qdarray with its test extras, when pyproject.toml changed."""
    _make_venv()
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    _run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(PYTHON, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]")
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    setup()
    env = dict(os.environ)
    if argv[0] == "demo":
        return subprocess.call([str(PYTHON), str(ROOT / "examples" / "showcase.py")], env=env)
    cmd = [str(PYTHON), "-m", "pytest", "-n", "2", "-q", *argv[1:]]
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
