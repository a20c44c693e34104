"""qdarray on OpenCL against hand-written OpenCL C and pyopencl.array, as ratios.

    python benchmarks/compare_opencl.py [--device opencl:0] [--n 16777216] [--peak-gbs 3350]

Prints, for each case, the median time of qdarray and of its peer (run back to back, after a
warm-up that compiles everything) and the ratio qdarray / peer (below 1.2 is the goal):

- kernels: a `@qd.kernel` against the same loop body hand-written in OpenCL C, built and
  launched with pyopencl (one work-item per element, the same work-group size);
- namespace: `x + y`, `x * 2.0`, `qd.sin(x)`, `qd.sum(x)` against pyopencl.array's `x + y`,
  `x * 2`, `pyopencl.clmath.sin(x)`, `pyopencl.array.sum(x)`.

It also prints the memory bandwidth each elementwise case reaches, against a buffer-to-buffer
copy on the same device and, with --peak-gbs, against the device's peak.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.clmath as clmath

import qdarray as qd
from qdarray.backends.opencl import _runtime


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def polynomial(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        y[i] = ((v * 0.5 + 1.25) * v - 3.0) * v + qd.math.sqrt(qd.math.abs(v))


HAND = """
__kernel void saxpy(float a, __global const float *x, __global float *y, long n)
{
  long i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
__kernel void polynomial(__global const float *x, __global float *y, long n)
{
  long i = get_global_id(0);
  if (i < n) { float v = x[i]; y[i] = ((v * 0.5f + 1.25f) * v - 3.0f) * v + sqrt(fabs(v)); }
}
"""


def timed(fn: Callable[[], Any], queue: cl.CommandQueue, repeat: int) -> float:
    fn()
    queue.finish()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        queue.finish()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--peak-gbs", type=float, default=None)
    opts = parser.parse_args()
    # pyopencl's own kernels (the peers) may print compiler remarks on some drivers.
    warnings.simplefilter("ignore", cl.CompilerWarning)
    dev = qd.Device(opts.device)
    st = _runtime.state(dev.index)
    q = st.queue
    n = opts.n
    print(f"device {dev}: {st.name}; n = {n} float32; median of {opts.repeat}")
    rng = np.random.default_rng(0)
    hx = rng.standard_normal(n).astype(np.float32)
    x = qd.asarray(hx, device=dev)
    y = qd.asarray(hx[::-1].copy(), device=dev)
    px = cla.to_device(q, hx)
    py = cla.to_device(q, hx[::-1].copy())
    prog = cl.Program(st.context, HAND).build()
    k_saxpy = cl.Kernel(prog, "saxpy")
    k_poly = cl.Kernel(prog, "polynomial")
    local = 256 if st.kind == "GPU" else 64
    gsize = (-(-n // local) * local,)
    out = cla.empty_like(py)
    nbytes = 4 * n

    def hand_saxpy() -> None:
        k_saxpy(q, gsize, (local,), np.float32(2.0), px.data, py.data, np.int64(n))

    def hand_poly() -> None:
        k_poly(q, gsize, (local,), px.data, out.data, np.int64(n))

    yq = qd.empty(n, dtype=qd.float32, device=dev)
    rows = [
        ("kernel saxpy", lambda: saxpy(2.0, x, y), hand_saxpy, 3 * nbytes),
        ("kernel polynomial", lambda: polynomial(x, yq), hand_poly, 2 * nbytes),
        ("x + y", lambda: x + y, lambda: px + py, 3 * nbytes),
        ("x * 2.0", lambda: x * 2.0, lambda: px * 2, 2 * nbytes),
        ("sin(x)", lambda: qd.sin(x), lambda: clmath.sin(px), 2 * nbytes),
        ("sum(x)", lambda: qd.sum(x), lambda: cla.sum(px), nbytes),
    ]
    copy_dst = cl.Buffer(st.context, cl.mem_flags.READ_WRITE, nbytes)
    t_copy = timed(lambda: cl.enqueue_copy(q, copy_dst, px.data, byte_count=nbytes), q,
                   opts.repeat)
    copy_gbs = 2 * nbytes / t_copy / 1e9
    print(f"buffer copy: {copy_gbs:8.1f} GB/s")
    print(f"{'case':20s} {'qdarray ms':>11s} {'peer ms':>9s} {'ratio':>6s} {'GB/s':>8s} "
          f"{'of copy':>8s}" + (f" {'of peak':>8s}" if opts.peak_gbs else ""))
    for name, ours, peer, moved in rows:
        t_ours = timed(ours, q, opts.repeat)
        t_peer = timed(peer, q, opts.repeat)
        gbs = moved / t_ours / 1e9
        line = (f"{name:20s} {t_ours * 1e3:11.3f} {t_peer * 1e3:9.3f} "
                f"{t_ours / t_peer:6.2f} {gbs:8.1f} {gbs / copy_gbs:8.0%}")
        if opts.peak_gbs:
            line += f" {gbs / opts.peak_gbs:8.0%}"
        print(line)


if __name__ == "__main__":
    main()
