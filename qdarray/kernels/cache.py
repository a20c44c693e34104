"""The compile cache: generated source -> a module file in a content-addressed directory.

The key is the SHA-256 of the generated source (which embeds the IR, the argument types and
the options such as debug mode), the qdarray, numba and Python versions. The module is
written once to `<cache dir>/qdarray_kernel_<key>.py` and imported from there, so numba's own
disk cache (`cache=True`) can store the machine code next to it: a second process finds both
and does not recompile.

The directory is `$QDARRAY_CACHE_DIR`, else `$XDG_CACHE_HOME/qdarray`, else
`~/.cache/qdarray`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

_stats = {"modules_written": 0, "modules_reused": 0}
_loaded: list[ModuleType] = []


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

    from .. import __version__

    h = hashlib.sha256()
    for part in (source, __version__, numba.__version__, sys.version):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def load_module(source: str) -> ModuleType:
    """Import the module for `source`, writing it to the cache directory first if needed."""
    name = f"qdarray_kernel_{cache_key(source)}"
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


def cache_stats() -> dict[str, Any]:
    """Counters of this process: generated modules written or reused, and numba's
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
