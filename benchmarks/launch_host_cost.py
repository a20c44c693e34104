"""Host time of a small kernel launch: plain, recorded on a tape, and its reverse.

    python benchmarks/launch_host_cost.py [--device cpu|cuda:0] [--steps 512] [--runs 5]
                                          [--json PATH]

Two 16-element kernels, launched `steps` times in a row as a simulation launches them:

- `step`: time-indexed state, `x[t + 1, i] = x[t, i] * 0.99 + 0.01` (one array, a read row
  and a written row per launch);
- `axpy`: `y[i] += a * x[i]` (two arrays, the written one read too).

For each: microseconds per launch of the sequence without a tape (plain), the same sequence
recorded on a `qd.ad.Tape` (recorded) and the tape's reverse (reverse, from `backward`'s start
to its end, divided by the launches), each the median of `runs` repeats; and the ratios
recorded / plain and reverse / plain (the goals: at most 1.5x and 2x). On a GPU the launches
are not synchronised one by one: the time is the host's, with one synchronisation at the end
of a sequence.
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

import qdarray as qd  # noqa: E402

N = 16


@qd.kernel
def step(x: qd.Array[qd.float32, 2], t: qd.int32):
    for i in range(x.shape[1]):
        x[t + 1, i] = x[t, i] * 0.99 + 0.01


@qd.kernel
def axpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] += a * x[i]


def sync(x: Any) -> None:
    float(qd.ad.stop_gradient(x).reshape(-1)[0])  # waits for the device


def workloads(device: str, steps: int) -> dict[str, tuple[Any, Any, Any]]:
    """name -> (forward(), the array whose sum is the loss, the arrays with gradients)."""
    x = qd.zeros((steps + 1, N), dtype=qd.float32, device=device, requires_grad=True)

    def run_step() -> None:
        for t in range(steps):
            step(x, t)

    xs = qd.ones(N, dtype=qd.float32, device=device, requires_grad=True)
    ys = qd.zeros(N, dtype=qd.float32, device=device, requires_grad=True)

    def run_axpy() -> None:
        for _ in range(steps):
            axpy(0.5, xs, ys)

    return {"step": (run_step, x, (x,)), "axpy": (run_axpy, ys, (xs, ys))}


def check(name: str, grads: Any, steps: int) -> None:
    """The gradients of sum(out) after one measurement, against their closed forms (step:
    d/dx[0] = 0.99^0 + ... + 0.99^steps, and 0 for the rows the launches overwrote, whose
    values before the tape did not count; axpy: d/dx = 0.5 steps, d/dy = 1)."""
    got = [np.asarray(g.grad.to_device("cpu")) for g in grads]
    if name == "step":
        want = [np.zeros((steps + 1, N))]
        want[0][0] = np.sum(0.99 ** np.arange(steps + 1))
    else:
        want = [np.full(N, 0.5 * steps), np.ones(N)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, err_msg=f"{name}: wrong gradient")


def measure(forward: Any, out: Any, grads: Any, steps: int) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    forward()
    sync(out)
    plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    with qd.ad.Tape(zero_grads=True) as tape:
        forward()
        loss = qd.sum(out)
        sync(out)
    recorded = time.perf_counter() - t0
    t0 = time.perf_counter()
    tape.backward(loss)
    sync(grads[0].grad)
    reverse = time.perf_counter() - t0
    return plain / steps, recorded / steps, reverse / steps


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = {}
    print(f"host microseconds per launch of a {N}-element kernel on {args.device}, "
          f"{args.steps} launches, median of {args.runs} (min-max):")
    for name, (forward, out, grads) in workloads(args.device, args.steps).items():
        measure(forward, out, grads, args.steps)  # compiles
        check(name, grads, args.steps)
        rows = np.array([measure(forward, out, grads, args.steps) for _ in range(args.runs)])
        med = np.median(rows, axis=0) * 1e6
        lo, hi = rows.min(axis=0) * 1e6, rows.max(axis=0) * 1e6
        parts = ", ".join(f"{part} {m:.1f} ({a:.1f}-{b:.1f})" for part, m, a, b in
                          zip(("plain", "recorded", "reverse"), med, lo, hi, strict=True))
        print(f"  {name:5s} {parts}; recorded/plain {med[1] / med[0]:.2f}x, "
              f"reverse/plain {med[2] / med[0]:.2f}x")
        results[name] = {"plain_us": float(med[0]), "recorded_us": float(med[1]),
                         "reverse_us": float(med[2]),
                         "recorded_over_plain": float(med[1] / med[0]),
                         "reverse_over_plain": float(med[2] / med[0])}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
