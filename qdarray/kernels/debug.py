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


def _where(thread: Sequence[int]) -> str:
    if not thread:
        return "serial code"
    if len(thread) == 1:
        return f"thread {int(thread[0])}"
    return f"thread {_tuple(thread)}"


def index_error(kernel: str, name: str, kind: str, indices: Sequence[int],
                extents: Sequence[int], thread: Sequence[int], frames: Sequence[Frame],
                view_offset: int | None = None) -> KernelIndexError:
    """The exception for a failed CHECK_INDEX, with the message both backends share.

    `thread` holds the indices of the enclosing parallel loops: () in serial code, (i,) in
    a parallel loop, (i, j, ...) in a parallel ndrange."""
    where = _where(thread)
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


def subview_error(kernel: str, label: str, offset: int, size: int, parent: str,
                  parent_offset: int | None, parent_size: int, thread: Sequence[int],
                  frames: Sequence[Frame]) -> BufferViewIndexError:
    """The exception for a kernel-side subview that does not fit in its parent view."""
    stack = "\n".join(f"  {f}" for f in frames)
    return BufferViewIndexError(
        f"Subview '{label}' (offset {offset}, size {size}) is out of bounds for its parent "
        f"BufferView '{parent}' (offset {parent_offset}, size {parent_size}) in kernel "
        f"'{kernel}' ({_where(thread)}).\n"
        f"Call stack (kernel first):\n{stack}\n"
        f"Use offset >= 0, size >= 0 and offset + size <= {parent_size}.")


def check_error(kernel: str, attrs: tuple[Any, ...], vals: Sequence[int],
                thread: Sequence[int], frames: Sequence[Frame],
                root_offset: int | None) -> KernelIndexError:
    """The exception for a failed CHECK_INDEX from its attrs and the values it reported.

    `root_offset` is the offset of the view parameter named in attrs (views only). Checks
    made by passes/resolve_views.py carry the subview's offset relative to it."""
    _, name, kind = site_info(attrs)
    vals = [int(v) for v in vals]
    if kind == "subview":
        parent_offset = None if root_offset is None else root_offset + vals[4]
        return subview_error(kernel, attrs[3], vals[0], vals[2], attrs[4], parent_offset,
                             vals[1] - 1, thread, frames)
    if kind == "view" and len(vals) > 2:
        offset = None if root_offset is None else root_offset + vals[2]
        return index_error(kernel, attrs[3], kind, vals[:1], vals[1:2], thread, frames,
                           offset)
    return index_error(kernel, name, kind, vals[0::2], vals[1::2], thread, frames, root_offset)


def site_info(attrs: tuple[Any, ...]) -> tuple[int, str, str]:
    """(site id, array name, "array" | "view" | "subview") from CHECK_INDEX attrs."""
    return attrs[0], attrs[1], attrs[2]
