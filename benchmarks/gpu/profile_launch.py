"""Where a small CUDA kernel launch spends its host time, and saxpy's launch configuration.

    python benchmarks/gpu/profile_launch.py [--json PATH]

1. Host microseconds per launch of a 16-element saxpy, without synchronising (the launch
   queue absorbs the kernels): qdarray's kernel, the same kernel hand-written in numba.cuda
   with CuPy arguments and with numba device arrays, and CuPy's ElementwiseKernel; then a
   profile of qdarray's launches, the functions with the most time of their own.
2. saxpy over 1e8 float32 with the grid capped at SMs x 32 blocks (qdarray's configuration,
   a grid-stride loop) and with one block per 256 elements (no grid-stride iterations).
3. The max-reducer over 1e8 int32: one dispatch, the time between CUDA events around one,
   and dispatches with grids of 2 to 32 blocks per SM.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import qdarray as qd  # noqa: E402

RESULTS: dict[str, Any] = {}


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def per_call_us(f: Callable[[], Any], cp: Any, calls: int = 3000) -> float:
    """Host time per call in microseconds, calls queued without synchronisation."""
    for _ in range(50):
        f()
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    host = time.perf_counter() - t0
    cp.cuda.runtime.deviceSynchronize()
    return host / calls * 1e6


def synced_us(f: Callable[[], Any], cp: Any, calls: int = 300) -> float:
    """Best time of one call plus a device synchronisation, in microseconds."""
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        cp.cuda.runtime.deviceSynchronize()
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


def report(name: str, value: float, unit: str = "us", note: str = "") -> None:
    print(f"  {name:<58} {value:9.2f} {unit}  {note}")
    RESULTS[name] = value


def section_launch(cp: Any, dev: str) -> None:
    from numba import cuda

    print("\n1. Host time per launch, 16 float32 elements")
    xs = np.ones(16, np.float32)
    x, y = qd.asarray(xs, device=dev), qd.asarray(xs, device=dev)
    a = np.float32(2.0)
    cx, cy = cp.asarray(x), cp.asarray(y)

    @cuda.jit
    def hand(a, x, y):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < x.shape[0]:
            y[i] = a * x[i] + y[i]

    nx, ny = cuda.as_cuda_array(cx), cuda.as_cuda_array(cy)
    ek = cp.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y", "sx16")
    cases = [("qdarray kernel", lambda: saxpy(a, x, y)),
             ("numba.cuda, CuPy arguments", lambda: hand[1, 256](a, cx, cy)),
             ("numba.cuda, numba device arrays", lambda: hand[1, 256](a, nx, ny)),
             ("CuPy ElementwiseKernel", lambda: ek(a, cx, cy))]
    saxpy(a, x, y)
    launcher = next(iter(saxpy._launchers[False].values()))
    print(f"  qdarray's launches: {list(launcher.direct.values())} "
          f"{launcher.why_not_direct}")
    for name, f in cases:
        report(f"{name}: queued", per_call_us(f, cp))
        report(f"{name}: with a synchronisation", synced_us(f, cp))
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        saxpy(a, x, y)
    profile.disable()
    cp.cuda.runtime.deviceSynchronize()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(14)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()][-15:]
    print("  profile of 3000 qdarray launches (own time):")
    for ln in lines:
        print("    " + ln[:150])


def section_grid(cp: Any, dev: str, n: int) -> None:
    from qdarray.backends.cuda import target as cuda_kernels

    print(f"\n2. saxpy over {n:.0e} float32, grid configurations (kernel + launch + sync)")
    rng = np.random.default_rng(0)
    x = qd.asarray(rng.random(n, np.float32), device=dev)
    y = qd.asarray(rng.random(n, np.float32), device=dev)
    a = np.float32(2.0)
    index = qd.Device(dev).index
    capped = cuda_kernels.max_blocks(index)
    for name, blocks in (("SMs x 32 blocks (grid-stride)", capped),
                         ("one block per 256 elements", -(-n // 256))):
        cuda_kernels._MAX_BLOCKS[index] = blocks
        us = synced_us(lambda: saxpy(a, x, y), cp, 30)
        report(f"{name}: {blocks} blocks", us / 1e3, "ms",
               f"{12 * n / (us * 1e-6) / 1e12:.2f} TB/s")
    cuda_kernels._MAX_BLOCKS[index] = capped


def section_reducer(cp: Any, dev: str, n: int) -> None:
    from qdarray import _dtypes
    from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
    from qdarray.ad.sizing.max_reducer import STRIDED_ITEMS, Reducer, chain_of
    from qdarray.backends.cuda import target as cuda_kernels
    from qdarray.kernels.types import ArrayType

    print(f"\n3. The max-reducer over {n:.0e} int32")
    data = np.random.default_rng(2).integers(0, 1 << 30, n).astype(np.int32)
    a = qd.asarray(data, device=dev)
    i = LoopVar(1, "i")
    chain = chain_of(MaxOverRange(i, Const(0), Const(n), Read("a", (i,))))
    reducer = Reducer(chain, {"a": ArrayType(_dtypes.int32, 1)}, qd.Device(dev).backend.target,
                      qd.Device(dev))
    assert reducer.run({"a": a}, [], [0], [n]) == int(data.max())
    us = synced_us(lambda: reducer.run({"a": a}, [], [0], [n]), cp, 30)
    report("one dispatch (launch, kernel, 8-byte read)", us / 1e3, "ms",
           f"{4 * n / (us * 1e-6) / 1e12:.2f} TB/s")
    default = cuda_kernels.REDUCTION_BLOCKS_PER_SM
    for per_sm in (2, 4, 8, 16, 32):  # 32: 2**20 work-items (STRIDED_ITEMS), several waves
        cuda_kernels.REDUCTION_BLOCKS_PER_SM = per_sm
        items = min(STRIDED_ITEMS, cuda_kernels.reduction_items(qd.Device(dev).index))
        assert reducer.run({"a": a}, [], [0], [n]) == int(data.max())
        us = synced_us(lambda: reducer.run({"a": a}, [], [0], [n]), cp, 30)
        report(f"  {per_sm} blocks per SM ({items} work-items)", us / 1e3, "ms",
               f"{4 * n / (us * 1e-6) / 1e12:.2f} TB/s")
    cuda_kernels.REDUCTION_BLOCKS_PER_SM = default
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    best = float("inf")
    for _ in range(20):
        start.record()
        reducer.run({"a": a}, [], [0], [n])
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop))
    report("between events around a dispatch (device time)", best, "ms",
           f"{4 * n / (best * 1e-3) / 1e12:.2f} TB/s")
    ca = cp.asarray(a)
    report("cupy.max and its read", synced_us(lambda: int(cp.max(ca)), cp, 30) / 1e3, "ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    import cupy as cp

    dev = "cuda:0"
    print(f"qdarray {qd.__version__} on {dev}; CuPy {cp.__version__}")
    section_launch(cp, dev)
    section_grid(cp, dev, 100_000_000)
    section_reducer(cp, dev, 100_000_000)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    main()
