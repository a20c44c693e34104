"""Print qdarray's cost over NumPy for the same array operations, side by side.

For small arrays the interesting number is the per-call overhead qdarray adds (checks, dispatch,
wrapping), in microseconds; for large arrays it is the time ratio qdarray / NumPy, which should
be close to 1 since the same NumPy kernels do the work. Each figure is the median over several
repeats, taken after a warm-up, of qdarray and NumPy timed back to back.

    .venv/bin/python benchmarks/compare_numpy.py [--small 16] [--large 1000000 10000000]

Goals: under 3 us added per small call, within 1.1x of NumPy on large arrays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _array_ops import OPS, operands  # noqa: E402


def paired_times(qd_call: Callable[[], Any], np_call: Callable[[], Any], repeat: int,
                 budget: float) -> list[tuple[float, float]]:
    """`repeat` pairs of (qdarray, NumPy) seconds per call, each pair timed back to back.

    Timing the two side by side in alternation, rather than one series after the other,
    exposes both to the same background load, so the per-pair difference and ratio stay
    meaningful on a busy machine.
    """
    qd_timer = timeit.Timer(qd_call)
    np_timer = timeit.Timer(np_call)
    number, _ = np_timer.autorange()  # also the warm-up
    qd_timer.autorange()
    number = max(1, int(number * budget / 0.2))
    pairs = []
    for _ in range(repeat):
        t_np = np_timer.timeit(number) / number
        t_qd = qd_timer.timeit(number) / number
        pairs.append((t_qd, t_np))
    return pairs


def compare(name: str, size: int, dtype: str, repeat: int,
            budget: float) -> tuple[float, float]:
    """(median added seconds per call, median time ratio) of qdarray over NumPy."""
    x, y, a, b = operands(size, dtype)
    qd_call, np_call = OPS[name]
    pairs = paired_times(lambda: qd_call(x, y), lambda: np_call(a, b), repeat, budget)
    return (statistics.median(q - n for q, n in pairs),
            statistics.median(q / n for q, n in pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=16, help="elements of the small arrays")
    parser.add_argument("--large", type=int, nargs="*", default=[1_000_000, 10_000_000],
                        help="elements of the large arrays")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--ops", nargs="*", default=list(OPS), choices=list(OPS))
    args = parser.parse_args()

    header = f"{'operation':<16} {'small: +us':>11}"
    header += "".join(f" {'x' + format(n, '.0e').replace('+0', ''):>10}" for n in args.large)
    print(f"qdarray vs NumPy, {args.dtype}; small = {args.small} elements; "
          f"large: time ratio qdarray / NumPy")
    print(header)
    worst_overhead = 0.0
    worst_ratio = 0.0
    for name in args.ops:
        added, _ = compare(name, args.small, args.dtype, args.repeat, 0.05)
        overhead = added * 1e6
        worst_overhead = max(worst_overhead, overhead)
        row = f"{name:<16} {overhead:>11.2f}"
        for size in args.large:
            _, ratio = compare(name, size, args.dtype, args.repeat, 0.1)
            worst_ratio = max(worst_ratio, ratio)
            row += f" {ratio:>10.3f}"
        print(row, flush=True)
    print(f"worst: +{worst_overhead:.2f} us on small arrays (goal < 3), "
          f"{worst_ratio:.3f}x on large arrays (goal <= 1.1)")


if __name__ == "__main__":
    main()
