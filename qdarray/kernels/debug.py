"""Debug mode: a global switch that makes kernels check every array access.

Turn it on with `QDARRAY_DEBUG=1` in the environment or `qd.set_debug(True)`. It is part of
every compile cache key, so kernels compiled with and without checks coexist. A failed check
raises `qd.KernelIndexError` (`qd.BufferViewIndexError` for views) after the launch, naming
the kernel, the array, the index, the shape, the thread and the call stack of kernel and
funcs down to the access.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._errors import BufferViewIndexError, KernelIndexError
from .ir import Frame

_TRUE = ("1", "true", "yes", "on")
_state = {"debug": os.environ.get("QDARRAY_DEBUG", "").strip().lower() in _TRUE}


def set_debug(enabled: bool = True) -> None:
    """Turn debug mode (bounds checks in kernels) on or off for kernels launched from now on.

    Args:
        enabled: True to check every array access in kernels.

    Example::

        qd.set_debug(True)
        fill(x)          # an out-of-bounds write raises qd.KernelIndexError
        qd.set_debug(False)
    """
    if type(enabled) is not bool:
        raise TypeError(f"set_debug takes True or False; got {enabled!r}.")
    _state["debug"] = enabled


def debug_mode() -> bool:
    """Whether kernels are compiled with bounds checks (`QDARRAY_DEBUG=1`, `qd.set_debug`)."""
    return _state["debug"]


def _tuple(values: Sequence[int]) -> str:
    inner = ", ".join(str(int(v)) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def index_error(kernel: str, name: str, kind: str, indices: Sequence[int],
                extents: Sequence[int], thread: Sequence[int], frames: Sequence[Frame],
                view_offset: int | None = None) -> KernelIndexError:
    """The exception for a failed CHECK_INDEX, with the message both backends share.

    `thread` holds the indices of the enclosing parallel loops: () in serial code, (i,) in
    a parallel loop, (i, j, ...) in a parallel ndrange."""
    if not thread:
        where = "serial code"
    elif len(thread) == 1:
        where = f"thread {int(thread[0])}"
    else:
        where = f"thread {_tuple(thread)}"
    if kind == "view":
        what = (f"Index {int(indices[0])} is out of bounds for BufferView '{name}' "
                f"(offset {view_offset}, size {int(extents[0])})")
        hint = f"Use indices in [0, {name}.size)."
        cls: type[KernelIndexError] = BufferViewIndexError
    else:
        what = (f"Index {_tuple(indices)} is out of bounds for array '{name}' of shape "
                f"{_tuple(extents)}")
        hint = f"Use indices in [0, {name}.shape[k]) on every axis k."
        cls = KernelIndexError
    stack = "\n".join(f"  {f}" for f in frames)
    return cls(f"{what} in kernel '{kernel}' ({where}).\n"
               f"Call stack (kernel first):\n{stack}\n{hint}")


def site_info(attrs: tuple[Any, ...]) -> tuple[int, str, str]:
    """(site id, array name, "array" | "view") from CHECK_INDEX attrs."""
    return attrs[0], attrs[1], attrs[2]
