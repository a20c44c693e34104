"""A short tour of qdarray on the default device; `python3 dev.py demo` runs it."""

from __future__ import annotations

import numpy as np

import qdarray as qd


def array_maths() -> None:
    x = qd.asarray(np.linspace(0.0, 1.0, 1_000_000), dtype=qd.float32)
    y = x * 2 + 1
    print(f"arrays: y = 2x + 1 over {x.size:,} float32 values on {y.device}; "
          f"y[-1] = {float(y[-1]):.3f}, dtype {y.dtype}")


@qd.kernel
def smooth(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1], total: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):                     # the parallel loop: one thread per i
        lo = max(i - 1, 0)
        hi = min(i + 1, x.shape[0] - 1)
        y[i] = (x[lo] + x[i] + x[hi]) / 3.0
        total[0] += y[i]                            # atomic: many threads add into one element


def kernel_maths() -> None:
    x = qd.asarray(np.sin(np.linspace(0.0, 10.0, 1_000_000)), dtype=qd.float32)
    y = qd.empty_like(x)
    total = qd.zeros(1, dtype=qd.float64)
    smooth(x, y, total)
    print(f"kernels: a 3-point average over {x.size:,} values in parallel; "
          f"sum = {float(total[0]):.3f} (NumPy: {float(np.asarray(y, np.float64).sum()):.3f})")


@qd.kernel
def relax(x: qd.Array[qd.float32, 1], steps: qd.Array[qd.int32, 1], loss: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(steps[i]):                   # a data-dependent trip count per thread
            v = v - 0.1 * v * v + 0.01              # nonlinear: the reverse needs every v
        loss[0] += v * v


def gradient_maths() -> None:
    n = 100_000
    rng = np.random.default_rng(0)
    steps = qd.asarray(rng.integers(0, 64, n), dtype=qd.int32)
    x = qd.asarray(rng.uniform(0.0, 1.0, n), dtype=qd.float32, requires_grad=True)
    loss = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    with qd.ad.Tape(loss=loss):
        relax(x, steps, loss)
    # Check one thread's gradient against a float64 central difference of the same loop.
    i = int(np.argmax(np.asarray(steps)))

    def f(v: float) -> float:
        for _ in range(int(steps[i])):
            v = v - 0.1 * v * v + 0.01
        return v * v

    xi, h = float(x[i]), 1e-6
    reference = (f(xi + h) - f(xi - h)) / (2 * h)
    print(f"autodiff: d loss / dx through loops of 0..63 steps for {n:,} threads; "
          f"x.grad[{i}] = {float(x.grad[i]):.6f} (finite difference {reference:.6f}), "
          f"adstack sizing {qd.ad.stats()}")


def main() -> None:
    array_maths()
    kernel_maths()
    gradient_maths()


if __name__ == "__main__":
    main()
