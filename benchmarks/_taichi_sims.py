"""DiffTaichi's original programs under Taichi, timed: compare_sims.py runs this file with the
peers' Python (one that has taichi==1.7.4), in a fresh process per measurement.

    python _taichi_sims.py --checkout DIFFTAICHI --program mass_spring --threads 1 \\
        --weights init.npz --iters 5 --warmup 2 --out result.npz

The original's source is executed unchanged; what makes it run here is done around it (see
`load`): `ti.init` takes the architecture and thread count, `ti.GUI` opens no window, and
`main()` is not called. Its own functions then run the optimisation iterations (mass_spring:
`clear()`, `with ti.ad.Tape(loss): forward(visualize=False)`; diffmpm: main()'s set-up, then
`with ti.ad.Tape(loss): forward()`; rigid_body: `clear_states()`, then as mass_spring;
electric: `allocate_fields()`, then per iteration `initialize()` after `random.seed(iteration)`
and `with ti.ad.Tape(loss): forward()`; smoke_taichi.py: init(target), then
`with ti.ad.Tape(loss): forward()`), then the original's update (with NumPy, or smoke's own
apply_grad kernel). Only the forward + backward is timed.
This file imports nothing of qdarray, so it runs in the peers' environment.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import types
from typing import Any

import numpy as np

PARAMS = {"mass_spring": ("weights1", "bias1", "weights2", "bias2"),
          "diffmpm": ("weights", "bias"),
          "rigid_body": ("weights1", "bias1", "weights2", "bias2"),
          "electric": ("weight1", "bias1", "weight2", "bias2"), "smoke": ("v0",)}
NEEDED = {"mass_spring": ("setup_robot", "robots", "forward", "clear", "loss"),
          "diffmpm": ("Scene", "robot", "allocate_fields", "forward", "loss"),
          "rigid_body": ("setup_robot", "robots", "forward", "clear_states", "loss"),
          "electric": ("allocate_fields", "initialize", "forward", "loss"),
          "smoke": ("init", "forward", "apply_grad", "v", "loss")}
FILES = {"smoke": "smoke_taichi"}


def load(checkout: str, program: str, ti_init: dict[str, Any], steps: int) -> dict[str, Any]:
    """The original program's module namespace. Its source runs as it is, under a name other
    than __main__ (so main() does not run), with `ti.init` given the architecture and thread
    count on top of the program's own arguments, `ti.GUI` a stand-in (no window) and the
    command line of the README's `mass_spring.py 2 train` (also `rigid_body.py 2 train`);
    `steps` (when not 0) replaces the program's global of that name before any kernel
    compiles."""
    import taichi as ti

    own_init = ti.init

    def init(*args: Any, **kwargs: Any) -> Any:
        return own_init(*args, **{**kwargs, **ti_init})

    ti.init = init
    ti.GUI = lambda *args, **kwargs: None
    folder = os.path.join(checkout, "examples")
    path = os.path.join(folder, f"{FILES.get(program, program)}.py")
    sys.path.insert(0, folder)
    # smoke_taichi.py imports OpenCV for its windows and to read taichi.png, both in main():
    # the target comes from a file here (compare_sims.py writes it)
    sys.modules.setdefault("cv2", types.ModuleType("cv2"))
    sys.argv = [path, "2", "train"]
    ns: dict[str, Any] = {"__name__": f"difftaichi_{program}"}
    # dont_inherit: not this file's `from __future__ import annotations` (Taichi reads the
    # annotations of kernel parameters as objects)
    code = compile(open(path).read(), path, "exec", dont_inherit=True)
    exec(code, ns)  # noqa: S102 - the original program, as the comparison requires
    missing = [name for name in NEEDED[program] if name not in ns]
    if missing:
        raise SystemExit(f"{path} does not define {missing}: use DiffTaichi at the pinned "
                         "commit (compare_sims.py says which)")
    if steps:
        # smoke: its fields keep the original's 100 steps; forward() and compute_loss read
        # `steps` when they run and compile
        ns["steps"] = steps
        if program == "diffmpm":  # forward(total_steps=steps) took the default at import
            ns["forward"].__defaults__ = (steps,)
    return ns


def mass_spring(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    ns["setup_robot"](*ns["robots"][args.robot]())
    ns["use_toi"] = not args.no_toi  # what optimize(toi=...) sets

    def iteration() -> None:
        ns["clear"]()
        with ns["ti"].ad.Tape(ns["loss"]):
            ns["forward"](visualize=False)

    def update(grads: dict[str, np.ndarray]) -> dict[str, float]:
        total_norm_sqr = sum(float(np.sum(g * g)) for g in grads.values())
        scale = 0.2 / (total_norm_sqr ** 0.5 + 1e-6)
        return {k: scale for k in grads}
    return optimise(ns, args, iteration, update)


def diffmpm(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """main()'s set-up (the robot scene, F = I, actuator ids, particle types), then its
    iterations: `with ti.ad.Tape(loss): forward()` and steps of learning rate 0.1."""
    scene = ns["Scene"]()
    ns["robot"](scene)
    scene.finalize()
    ns["allocate_fields"]()
    n = scene.n_particles
    x = np.zeros((ns["max_steps"], n, 2), np.float32)
    x[0] = np.array(scene.x, np.float32)
    ns["x"].from_numpy(x)
    f = np.zeros((ns["max_steps"], n, 2, 2), np.float32)
    f[0] = np.eye(2, dtype=np.float32)
    ns["F"].from_numpy(f)
    ns["actuator_id"].from_numpy(np.array(scene.actuator_id, np.int32))
    ns["particle_type"].from_numpy(np.array(scene.particle_type, np.int32))

    def iteration() -> None:
        with ns["ti"].ad.Tape(ns["loss"]):
            ns["forward"]()
    return optimise(ns, args, iteration, lambda grads: {k: 0.1 for k in grads})


def rigid_body(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """setup_robot(robots[2]) (the README's `rigid_body.py 2 train`), then optimize()'s
    iterations: clear_states(), `with ti.ad.Tape(loss): forward(visualize=False)`, and its
    update (learning rate 1, the gradient clipped to length 0.2)."""
    ns["setup_robot"](*ns["robots"][args.robot]())
    ns["use_toi"] = not args.no_toi  # what optimize(toi=...) sets

    def iteration() -> None:
        ns["clear_states"]()
        with ns["ti"].ad.Tape(ns["loss"]):
            ns["forward"](visualize=False)

    def update(grads: dict[str, np.ndarray]) -> dict[str, float]:
        total_norm_sqr = sum(float(np.sum(g * g)) for g in grads.values())
        scale = ns["learning_rate"] * min(1.0, 0.2 / (total_norm_sqr ** 0.5 + 1e-4))
        return {k: scale for k in grads}
    return optimise(ns, args, iteration, update)


def electric(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """__main__'s allocate_fields(), then optimize()'s iterations: a new task from the
    original's initialize() (its `random` seeded with the iteration's number, as
    compare_sims.py's qdarray side draws it; not timed), `with ti.ad.Tape(loss): forward()`
    and plain gradient descent with learning rate 2e-2."""
    ns["allocate_fields"]()

    def task(it: int) -> None:
        random.seed(it)
        ns["initialize"]()

    def iteration() -> None:
        with ns["ti"].ad.Tape(ns["loss"]):
            ns["forward"]()
    return optimise(ns, args, iteration, lambda grads: {k: 2e-2 for k in grads}, task)


def smoke(ns: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """main()'s set-up, init(target) (the target from args.target, the original's taichi.png
    resized), then its iterations: `with ti.ad.Tape(loss): forward()` timed, apply_grad()
    (v[0] -= 400 v.grad[0]) not timed. The parameter is v[0], from args.weights."""
    ns["init"](np.load(args.target).astype(np.float64))
    v = ns["v"].to_numpy()
    v[0] = np.load(args.weights)["v0"]
    ns["v"].from_numpy(v)
    times, losses, grad0 = [], [], None
    for it in range(args.warmup + args.iters):
        start = time.perf_counter()
        with ns["ti"].ad.Tape(ns["loss"]):
            ns["forward"]()
        ns["ti"].sync()
        elapsed = time.perf_counter() - start
        losses.append(float(ns["loss"][None]))
        if it == 0:
            grad0 = ns["v"].grad.to_numpy()[0].astype(np.float64)
        if it >= args.warmup:
            times.append(elapsed)
        ns["apply_grad"]()
    return {"times": np.array(times), "losses": np.array(losses), "grad_v0": grad0}


def optimise(ns: dict[str, Any], args: argparse.Namespace, iteration: Any,
             update: Any, before: Any = None) -> dict[str, Any]:
    """Timed iterations from the weights in args.weights: `before(it)` (not timed), forward +
    backward timed, then each parameter less its step size times its gradient (not timed)."""
    params = PARAMS[args.program]
    init = np.load(args.weights)
    for k in params:
        ns[k].from_numpy(init[k].astype(np.float32))
    times, losses, grads0 = [], [], {}
    for it in range(args.warmup + args.iters):
        if before is not None:
            before(it)
        start = time.perf_counter()
        iteration()
        ns["ti"].sync()
        elapsed = time.perf_counter() - start
        losses.append(float(ns["loss"][None]))
        grads = {k: ns[k].grad.to_numpy().astype(np.float64) for k in params}
        if it == 0:
            grads0 = grads
        if it >= args.warmup:
            times.append(elapsed)
        scale = update(grads)
        for k in params:
            ns[k].from_numpy((ns[k].to_numpy() - scale[k] * grads[k]).astype(np.float32))
    return {"times": np.array(times), "losses": np.array(losses),
            **{f"grad_{k}": g for k, g in grads0.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", required=True)
    parser.add_argument("--program", default="mass_spring", choices=sorted(PARAMS))
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--robot", type=int, default=2)
    parser.add_argument("--no-toi", action="store_true")
    parser.add_argument("--steps", type=int, default=0, help="0: the original's")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--target", help="smoke: the target, a .npy of the grid's shape")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import taichi as ti

    ti_init: dict[str, Any] = {"arch": getattr(ti, args.arch), "log_level": ti.WARN}
    if args.arch == "cpu":
        ti_init["cpu_max_num_threads"] = args.threads
    ns = load(args.checkout, args.program, ti_init, args.steps)
    result = {"mass_spring": mass_spring, "diffmpm": diffmpm,
              "rigid_body": rigid_body, "electric": electric, "smoke": smoke}[args.program](
                  ns, args)
    np.savez(args.out, version=".".join(map(str, ti.__version__)), **result)


if __name__ == "__main__":
    main()
