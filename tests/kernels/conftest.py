"""Kernel tests run on every kernel backend present: the IR interpreter ("interp", the
reference semantics) and the numba CPU code generator ("cpu")."""

from __future__ import annotations

from kernel_fixtures import (  # noqa: F401  (fixtures, registered by name)
    _restore_debug_mode,
    backend,
    launch,
    program_dir,
)
