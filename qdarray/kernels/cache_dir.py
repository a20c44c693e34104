"""Where the compile cache lives, and the checks that make it safe to load from.

Everything in the cache directory is executed or unpickled when it is loaded: the generated
modules are imported, and numba unpickles its index (`.nbi`) and code (`.nbc`) files. A
directory someone else can write to would let them run code as every user of it, so a
directory is used only when

- it is a directory (not a symbolic link where qdarray chose the path itself),
- it belongs to the current user, and
- neither its group nor other users may write to it (nor to numba's `__pycache__` inside).

A directory qdarray creates is created private (mode 0700). The configured directory is
`$QDARRAY_CACHE_DIR`, else `$XDG_CACHE_HOME/qdarray`, else `~/.cache/qdarray`; when it cannot
be created or written, or fails the checks, qdarray falls back to `<tmp>/qdarray-<uid>` under
the same checks, and when that one is unsafe too (someone else created it first, or a file
sits there) to a fresh private directory made by `tempfile.mkdtemp` for this process alone
(removed at exit; nothing is shared with other processes then). Each fallback warns once
with the reason and what to do.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

_checked: dict[str, Path] = {}  # configured path -> the directory in use
_lock = threading.Lock()


def cache_dir() -> Path:
    """The configured cache directory (see the module docstring); `checked_dir()` is the one
    actually used."""
    explicit = os.environ.get("QDARRAY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "qdarray"


def unsafe_reason(directory: Path, *, follow_links: bool = True) -> str | None:
    """Why `directory` must not be used as a cache (None: it is safe): not a directory,
    a symbolic link (with `follow_links` False), owned by another user, or writable by
    its group or by others."""
    try:
        st = os.stat(directory) if follow_links else os.lstat(directory)
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"it belongs to user id {st.st_uid}, not to the current user ({uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users may write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _usable(directory: Path, *, follow_links: bool) -> str | None:
    """Create `directory` (private) if needed; why it cannot be used, or None."""
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"it cannot be created ({exc.strerror})"
    reason = unsafe_reason(directory, follow_links=follow_links)
    if reason is None:
        inner = directory / "__pycache__"  # numba's files
        if os.path.lexists(inner):
            why = unsafe_reason(inner, follow_links=False)
            if why is not None:
                reason = f"its __pycache__ is unsafe: {why}"
    if reason is None and not os.access(directory, os.W_OK | os.X_OK):
        reason = "it is not writable"
    return reason


def _private_temporary() -> Path:
    path = Path(tempfile.mkdtemp(prefix="qdarray-cache-"))  # mode 0700, a fresh name
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def checked_dir() -> Path:
    """The cache directory to use now: the configured one when it is safe, else a fallback
    (see the module docstring); warns once per configured path when it falls back."""
    configured = cache_dir()
    key = str(configured)
    found = _checked.get(key)
    if found is not None:
        return found
    with _lock:
        found = _checked.get(key)
        if found is not None:
            return found
        reason = _usable(configured, follow_links=True)
        if reason is None:
            found = configured
        else:
            fallback = Path(tempfile.gettempdir()) / f"qdarray-{os.geteuid()}"
            why_not = _usable(fallback, follow_links=False) if fallback != configured else reason
            if why_not is None:
                found = fallback
                where = f"go to {fallback} instead"
            else:
                found = _private_temporary()
                where = (f"cannot go to {fallback} either ({why_not}), so they go to a new "
                         f"private directory {found} for this process only")
            warnings.warn(
                f"The kernel cache directory {configured} is not usable ({reason}); compiled "
                f"kernels {where}. Set QDARRAY_CACHE_DIR to a directory of your own that "
                "only you can write to (mode 700).", RuntimeWarning, stacklevel=4)
        _checked[key] = found
        return found


def forget() -> None:
    """Check the directories again at next use (after the environment changed)."""
    with _lock:
        _checked.clear()
