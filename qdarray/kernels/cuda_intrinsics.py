"""Device functions the CUDA code generator's modules call: integer powers and the debug
error record.

They are the CPU target's functions (`intrinsics.py`) compiled by `numba.cuda.jit` as device
functions, except the error record, whose first-failure claim is a CUDA compare-and-swap. Under
the simulator they run as plain Python, like the kernels calling them.
"""

from __future__ import annotations

from typing import Any

from numba import config, cuda

from . import intrinsics

SIMULATED = bool(config.ENABLE_CUDASIM)  # type: ignore[attr-defined]
_DEVICE: dict[str, Any] = {"device": True} if SIMULATED else {"device": True, "cache": True}

# The error record (kernels/launch.py ERR_LEN + 1 slots): [site + 1, depth, 8 thread indices,
# n, (index, extent) values..., 1 + the stage whose check failed].
ABORT = 11 + 2 * 64

ipow = cuda.jit(**_DEVICE)(intrinsics.ipow.py_func)  # type: ignore[no-untyped-call]
upow = cuda.jit(**_DEVICE)(intrinsics.upow.py_func)  # type: ignore[no-untyped-call]


@cuda.jit(**_DEVICE)  # type: ignore[no-untyped-call, untyped-decorator]
def report_index_error(err: Any, site: int, depth: int, stage: int, thread: Any,
                       vals: Any) -> None:
    """Record the first failed index check of a launch (later failures are dropped); `stage`
    is the failing stage, so that later stages of the launch do nothing."""
    if cuda.atomic.cas(err, 0, 0, site + 1) == 0:  # type: ignore[attr-defined]
        err[1] = depth
        for k in range(depth):
            err[2 + k] = thread[k]
        err[10] = len(vals)
        for k in range(len(vals)):
            err[11 + k] = vals[k]
        err[ABORT] = stage + 1
