"""Reverse mode over whole programs: what recording costs, and a mixed program against JAX and
PyTorch, measured in one run.

    python benchmarks/compare_tape.py [--n N] [--repeat R] [--device DEV] [--only overhead|mixed]

1. Recording overhead per namespace operation on small arrays (16 float32 elements, a 4 x 4
   matrix): the same operation on arrays without gradients outside a tape, and on arrays with
   gradients inside a `qd.ad.Tape` (recorded with what its VJP keeps), in microseconds of
   this process's CPU time per call (best of blocks of 2000 calls; other processes' load is
   not counted); the difference is what recording adds (goal: at most 2 us).
2. The mixed program: namespace preprocessing (standardize, tanh), the dynamic-loop kernel
   `v = v - 0.1*v*v + 0.01` repeated a[i] times (a[i] uniform in [0, 64)), and a reduction
   (sum of squares plus a vector norm), float32, N = 1e6, value and gradient with respect to
   the raw data and two weights. qdarray: `qd.ad.value_and_grad` (the tape records the
   namespace operations and the kernel launch), and the same under `qd.jit`. JAX:
   `jit(value_and_grad)` of the masked-loop formulation (64 steps, as JAX cannot
   differentiate a loop whose trip count is data).
   PyTorch: autograd over the same masked loop. Each repeat runs every library once, in
   rotating order; a ratio is the median of the per-repeat ratios qdarray / peer (below 1,
   qdarray is faster). Gradients are compared with qdarray's float64 gradient.

Missing peers are reported as skipped. `--device cuda:0` runs qdarray, JAX and PyTorch on a
GPU (benchmarks/gpu/README.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402

import qdarray as qd  # noqa: E402

TRIPS = 64


# -- 1. recording overhead --------------------------------------------------------------------


# CPU time of this process: on a shared machine, time other processes take is not counted.
_clock = time.process_time


def _per_call(f: Callable[[], Any], calls: int, repeat: int) -> float:
    f()
    best = float("inf")
    for _ in range(repeat):
        t0 = _clock()
        for _ in range(calls):
            f()
        best = min(best, _clock() - t0)
    return best / calls


def _per_call_taped(f: Callable[[], Any], calls: int, repeat: int) -> float:
    """Per call inside a tape, a new tape for each block of calls (records pile up in it)."""
    f()
    best = float("inf")
    for _ in range(repeat):
        with qd.ad.Tape():
            t0 = _clock()
            for _ in range(calls):
                f()
            best = min(best, _clock() - t0)
    return best / calls


def overhead(repeat: int, calls: int = 2000) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(0)
    x_np, y_np, m_np = (rng.uniform(0.5, 1.5, 16).astype(np.float32),
                        rng.uniform(0.5, 1.5, 16).astype(np.float32),
                        rng.uniform(0.5, 1.5, (4, 4)).astype(np.float32))
    plain = [qd.asarray(v) for v in (x_np, y_np, m_np)]
    tracked = [qd.asarray(v, requires_grad=True) for v in (x_np, y_np, m_np)]
    c = qd.asarray(x_np > 1.0)
    ops: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
        ("x + y", lambda x, y, m: x + y),
        ("x * y", lambda x, y, m: x * y),
        ("x * 2.0", lambda x, y, m: x * 2.0),
        ("qd.sin(x)", lambda x, y, m: qd.sin(x)),
        ("qd.exp(x)", lambda x, y, m: qd.exp(x)),
        ("qd.sum(x)", lambda x, y, m: qd.sum(x)),
        ("qd.max(x)", lambda x, y, m: qd.max(x)),
        ("m @ m", lambda x, y, m: m @ m),
        ("qd.where(c, x, y)", lambda x, y, m: qd.where(c, x, y)),
        ("qd.concat([x, y])", lambda x, y, m: qd.concat([x, y])),
        ("x[2:9] (a view)", lambda x, y, m: x[2:9]),
        ("qd.reshape(x, (4, 4))", lambda x, y, m: qd.reshape(x, (4, 4))),
    ]
    rows = []
    for name, op in ops:
        t_plain = _per_call(lambda op=op: op(*plain), calls, repeat)
        t_taped = _per_call_taped(lambda op=op: op(*tracked), calls, repeat)
        rows.append((name, t_plain, t_taped))
    return rows


# -- 2. the mixed program ----------------------------------------------------------------------


@qd.kernel
def iterate(x, a, y):  # types from the arguments (float32 or float64, int32)
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[i] = v


def qd_program(raw: Any, w: Any, a: Any, target: Any) -> Any:
    z = (raw - qd.mean(raw)) / qd.std(raw)
    x = qd.tanh(z * w[0] + w[1]) * 0.5 + 0.5
    y = qd.empty_like(x)
    iterate(x, a, y)
    return qd.sum(y * y) + qd.linalg.vector_norm(y - target)


class Skipped(Exception):
    pass


def qd_case(data: dict[str, np.ndarray], device: str,
            jit: bool = False) -> tuple[Callable[[], Any], Any]:
    raw, w, a, t = (qd.asarray(data[k], device=device) for k in ("raw", "w", "a", "t"))
    vg = qd.ad.value_and_grad(qd_program, argnums=(0, 1))
    if jit:
        vg = qd.jit(vg)

    def run() -> Any:
        value, grads = vg(raw, w, a, t)
        float(value)  # waits for the device
        return grads

    def gradient() -> list[np.ndarray]:
        return [np.asarray(g.to_device("cpu")) for g in run()]

    return run, gradient


def qd_jit_case(data: dict[str, np.ndarray], device: str) -> tuple[Callable[[], Any], Any]:
    """The same value and gradient under `qd.jit` (traced by its first call)."""
    return qd_case(data, device, jit=True)


def jax_case(data: dict[str, np.ndarray], device: str) -> tuple[Callable[[], Any], Any]:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as exc:
        raise Skipped(f"jax is not installed ({exc})") from None
    kind = "gpu" if device.startswith("cuda") else "cpu"
    try:
        dev = jax.devices(kind)[0]
    except RuntimeError as exc:
        raise Skipped(f"jax has no {kind} device ({exc})"[:200]) from None
    raw, w, a, t = (jax.device_put(data[k], dev) for k in ("raw", "w", "a", "t"))

    def program(raw: Any, w: Any, a: Any, t: Any) -> Any:
        z = (raw - jnp.mean(raw)) / jnp.std(raw)
        v = jnp.tanh(z * w[0] + w[1]) * 0.5 + 0.5

        def step(k: Any, v: Any) -> Any:
            return jnp.where(k < a, v - 0.1 * v * v + 0.01, v)

        y = jax.lax.fori_loop(0, TRIPS, step, v)
        return jnp.sum(y * y) + jnp.linalg.norm(y - t)

    vg = jax.jit(jax.value_and_grad(program, argnums=(0, 1)))

    def run() -> Any:
        value, grads = vg(raw, w, a, t)
        value.block_until_ready()
        return grads

    return run, lambda: [np.asarray(g) for g in run()]


def torch_case(data: dict[str, np.ndarray], device: str) -> tuple[Callable[[], Any], Any]:
    try:
        import torch
    except ImportError as exc:
        raise Skipped(f"torch is not installed ({exc})") from None
    dev = "cuda" if device.startswith("cuda") else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        raise Skipped("torch has no CUDA device")
    raw = torch.from_numpy(data["raw"].copy()).to(dev).requires_grad_(True)
    w = torch.from_numpy(data["w"].copy()).to(dev).requires_grad_(True)
    a, t = (torch.from_numpy(data[k].copy()).to(dev) for k in ("a", "t"))

    def run() -> Any:
        raw.grad = None
        w.grad = None
        z = (raw - raw.mean()) / raw.std(correction=0)
        v = torch.tanh(z * w[0] + w[1]) * 0.5 + 0.5
        for k in range(TRIPS):
            v = torch.where(a > k, v - 0.1 * v * v + 0.01, v)
        loss = (v * v).sum() + torch.linalg.vector_norm(v - t)
        loss.backward()
        if dev == "cuda":
            torch.cuda.synchronize()
        return raw.grad, w.grad

    return run, lambda: [g.cpu().numpy().copy() for g in run()]


def mixed(n: int, repeat: int, device: str) -> dict[str, Any]:
    """Time the mixed program with every library present, print the table, and return the
    median times, the gradient errors, the ratios and the skipped peers."""
    rng = np.random.default_rng(7)
    data = {"raw": rng.normal(size=n).astype(np.float32),
            "w": np.array([0.8, -0.1], dtype=np.float32),
            "a": rng.integers(0, TRIPS, n).astype(np.int32),
            "t": rng.uniform(0.2, 0.6, n).astype(np.float32)}
    ref = qd.ad.grad(qd_program, argnums=(0, 1))(
        *(qd.asarray(data[k].astype(np.float64) if k != "a" else data[k], device="cpu")
          for k in ("raw", "w", "a", "t")))
    ref_np = [np.asarray(g) for g in ref]
    cases: dict[str, tuple[Callable[[], Any], Any]] = {}
    skipped: dict[str, str] = {}
    for name, make in (("qdarray", qd_case), ("qd.jit", qd_jit_case), ("jax", jax_case),
                       ("torch", torch_case)):
        try:
            cases[name] = make(data, device)
        except Skipped as exc:
            skipped[name] = str(exc)
    errors = {}
    for name, (_, gradient) in cases.items():
        got = gradient()
        errors[name] = max(float(np.max(np.abs(g - r))) / float(np.max(np.abs(r)))
                           for g, r in zip(got, ref_np, strict=True))
    names = list(cases)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            time.sleep(0.05)
            t0 = time.perf_counter()
            cases[name][0]()
            times[name].append(time.perf_counter() - t0)
    print(f"\nmixed program, N = {n:.0e} float32, a[i] in [0, {TRIPS}), on {device}, "
          f"median of {repeat} repeats:")
    for name in names:
        t = sorted(times[name])[len(times[name]) // 2]
        line = f"  {name:8s} {t * 1e3:9.2f} ms   gradient error {errors[name]:.1e}"
        for mine in ("qdarray", "qd.jit"):
            if name in ("qdarray", "qd.jit") or mine not in times:
                continue
            ratios = sorted(q / p for q, p in zip(times[mine], times[name], strict=True))
            quart = (ratios[3 * len(ratios) // 4] - ratios[len(ratios) // 4]) / 2
            line += f"   {mine} / {name} = {ratios[len(ratios) // 2]:.2f} ±{quart:.2f}"
        print(line)
    for name, why in skipped.items():
        print(f"  {name:8s} skipped: {why}")
    return {"times": {k: sorted(v)[len(v) // 2] for k, v in times.items()},
            "errors": errors, "skipped": skipped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", choices=("overhead", "mixed"))
    args = parser.parse_args()
    if args.only != "mixed":
        print("recording overhead per operation, 16 float32 elements (4 x 4 for m @ m), CPU "
              "time, best of", args.repeat, "blocks:")
        print(f"  {'operation':24s} {'no tape':>9s} {'recorded':>9s} {'overhead':>9s}")
        for name, plain, taped in overhead(args.repeat):
            print(f"  {name:24s} {plain * 1e6:7.2f}us {taped * 1e6:7.2f}us "
                  f"{(taped - plain) * 1e6:7.2f}us")
    if args.only != "overhead":
        mixed(args.n, args.repeat, args.device)


if __name__ == "__main__":
    main()
