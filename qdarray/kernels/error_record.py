"""The error record of debug mode: where a failed index check reports, laid out the same on
every device.

A debug-mode launch passes its kernel one int64 array of `LENGTH` elements, zeroed:

    [SITE]                   1 + the site id of the first check that failed (0: none); the
                             first failing thread claims it (compare-and-swap from 0) and
                             fills the rest, later failures are dropped
    [DEPTH]                  how many parallel loops enclose the check (0: serial code)
    [THREAD .. +MAX_NEST]    the thread's index along each of them
    [COUNT]                  how many values follow
    [VALUES .. +MAX_VALUES]  the check's operands: (index, extent) pairs, ... (CHECK_INDEX)
    [STAGE]                  1 + the launch stage that failed, on devices that launch a
                             kernel in stages (passes/stages.py): later stages then do nothing

After the launch `Launcher.decode` (target.py) turns a claimed record into the exception.
`fill` is the record's writer in Python, which the numba targets compile for their devices
(codegen/numba/cpu_runtime.py, codegen/numba/gpu_runtime.py); the OpenCL C and SPIR-V
renderers spell the same slots from these constants.
"""

from __future__ import annotations

from typing import Any

MAX_NEST = 8
"""Most parallel loops in one nest (axes of a parallel qd.ndrange) a record holds."""
MAX_VALUES = 2 * 64
"""Most operands of one check (64 indexed axes, each an (index, extent) pair)."""

SITE = 0
DEPTH = 1
THREAD = 2
COUNT = THREAD + MAX_NEST
VALUES = COUNT + 1
STAGE = VALUES + MAX_VALUES
LENGTH = STAGE + 1


def fill(err: Any, depth: int, stage: int, thread: Any, vals: Any) -> None:
    """Write a failed check's record after its thread claimed `err[SITE]` (a plain Python
    function: the numba targets compile it as device code)."""
    err[DEPTH] = depth
    for k in range(depth):
        err[THREAD + k] = thread[k]
    err[COUNT] = len(vals)
    for k in range(len(vals)):
        err[VALUES + k] = vals[k]
    err[STAGE] = stage + 1


def read(err: Any) -> tuple[int, tuple[int, ...], list[int]]:
    """(site id, thread indices, values) of a claimed record."""
    depth = int(err[DEPTH])
    n = int(err[COUNT])
    return (int(err[SITE]) - 1, tuple(int(t) for t in err[THREAD:THREAD + depth]),
            [int(v) for v in err[VALUES:VALUES + n]])
