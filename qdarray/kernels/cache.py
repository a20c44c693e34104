"""The compile cache: generated source -> a module file in a content-addressed directory.

The key is the SHA-256 of the generated source (which embeds the IR, the argument types and
the options such as debug mode), the qdarray, numba and Python versions. The module is
written once to `<cache dir>/qdarray_kernel_<key>.py` and imported from there, so numba's own
disk cache (`cache=True`) can store the machine code next to it: a second process finds both
and does not recompile.

Records derived by qdarray's own code rather than spelled out in a generated source (the
plans of reverse kernels, `qdarray/ad/plan.py`) are JSON files beside the modules
(`write_record` / `read_record`); their keys include `code_fingerprint()`, a hash of
qdarray's source files, so a changed transform never reads an old record.

The directory is `$QDARRAY_CACHE_DIR`, else `$XDG_CACHE_HOME/qdarray`, else
`~/.cache/qdarray`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

_PREFIX = "qdarray_kernel_"
_stats = {"modules_written": 0, "modules_reused": 0, "reverse_plans_written": 0,
          "reverse_plans_loaded": 0}
_loaded: list[ModuleType] = []
_fingerprint: list[str | None] = []


def cache_dir() -> Path:
    """Where generated kernel modules and numba's cache files live."""
    explicit = os.environ.get("QDARRAY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "qdarray"


def _writable(directory: Path) -> Path:
    """`directory`, created if needed; a per-user temporary one when it cannot be written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if os.access(directory, os.W_OK):
            return directory
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"qdarray-{os.getuid()}"
    warnings.warn(f"The kernel cache directory {directory} is not writable; compiled kernels "
                  f"go to {fallback} instead. Set QDARRAY_CACHE_DIR to a writable directory.",
                  RuntimeWarning, stacklevel=3)
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def cache_key(source: str) -> str:
    import numba

    from .._version import __version__

    h = hashlib.sha256()
    for part in (source, __version__, numba.__version__, sys.version):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _source_files() -> tuple[tuple[str, int, int], ...]:
    """(path, modification time, size) of every source file of qdarray."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                st = os.stat(path)
                out.append((path, st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


# The source files as qdarray was imported (qdarray imports this module): what this process runs.
_IMPORTED = _source_files()


def code_fingerprint() -> str | None:
    """A hash of qdarray's own source files (computed once per process): part of the key of
    every record derived by qdarray's code, so that changed code never reads a stale one.
    None when the files changed after this process imported qdarray (its code may be older
    than the files: records are then neither read nor written)."""
    if not _fingerprint:
        h = hashlib.sha256()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for path, _, _ in _IMPORTED:
            h.update(os.path.relpath(path, root).encode())
            h.update(b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
        same = _source_files() == _IMPORTED
        _fingerprint.append(h.hexdigest()[:32] if same else None)
    return _fingerprint[0]


def load_module(source: str) -> ModuleType:
    """Import the module for `source`, writing it to the cache directory first if needed."""
    name = f"{_PREFIX}{cache_key(source)}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    directory = _writable(cache_dir())
    path = directory / f"{name}.py"
    try:
        existing = path.read_text()
    except OSError:
        existing = None
    if existing == source:
        _stats["modules_reused"] += 1
    else:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)  # atomic: concurrent processes never see half a file
        _stats["modules_written"] += 1
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # numba's cache rebuilds a function's environment by importing its module by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    _loaded.append(module)
    return module


def module_key(module: ModuleType) -> str:
    """The cache key of a module `load_module` imported."""
    return module.__name__.removeprefix(_PREFIX)


def module_for_key(key: str) -> ModuleType | None:
    """The cached module whose key is `key`, imported; None when its file is missing or its
    content no longer hashes to `key`."""
    module = sys.modules.get(f"{_PREFIX}{key}")
    if module is not None:
        return module
    path = _writable(cache_dir()) / f"{_PREFIX}{key}.py"
    try:
        source = path.read_text()
    except OSError:
        return None
    if cache_key(source) != key:
        return None
    return load_module(source)


def read_record(name: str) -> Any:
    """The JSON value stored under `name` in the cache directory; None when there is none or
    it is not valid JSON (only JSON is read: nothing in the directory is executed here)."""
    path = _writable(cache_dir()) / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_record(name: str, value: Any) -> None:
    """Store a JSON value under `name` in the cache directory (atomically replaced)."""
    directory = _writable(cache_dir())
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    with os.fdopen(fd, "w") as f:
        json.dump(value, f, separators=(",", ":"))
    os.replace(tmp, directory / f"{name}.json")


def count(counter: str) -> None:
    """Add one to a counter of `cache_stats()`."""
    _stats[counter] += 1


def cache_stats() -> dict[str, Any]:
    """Counters of this process: generated modules written or reused, plans of reverse
    kernels written or loaded (`reverse_plans_written`, `reverse_plans_loaded`: a loaded
    plan means `kernel.grad` did not run the reverse-mode transform), and numba's
    compilations (`numba_compiled`) and disk-cache loads (`numba_loaded`)."""
    compiled = loaded = 0
    for module in _loaded:
        for value in vars(module).values():
            stats = getattr(value, "stats", None)
            if stats is not None and hasattr(stats, "cache_hits"):
                compiled += sum(stats.cache_misses.values())
                loaded += sum(stats.cache_hits.values())
    return {**_stats, "numba_compiled": compiled, "numba_loaded": loaded,
            "directory": str(cache_dir())}
