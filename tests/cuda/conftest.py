"""tests/cuda/device runs where a CUDA device exists: a GPU that CuPy finds, or numba's
simulator (NUMBA_ENABLE_CUDASIM=1, as test_cuda_simulator.py runs it). Elsewhere it is not
collected at all: test_cuda_simulator.py runs it in a simulated subprocess instead."""

from __future__ import annotations

import os


def _has_cuda_device() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0"):
        return True
    try:
        import cupy  # type: ignore[import-not-found]

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no device
        return False


collect_ignore_glob = [] if _has_cuda_device() else ["device/*"]
