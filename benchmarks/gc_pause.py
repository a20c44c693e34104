"""What the tapes' garbage-collector pause (qdarray/ad/tape/gc_pause.py) saves a simulation.

    NUMBA_NUM_THREADS=1 python benchmarks/gc_pause.py [--programs mass_spring electric]
                                                      [--iters 16] [--steps N]

In one process per program (the DiffTaichi ports of examples/, from the originals' initial
weights as benchmarks/compare_sims.py sets them), after three iterations of warm-up, forward +
backward iterations alternate between `qd.ad.pause_gc(True)` and `qd.ad.pause_gc(False)`, so
both see the same process and machine state; prints the median and the iterations of each.
Run it in several fresh processes for a spread.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import compare_sims  # noqa: E402

import qdarray as qd  # noqa: E402


def alternate(name: str, iters: int, steps: int) -> dict[bool, list[float]]:
    """Seconds of each forward + backward, by whether the pause was on."""
    sim = compare_sims.program(name, steps)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "weights.npz")
        compare_sims.initial_weights(name, path, steps)
        init = np.load(path)
        compare_sims.set_params_of(sim, {k: init[k] for k in init.files})
    task = compare_sims.PROGRAMS[name].get("task")
    was = qd.ad.pause_gc()
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for it in range(3 + iters):
            if task is not None:
                task(sim, it)  # (not timed, as compare_sims.py)
            on = it % 2 == 0
            qd.ad.pause_gc(on)
            start = time.perf_counter()
            sim.forward_backward()
            if it >= 3:
                times[on].append(time.perf_counter() - start)
    finally:
        qd.ad.pause_gc(was)
    return times


def main(argv: list[str] | None = None) -> dict[str, dict[bool, list[float]]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", nargs="*", default=["mass_spring", "electric"],
                        choices=list(compare_sims.PROGRAMS))
    parser.add_argument("--iters", type=int, default=16)
    parser.add_argument("--steps", type=int, default=0, help="0: the originals'")
    args = parser.parse_args(argv)
    out = {}
    for name in args.programs:
        times = out[name] = alternate(name, args.iters, args.steps)
        for on in (True, False):
            ms = [round(t * 1e3) for t in times[on]]
            print(f"{name}: pause {'on ' if on else 'off'} median {np.median(ms):.0f} ms "
                  f"(iterations {ms})")
    return out


if __name__ == "__main__":
    main()
