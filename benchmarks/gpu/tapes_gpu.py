"""The reverse of the dynamic-loop kernel on a GPU against its tape-traffic bound and JAX, and
the adstack memory figures measured with the device allocator.

    python3 benchmarks/gpu/tapes_gpu.py [--n 10000000] [--json PATH]

(benchmarks/gpu/run_gpu.sh runs it with its environment.) Kernel: `v = v - 0.1*v*v + 0.01`
repeated a[i] times, a[i] uniform in [0, 64), float32, `y[0] += v` (benchmarks/bench_ad.py),
N = 1e7 threads on cuda:0.

1. The device's copy bandwidth (CuPy `dst[...] = src` over 1 GiB: bytes read + written per
   second), then the reverse launch against the tape-traffic bound: each thread pushes and
   pops 1 + a[i] float32 values, so the adstacks move 2 x 4 x sum(1 + a[i]) bytes; at the
   copy bandwidth that takes the bound's time. Goal: reverse within 2x of it (both printed).
   Beside it: whether the reverse ran its threads sorted by capacity, the group efficiency
   before and after (ad/transform/reorder.py), and the reverse's time with sorting off.
2. Forward + reverse (a Tape) against JAX's `jax.grad` of the masked `fori_loop` (64 steps,
   `jnp.where(k < a, ...)`): goal qdarray at least 4x faster. Both gradients against the
   float64 reference (forward-mode derivative in NumPy).
3. benchmarks/compare_tapes.py on cuda:0: the peak memory of a reverse launch measured with
   a CuPy memory hook (every allocation of the device pool), skewed and uniform workloads,
   against the sum of their trip counts; checkpointing under 1/8 of the packed tape.

Each time is the best of several synchronised calls after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import _peers_arrays  # noqa: E402
import _workloads as W  # noqa: E402
import compare_tapes  # noqa: E402

RESULTS: dict[str, Any] = {}


def best(f: Callable[[], Any], repeat: int = 10, warmup: int = 2) -> float:
    """The best of `repeat` synchronised calls of `f` (each synchronises), in seconds."""
    for _ in range(warmup):
        f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def copy_bandwidth(cupy: Any, nbytes: int = 1 << 30) -> float:
    """Bytes read + written per second by a device-to-device copy of `nbytes`."""
    bufs = [cupy.ones(nbytes // 4, dtype=cupy.float32)]
    bufs.append(cupy.empty_like(bufs[0]))

    def copy() -> None:
        bufs[1][...] = bufs[0]
        cupy.cuda.Device().synchronize()

    seconds = best(copy, 20)
    bufs.clear()
    cupy.get_default_memory_pool().free_all_blocks()
    return 2 * nbytes / seconds


def unsorted_reverse(n: int) -> float:
    """The reverse's time with thread sorting off (ad/transform/reorder.py's threshold out of
    reach), on fresh arrays of the same problem (so it is sized and laid out again)."""
    from qdarray.ad.transform import reorder

    saved = reorder.THRESHOLD
    reorder.THRESHOLD = float("inf")
    try:
        q = W.qdarray_cases(W.Problem(device="cuda:0", n=n))
        return best(q["rev"].run)
    finally:
        reorder.THRESHOLD = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--memory-n", type=int, default=10_000_000,
                    help="threads of the memory and checkpointing workloads")
    ap.add_argument("--json", help="write the figures there")
    args = ap.parse_args()
    import cupy  # type: ignore[import-not-found]

    print("== copy bandwidth")
    bw = copy_bandwidth(cupy)
    RESULTS["copy bandwidth B/s"] = bw
    print(f"device-to-device copy: {bw / 1e12:.2f} TB/s (read + write)")

    print(f"== dynamic-loop kernel, N = {args.n}, a[i] uniform in [0, 64)")
    p = W.Problem(device="cuda:0", n=args.n)
    q = W.qdarray_cases(p)
    fwd = best(q["fwd"].run)
    rev = best(q["rev"].run)
    both = best(q["fwd+rev"].run)
    trips = p["a"].astype(np.int64)
    traffic = 2 * 4 * int((trips + 1).sum())
    bound = traffic / bw
    import qdarray as qd

    stats = qd.ad.stats()
    bits = stats["adstack_position_bits"]
    print(f"forward {fwd * 1e3:.3f} ms, reverse {rev * 1e3:.3f} ms ({bits}-bit tape "
          f"positions), forward + reverse {both * 1e3:.3f} ms")
    sorted_tasks = stats["reordered_tasks"]
    eff, eff_sorted = stats["group_efficiency"], stats["group_efficiency_reordered"]
    print(f"threads sorted by capacity: {'yes' if sorted_tasks else 'no'}; group efficiency "
          f"{eff:.3f} -> {eff_sorted:.3f} (ad/transform/reorder.py)")
    rev_unsorted = unsorted_reverse(args.n)
    print(f"reverse without sorting {rev_unsorted * 1e3:.3f} ms; sorted / unsorted = "
          f"{rev / rev_unsorted:.2f}")
    print(f"tape traffic {traffic / 1e9:.2f} GB -> bound {bound * 1e3:.3f} ms at the copy "
          f"bandwidth; reverse / bound = {rev / bound:.2f} (goal <= 2)")
    want = W.reference_gradient(p["x"], p["a"])
    assert q["fwd+rev"].gradient is not None
    err = W.gradient_error(q["fwd+rev"].gradient(), want)
    print(f"qdarray gradient: largest error {err:.2e} of the float64 reference's largest value")
    RESULTS["kernel"] = {"n": args.n, "forward s": fwd, "reverse s": rev, "fwd+rev s": both,
                         "tape traffic B": traffic, "bound s": bound,
                         "tape position bits": bits, "threads sorted": bool(sorted_tasks),
                         "group efficiency": eff, "group efficiency sorted": eff_sorted,
                         "reverse unsorted s": rev_unsorted,
                         "reverse / bound": rev / bound, "gradient error": err}
    try:
        jx = _peers_arrays.jax_cases(p)["fwd+rev"]
        jt = best(jx.run)
        assert jx.gradient is not None
        jerr = W.gradient_error(jx.gradient(), want)
        print(f"JAX {jx.note}: {jt * 1e3:.3f} ms; JAX / qdarray = {jt / both:.2f} "
              f"(goal >= 4); JAX gradient error {jerr:.2e}")
        RESULTS["jax"] = {"fwd+rev s": jt, "jax / qdarray": jt / both, "gradient error": jerr}
    except W.Skipped as exc:
        print(f"JAX skipped: {exc}")
        RESULTS["jax"] = f"skipped: {exc}"
    del q
    cupy.get_default_memory_pool().free_all_blocks()

    print(f"== memory (device allocator) and checkpointing, N = {args.memory_n}")
    for kind in ("skewed", "uniform"):
        RESULTS[f"memory {kind}"] = compare_tapes.memory(kind, args.memory_n, "cuda:0")
    RESULTS["checkpointing"] = compare_tapes.checkpointing(args.memory_n, "cuda:0", 5)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    main()
