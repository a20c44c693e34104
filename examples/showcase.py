"""A short tour of qdarray on the default device; `python3 dev.py demo` runs it.

Four parts, each printed under a heading that says what it shows: the Array API namespace,
a user kernel, BufferView windows (with debug mode catching an out-of-bounds window on
purpose), and a gradient through loops whose trip counts are data. Set
QDARRAY_DEFAULT_DEVICE=opencl:0 (or vulkan:0, cuda:0) to run it on another device.
"""

from __future__ import annotations

import numpy as np

import qdarray as qd


def heading(number: int, title: str, what: str) -> None:
    print(f"\n{number}. {title}\n   {what}")


def array_maths() -> None:
    heading(1, "Arrays", "NumPy-style code through the Array API namespace, on the default "
            "device.")
    x = qd.asarray(np.linspace(0.0, 1.0, 1_000_000), dtype=qd.float32)
    y = x * 2 + 1
    print(f"   y = 2x + 1 over {x.size:,} float32 values on {y.device} "
          f"({y.device.description}); y[-1] = {float(y[-1]):.3f}, dtype {y.dtype}")


@qd.kernel
def smooth(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1], total: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):                     # the parallel loop: one thread per i
        lo = max(i - 1, 0)
        hi = min(i + 1, x.shape[0] - 1)
        y[i] = (x[lo] + x[i] + x[hi]) / 3.0
        total[0] += y[i]                            # atomic: many threads add into one element


def kernel_maths() -> None:
    heading(2, "Kernels", "@qd.kernel compiles a Python function; its outer loop runs one "
            "thread per index.")
    x = qd.asarray(np.sin(np.linspace(0.0, 10.0, 1_000_000)), dtype=qd.float32)
    y = qd.empty_like(x)
    total = qd.zeros(1, dtype=qd.float64)
    smooth(x, y, total)
    print(f"   a 3-point average over {x.size:,} values in parallel, summed atomically: "
          f"{float(total[0]):.3f} (NumPy's sum of the result: "
          f"{float(np.asarray(y, np.float64).sum()):.3f})")


@qd.func
def normalize(w: qd.BufferView[qd.float32]):
    total = 0.0
    for k in range(w.size):
        total += w[k]
    for k in range(w.size):
        w[k] = w[k] / total


@qd.kernel
def normalize_rows(v: qd.BufferView[qd.float32], row: int, rows: int):
    for r in range(rows):                           # one thread per row of a flat buffer
        normalize(v.subview(r * row, row))          # a kernel-side window, passed to a func


def view_maths() -> None:
    heading(3, "BufferViews", "zero-copy 1-D windows of an array, passed to kernels; debug mode "
            "checks every access.")
    data = qd.asarray(np.arange(1.0, 1_000_001.0), dtype=qd.float32)
    normalize_rows(data[:600_000], 100, 6_000)      # a slice is a zero-copy window
    rows = np.asarray(data[:600_000]).reshape(-1, 100)
    print(f"   {rows.shape[0]:,} rows of data[:600_000] normalized in place, row sums "
          f"{rows.sum(axis=1).min():.4f}..{rows.sum(axis=1).max():.4f}; data[600_000], "
          f"outside the window, is still {float(data[600_000]):,.0f}.")
    print("   Now a deliberate mistake: rows of 6 over a 10-element window, so row 1 would "
          "read past it.\n   Debug mode catches it instead of reading stray memory:")
    qd.set_debug(True)                              # now every access is checked
    try:
        normalize_rows(qd.BufferView(data, 999_990, 10), 6, 2)  # row 1 overhangs the view
        caught = "nothing (this would be a bug)"
    except qd.BufferViewIndexError as err:
        caught = f"qd.BufferViewIndexError: {str(err).splitlines()[0]}"
    finally:
        qd.set_debug(False)
    print(f"   caught as expected -> {caught}")


@qd.kernel
def relax(x: qd.Array[qd.float32, 1], steps: qd.Array[qd.int32, 1], loss: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(steps[i]):                   # a data-dependent trip count per thread
            v = v - 0.1 * v * v + 0.01              # nonlinear: the reverse needs every v
        loss[0] += v * v


def gradient_maths() -> None:
    heading(4, "Autodiff", "reverse mode through a parallel kernel whose loops run a "
            "data-dependent number of steps.")
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
    stats = qd.ad.stats()
    print(f"   d loss / dx for {n:,} threads, each looping 0..63 steps; x.grad[{i}] = "
          f"{float(x.grad[i]):.6f} (a float64 finite difference: {reference:.6f})")
    print(f"   the loop's values were kept on per-thread stacks of {stats['adstack_bytes']:,} "
          f"bytes in all, sized on the device by {stats['max_reducer_dispatches']} "
          f"max-reduction launch(es) and {stats['counting_passes']} counting pass(es); "
          "qd.ad.stats() has the rest.")


def main() -> None:
    array_maths()
    kernel_maths()
    view_maths()
    gradient_maths()
    print("\nNext: README.md, then the guide in docs/ (docs/index.md maps it: arrays, kernels, "
          "buffer views,\nautodiff, devices, NumPy code), or `mkdocs serve` for the site with "
          "the API reference.\nThis demo's source is examples/showcase.py; "
          "`python3 dev.py test` runs the test suite.")


if __name__ == "__main__":
    main()
