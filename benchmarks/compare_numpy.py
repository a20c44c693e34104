"""Print qdarray's cost over NumPy (over CuPy on a CUDA device) for the same array operations,
beside the same cost for other NumPy-like libraries.

For small arrays the interesting number is the per-call overhead a library adds over the
baseline (checks, dispatch, wrapping), in microseconds; for large arrays it is qdarray's time
ratio over the baseline, which should be close to 1 since the same kernels do the work
(NumPy's default sort for sorting values: the standard's sort is stable, qdarray sorts values
with NumPy's fastest algorithm and gives the stable result). Each figure is the median over
several repeats, taken after a warm-up, of the library and the baseline timed back to back.

    .venv/bin/python benchmarks/compare_numpy.py [--small 16] [--large 1000000 10000000]
        [--device cpu] [--peers torch jax array-api-strict cupy] [--timer cpu|wall]

`--device cuda:0` times qdarray's CUDA device against CuPy, the library it calls. On a shared
machine keep the default `--timer cpu` (the process's CPU time, which time spent waiting for
a core does not inflate); on a GPU the timer is the wall clock, so that the device's work
counts.

Goals (issue 15), on the CPU: at most 1 us added per small call over NumPy for every operation
listed; sorting values at most 1.2x NumPy's default sort on large arrays; the other operations
at most 1.1x NumPy on large arrays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _array_ops import OPS  # noqa: E402
from _peers_small_ops import PEERS, Library, Skipped, cupy_library, numpy_library  # noqa: E402

import qdarray as qd  # noqa: E402

GOAL_SMALL_US = 1.0
GOAL_SORT = 1.2
GOAL_LARGE = 1.1

Timer = Callable[[], float]


def batch(call: Callable[[], Any], sync: Callable[[Any], None], number: int,
          timer: Timer) -> float:
    """Seconds per call of `number` calls, waiting for the device after the last."""
    start = timer()
    result = None
    for _ in range(number):
        result = call()
    sync(result)
    return (timer() - start) / number


def calibrate(call: Callable[[], Any], sync: Callable[[Any], None], budget: float) -> int:
    """Calls per batch so that a batch lasts about `budget` seconds (also the warm-up)."""
    number = 1
    while True:
        if batch(call, sync, number, time.perf_counter) * number >= budget / 4:
            return max(1, int(number * 4))
        number *= 4


def paired(one: tuple[Callable[[], Any], Callable[[Any], None]],
           base: tuple[Callable[[], Any], Callable[[Any], None]],
           repeat: int, budget: float, timer: Timer) -> list[tuple[float, float]]:
    """`repeat` pairs of (library, baseline) seconds per call, each pair timed back to back,
    so both see the same background load."""
    number = calibrate(*base, budget)
    calibrate(*one, budget)
    return [(batch(*one, number, timer), batch(*base, number, timer)) for _ in range(repeat)]


def operands(lib: Library, size: int, dtype: str) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    a = rng.random(size, dtype=np.float64).astype(dtype)
    b = rng.random(size, dtype=np.float64).astype(dtype)
    return lib.convert(a), lib.convert(b)


def qdarray_library(device: str) -> Library:
    dev = qd.Device(device)
    calls = {name: q for name, (q, _) in OPS.items()}
    return Library(f"qdarray {qd.__version__}", calls,
                   lambda a: qd.asarray(a.copy(), device=device),
                   lambda r: dev.backend.synchronize(dev))


def compare(lib: Library, base: Library, name: str, size: int, dtype: str, repeat: int,
            budget: float, timer: Timer) -> tuple[float, float]:
    """(median added seconds per call, median time ratio) of `lib` over `base`."""
    x, y = operands(lib, size, dtype)
    a, b = operands(base, size, dtype)
    f, g = lib.calls[name], base.calls[name]
    pairs = paired((lambda: f(x, y), lib.sync), (lambda: g(a, b), base.sync), repeat,
                   budget, timer)
    return (statistics.median(q - n for q, n in pairs),
            statistics.median(q / n for q, n in pairs))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=16, help="elements of the small arrays")
    parser.add_argument("--large", type=int, nargs="*", default=[1_000_000, 10_000_000],
                        help="elements of the large arrays")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--ops", nargs="*", default=list(OPS), choices=list(OPS))
    parser.add_argument("--device", default="cpu", help="cpu, or cuda:N (against CuPy)")
    parser.add_argument("--peers", nargs="*", default=["torch", "jax", "array-api-strict"],
                        choices=list(PEERS))
    parser.add_argument("--timer", choices=("cpu", "wall"), default=None,
                        help="process CPU time (the default on the CPU) or the wall clock")
    args = parser.parse_args(argv)

    gpu = args.device != "cpu"
    timer: Timer = time.perf_counter if (args.timer or ("wall" if gpu else "cpu")) == "wall" \
        else time.process_time
    base = cupy_library(args.device) if gpu else numpy_library()
    libraries = [qdarray_library(args.device)]
    for peer in args.peers:
        try:
            lib = PEERS[peer](args.device)
        except Skipped as exc:
            print(f"skipped {peer}: {exc}")
            continue
        if lib.name != base.name:
            libraries.append(lib)

    timer_name = "wall clock" if timer is time.perf_counter else "process CPU time"
    print(f"added us per call over {base.name} on {args.device}, {args.dtype}, "
          f"{args.small} elements ({timer_name}); large: qdarray's time ratio")
    header = f"{'operation':<16}" + "".join(f" {lib.name.split()[0]:>10}" for lib in libraries)
    header += "".join(f" {'x' + format(n, '.0e').replace('+0', ''):>8}" for n in args.large)
    print(header)
    small: dict[str, dict[str, float]] = {lib.name: {} for lib in libraries}
    large: dict[str, dict[int, float]] = {}
    for name in args.ops:
        row = f"{name:<16}"
        for lib in libraries:
            added, _ = compare(lib, base, name, args.small, args.dtype, args.repeat, 0.05,
                               timer)
            small[lib.name][name] = added * 1e6
            row += f" {added * 1e6:>10.2f}"
        large[name] = {}
        for size in args.large:
            _, ratio = compare(libraries[0], base, name, size, args.dtype, args.repeat, 0.1,
                               timer)
            large[name][size] = ratio
            row += f" {ratio:>8.3f}"
        print(row, flush=True)

    ours = small[libraries[0].name]
    print(f"qdarray: {min(ours.values()):+.2f} to {max(ours.values()):+.2f} us per small call "
          f"(goal <= {GOAL_SMALL_US:g} on the CPU)")
    for lib in libraries[1:]:
        theirs = small[lib.name]
        print(f"{lib.name}: {min(theirs.values()):+.2f} to {max(theirs.values()):+.2f} us")
    if args.large:
        if "sort" in large:
            print(f"sort on large arrays: {max(large['sort'].values()):.3f}x "
                  f"(goal <= {GOAL_SORT:g})")
        rest = [r for name, by_size in large.items() if name != "sort"
                for r in by_size.values()]
        if rest:
            print(f"other operations on large arrays: up to {max(rest):.3f}x "
                  f"(goal <= {GOAL_LARGE:g})")
    return {"small_us": small, "large_ratio": large, "baseline": base.name}


if __name__ == "__main__":
    main()
