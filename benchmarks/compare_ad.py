"""The reverse launch against its forward launch, measured in one run.

    python benchmarks/compare_ad.py [n]

Kernel: `v = v - 0.1*v*v + 0.01` repeated a[i] times, a[i] uniform in [0, 64), float32,
n = 1e6 threads by default, numba CPU. Prints the best of 15 alternating runs of each and the
reverse / forward ratio (the goal is at most 3); Taichi and Quadrants are reported as skipped
unless installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

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
    for peer in ("taichi", "quadrants"):
        if importlib.util.find_spec(peer) is None:
            print(f"  {peer}: skipped (not installed)")
        else:
            print(f"  {peer}: installed, but no comparison is written yet: skipped")


if __name__ == "__main__":
    main()
