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


def main() -> None:
    array_maths()
    kernel_maths()


if __name__ == "__main__":
    main()
