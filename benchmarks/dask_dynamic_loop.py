"""Scale-out of a kernel-heavy workload on Dask: the dynamic-loop kernel on 1 and 2 worker
processes (CPU), or on 1 and 2 GPUs.

The kernel is benchmarks/bench_ad.py's `logistic`: `v = x[i]; for _ in range(a[i]):
v = v - 0.1*v*v + 0.01; y[0] += v`, float32, a[i] uniform in [0, 64), N = 1e7 by default.
The inputs are made on the workers (Dask's random generator, then `qdarray.dask.to_device`)
and kept there (`persist`), split into the same blocks for every cluster, so each run
computes the same sums. Timed, as medians of `--repeat` runs after one warm-up run (which
compiles the kernel in every worker):

- `forward`: `map_kernel(...).compute()`: every block's launch, the sum of the partial
  results, the result back to this process;
- `gradient`: `map_kernel_grad(..., wrt="x").sum().compute()` (forward and reverse of every
  block where it is, and the sum of the gradient, so that only a number travels);
- `one process`: the kernel launched on the whole arrays in this process, without Dask (for
  the CPU with `--numba-threads` threads, the number each worker process has).

CPU (this machine):

    python benchmarks/dask_dynamic_loop.py                  # 1 and 2 worker processes
    python benchmarks/dask_dynamic_loop.py --workers 1 2 4 --n 1e7 --blocks 8 --repeat 5

GPUs (one worker process per GPU; dask-cuda's LocalCUDACluster when installed, else the same
set-up by hand: a Nanny per GPU whose CUDA_VISIBLE_DEVICES names it first):

    python benchmarks/dask_dynamic_loop.py --gpus 1 2       # on a machine with 2 GPUs
    python benchmarks/dask_dynamic_loop.py --gpus 1         # one GPU: the 1-GPU figures only

`--check` first compares map_kernel, its gradient and two reductions on the largest cluster
with the same computations on one array in this process.

`--json PATH` writes the figures. Figures from a machine others are using are not final.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                   help="numbers of CPU worker processes to run (default 1 2)")
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help="numbers of GPUs to run instead of CPU workers (one worker each)")
    p.add_argument("--n", type=float, default=1e7, help="elements (default 1e7)")
    p.add_argument("--blocks", type=int, default=8,
                   help="blocks the arrays are split into, for every cluster (default 8)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure (default 5)")
    p.add_argument("--numba-threads", type=int, default=1,
                   help="numba threads of each CPU worker process (default 1: one core each)")
    p.add_argument("--no-grad", action="store_true", help="time the forward only")
    p.add_argument("--check", action="store_true",
                   help="first compare results on the largest cluster with one array")
    p.add_argument("--json", default="", help="write the figures to this file")
    return p.parse_args(argv)


def cpu_cluster(workers: int, threads: int) -> Any:
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", preload=["qdarray.dask"], silence_logs=40,
                        env={"NUMBA_NUM_THREADS": str(threads)})


def gpu_cluster(gpus: int) -> Any:
    """One worker process per GPU, each seeing its GPU as cuda:0."""
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None  # noqa: N806
    if LocalCUDACluster is not None:
        return LocalCUDACluster(n_workers=gpus, CUDA_VISIBLE_DEVICES=list(range(gpus)),
                                threads_per_worker=1, dashboard_address=":0",
                                preload=["qdarray.dask"], silence_logs=40)
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {}
    for i in range(gpus):
        order = [str((i + k) % gpus) for k in range(gpus)]  # as dask-cuda orders them
        workers[f"gpu-{i}"] = {"cls": Nanny, "options": {
            "nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": ",".join(order)},
            "preload": ["qdarray.dask"], "silence_logs": 40}}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {
        "dashboard_address": ":0"}}, silence_logs=40)


def inputs(client: Any, n: int, blocks: int, device: str) -> tuple[Any, Any]:
    """x uniform in [0, 1) (float32) and a uniform in [0, 64) (int32), as qdarray chunks on
    `device` in the workers, persisted."""
    import dask.array as da
    from distributed import wait

    import qdarray.dask as qdd

    rng = da.random.default_rng(0)
    chunk = -(-n // blocks)
    x = qdd.to_device(rng.random(n, chunks=chunk, dtype=np.float32), device)
    a = qdd.to_device(rng.integers(0, 64, n, chunks=chunk, dtype=np.int32), device)
    x, a = client.persist([x, a])
    wait([x, a])
    return x, a


def timed(run: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def on_cluster(cluster: Any, n: int, blocks: int, device: str, repeat: int,
               grad: bool) -> dict[str, Any]:
    from bench_ad import logistic
    from distributed import Client

    import qdarray as qd
    import qdarray.dask as qdd

    with Client(cluster) as client:
        client.wait_for_workers(len(cluster.workers))
        x, a = inputs(client, n, blocks, device)
        zero = qd.zeros(1, dtype=qd.float32, device=device)
        y = qdd.map_kernel(logistic, x, a, zero, out="y")
        value = float(np.asarray(y.compute().to_device("cpu"))[0])  # warm-up: compiles
        out: dict[str, Any] = {"y": value,
                               "forward_s": timed(lambda: y.compute(), repeat)}
        if grad:
            g = qdd.map_kernel_grad(logistic, x, a, zero, out="y",
                                    grad=qd.ones(1, dtype=qd.float32, device=device), wrt="x")

            total = g.sum()
            out["gradient_sum"] = float(np.asarray(total.compute().to_device("cpu")))  # warm-up
            out["gradient_s"] = timed(lambda: total.compute(), repeat)
        out["where"] = {w: len(keys) for w, keys in client.has_what().items()}
    return out


def one_process(n: int, blocks: int, device: str, repeat: int, threads: int | None,
                grad: bool) -> dict[str, Any]:
    """The same inputs and kernel in this process, without Dask."""
    import dask
    import dask.array as da
    import numba
    from bench_ad import logistic

    import qdarray as qd

    rng = da.random.default_rng(0)
    chunk = -(-n // blocks)
    xs, as_ = dask.compute(rng.random(n, chunks=chunk, dtype=np.float32),
                           rng.integers(0, 64, n, chunks=chunk, dtype=np.int32),
                           scheduler="synchronous")
    dev = qd.Device(device)
    x = qd.asarray(xs, device=dev, requires_grad=True)
    a = qd.asarray(as_, device=dev)
    y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
    sync = dev.backend.synchronize
    if threads is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))

    def forward() -> None:
        y[...] = 0.0
        logistic(x, a, y)
        sync(dev)

    forward()
    out: dict[str, Any] = {"y": float(np.asarray(y.to_device("cpu"))[0]),
                           "forward_s": timed(forward, repeat)}
    if grad:
        def reverse() -> None:
            y.grad[...] = 1.0
            logistic.grad(x, a, y)
            sync(dev)

        logistic(x, a, y)
        reverse()
        out["gradient_s"] = timed(lambda: (forward(), reverse()), repeat)
        x.grad[...] = 0.0
        forward()
        reverse()
        out["gradient_sum"] = float(np.asarray(qd.sum(x.grad).to_device("cpu")))
    if threads is not None:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return out


def check(cluster: Any, device: str) -> dict[str, float]:
    """Results on the cluster against one array in this process (the GPU run's correctness
    check): map_kernel, map_kernel_grad, a reduction of an elementwise pipeline and std, on
    chunks on `device` in the workers. Returns the largest relative differences."""
    import dask.array as da
    from bench_ad import logistic
    from distributed import Client

    import qdarray as qd
    import qdarray.dask as qdd

    rng = np.random.default_rng(0)
    xn = rng.random(200_000, dtype=np.float32)
    an = rng.integers(0, 64, 200_000).astype(np.int32)
    with Client(cluster) as client:
        client.wait_for_workers(len(cluster.workers))
        x = qdd.to_device(da.from_array(xn, chunks=50_000), device)
        a = qdd.to_device(da.from_array(an, chunks=50_000), device)
        zero = qd.zeros(1, dtype=qd.float32, device=device)
        y = qdd.map_kernel(logistic, x, a, zero, out="y")
        g = qdd.map_kernel_grad(logistic, x, a, zero, out="y",
                                grad=qd.ones(1, dtype=qd.float32, device=device), wrt="x")
        yv, gv, total, spread = client.compute([y, g, (da.sin(x) * 2 + x).sum(), x.std()],
                                               sync=True)
        ran_on = {str(v.device) for v in (yv, gv, total, spread)}
    xw = qd.asarray(xn, device=device, requires_grad=True)
    yw = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    with qd.ad.Tape(loss=yw):
        logistic(xw, qd.asarray(an, device=device), yw)

    def rel(got: Any, want: Any) -> float:
        got = np.asarray(got.to_device("cpu"), np.float64)
        want = np.asarray(want.to_device("cpu") if type(want) is qd.Array else want, np.float64)
        return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))

    out = {"y": rel(yv, yw), "gradient": rel(gv, xw.grad),
           "pipeline_sum": rel(total, (np.sin(xn) * 2 + xn).sum(dtype=np.float64)),
           "std": rel(spread, xn.astype(np.float64).std())}
    print(f"check on {device} chunks (results on {', '.join(sorted(ran_on))}): largest "
          "relative differences from one array: "
          + ", ".join(f"{k} {v:.1e}" for k, v in out.items()))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    n = int(args.n)
    grad = not args.no_grad
    gpu = args.gpus is not None
    device = "cuda:0" if gpu else "cpu"
    counts = args.gpus if gpu else args.workers
    result: dict[str, Any] = {"n": n, "blocks": args.blocks, "device": device,
                              "numba_threads": None if gpu else args.numba_threads,
                              "cpus": os.cpu_count(), "runs": {}}
    if args.check:
        cluster = gpu_cluster(max(counts)) if gpu else cpu_cluster(max(counts),
                                                                   args.numba_threads)
        try:
            result["check"] = check(cluster, device)
        finally:
            cluster.close()
    result["one_process"] = one_process(n, args.blocks, device, args.repeat,
                                        None if gpu else args.numba_threads, grad)
    for count in counts:
        cluster = gpu_cluster(count) if gpu else cpu_cluster(count, args.numba_threads)
        try:
            result["runs"][count] = on_cluster(cluster, n, args.blocks, device, args.repeat,
                                               grad)
        finally:
            cluster.close()
    print(report(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return result


def report(result: dict[str, Any]) -> str:
    what = "GPUs" if result["device"].startswith("cuda") else "worker processes"
    lines = [f"dynamic-loop kernel, N = {result['n']:.0e}, {result['blocks']} blocks, on "
             f"{result['device']} ({result['cpus']} CPUs here"
             + (f", {result['numba_threads']} numba thread(s) per process)"
                if result["numba_threads"] else ")"),
             "| run | forward (s) | gradient (s) | speed-up fwd | speed-up grad | y | sum(dy/dx) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    base = result["runs"].get(min(result["runs"])) if result["runs"] else None
    rows = [("one process, no Dask", result["one_process"])]
    rows += [(f"Dask, {k} {what}", r) for k, r in sorted(result["runs"].items())]
    for name, r in rows:
        fwd, grd = r["forward_s"], r.get("gradient_s")
        up_f = f"{base['forward_s'] / fwd:.2f}x" if base else "-"
        up_g = f"{base['gradient_s'] / grd:.2f}x" if base and grd else "-"
        grd_s = f"{grd:.3f}" if grd else "-"
        gsum = f"{r['gradient_sum']:.6g}" if "gradient_sum" in r else "-"
        lines.append(f"| {name} | {fwd:.3f} | {grd_s} | {up_f} | {up_g} | {r['y']:.6g} "
                     f"| {gsum} |")
    lines.append(f"speed-ups are against Dask with {min(result['runs'])} {what}"
                 if result["runs"] else "")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
