"""Adstack memory and checkpointing, measured: packed tapes against the sum of the trip counts,
and the checkpointed reverse against the stored one.

    python benchmarks/compare_tapes.py [--device cuda:0] [--n N] [--layout packed] [--json PATH]

Kernel: the dynamic-loop kernel (`v = v - 0.1*v*v + 0.01` repeated a[i] times, float32,
`y[0] += v`: benchmarks/bench_ad.py's `logistic`). Workloads over N threads:

- skewed: 1% of the threads loop 10,000 times, the rest 0..10 (uniform);
- uniform: a[i] uniform in [0, 64).

For each, the peak memory of one reverse launch (compiled, but sized, packed and allocated
afresh) is *measured*: tracemalloc's peak (NumPy
reports its buffers to it) on the CPU and under numba's CUDA simulator, a CuPy memory hook
(every allocation and free of the device pool) on a GPU; the adstack heap pool is emptied
first so that the launch allocates its heaps. It is printed against the bytes of the sum of
the trip counts (4 bytes per iteration: the goals are at most 1.5x for skewed and 1.2x for
uniform) and, beside it, threads x the largest trip count x 4 bytes (the unpacked layout).
The CPU keeps its adstacks in per-worker scratch instead (workers x lane-group width x the
largest capacity: far below the sum at large N); `--layout packed` measures the packed
layout there, the one the GPUs use.

Checkpointing: the skewed workload under `qd.ad.set_memory_limit` of 1/8 of its packed tape
(heaps and tables) gives gradients equal, bit for bit, to the unlimited run; the reverse
launch's time and forward + reverse (a Tape) are compared with the unlimited run's (goal at
most 2.5x): the median of per-pair ratios over alternating repeats, so that load from other
processes falls on both alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_ad import logistic  # noqa: E402

import qdarray as qd  # noqa: E402
from qdarray.ad import heaps  # noqa: E402
from qdarray.ad.device_buffers import pool_for  # noqa: E402
from qdarray.kernels.target import StackLayout  # noqa: E402

RESULTS: dict[str, Any] = {}


def workload(kind: str, n: int, seed: int = 0) -> np.ndarray:
    """The trip counts a[i] of `kind` ("skewed" or "uniform") over n threads, int32."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 64, n).astype(np.int32)
    a = rng.integers(0, 11, n).astype(np.int32)
    a[rng.random(n) < 0.01] = 10_000
    return a


class Run:
    """The arrays of one workload on one device, and its launches."""

    def __init__(self, trips: np.ndarray, device: str) -> None:
        self.dev = qd.Device(device)
        rng = np.random.default_rng(1)
        self.x_np = rng.uniform(0.1, 0.9, trips.size).astype(np.float32)
        self.x = qd.asarray(self.x_np, device=self.dev, copy=True, requires_grad=True)
        self.a = qd.asarray(trips, device=self.dev, copy=True)
        self.y = qd.zeros(1, dtype=qd.float32, device=self.dev, requires_grad=True)
        self.y.grad[...] = 1.0

    def sync(self) -> None:
        self.dev.backend.synchronize(self.dev)

    def forward(self) -> None:
        logistic(self.x, self.a, self.y)
        self.sync()

    def reverse(self) -> None:
        logistic.grad(self.x, self.a, self.y)
        self.sync()

    def both(self) -> None:
        self.x.grad[...] = 0.0
        with qd.ad.Tape(loss=self.y):
            logistic(self.x, self.a, self.y)
        self.sync()

    def gradient(self) -> np.ndarray:
        self.both()
        return np.array(self.x.grad.to_device("cpu")._data, copy=True)

    def pool(self) -> Any:
        return heaps.POOL if self.dev == qd.Device("cpu") else pool_for(self.dev)


def _cupy() -> Any:
    try:
        import cupy  # type: ignore[import-not-found]

        if int(cupy.cuda.runtime.getDeviceCount()) > 0:
            return cupy
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: host memory is measured
        pass
    return None


@contextmanager
def peak_bytes(on_gpu: bool) -> Iterator[list[int]]:
    """Measures the peak of the memory allocated inside the block, above what was allocated
    when it started: out[0] after the block."""
    out = [0]
    gc.collect()
    if not on_gpu:
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            yield out
        finally:
            out[0] = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
        return
    cupy = _cupy()
    from cupy.cuda import memory_hook  # type: ignore[import-not-found]

    class Peak(memory_hook.MemoryHook):  # type: ignore[misc]
        name = "PeakHook"

        def __init__(self) -> None:
            self.now = 0
            self.peak = 0

        def malloc_postprocess(self, device_id: int, size: int, mem_size: int, mem_ptr: int,
                               pmem_id: int) -> None:
            self.now += mem_size
            self.peak = max(self.peak, self.now)

        def free_postprocess(self, device_id: int, mem_size: int, mem_ptr: int,
                             pmem_id: int) -> None:
            self.now -= mem_size

    cupy.cuda.Device().synchronize()
    hook = Peak()
    with hook:
        yield out
        cupy.cuda.Device().synchronize()
    out[0] = hook.peak


def memory(kind: str, n: int, device: str) -> dict[str, Any]:
    """The measured peak of one reverse launch of workload `kind`, against its trip counts."""
    trips = workload(kind, n)
    run = Run(trips, device)
    run.forward()
    run.reverse()  # compiled
    run.pool().clear()  # the measured launch allocates its heaps again,
    run.a[0] = run.a[0]  # and sizes and packs afresh (a write invalidates the sizing cache)
    run.forward()
    on_gpu = device.startswith("cuda") and _cupy() is not None
    if on_gpu:
        _cupy().get_default_memory_pool().free_all_blocks()
    with peak_bytes(on_gpu) as got:
        run.reverse()
    stats = qd.ad.stats()
    sum_bytes = 4 * int(trips.sum())
    flat = 4 * n * int(trips.max())
    row = {"n": n, "sum of trips x 4 B": sum_bytes, "threads x max x 4 B": flat,
           "peak measured": got[0], "adstack_bytes": stats["adstack_bytes"],
           "adstack_index_bytes": stats["adstack_index_bytes"],
           "peak / sum": got[0] / sum_bytes, "threads x max / sum": flat / sum_bytes,
           "measured by": "CuPy memory hook" if on_gpu else "tracemalloc"}
    goal = 1.5 if kind == "skewed" else 1.2
    print(f"{kind:8s} N={n}: peak {got[0] / 2**20:9.2f} MiB = {row['peak / sum']:.3f} x the sum "
          f"of trip counts ({sum_bytes / 2**20:.2f} MiB; goal <= {goal}); heaps "
          f"{stats['adstack_bytes'] / 2**20:.2f} MiB + tables "
          f"{stats['adstack_index_bytes'] / 2**20:.2f} MiB; threads x max would be "
          f"{flat / 2**20:.2f} MiB ({row['threads x max / sum']:.1f} x)  [{row['measured by']}]")
    return row


def ratio(base: Callable[[], Any], other: Callable[[], Any], repeat: int
          ) -> tuple[float, float, float]:
    """(best base, best other, median of the per-pair ratios other / base), alternating."""
    base()
    other()
    bs, os_ = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        base()
        t1 = time.perf_counter()
        other()
        t2 = time.perf_counter()
        bs.append(t1 - t0)
        os_.append(t2 - t1)
    ratios = sorted(o / b for b, o in zip(bs, os_, strict=True))
    return min(bs), min(os_), ratios[len(ratios) // 2]


def checkpointing(n: int, device: str, repeat: int) -> dict[str, Any]:
    trips = workload("skewed", n)
    run = Run(trips, device)
    qd.ad.set_memory_limit(None)
    stored = run.gradient()
    full = qd.ad.stats()
    packed = full["adstack_bytes"] + full["adstack_index_bytes"]
    limit = packed // 8
    qd.ad.set_memory_limit(limit)
    try:
        checked = run.gradient()
        small = qd.ad.stats()
    finally:
        qd.ad.set_memory_limit(None)
    equal = bool(np.array_equal(stored, checked))

    def limited(f: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> None:
            qd.ad.set_memory_limit(limit)
            try:
                f()
            finally:
                qd.ad.set_memory_limit(None)
        return call

    rev = ratio(run.reverse, limited(run.reverse), repeat)
    both = ratio(run.both, limited(run.both), repeat)
    used = small["adstack_bytes"] + small["adstack_index_bytes"]
    row = {"n": n, "packed tape bytes": packed, "limit": limit, "checkpointed tape bytes": used,
           "stride": small["checkpoint_stride"], "gradients bitwise equal": equal,
           "reverse s (stored, checkpointed)": rev[:2], "reverse ratio": rev[2],
           "fwd+rev s (stored, checkpointed)": both[:2], "fwd+rev ratio": both[2]}
    print(f"checkpointing, skewed N={n}: packed tape {packed / 2**20:.2f} MiB, limit 1/8 = "
          f"{limit / 2**20:.2f} MiB; checkpointed tape {used / 2**20:.2f} MiB, stride "
          f"{small['checkpoint_stride']}; gradients bitwise equal: {equal}")
    print(f"  reverse launch: {rev[0] * 1e3:.1f} ms stored, {rev[1] * 1e3:.1f} ms checkpointed, "
          f"ratio {rev[2]:.2f} (goal <= 2.5)")
    print(f"  forward + reverse: {both[0] * 1e3:.1f} ms stored, {both[1] * 1e3:.1f} ms "
          f"checkpointed, ratio {both[2]:.2f}")
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=1_000_000, help="threads (default 1e6)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="write the figures there")
    ap.add_argument("--layout", choices=("device", "packed"), default="device",
                    help="the device's own adstack layout, or packed (on the CPU)")
    args = ap.parse_args(argv)
    target = qd.Device(args.device).backend.target
    saved = target.adstack
    if args.layout == "packed" and saved.scratch:
        target.adstack = StackLayout(group=1)
    try:
        return run_all(args)
    finally:
        target.adstack = saved


def run_all(args: Any) -> dict[str, Any]:
    layout = "scratch" if qd.Device(args.device).backend.target.adstack.scratch else "packed"
    print(f"qdarray {qd.__version__} on {args.device}; N = {args.n}; {layout} adstacks")
    RESULTS["device"] = args.device
    for kind in ("skewed", "uniform"):
        RESULTS[f"memory {kind}"] = memory(kind, args.n, args.device)
    RESULTS["checkpointing"] = checkpointing(args.n, args.device, args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(RESULTS, f, indent=1)
    return RESULTS


if __name__ == "__main__":
    main()
