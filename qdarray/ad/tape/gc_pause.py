"""The cyclic garbage collector paused while a tape records and runs its reverses.

A tape keeps a record per kernel launch and per namespace operation until its reverses have
run: a simulation's iteration holds tens of thousands of small Python objects at once.
CPython's collector counts them as survivors and, every iteration or two, runs a full
collection over every tracked object of the process, numba's compiled-kernel state included
(a 100,000-object heap: 70-100 ms a collection on a CPU core, a quarter of a DiffTaichi
iteration). Those records are freed by reference counting when the tape is done; the
collector finds nothing to collect in them.

So while any tape is recording or running its reverses, automatic collection is paused (as
`timeit` pauses it while it times), and it is restored, to what it was, when the last such
tape finishes. Reference counting still frees everything that is not in a reference cycle at
once; cycles made meanwhile are collected after the tape. `gc.collect()` works throughout.
`qd.ad.pause_gc(False)` turns the pause off for the process (`pause_gc()` tells whether it
is on).
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_depth = 0
_paused_by_us = False
_enabled = True


def pause_gc(on: bool | None = None) -> bool:
    """Whether tapes pause the cyclic garbage collector while they record and run their
    reverses (on by default); `pause_gc(False)` turns it off, `pause_gc(True)` on. Returns
    the setting in force after the call."""
    global _enabled
    if on is not None:
        if not isinstance(on, bool):
            raise TypeError(f"pause_gc takes True, False or nothing; got {on!r}.")
        _enabled = on
    return _enabled


def enter() -> None:
    """A tape starts recording or running its reverses."""
    global _depth, _paused_by_us
    with _lock:
        _depth += 1
        if _depth == 1 and _enabled and gc.isenabled():
            gc.disable()
            _paused_by_us = True


def leave() -> None:
    """That tape is done; the last one restores automatic collection."""
    global _depth, _paused_by_us
    with _lock:
        _depth -= 1
        if _depth == 0 and _paused_by_us:
            _paused_by_us = False
            gc.enable()
