"""The max-reducer against the device's own max and its memory bandwidth.

    python benchmarks/compare_reducer.py [device] [n ...]

For each n, an int32 array of n elements and the reducer kernel of
`MaxOverRange(i, 0, n, a[i])` (one axis) and of the same elements as a square-ish 2-D array
(two axes, their cross product). Prints the GPU time of one dispatch (on a CUDA device,
measured with events queued behind a long kernel, so that the host's launch cost does not
count; elsewhere wall time of the whole dispatch), the bytes read per second, and the same for
the namespace's own max (`qd.max`: CuPy's on CUDA, NumPy's on the CPU). On a Vulkan device the
GPU time comes from timestamp queries around the dispatch; the whole `Reducer.run` (dispatch,
wait and the 8-byte read) is also given as wall time. Default device: the first non-CPU
device, else the CPU.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import qdarray as qd
from qdarray import _dtypes
from qdarray._devices import as_device
from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
from qdarray.ad.sizing.max_reducer import INT64_MIN, STRIDED_ITEMS, Reducer, chain_of, split
from qdarray.kernels.types import ArrayType


def wall_time(f: Callable[[], Any]) -> float:
    best = 1e9
    for _ in range(15):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def cuda_time(f: Callable[[], Any]) -> float:
    import cupy as cp

    busy = cp.ones(1 << 28, cp.float32)
    best = 1e9
    for _ in range(10):
        busy.sum()  # keeps the GPU busy while the host enqueues f's work
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(a, b) / 1e3)
    return best


def vulkan_time(device: Any) -> Callable[[Callable[[], Any]], float]:
    """A timer of the device time of what a callable records on the Vulkan device's stream
    (timestamp queries before and after it)."""
    from qdarray.backends.vulkan import _instance, _stream

    stream = _stream.stream(_instance.state(device.index))

    def timed(f: Callable[[], Any]) -> float:
        f()
        stream.finish()
        best = 1e9
        for _ in range(15):
            t = stream.timer()
            t.start()
            f()
            t.stop()
            best = min(best, t.elapsed_ns() * 1e-9)
        return best

    return timed


def launch_tail(reducer: Reducer, device: Any, count: int, row: int) -> list[Any]:
    """The arguments of one reducer launch after the arrays, slots, begins and extents, as
    `Reducer.run` passes them: chunk, chunks, total, then the single pass's result element
    and the element it zeroes, or the partial maxima."""
    layout = reducer.layout
    most = STRIDED_ITEMS
    if layout.work_items is not None:
        most = min(most, layout.work_items(device))
    chunk, chunks = split(count, layout, True, row, most)
    buffers = reducer.buffers
    if reducer.single:
        both = buffers.upload(np.zeros(2, np.uint64))
        return [chunk, chunks, count, both[0:1], both[1:2]]
    partial = buffers.upload(np.full(chunks + 1, INT64_MIN, np.int64))
    return [chunk, chunks, count, buffers.as_argument(partial)]


def main() -> None:
    devices = [d for d in qd.__array_namespace_info__().devices() if str(d) != "cpu"]
    name = sys.argv[1] if len(sys.argv) > 1 else str(devices[0] if devices else "cpu")
    sizes = [int(float(s)) for s in sys.argv[2:]] or [10_000_000, 100_000_000]
    device = as_device(name)
    target = device.backend.target
    cuda = target.name == "numba_cuda"
    gpu_time = cuda_time if cuda else vulkan_time(device) if target.name == "spirv" else None
    how = "GPU events" if cuda else "timestamp queries" if gpu_time else "wall clock"
    print(f"device {device} ({target.name}); times: {how}")
    i, j = LoopVar(1, "i"), LoopVar(2, "j")
    for n in sizes:
        host = np.random.default_rng(0).integers(0, 1 << 30, n).astype(np.int32)
        data = qd.asarray(host, device=device)
        side = int(n ** 0.5)
        grid = qd.reshape(data[:side * (n // side)], (side, n // side))
        def own_max() -> Any:  # to the host, as the reducer's result (except under events)
            m = qd.max(data)  # noqa: B023
            return m if cuda else int(m)

        own = gpu_time(own_max) if gpu_time else wall_time(own_max)
        print(f"  n = {n:.0e}: backend max  {own * 1e3:8.3f} ms  {n * 4 / own / 1e9:7.0f} GB/s")
        for label, e, arr, extents in (
                ("1 axis ", MaxOverRange(i, Const(0), Const(n), Read("d", (i,))), data, [n]),
                ("2 axes ", MaxOverRange(i, Const(0), Const(side), MaxOverRange(
                    j, Const(0), Const(n // side), Read("d", (i, j)))), grid,
                 [side, n // side])):
            count = extents[0] * (extents[-1] if len(extents) > 1 else 1)
            reducer = Reducer(chain_of(e), {"d": ArrayType(_dtypes.int32, len(extents))},
                              target, device)
            begins = [0] * len(extents)
            assert reducer.run({"d": arr}, [], begins, extents) == host[:count].max()
            whole = wall_time(lambda: reducer.run({"d": arr}, [], begins, extents))  # noqa: B023
            t = whole
            if gpu_time:
                launch = reducer.compiled()
                args = [arr] + begins + extents + launch_tail(reducer, device, count,
                                                              extents[-1])
                t = gpu_time(lambda: launch(args))  # noqa: B023
            print(f"           reducer {label} {t * 1e3:8.3f} ms  {count * 4 / t / 1e9:7.0f} "
                  f"GB/s  ({own / t:.0%} of the backend's max; whole run "
                  f"{whole * 1e3:.3f} ms wall)")


if __name__ == "__main__":
    main()
