"""Side-by-side timings of qdarray kernels and hand-written numba, measured in one run.

    python benchmarks/compare_kernels.py

Prints per-call launch overhead in microseconds, throughput ratios (qdarray time / numba
prange time, best of several runs), and compile times in new processes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from bench_kernels import (  # noqa: E402
    first_call_seconds,
    histogram,
    saxpy,
    saxpy_numba,
    saxpy_operands,
    stencil,
    stencil_numba,
)

import qdarray as qd  # noqa: E402


def best_seconds(f: Callable[..., Any], *args: Any, number: int, repeat: int = 7) -> float:
    f(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f(*args)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def main() -> None:
    rows: list[tuple[str, str]] = []
    a, x, y = saxpy_operands(16)
    qx, qy = qd.asarray(x), qd.asarray(y)
    launch_qd = best_seconds(saxpy, 2.0, qx, qy, number=20_000) * 1e6
    launch_np = best_seconds(saxpy, 2.0, x, y, number=20_000) * 1e6
    launch_nb = best_seconds(saxpy_numba, a, x, y, number=20_000) * 1e6
    rows.append(("launch, 16 elements, qd arrays", f"{launch_qd:.2f} us (goal <= 10 us)"))
    rows.append(("launch, 16 elements, NumPy arrays", f"{launch_np:.2f} us"))
    rows.append(("  numba prange, same kernel", f"{launch_nb:.2f} us"))

    for size in (100_000, 10_000_000):
        a, x, y = saxpy_operands(size)
        t_qd = best_seconds(saxpy, a, x, y, number=10)
        t_nb = best_seconds(saxpy_numba, a, x, y, number=10)
        rows.append((f"saxpy float32 n={size:.0e}",
                     f"{t_qd * 1e3:.3f} ms vs numba {t_nb * 1e3:.3f} ms: {t_qd / t_nb:.2f}x"
                     + (" (goal <= 1.1x)" if size == 10_000_000 else "")))

    u = np.random.default_rng(1).random((2048, 2048), dtype=np.float32)
    out = np.zeros_like(u)
    t_qd = best_seconds(stencil, u, out, number=5)
    t_nb = best_seconds(stencil_numba, u, out, number=5)
    rows.append(("5-point stencil 2048^2", f"{t_qd * 1e3:.3f} ms vs numba {t_nb * 1e3:.3f} ms: "
                                           f"{t_qd / t_nb:.2f}x"))

    xs = np.random.default_rng(2).integers(0, 1 << 20, 10_000_000).astype(np.int32)
    bins = np.zeros(64, np.int64)
    t_h = best_seconds(histogram, xs, bins, number=3)
    t_b = best_seconds(lambda: np.bincount(xs % 64), number=3)
    rows.append(("atomic histogram 1e7 -> 64 bins",
                 f"{t_h * 1e3:.2f} ms (serial np.bincount: {t_b * 1e3:.2f} ms)"))

    firsts, cached, startups = [], [], []
    for salt in range(3):
        with tempfile.TemporaryDirectory() as workdir:
            startup, first = first_call_seconds(workdir, salt=float(salt))
            firsts.append(first)
            startups.append(startup)
            cached.append(first_call_seconds(workdir, salt=float(salt))[1])
    rows.append(("first compile, small kernel, new process",
                 f"{min(firsts):.3f} s (goal < 1 s)"))
    rows.append(("from the disk cache, new process", f"{min(cached):.3f} s (goal < 0.2 s)"))
    rows.append(("  numba's own start-up in a new process",
                 f"{min(startups):.3f} s (paid once by any numba program; not included above)"))

    import numba

    print(f"qdarray {qd.__version__}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads ({numba.threading_layer()})")
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
