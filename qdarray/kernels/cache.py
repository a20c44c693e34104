"""The compile cache: generated source -> a module file in a content-addressed directory.

The key of a module is the SHA-256 of the generated source (which embeds the IR, the
argument types and the options such as debug mode), the qdarray, numba and Python versions.
The module is written once to `<cache dir>/qdarray_kernel_<key>.py` and imported from there,
so numba's own disk cache (`cache=True`) can store the machine code next to it: a second
process finds both and does not recompile.

Records derived by qdarray's own code rather than spelled out in a generated source (the
plans of reverse kernels, `qdarray/ad/transform/plan.py`, and the entries of `kernels/entries.py`)
are JSON files beside the modules (`write_record` / `read_record`); their keys include
`code_fingerprint()`, a hash of qdarray's source files, so a changed compiler never reads an
old record.

Robustness (the directory itself is chosen and checked in `cache_dir.py`):

- every file is written to a temporary name and renamed into place, so no process ever sees
  half a file;
- what is read is validated before use: a module file must hash to its key (else it is
  rewritten from the source in hand, or ignored), a record must be valid JSON; a damaged file
  is discarded with a `RuntimeWarning` and compiled again;
- numba's index and code files are unpickled by numba; when that fails (an empty index, a
  truncated code file) the function's files are deleted with a warning and numba compiles
  again (`_guard_numba_cache`);
- a module is compiled from its source text (no `.pyc` is written or read), executed under a
  process-wide lock, and only then returned to any caller: a thread never sees a module
  whose body has not finished running.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from .cache_dir import cache_dir, checked_dir, forget

__all__ = ["cache_dir", "cache_key", "cache_stats", "code_fingerprint", "count",
           "load_module", "module_for_key", "module_key", "read_record", "write_record"]

_PREFIX = "qdarray_kernel_"
_stats = {"modules_written": 0, "modules_reused": 0, "reverse_plans_written": 0,
          "reverse_plans_loaded": 0, "entries_written": 0, "entries_loaded": 0,
          "damaged_files": 0}
_loaded: list[ModuleType] = []
_fingerprint: list[str | None] = []
# Modules whose body ran to the end, by name. Loading holds the lock; a module is returned
# only from here (while sys.modules still holds it: numba's cache imports modules by name).
_complete: dict[str, ModuleType] = {}
_LOAD = threading.RLock()


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
    than the files: records are then neither read nor written).

    Hashing the files costs about as much as the rest of a warm first call's own work, so the
    hash is kept in the cache directory under a stamp of the files' names, modification
    times and sizes (what numba's cache checks of a source file): a process whose files carry
    the same stamp reads it instead (`_hash_sources` when there is none)."""
    if not _fingerprint:
        same = _source_files() == _IMPORTED
        _fingerprint.append(_stored_hash() if same else None)
    return _fingerprint[0]


def _stamp() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256(root.encode())
    for path, mtime, size in _IMPORTED:
        h.update(f"\0{os.path.relpath(path, root)}\0{mtime}\0{size}".encode())
    return h.hexdigest()[:32]


def _hash_sources() -> str:
    h = hashlib.sha256()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path, _, _ in _IMPORTED:
        h.update(os.path.relpath(path, root).encode())
        h.update(b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:32]


def _stored_hash() -> str:
    """`_hash_sources()`, read from the record under the files' stamp when there is one."""
    name = f"qdarray_sources_{_stamp()}"
    try:
        data = read_record(name)
    except OSError:
        data = None
    value = data.get("hash") if isinstance(data, dict) else None
    if isinstance(value, str) and len(value) == 32:
        return value
    value = _hash_sources()
    try:
        write_record(name, {"hash": value})
    except OSError:
        pass  # an unwritable directory: hashed again by the next process
    return value


def damaged(path: Path | str, why: str) -> None:
    """Warn that a cache file was damaged and is discarded (it is compiled again)."""
    _stats["damaged_files"] += 1
    warnings.warn(f"The kernel cache file {path} is damaged ({why}); it is discarded and "
                  "compiled again.", RuntimeWarning, stacklevel=3)


def _write_atomic(directory: Path, name: str, data: bytes) -> Path:
    """Write `data` to `directory/name` through a temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, directory / name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return directory / name


def _directory() -> Path:
    """The checked cache directory, checked again if it disappeared meanwhile."""
    directory = checked_dir()
    if not directory.is_dir():
        forget()
        directory = checked_dir()
    return directory


def load_module(source: str) -> ModuleType:
    """The module for `source`, imported from the cache directory (written there first when
    the file is missing or does not hold `source`)."""
    name = f"{_PREFIX}{cache_key(source)}"
    module = _complete.get(name)
    if module is not None and sys.modules.get(name) is module:
        return module
    with _LOAD:
        module = _complete.get(name)
        if module is not None and sys.modules.get(name) is module:
            return module
        directory = _directory()
        path = directory / f"{name}.py"
        data = source.encode()
        try:
            existing: bytes | None = path.read_bytes()
        except OSError:
            existing = None
        if existing == data:
            _stats["modules_reused"] += 1
        else:
            if existing is not None:
                damaged(path, "its content does not match its key")
            _write_atomic(directory, path.name, data)
            _stats["modules_written"] += 1
        return _execute(name, path, source)


def _execute(name: str, path: Path, source: str) -> ModuleType:
    """Run the module's body (under `_LOAD`) and publish it once complete."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # Compiled from the text in hand rather than through a .pyc: nothing but the checked
    # source is executed. numba's cache rebuilds a function's environment by importing its
    # module by name, so the module is in sys.modules while its body runs.
    code = compile(source, str(path), "exec")
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - our generated, hash-checked source
    except BaseException:
        del sys.modules[name]
        raise
    _guard_numba_cache(module)
    _loaded.append(module)
    _complete[name] = module
    return module


def _guard_numba_cache(module: ModuleType) -> None:
    """Make each numba dispatcher of `module` discard a damaged cache file (with a warning)
    instead of failing on it: numba then compiles the function again and rewrites its files."""
    for value in vars(module).values():
        cache = getattr(value, "_cache", None)
        load = getattr(cache, "load_overload", None)
        if load is None or getattr(load, "_qdarray_guarded", False):
            continue
        cache.load_overload = _guarded_load(cache, load)  # type: ignore[union-attr]


def _guarded_load(cache: Any, load: Any) -> Any:
    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
        except Exception as exc:  # noqa: BLE001 - any failure to read numba's files
            files = getattr(cache, "_cache_file", None)
            index = getattr(files, "_index_path", None)
            damaged(index or repr(cache), f"{type(exc).__name__}: {exc}")
            if index is not None:
                stem = os.path.basename(index).removesuffix(".nbi")
                folder = os.path.dirname(index)
                for entry in os.listdir(folder):
                    if entry == f"{stem}.nbi" or (entry.startswith(f"{stem}.")
                                                  and entry.endswith(".nbc")):
                        try:
                            os.unlink(os.path.join(folder, entry))
                        except OSError:
                            pass
            return None
    load_overload._qdarray_guarded = True  # type: ignore[attr-defined]
    return load_overload


def module_key(module: ModuleType) -> str:
    """The cache key of a module `load_module` imported."""
    return module.__name__.removeprefix(_PREFIX)


def module_for_key(key: str) -> ModuleType | None:
    """The cached module whose key is `key`, imported; None when its file is missing or its
    content no longer hashes to `key`."""
    name = f"{_PREFIX}{key}"
    module = _complete.get(name)
    if module is not None and sys.modules.get(name) is module:
        return module
    path = _directory() / f"{name}.py"
    try:
        source = path.read_bytes().decode()
    except OSError:
        return None
    except UnicodeDecodeError:
        damaged(path, "it is not UTF-8 text")
        return None
    if cache_key(source) != key:
        return None
    return load_module(source)


def read_record(name: str) -> Any:
    """The JSON value stored under `name` in the cache directory; None when there is none or
    it is damaged (not JSON: discarded with a warning). Only JSON is read: nothing in the
    directory is executed here."""
    path = _directory() / f"{name}.json"
    try:
        text = path.read_bytes()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        damaged(path, f"not JSON: {exc}")
        return None


def write_record(name: str, value: Any) -> None:
    """Store a JSON value under `name` in the cache directory (atomically replaced)."""
    data = json.dumps(value, separators=(",", ":")).encode()
    _write_atomic(_directory(), f"{name}.json", data)


def count(counter: str) -> None:
    """Add one to a counter of `cache_stats()`."""
    _stats[counter] += 1


def cache_stats() -> dict[str, Any]:
    """Counters of this process: generated modules written or reused, plans of reverse
    kernels written or loaded (`reverse_plans_written`, `reverse_plans_loaded`: a loaded
    plan means `kernel.grad` did not run the reverse-mode transform), kernel entries written
    or loaded (`entries_loaded`: a kernel's first call ran without the frontend), damaged
    cache files discarded, numba's compilations (`numba_compiled`) and disk-cache loads
    (`numba_loaded`), and the directory in use."""
    compiled = loaded = 0
    for module in _loaded:
        for value in vars(module).values():
            stats = getattr(value, "stats", None)
            if stats is not None and hasattr(stats, "cache_hits"):
                compiled += sum(stats.cache_misses.values())
                loaded += sum(stats.cache_hits.values())
    return {**_stats, "numba_compiled": compiled, "numba_loaded": loaded,
            "directory": str(checked_dir())}
