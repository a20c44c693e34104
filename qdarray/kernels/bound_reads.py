"""The arrays a launch only reads, and their write generations at the launch.

The reverse of a launch must see the values the forward launch read: loop bounds and index
arrays (integer arrays: the stacks are sized and the loops run from them) and the inputs its
adjoints reload (float arrays). Each forward launch records, in a `Reads` table of its kernel,
the write generation of every array argument the kernel reads but does not write
(`Buffer.generation`, bumped by every write to the memory, through any wrapper or view);
`kernel.grad` compares the arrays it is given with that table and raises when one was written
in between (qdarray.ad.launch).

The table holds weak references to the buffer tokens (tiny objects, never the data): an entry
goes only when its array is gone, so no check of a live array is ever dropped, however many
launches ran in between.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from .._array import Array
from ..buffer_view import BufferView
from .generations import leaf_expr

Path = tuple[int, tuple[str, ...]]


def read_paths(specs: Sequence[tuple[str, Any]], written: Sequence[Path]) -> list[Path]:
    """(argument index, field path) of each array or view argument not written."""
    out: list[Path] = []

    def visit(index: int, path: tuple[str, ...], spec: Any) -> None:
        if spec.kind == "struct":
            for name, field_spec in spec.fields:
                visit(index, path + (name,), field_spec)
        elif spec.kind in ("array", "view") and (index, path) not in written:
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


class Reads:
    """The generation of each array a kernel's forward launches read, by buffer token."""

    __slots__ = ("table", "limit")

    def __init__(self) -> None:
        self.table: dict[int, tuple[weakref.ref[Any], int]] = {}
        self.limit = 256

    def __bool__(self) -> bool:
        return bool(self.table)

    def prune(self) -> None:
        """Drop the entries of arrays that are gone."""
        table = self.table
        for key in [k for k, (ref, _) in table.items() if ref() is None]:
            del table[key]
        self.limit = max(256, 2 * len(table))

    def seen(self, buf: Any) -> int | None:
        """The generation of `buf` at the last forward launch that read it (None: none did)."""
        entry = self.table.get(id(buf))
        if entry is None or entry[0]() is not buf:
            return None
        return entry[1]


def compile_record(args: Sequence[Any], paths: Sequence[Path]) -> Any:
    """`record(reads, args)`, after a forward launch: note in `reads` the generation of each
    array at `paths`, as straight-line code for the signature of `args` (the type of each
    array at `paths` is part of the signature, so the walk and the tests of `buffer_at` are
    done here once). A weak reference without a callback is made once per buffer token and
    reused."""
    lines = ["def record(reads, args):", "    table = reads.table"]
    for k, (index, path) in enumerate(paths):
        x = args[index]
        for name in path:
            x = getattr(x, name)
        expr = leaf_expr(index, path)
        if type(x) is Array:
            lines.append(f"    b{k} = {expr}._buffer")
        elif type(x) is BufferView:
            lines.append(f"    b{k} = {expr}._base._buffer")
        else:
            continue  # a NumPy array: no token
        lines.append(f"    table[id(b{k})] = (ref(b{k}), b{k}.generation)")
    lines.append("    if len(table) > reads.limit: reads.prune()")
    names: dict[str, Any] = {"ref": weakref.ref}
    exec(compile("\n".join(lines) + "\n", "<qdarray reads>", "exec"), names)  # noqa: S102
    return names["record"]
