"""qd.jit on a CUDA GPU against jax.jit and eager code, in one process.

    python benchmarks/gpu/jit_gpu.py [--device cuda:0] [--sizes 1000 1000000 10000000]
                                     [--repeat 30] [--json PATH]

The 6-operation float32 chain of benchmarks/compare_jit.py, `((a * x + b) * x - a) * 0.5 +
b`, at each size: qdarray eager (one CuPy launch per operation), the same function under
`qd.jit` (one fused kernel), CuPy eager, and `jax.jit` of it on the GPU. Each figure is the
median over `repeat` calls of the wall time of one call followed by a device
synchronisation, after warm-up calls (tracing, compiling); the ratios are qd.jit / jax.jit
and qd.jit / qdarray eager. The results are checked against eager qdarray first (bit for
bit; JAX within 1 ulp-level tolerance, XLA may contract a * x + b into an FMA).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import qdarray as qd  # noqa: E402


def chain(a: Any, x: Any, b: Any) -> Any:
    return ((a * x + b) * x - a) * 0.5 + b


def median_time(call: Any, sync: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import cupy as cp

    def sync() -> None:
        cp.cuda.runtime.deviceSynchronize()

    try:
        import jax

        jdev = jax.devices("gpu")[0]
    except Exception as exc:  # noqa: BLE001 - reported, the other sides still run
        print(f"JAX on the GPU is not available ({exc}); its column is left out")
        jax = None
    results: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    print(f"{'N':>10}  {'qd eager':>10}  {'qd.jit':>10}  {'CuPy':>10}  {'jax.jit':>10}  "
          "qd.jit/jax  qd.jit/eager  (median us per call)")
    for n in args.sizes:
        host = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
        qa = [qd.asarray(h, device=args.device) for h in host]
        ca = [cp.asarray(h) for h in host]
        jf = qd.jit(chain)
        want = np.asarray(chain(*qa).to_device("cpu"))
        for _ in range(3):
            got = jf(*qa)
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)
        row = {"eager": median_time(lambda qa=qa: chain(*qa), sync, args.repeat),
               "jit": median_time(lambda jf=jf, qa=qa: jf(*qa), sync, args.repeat),
               "cupy": median_time(lambda ca=ca: chain(*ca), sync, args.repeat)}
        if jax is not None:
            ja = [jax.device_put(h, jdev) for h in host]
            jj = jax.jit(chain)
            for _ in range(3):
                jr = jj(*ja).block_until_ready()
            np.testing.assert_allclose(np.asarray(jr), want, rtol=2e-6, atol=1e-6)
            row["jax"] = median_time(lambda jj=jj, ja=ja: jj(*ja).block_until_ready(),
                                     lambda: None, args.repeat)
        jax_ratio = row["jit"] / row["jax"] if "jax" in row else float("nan")
        print(f"{n:>10}  {row['eager'] * 1e6:>10.1f}  {row['jit'] * 1e6:>10.1f}  "
              f"{row['cupy'] * 1e6:>10.1f}  {row.get('jax', float('nan')) * 1e6:>10.1f}  "
              f"{jax_ratio:>10.2f}  {row['jit'] / row['eager']:>12.2f}")
        results[str(n)] = row
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
