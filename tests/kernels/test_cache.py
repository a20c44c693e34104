"""The compile cache: content-addressed modules on disk, reused by a second process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qdarray.kernels import cache

SCRIPT = '''
import json
import numpy as np
import qdarray as qd

@qd.kernel
def axpy(a: qd.float64, x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] += a * x[i]

y = np.ones(4)
axpy(2.0, np.arange(4.0), y)
assert y.tolist() == [1.0, 3.0, 5.0, 7.0], y
print(json.dumps(qd.kernels.cache_stats()))
'''


def _run(script: Path, cache_dir: Path) -> dict:
    env = {**os.environ, "QDARRAY_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_from_the_disk_cache(tmp_path):
    script = tmp_path / "use_kernel.py"
    script.write_text(SCRIPT)
    first = _run(script, tmp_path / "cache")
    assert first["modules_written"] == 1 and first["modules_reused"] == 0
    assert first["numba_compiled"] >= 1 and first["numba_loaded"] == 0
    second = _run(script, tmp_path / "cache")
    assert second["modules_written"] == 0 and second["modules_reused"] == 1
    assert second["numba_compiled"] == 0 and second["numba_loaded"] >= 1
    modules = list((tmp_path / "cache").glob("qdarray_kernel_*.py"))
    assert len(modules) == 1
    assert list((tmp_path / "cache" / "__pycache__").glob("qdarray_kernel_*.nbi"))


def test_cache_directory_follows_the_platform_convention(monkeypatch, tmp_path):
    monkeypatch.delenv("QDARRAY_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache.cache_dir() == Path.home() / ".cache" / "qdarray"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "qdarray"
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"


def test_the_key_covers_the_source():
    assert cache.cache_key("a = 1\n") != cache.cache_key("a = 2\n")
    assert cache.cache_key("a = 1\n") == cache.cache_key("a = 1\n")


def test_an_unwritable_cache_directory_falls_back_with_a_warning(monkeypatch, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the directory should be: mkdir fails
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(blocked / "sub"))
    with pytest.warns(RuntimeWarning, match="is not usable"):
        module = cache.load_module("VALUE = 41 + 1\n")
    assert module.VALUE == 42
    assert Path(module.__file__).parent != blocked / "sub"
