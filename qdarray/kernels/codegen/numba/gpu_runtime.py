"""Device functions the CUDA code generator's modules call: integer powers, the simulator's fma
and the debug error record.

They are the CPU target's functions (`numba/cpu_runtime.py`) compiled by `numba.cuda.jit` as
device functions, except the error record, whose first-failure claim is a CUDA
compare-and-swap. Under the simulator they run as plain Python, like the kernels calling them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numba import config, cuda

from .... import _dtypes
from ... import error_record
from ...ops.math import fma_value
from . import cpu_runtime as intrinsics


def fma_value_of_args(a: Any, b: Any, c: Any) -> Any:
    """fma of NumPy float scalars of one dtype (a * b + c, one rounding)."""
    return fma_value(_dtypes.from_numpy_dtype(np.asarray(a).dtype), a, b, c)


SIMULATED = bool(config.ENABLE_CUDASIM)  # type: ignore[attr-defined]
_DEVICE: dict[str, Any] = {"device": True} if SIMULATED else {"device": True, "cache": True}

ipow = cuda.jit(**_DEVICE)(intrinsics.ipow.py_func)  # type: ignore[no-untyped-call]
# The simulator's fma, which runs its kernels as Python (compiled kernels call libdevice's).
fma = fma_value_of_args
upow = cuda.jit(**_DEVICE)(intrinsics.upow.py_func)  # type: ignore[no-untyped-call]
_fill_record = cuda.jit(**_DEVICE)(error_record.fill)  # type: ignore[no-untyped-call]


@cuda.jit(**_DEVICE)  # type: ignore[no-untyped-call, untyped-decorator]
def report_index_error(err: Any, site: int, depth: int, stage: int, thread: Any,
                       vals: Any) -> None:
    """Record the first failed index check of a launch in the error record
    (error_record.py; later failures are dropped); `stage` is the failing stage, so that
    later stages of the launch do nothing."""
    if cuda.atomic.cas(err, error_record.SITE, 0, site + 1) == 0:  # type: ignore[attr-defined]
        _fill_record(err, depth, stage, thread, vals)


# Float atomic min and max that return the value they replaced (or found, where they store
# nothing): `atomic_fextremum{32,64}(ary, idx, val, larger)` is atomic max with `larger`,
# atomic min without. numba's `cuda.atomic.min` / `max` of floats are compare-and-swap loops
# that return the value read before the loop, which other threads may have replaced
# meanwhile: two threads can both be told the same old value. These loop on the bits (an
# integer view of the array, CUDA's integer compare-and-swap) and return the value the swap
# compared against. As numba's, they store nothing where the new value or the element is
# NaN, and compare -0.0 and +0.0 as equal.
if SIMULATED:  # the simulator runs atomics one at a time: numba's are exact there

    def atomic_fextremum32(ary: Any, idx: Any, val: Any, larger: bool) -> Any:
        return (cuda.atomic.max if larger else cuda.atomic.min)(ary, idx, val)  # type: ignore[attr-defined]

    atomic_fextremum64 = atomic_fextremum32
else:
    from numba.cuda import libdevice

    @cuda.jit(**_DEVICE)  # type: ignore[no-untyped-call, untyped-decorator]
    def atomic_fextremum32(ary: Any, idx: Any, val: Any, larger: bool) -> Any:
        bits = ary.view(np.int32)
        old = bits[idx]
        new = libdevice.float_as_int(val)  # type: ignore[no-untyped-call]
        while True:
            found = libdevice.int_as_float(old)  # type: ignore[no-untyped-call]
            if not (val > found if larger else val < found):
                return found
            seen = cuda.atomic.cas(bits, idx, old, new)  # type: ignore[attr-defined]
            if seen == old:
                return found
            old = seen

    @cuda.jit(**_DEVICE)  # type: ignore[no-untyped-call, untyped-decorator]
    def atomic_fextremum64(ary: Any, idx: Any, val: Any, larger: bool) -> Any:
        bits = ary.view(np.int64)
        old = bits[idx]
        new = libdevice.double_as_longlong(val)  # type: ignore[no-untyped-call]
        while True:
            found = libdevice.longlong_as_double(old)  # type: ignore[no-untyped-call]
            if not (val > found if larger else val < found):
                return found
            seen = cuda.atomic.cas(bits, idx, old, new)  # type: ignore[attr-defined]
            if seen == old:
                return found
            old = seen
