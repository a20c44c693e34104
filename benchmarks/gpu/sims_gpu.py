"""The DiffTaichi ports of examples/ on a CUDA GPU: the same values as on the CPU, and the time
of forward + backward per iteration.

    python benchmarks/gpu/sims_gpu.py [--programs NAME ...] [--check-steps 200] [--iters 3]
                                      [--json PATH]

For each program: at `check-steps` steps (at most the original's; fewer leave diffmpm's
gradient at round-off size, about 1e-11 at 24 steps, where no comparison means anything), one
forward + backward on the CPU and on cuda:0 from
the same initial parameters, the loss and the gradient of every parameter compared (relative
1e-4 of each gradient's largest entry: float32 with atomic sums in another order); then, at
the original's size on cuda:0, `iters` timed iterations of forward + backward after one of
warm-up (compiling), the median and spread printed. Each run of this script is one fresh
process; run it three times for a spread across processes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import compare_sims  # noqa: E402


def agree(name: str, steps: int) -> dict[str, Any]:
    cpu = compare_sims.program(name, steps, "cpu")
    gpu = compare_sims.program(name, steps, "cuda:0")
    compare_sims.set_params_of(gpu, compare_sims.params_of(cpu))
    if "task" in compare_sims.PROGRAMS[name]:
        for sim in (cpu, gpu):
            compare_sims.PROGRAMS[name]["task"](sim, 0)
    losses = [sim.forward_backward() for sim in (cpu, gpu)]
    g_cpu, g_gpu = cpu.grads(), gpu.grads()
    worst = max(float(np.max(np.abs(g_gpu[k] - g)) / (np.max(np.abs(g)) or 1.0))
                for k, g in g_cpu.items())
    ok = abs(losses[1] - losses[0]) <= 1e-5 * abs(losses[0]) + 1e-7 and worst <= 1e-4
    return {"loss_cpu": losses[0], "loss_cuda": losses[1], "grad_worst_relative": worst,
            "agree": bool(ok)}


def timed(name: str, iters: int) -> list[float]:
    sim = compare_sims.program(name, 0, "cuda:0")
    sim.forward_backward()
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sim.forward_backward()  # float(loss) waits for the device
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", nargs="*", default=list(compare_sims.PROGRAMS))
    parser.add_argument("--check-steps", type=int, default=200)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {}
    for name in args.programs:
        row: dict[str, Any] = {}
        try:
            steps = min(args.check_steps, compare_sims.PROGRAMS[name]["steps"])
            row.update(agree(name, steps))
            print(f"{name}: {steps} steps, loss cpu {row['loss_cpu']:.7f} cuda "
                  f"{row['loss_cuda']:.7f}, gradients' worst relative difference "
                  f"{row['grad_worst_relative']:.1e}: {'agree' if row['agree'] else 'DIFFER'}",
                  flush=True)
            ts = timed(name, args.iters)
            row["times_s"] = ts
            print(f"  forward + backward at {compare_sims.PROGRAMS[name]['steps']} steps on "
                  f"cuda:0: {np.median(ts) * 1e3:.1f} ms ({min(ts) * 1e3:.1f}-"
                  f"{max(ts) * 1e3:.1f}) over {args.iters} iterations", flush=True)
        except Exception as exc:  # report and go on to the next program
            row["error"] = f"{type(exc).__name__}: {exc}"
            print(f"{name}: {row['error']}", flush=True)
        results[name] = row
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
