"""The reverse launch against its forward launch, and the stack sizing, measured in one run.

    python benchmarks/compare_ad.py [n]

Kernel: `v = v - 0.1*v*v + 0.01` repeated a[i] times, a[i] uniform in [0, 64), float32,
n = 1e6 threads by default, numba CPU. Prints the best of 15 alternating runs of each and the
reverse / forward ratio (the goal is at most 3); then the per-call overhead of a forward and a
reverse launch over 16 threads, the cost of cached sizing per launch (goal under 2 us) and
fresh sizing of 1e7 int32 bounds (one max-reducer dispatch) against `numpy.max` of the same
array (goal within 2x). Taichi and Quadrants are reported as skipped unless installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from bench_ad import logistic, operands  # noqa: E402

import qdarray as qd  # noqa: E402


def seconds(f: Callable[..., Any], *args: Any) -> float:
    t0 = time.perf_counter()
    f(*args)
    return time.perf_counter() - t0


def paired(forward: Callable[[], Any], reverse: Callable[[], Any], repeat: int = 15
           ) -> tuple[float, float, float]:
    """(best forward, best reverse, median of the per-pair ratios), the two launches
    alternating so that load from other processes falls on both alike."""
    forward()
    reverse()
    fs, rs = [], []
    for _ in range(repeat):
        fs.append(seconds(forward))
        rs.append(seconds(reverse))
    ratios = sorted(r / f for f, r in zip(fs, rs, strict=True))
    return min(fs), min(rs), ratios[len(ratios) // 2]


def best_per_call(f: Callable[[], Any], calls: int, repeat: int = 7) -> float:
    """Best over `repeat` runs of the mean time of `calls` calls, in seconds."""
    f()
    return min(seconds(lambda: [f() for _ in range(calls)]) for _ in range(repeat)) / calls


def launcher_of(kernel: Any, args: tuple[Any, ...]) -> Any:
    from qdarray.ad.launch import _CACHE

    return next(r for r in _CACHE[kernel].values() if r.target.name == "numba_cpu")


def overhead_and_sizing() -> None:
    x, a, y = operands(16)
    logistic(x, a, y)
    y.grad[...] = 1.0
    logistic.grad(x, a, y)
    fs, rs = [], []
    for _ in range(7):  # alternating, as above
        fs.append(best_per_call(lambda: logistic(x, a, y), 2000, 1))
        rs.append(best_per_call(lambda: logistic.grad(x, a, y), 2000, 1))
    size = launcher_of(logistic, (x, a, y)).size
    cached = best_per_call(lambda: size((x, a, y)), 20000)
    print("launch overhead, 16 threads:")
    print(f"  forward launch   {min(fs) * 1e6:9.2f} us per call")
    print(f"  reverse launch   {min(rs) * 1e6:9.2f} us per call (kernel.grad, sizing cached)")
    print(f"  cached sizing    {cached * 1e6:9.2f} us per launch (goal < 2 us)")
    n = 10_000_000
    rng = np.random.default_rng(1)
    a_np = rng.integers(0, 1 << 20, n).astype(np.int32)
    x, a, y = qd.ones(n, dtype=qd.float32, requires_grad=True), qd.asarray(a_np), \
        qd.zeros(1, dtype=qd.float32, requires_grad=True)
    logistic.grad(x, qd.zeros(n, dtype=qd.int32), y)  # compile for this size class
    size = launcher_of(logistic, (x, a, y)).size

    def fresh() -> None:
        a._buffer.generation += 1  # as a write would: the cached maximum is stale
        size((x, a, y))

    before = qd.ad.stats()["max_reducer_dispatches"]
    fresh()
    assert qd.ad.stats()["max_reducer_dispatches"] == before + 1
    assert size((x, a, y))[0] == [1 + int(a_np.max())]
    ts, ns = [], []
    for _ in range(15):
        ts.append(seconds(fresh))
        ns.append(seconds(a_np.max))
    print(f"fresh sizing of {n:.0e} int32 bounds (one max-reducer dispatch):")
    print(f"  max-reducer      {min(ts) * 1e3:9.2f} ms (best of 15)")
    print(f"  numpy.max        {min(ns) * 1e3:9.2f} ms (best of 15, same array)")
    print(f"  reducer / numpy  {min(ts) / min(ns):.2f} (goal <= 2; "
          f"{n * 4 / min(ts) / 1e9:.1f} GB/s read)")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    x, a, y = operands(n)
    logistic(x, a, y)
    y.grad[...] = 1.0
    forward, reverse, median = paired(lambda: logistic(x, a, y),
                                      lambda: logistic.grad(x, a, y))
    print(f"kernel: v = v - 0.1*v*v + 0.01 repeated a[i] in [0, 64) times, float32, n = {n}")
    print(f"  forward launch   {forward * 1e3:9.2f} ms (best of 15)")
    print(f"  reverse launch   {reverse * 1e3:9.2f} ms (best of 15)")
    print(f"  reverse / forward  {reverse / forward:.2f} of the best times, {median:.2f} median "
          "of alternating pairs (goal <= 3)")
    print(f"  sizing: {qd.ad.stats()}")
    overhead_and_sizing()
    for peer in ("taichi", "quadrants"):
        if importlib.util.find_spec(peer) is None:
            print(f"  {peer}: skipped (not installed)")
        else:
            print(f"  {peer}: installed, but no comparison is written yet: skipped")


if __name__ == "__main__":
    main()
