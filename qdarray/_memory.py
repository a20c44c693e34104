"""One write-generation token per piece of host memory, however many Arrays wrap it.

An Array's `Buffer` token counts the writes to its memory (`generation`); the adstack sizing
cache and the checks between a forward launch and its reverse compare generations. Views
made by qdarray share their base's token. Memory that reaches qdarray from NumPy (`asarray`
of an ndarray, `from_dlpack`) or leaves it (`np.asarray(x)`, `x.__dlpack__()`) can be
wrapped again later, by another Array: `token_for` gives every Array over one piece of NumPy
memory the same token, so a write through one wrapper counts for the others.

A piece of memory is the address range of the outermost ndarray of a `.base` chain (that
array owns the memory, or views foreign memory: a bytes object, a DLPack capsule, another
library's buffer); an ndarray whose range starts inside a known piece gets that piece's token,
so two imports of one foreign buffer, or of a part of it, share a token too. A piece is known
while one of the ndarrays registered for it lives (weak references).

Plain NumPy arrays passed straight to kernels have no token: writes to them are not seen
(see docs/guarantees.md).
"""

from __future__ import annotations

import bisect
import functools
import threading
import weakref
from typing import Any

import numpy as np

from ._array import Buffer


class _Piece:
    """One piece of memory: where it ends, the ndarrays over it (weakly), its token."""

    __slots__ = ("end", "refs", "buffer")

    def __init__(self, end: int, buffer: Buffer) -> None:
        self.end = end
        self.refs: list[weakref.ref[np.ndarray]] = []
        self.buffer = buffer

    def alive(self) -> bool:
        return any(r() is not None for r in self.refs)


_PIECES: dict[int, _Piece] = {}  # by start address
_STARTS: list[int] = []          # the keys of _PIECES, sorted
# The table changes under one lock. A weak reference's callback runs wherever the garbage
# collector does, also in the middle of `_lookup` on the same thread, so it only notes the
# piece's start in `_DEAD` (appending to a list is atomic); `_lookup` drops dead pieces.
_LOCK = threading.Lock()
_DEAD: list[int] = []


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _forget(start: int, ref: weakref.ref[np.ndarray]) -> None:
    _DEAD.append(start)


def _drop_dead() -> None:
    """Drop the pieces no ndarray registered for lives over any more (under _LOCK)."""
    while _DEAD:
        start = _DEAD.pop()
        piece = _PIECES.get(start)
        if piece is None:
            continue
        piece.refs = [r for r in piece.refs if r() is not None]
        if not piece.refs:
            del _PIECES[start]
            _STARTS.pop(bisect.bisect_left(_STARTS, start))


def _lookup(root: np.ndarray, buffer: Buffer | None) -> Buffer:
    """The token of the memory `root` lies in; `buffer` (a new token when None) if none."""
    with _LOCK:
        _drop_dead()
        return _lookup_locked(root, buffer)


def _lookup_locked(root: np.ndarray, buffer: Buffer | None) -> Buffer:
    start = int(root.__array_interface__["data"][0])
    k = bisect.bisect_right(_STARTS, start) - 1
    piece = _PIECES[_STARTS[k]] if k >= 0 else None
    if piece is None or start >= piece.end or not piece.alive():
        if piece is not None and _STARTS[k] == start:  # a dead piece at the same start
            del _PIECES[start]
            _STARTS.pop(k)
        piece = _Piece(start + max(root.nbytes, 1), Buffer() if buffer is None else buffer)
        _PIECES[start] = piece
        bisect.insort(_STARTS, start)
        key = start
    else:
        key = _STARTS[k]
    if not any(r() is root for r in piece.refs):
        piece.refs.append(weakref.ref(root, functools.partial(_forget, key)))
    return piece.buffer


def token_for(native: Any) -> Buffer | None:
    """The token of the NumPy memory `native` views (made now when it has none yet); None
    for other arrays (device memory: each Array over it has its own)."""
    if type(native) is not np.ndarray:
        return None
    return _lookup(_root(native), None)


def share(native: Any, buffer: Buffer) -> None:
    """`native`, an Array's NumPy memory, is handed out (NumPy or DLPack export): later
    Arrays over it get `buffer` (an earlier token of that memory is kept)."""
    if type(native) is np.ndarray:
        _lookup(_root(native), buffer)
