"""DiffTaichi's original programs under Taichi, timed: compare_sims.py runs this file with the
peers' Python (one that has taichi==1.7.4), in a fresh process per measurement.

    python _taichi_sims.py --checkout DIFFTAICHI --program mass_spring --threads 1 \\
        --weights init.npz --iters 5 --warmup 2 --out result.npz

The original's source is executed unchanged except for what makes it run here: `ti.init` takes
the architecture and thread count, the GUI window is not opened (`gui = None`), the command
line is not read, and `main()` is not called. Its own functions then run the optimisation
iterations: `clear()`, `with ti.ad.Tape(loss): forward(visualize=False)`, then the original's
update (scale 0.2 / |grad|) applied with NumPy. Only the forward + backward is timed.
This file imports nothing of qdarray, so it runs in the peers' environment.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

# Each (original, replacement) must occur once in the original: a changed checkout fails loudly.
PATCHES = {
    "mass_spring": [
        ("ti.init(default_fp=real)", "ti.init(default_fp=real, **_TI_INIT)"),
        ('gui = ti.GUI("Mass Spring Robot", (512, 512), background_color=0xFFFFFF)', "gui = None"),
        ("options = parser.parse_args()", "options = parser.parse_args(_ARGV)"),
        ("steps = 2048 // 3", "steps = _STEPS or 2048 // 3"),
    ],
}
PARAMS = ("weights1", "bias1", "weights2", "bias2")


def load(checkout: str, program: str, ti_init: dict[str, Any], steps: int) -> dict[str, Any]:
    """The original program's module namespace, its patches applied."""
    folder = os.path.join(checkout, "examples")
    source = open(os.path.join(folder, f"{program}.py")).read()
    for old, new in PATCHES[program]:
        if source.count(old) != 1:
            raise SystemExit(f"{program}.py of {checkout} does not contain {old!r} once: "
                             "use DiffTaichi at the pinned commit (compare_sims.py says which)")
        source = source.replace(old, new)
    sys.path.insert(0, folder)
    ns: dict[str, Any] = {"__name__": f"difftaichi_{program}", "_TI_INIT": ti_init,
                          "_ARGV": ["2", "train"], "_STEPS": steps}
    exec(compile(source, os.path.join(folder, f"{program}.py"), "exec", dont_inherit=True), ns)  # noqa: S102
    return ns


def mass_spring(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    ti = ns["ti"]
    ns["setup_robot"](*ns["robots"][args.robot]())
    ns["use_toi"] = not args.no_toi  # what optimize(toi=...) sets
    init = np.load(args.weights)
    for k in PARAMS:
        ns[k].from_numpy(init[k].astype(np.float32))
    loss = ns["loss"]
    times, losses, grads0 = [], [], {}
    for it in range(args.warmup + args.iters):
        start = time.perf_counter()
        ns["clear"]()
        with ti.ad.Tape(loss):
            ns["forward"](visualize=False)
        ti.sync()
        elapsed = time.perf_counter() - start
        losses.append(float(loss[None]))
        grads = {k: ns[k].grad.to_numpy().astype(np.float64) for k in PARAMS}
        if it == 0:
            grads0 = grads
        if it >= args.warmup:
            times.append(elapsed)
        total_norm_sqr = sum(float(np.sum(g * g)) for g in grads.values())
        scale = 0.2 / (total_norm_sqr ** 0.5 + 1e-6)
        for k in PARAMS:
            ns[k].from_numpy((ns[k].to_numpy() - scale * grads[k]).astype(np.float32))
    return {"times": np.array(times), "losses": np.array(losses),
            **{f"grad_{k}": g for k, g in grads0.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", required=True)
    parser.add_argument("--program", default="mass_spring", choices=sorted(PATCHES))
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--robot", type=int, default=2)
    parser.add_argument("--no-toi", action="store_true")
    parser.add_argument("--steps", type=int, default=0, help="0: the original's")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import taichi as ti

    ti_init: dict[str, Any] = {"arch": getattr(ti, args.arch), "log_level": ti.WARN}
    if args.arch == "cpu":
        ti_init["cpu_max_num_threads"] = args.threads
    ns = load(args.checkout, args.program, ti_init, args.steps)
    result = {"mass_spring": mass_spring}[args.program](ns, args)
    np.savez(args.out, version=".".join(map(str, ti.__version__)), **result)


if __name__ == "__main__":
    main()
