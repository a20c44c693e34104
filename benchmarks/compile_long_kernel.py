"""First-compile time of a long kernel: N statements `v = v * c_k + d_k` in a parallel loop.

    python benchmarks/compile_long_kernel.py [--statements 300 1000] [--runs 3]

Each measurement is a fresh process with an empty kernel cache (QDARRAY_CACHE_DIR in a new
temporary folder): the time of the first launch on 16 float32 elements, which compiles the
kernel (frontend, passes, the generated numba module, numba's typing and LLVM). Prints the
seconds of each run and their median per statement count.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = '''
import sys, time
import numpy as np
sys.path.insert(0, {root!r})
sys.path.insert(0, {folder!r})
import qdarray as qd
from long_kernel import long
x = qd.ones(16, dtype=qd.float32)
y = qd.zeros(16, dtype=qd.float32)
t0 = time.perf_counter()
long(x, y)
print(time.perf_counter() - t0)
'''


def kernel_source(statements: int) -> str:
    body = "\n".join(f"        v = v * {0.5 + k * 1e-3!r} + {0.25 + k * 1e-4!r}"
                     for k in range(statements))
    return ("import qdarray as qd\n\n\n@qd.kernel\n"
            "def long(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):\n"
            "    for i in range(x.shape[0]):\n        v = x[i]\n" + body + "\n        y[i] = v\n")


def first_compile_seconds(statements: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "long_kernel.py").write_text(kernel_source(statements))
        env = dict(os.environ, QDARRAY_CACHE_DIR=os.path.join(folder, "cache"))
        child = _CHILD.format(root=str(ROOT), folder=folder)
        out = subprocess.run([sys.executable, "-c", child], env=env, check=True,
                             capture_output=True, text=True).stdout
        return float(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--statements", type=int, nargs="*", default=[300, 1000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for n in args.statements:
        times = sorted(first_compile_seconds(n) for _ in range(args.runs))
        print(f"{n} statements: first compile {times[len(times) // 2]:.2f} s (runs: "
              + ", ".join(f"{t:.2f}" for t in times) + ")")


if __name__ == "__main__":
    main()
