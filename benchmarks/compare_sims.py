"""The DiffTaichi programs side by side: qdarray's ports (examples/) against the originals under
Taichi 1.7.4, forward + backward per optimisation iteration, as ratios.

    python benchmarks/compare_sims.py --checkout DIFFTAICHI [--peer-python PYTHON]
        [--programs NAME ...] [--smoke-peers jax jax_scan torch]
        [--device cpu|cuda:0] [--threads 1 2] [--runs 3] [--iters 5] [--warmup 2] [--steps N]
    python benchmarks/compare_sims.py --profile [--programs NAME] [--device cpu] [--steps N]

DIFFTAICHI is a checkout of https://github.com/taichi-dev/difftaichi at commit
9f4ee522a0a01e6b1aae1d3551c7fd1f6ed56081 (the originals run unchanged but for the GUI, the
command line and `ti.init`'s architecture and thread count: _taichi_sims.py); PYTHON is an
interpreter with taichi==1.7.4 and NumPy (default /work/peers/bin/python, or $PEER_PYTHON).

Each measurement is a fresh process per side: qdarray with NUMBA_NUM_THREADS=N, Taichi with
`ti.init(arch=ti.cpu, cpu_max_num_threads=N)` (on `--device cuda:0`, arch=ti.cuda and one
run per thread count is meaningless: the threads option is then ignored). Both start from the
same initial weights (the original's initialisation, written to a file both read), run
`warmup` iterations (compiling), then `iters` timed iterations of forward + backward (the
update between them is not timed); a run's figure is the median of its iterations. The
report gives each side's median over `runs` runs with the spread (min-max), the ratio
qdarray / Taichi, the loss of the first iteration on both sides and the relative error of the
first iteration's gradient of the loss by the controller's parameters
(|g_qd - g_ti| / |g_ti| over all of them).

smoke has three more sides on the CPU, in the peers' Python (jax[cpu] and torch):
smoke_jax.py's structure (`jax`: a jitted step, a jitted vjp per step backwards), one
`jax.jit(jax.value_and_grad(...))` over a `lax.scan` (`jax_scan`), and smoke_pytorch.py's
autograd (`torch`), each computing smoke_taichi.py's function (_smoke_peers.py says what it
changes in theirs); JAX on one thread runs with XLA's single-threaded Eigen, PyTorch with
torch.set_num_threads(N). Its parameter is the initial velocity v[0] (zero, as the original
starts), its target the original's taichi.png on the grid.

`--profile` (qdarray only, no checkout needed) splits qdarray's iteration into its parts: a
forward outside a tape, the same forward recorded on a tape, and the reverse, each per launch
(median of 3), then one forward + backward under cProfile: the share of the time spent inside
the compiled kernels (the numba entry functions of the generated modules) and the functions
that take the rest.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PINNED = "9f4ee522a0a01e6b1aae1d3551c7fd1f6ed56081"


def norm_clip(clip: float, eps: float, cap: float) -> Any:
    """The originals' update: a step of `clip` along the gradient, at most `cap` times it."""
    return lambda grads: min(cap, clip / (sum(float(np.sum(g * g))
                                              for g in grads.values()) ** 0.5 + eps))


def _initialised(sim: Any) -> Any:
    sim.init_weights()
    return sim


def _electric(m: Any, steps: int, device: str, target: Any) -> Any:
    """electric with the original's weights: its 40 draws of `tasks` at import come first;
    a task (qdarray_worker draws one per iteration, as the Taichi side does)."""
    sim = m.Electric(steps, device)
    rng = random.Random(0)
    for _ in range(40):
        rng.random()
    sim.init_weights(rng)
    sim.initialize(random.Random(0))
    return sim


# One dict per program: how to build qdarray's port with the original's initial parameters
# (`steps` 0: the default, the original's; smoke's target from a .npy file), what the report
# says of it, the launches of one forward, the original's update between iterations (a step
# scale from the gradients), and what changes before each iteration ("task": electric draws
# a new goal from random.seed(iteration), as the Taichi side does).
PROGRAMS: dict[str, dict[str, Any]] = {
    "mass_spring": {
        "build": lambda m, steps, device, target: _initialised(
            m.MassSpring(2, steps, device, toi=True)),
        "steps": 2048 // 3, "what": "robot 2, {} steps, time of impact",
        "launches": lambda steps: 5 * (steps - 1) + 1,
        "scale": norm_clip(0.2, 1e-6, float("inf"))},
    "diffmpm": {
        "build": lambda m, steps, device, target: _initialised(m.DiffMPM(steps, device)),
        "steps": 1024, "what": "2,976 particles, 128x128 grid, {} steps",
        "launches": lambda steps: 5 * (steps - 1) + 2,
        "scale": lambda grads: 0.1},
    "rigid_body": {
        "build": lambda m, steps, device, target: _initialised(
            m.RigidBody(2, steps, device, toi=True)),
        "steps": 2048, "what": "robotLeg, {} steps, time of impact",
        "launches": lambda steps: 5 * (steps - 1) + 2,
        "scale": norm_clip(0.2, 1e-4, 1.0)},
    "electric": {
        "build": _electric,
        "steps": 512, "what": "8 electrodes, 64 hidden units, {} steps",
        "launches": lambda steps: 4 * (steps - 1),
        "scale": lambda grads: 2e-2,
        "task": lambda sim, it: sim.initialize(random.Random(it))},
    "smoke": {
        "build": lambda m, steps, device, target: m.Smoke(
            128, steps, device, None if target is None else np.load(target)),
        "steps": 100, "what": "128x128 grid, 10 pressure iterations, {} steps",
        "launches": lambda steps: 14 * (steps - 1) + 1,
        "scale": lambda grads: 400},
}


def program(name: str, steps: int, device: str = "cpu", target: str | None = None) -> Any:
    """qdarray's port of `name` at `steps` steps (0: the original's), its parameters
    initialised as the original initialises them (smoke: v[0] = 0, the target from the
    .npy `target`)."""
    sys.path.insert(0, str(ROOT / "examples"))
    entry = PROGRAMS[name]
    return entry["build"](importlib.import_module(name), steps or entry["steps"], device,
                          target)


def params_of(sim: Any) -> dict[str, np.ndarray]:
    return sim.weights() if hasattr(sim, "nn") else sim.params()


def set_params_of(sim: Any, values: dict[str, np.ndarray]) -> None:
    (sim.set_weights if hasattr(sim, "nn") else sim.set_params)(values)


def qdarray_worker(args: argparse.Namespace) -> None:
    """One qdarray measurement (this process was started with NUMBA_NUM_THREADS set): the
    original's update between iterations (PROGRAMS' "scale"), not timed."""
    import time

    entry = PROGRAMS[args.programs[0]]
    sim = program(args.programs[0], args.steps, args.device, args.target)
    init = np.load(args.weights)
    set_params_of(sim, {k: init[k] for k in init.files})
    times, losses, grads0 = [], [], {}
    for it in range(args.warmup + args.iters):
        if "task" in entry:
            entry["task"](sim, it)
        start = time.perf_counter()
        losses.append(sim.forward_backward())   # float(loss) waits for the device
        elapsed = time.perf_counter() - start
        grads = sim.grads()
        if it == 0:
            grads0 = grads
        if it >= args.warmup:
            times.append(elapsed)
        scale = entry["scale"](grads)
        set_params_of(sim, {k: w - scale * grads[k] for k, w in params_of(sim).items()})
    np.savez(args.out, times=np.array(times), losses=np.array(losses),
             **{f"grad_{k}": g for k, g in grads0.items()})

def profile(args: argparse.Namespace) -> None:
    """Where qdarray's time goes: host cost per launch (plain, recorded, reverse) against
    the time inside compiled kernels."""
    import cProfile
    import io
    import pstats
    import time

    import qdarray as qd

    name = args.programs[0]
    steps = args.steps or PROGRAMS[name]["steps"]
    sim = program(name, steps, args.device)
    for _ in range(2):
        sim.step()
    launches = PROGRAMS[name]["launches"](steps)
    plain, recorded, reverse = [], [], []
    clear = getattr(sim, "clear", lambda: None)  # the increments mass_spring, rigid_body add
    for _ in range(3):
        clear()
        t0 = time.perf_counter()
        sim.forward()
        float(sim.loss[0])
        plain.append(time.perf_counter() - t0)
        clear()
        t0 = time.perf_counter()
        with qd.ad.Tape(loss=sim.loss, zero_grads=True):
            sim.forward()
            float(qd.ad.stop_gradient(sim.loss)[0])  # waits for the device
            t1 = time.perf_counter()
        sim.grads()
        t2 = time.perf_counter()
        recorded.append(t1 - t0)
        reverse.append(t2 - t1)
    print(f"qdarray {name}, {steps} steps ({launches} launches) on {args.device}, "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all')}:")
    for part, ts in (("forward, no tape", plain), ("forward, recorded", recorded),
                     ("reverse", reverse)):
        t = float(np.median(ts))
        print(f"  {part:18} {t * 1e3:8.1f} ms  {t / launches * 1e6:7.1f} us per launch")
    pr = cProfile.Profile()
    pr.enable()
    sim.forward_backward()
    pr.disable()
    stats = pstats.Stats(pr)
    entries = stats.stats  # type: ignore[attr-defined]
    inside = sum(v[2] for k, v in entries.items() if "qdarray_kernel_" in k[0])
    total = sum(v[2] for v in entries.values())
    print(f"  cProfile of one forward + backward: {total * 1e3:.0f} ms, of which "
          f"{inside * 1e3:.0f} ms ({inside / total:.0%}) inside compiled kernels; the most "
          "time of their own:")
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(30)
    print("\n".join(out.getvalue().splitlines()[6:]))


def initial_weights(name: str, path: str, steps: int) -> None:
    """The original's initialisation, saved for both sides."""
    np.savez(path, **params_of(program(name, steps)))


def measure(name: str, side: str, args: argparse.Namespace, threads: int, weights: str,
            tmp: str) -> dict:
    out = os.path.join(tmp, f"{name}_{side}_{threads}.npz")
    common = ["--weights", weights, "--iters", str(args.iters), "--warmup", str(args.warmup),
              "--steps", str(args.steps), "--out", out]
    if name == "smoke":
        common += ["--target", os.path.join(tmp, "target.npy")]
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if side == "qdarray":
        cmd = [sys.executable, __file__, "--worker", "--device", args.device,
               "--programs", name] + common
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    elif side == "taichi":
        arch = "cpu" if args.device == "cpu" else "cuda"
        cmd = [args.peer_python, str(ROOT / "benchmarks" / "_taichi_sims.py"), "--checkout",
               args.checkout, "--program", name, "--arch", arch, "--threads",
               str(threads)] + common
    else:  # smoke's JAX and PyTorch sides (CPU)
        cmd = [args.peer_python, str(ROOT / "benchmarks" / "_smoke_peers.py"), "--framework",
               side, "--threads", str(threads)] + common
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE if side != "qdarray" else None)
    data = np.load(out)
    return {k: data[k] for k in data.files}


def relative_error(a: dict, b: dict) -> float:
    keys = [k for k in a if k.startswith("grad_")]
    num = sum(float(np.sum((a[k] - b[k]) ** 2)) for k in keys)
    den = sum(float(np.sum(b[k] ** 2)) for k in keys)
    return (num / den) ** 0.5


def compare(name: str, args: argparse.Namespace, threads: list[int]) -> dict[str, dict]:
    """Per thread count: each side's runs (alternating, so load falls on all alike), and
    against each peer its times, ratios, first loss and first gradient's relative error."""
    peers = ["taichi"] + (args.smoke_peers if name == "smoke" and args.device == "cpu" else [])
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "init.npz")
        initial_weights(name, weights, args.steps)
        if name == "smoke":  # the original's target: taichi.png on the grid (PIL, peers' side)
            subprocess.run([args.peer_python, str(ROOT / "benchmarks" / "_smoke_peers.py"),
                            "--make-target", str(Path(args.checkout) / "examples" / "taichi.png"),
                            "--out", os.path.join(tmp, "target.npy")], check=True)
        for n in threads:
            runs: dict[str, list[dict]] = {side: [] for side in ["qdarray"] + peers}
            for _ in range(args.runs):
                for side in runs:
                    runs[side].append(measure(name, side, args, n, weights, tmp))
            t = {side: [float(np.median(r["times"])) for r in rs] for side, rs in runs.items()}
            label = f"{n} thread{'s' * (n != 1)}" if n else args.device
            row: dict[str, Any] = {"qdarray_s": t["qdarray"]}
            print(f"  {label}: qdarray {fmt(t['qdarray'])}", flush=True)
            for peer in peers:
                err = relative_error(runs["qdarray"][0], runs[peer][0])
                per_param = {k[5:]: relative_error({k: runs["qdarray"][0][k]},
                                                   {k: runs[peer][0][k]})
                             for k in runs[peer][0] if k.startswith("grad_")}
                ratios = [q / p for q, p in zip(t["qdarray"], t[peer], strict=True)]
                row[peer] = {"s": t[peer], "ratios": ratios,
                             "ratio_of_medians": float(np.median(t["qdarray"])
                                                       / np.median(t[peer])),
                             "loss0": [float(runs["qdarray"][0]["losses"][0]),
                                       float(runs[peer][0]["losses"][0])],
                             "grad_relative_error": err,
                             "grad_relative_error_by_param": per_param}
                print(f"    {peer}: {fmt(t[peer])}; qdarray / {peer} "
                      f"{row[peer]['ratio_of_medians']:.2f}x (per run "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}); first loss qdarray "
                      f"{row[peer]['loss0'][0]:.7f}, {peer} {row[peer]['loss0'][1]:.7f}; "
                      f"gradient relative error {err:.1e}"
                      + (" (" + ", ".join(f"{k} {e:.1e}" for k, e in per_param.items()) + ")"
                         if len(per_param) > 1 else ""), flush=True)
            results[label] = row
    return results


def fmt(times: list[float]) -> str:
    """The median of a side's runs and their spread, in ms."""
    return (f"{np.median(times) * 1e3:.1f} ms ({min(times) * 1e3:.1f}-"
            f"{max(times) * 1e3:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", help=f"a DiffTaichi checkout at {PINNED[:10]}")
    parser.add_argument("--peer-python", default=os.environ.get("PEER_PYTHON",
                                                                 "/work/peers/bin/python"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--programs", nargs="*", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--smoke-peers", nargs="*", default=["jax", "jax_scan", "torch"],
                        choices=["jax", "jax_scan", "torch"],
                        help="smoke's JAX and PyTorch sides besides Taichi (CPU only)")
    parser.add_argument("--steps", type=int, default=0, help="0: the originals' (" + ", ".join(
        f"{name} {entry['steps']}" for name, entry in PROGRAMS.items()) + ")")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--profile", action="store_true",
                        help="where qdarray's time goes (qdarray only)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        qdarray_worker(args)
        return
    if args.profile:
        profile(args)
        return
    if not args.checkout or not (Path(args.checkout) / "examples" / "mass_spring.py").exists():
        parser.error("--checkout must be a DiffTaichi checkout (it has examples/mass_spring.py)")
    threads = args.threads if args.device == "cpu" else [0]
    results: dict[str, dict] = {}
    for name in args.programs:
        steps = args.steps or PROGRAMS[name]["steps"]
        print(f"{name} ({PROGRAMS[name]['what'].format(steps)}), forward + backward per "
              "iteration, median of "
              f"{args.iters} after {args.warmup} warm-up; {args.runs} runs on {args.device}")
        results[name] = compare(name, args, threads)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
