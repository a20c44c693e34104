"""The integer arrays a launch only reads, and their write generations at the launch.

The reverse of a launch must see the loop bounds (and index arrays) the forward launch saw.
Each forward launch records, in a table of its kernel, the write generation of every integer
array argument the kernel reads but does not write (`Buffer.generation`, bumped by every
write to the memory); `kernel.grad` compares the arrays it is given with that table and
raises when one was written in between (qdarray.ad.launch). The table keeps the buffer
tokens it names (tiny objects, never the data), at most `LIMIT` of them per kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._array import Array
from ..buffer_view import BufferView

LIMIT = 256

Path = tuple[int, tuple[str, ...]]


def int_read_paths(specs: Sequence[tuple[str, Any]], written: Sequence[Path]) -> list[Path]:
    """(argument index, field path) of each integer array or view argument not written."""
    out: list[Path] = []

    def visit(index: int, path: tuple[str, ...], spec: Any) -> None:
        if spec.kind == "struct":
            for name, field_spec in spec.fields:
                visit(index, path + (name,), field_spec)
        elif spec.kind in ("array", "view") and spec.type.dtype.kind in "iu":
            if (index, path) not in written:
                out.append((index, path))

    for k, (_, spec) in enumerate(specs):
        visit(k, (), spec)
    return out


def buffer_at(args: Sequence[Any], index: int, path: tuple[str, ...]) -> Any:
    """The buffer token of the array at (index, path), or None (a NumPy array has none)."""
    x = args[index]
    for name in path:
        x = getattr(x, name)
    t = type(x)
    if t is Array:
        return x._buffer
    if t is BufferView:
        return x._base._buffer
    return None


def record(table: dict[int, tuple[Any, int]], args: Sequence[Any], paths: Sequence[Path]
           ) -> None:
    """Note the generation of each array at `paths` (after a forward launch)."""
    for index, path in paths:
        buf = buffer_at(args, index, path)
        if buf is not None:
            table[id(buf)] = (buf, buf.generation)  # the token is kept: its id stays unique
    while len(table) > LIMIT:
        del table[next(iter(table))]
