"""BufferView launch overhead and copies, measured side by side in one run.

    python benchmarks/compare_buffer_view.py

Prints microseconds per launch of a 16-element kernel with an array argument, a BufferView
built once, an Array slice made on every call and a BufferView made on every call, the
difference against the array argument (goal: within 2 us), and the memory a launch over a
40 MB window allocates (goal: none of the window's size).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from bench_buffer_view import scale_array, scale_view  # noqa: E402

import qdarray as qd  # noqa: E402


def per_call_us(f: Callable[[], None], number: int = 20_000, repeat: int = 7) -> float:
    """Best time per call over `repeat` runs of `number` calls (the others are noise)."""
    f()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def main() -> None:
    data = qd.asarray(np.ones(32, np.float32))
    window = data[:16]
    view = qd.BufferView(data, 0, 16)
    cases: list[tuple[str, Callable[[], None]]] = [
        ("array argument", lambda: scale_array(window, 1.0)),
        ("BufferView built once", lambda: scale_view(view, 1.0)),
        ("data[:16] on every call", lambda: scale_view(data[:16], 1.0)),
        ("BufferView(data, 16, 16) on every call",
         lambda: scale_view(qd.BufferView(data, 16, 16), 1.0)),
    ]
    times = {}
    # interleave the cases so that load from other processes hits them alike
    for _ in range(3):
        for name, f in cases:
            times[name] = min(times.get(name, float("inf")), per_call_us(f))
    base = times["array argument"]
    print("launch, 16 elements (best of runs)")
    for name, _ in cases:
        extra = "" if name == "array argument" else f"  ({times[name] - base:+.2f} us; goal <= +2)"
        print(f"  {name:<40} {times[name]:6.2f} us{extra}")

    big = qd.asarray(np.ones(12_000_000, np.float32))
    scale_view(big[1_000_000:11_000_000], 1.0)
    tracemalloc.start()
    scale_view(big[1_000_000:11_000_000], 1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"launch over a 40 MB window allocates at most {peak / 1e3:.1f} kB (no copy)")


if __name__ == "__main__":
    main()
