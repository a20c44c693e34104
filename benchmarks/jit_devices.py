"""qd.jit's fused kernels against eager calls on one device (OpenCL, Vulkan, the CPU).

    python benchmarks/jit_devices.py [--device opencl:0] [--n 1000000] [--calls 10]

The 6-operation float32 chain of benchmarks/compare_jit.py, `((a * x + b) * x - a) * 0.5 +
b`, on arrays of the device: the time per call of the eager function and of `qd.jit` of it
(after a trace and a warm-up replay), each over `calls` calls followed by one read of an
element (which waits for the device); the results are checked equal first. Prints both and
their ratio; run it in fresh processes for a spread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import qdarray as qd  # noqa: E402


def chain(a: Any, x: Any, b: Any) -> Any:
    return ((a * x + b) * x - a) * 0.5 + b


def per_call(fn: Any, args: list[Any], calls: int) -> float:
    float(args[0][0])  # nothing queued before the clock starts
    start = time.perf_counter()
    for _ in range(calls):
        y = fn(*args)
    float(y[0])
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    arrays = [qd.asarray(rng.standard_normal(args.n).astype(np.float32), device=args.device)
              for _ in range(3)]
    jitted = qd.jit(chain)
    jitted(*arrays)
    got = jitted(*arrays)
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")),
                                  np.asarray(chain(*arrays).to_device("cpu")))
    eager = per_call(chain, arrays, args.calls)
    fused = per_call(jitted, arrays, args.calls)
    print(f"{args.device}, N = {args.n}: eager {eager * 1e3:.2f} ms, qd.jit {fused * 1e3:.2f} ms "
          f"a call; eager / qd.jit {eager / fused:.2f}")
    return {"eager": eager, "jit": fused}


if __name__ == "__main__":
    main()
