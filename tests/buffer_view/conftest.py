"""BufferView kernel tests run on the IR interpreter ("interp", the reference semantics) and
the numba CPU code generator ("cpu"); debug mode is restored after each test."""

from __future__ import annotations

from kernel_fixtures import (  # noqa: F401  (fixtures, registered by name)
    _restore_debug_mode,
    backend,
    launch,
    launch_grad,
)
