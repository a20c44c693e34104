"""Where a replay of compare_tape's jitted value-and-grad spends its time on a GPU.

    python benchmarks/gpu/profile_jit.py [--device cuda:0] [--n 1000000]

Prints the program's steps by kind, the wall time of a call with and without waiting for
the device, and the host functions that take the most time (cProfile) over 50 replays.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from compare_tape import TRIPS, qd_program  # noqa: E402

import qdarray as qd  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    data = [rng.normal(size=args.n).astype(np.float32), np.array([0.8, -0.1], np.float32),
            rng.integers(0, TRIPS, args.n).astype(np.int32),
            rng.uniform(0.2, 0.6, args.n).astype(np.float32)]
    xs = [qd.asarray(d, device=args.device) for d in data]
    vg = qd.jit(qd.ad.value_and_grad(qd_program, argnums=(0, 1)))
    for _ in range(5):
        value, _grads = vg(*xs)
        float(value)
    (program,) = vg.programs.values()
    kinds = collections.Counter(type(s).__name__ for s in program.steps)
    print("steps:", dict(kinds))
    dev = qd.Device(args.device)
    for label, sync in (("with sync", True), ("host only", False)):
        times = []
        for _ in range(30):
            dev.synchronize() if hasattr(dev, "synchronize") else None
            t0 = time.perf_counter()
            value, _grads = vg(*xs)
            if sync:
                float(value)
            times.append(time.perf_counter() - t0)
        float(value)
        times.sort()
        print(f"{label}: median {times[15] * 1e3:.2f} ms, min {times[0] * 1e3:.2f} ms")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(50):
        value, _grads = vg(*xs)
        float(value)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
