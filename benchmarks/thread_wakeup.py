"""What waking a worker thread costs on this machine, which decides how fast Taichi's (and any
thread-pool's) small parallel launches can be.

    python benchmarks/thread_wakeup.py [--peer-python PYTHON]

Prints the time of one launch of a 16-element parallel loop: numba's `prange` with its OpenMP
workers spinning between loops (the default) and sleeping (`OMP_WAIT_POLICY=PASSIVE`: each
loop wakes them), and, in the peers' Python (one with taichi==1.7.4; default
/work/peers/bin/python, or $PEER_PYTHON), Taichi's parallel `for i in x` over 16 elements
against a serial kernel (one statement at the top level). Each figure is the mean of 5,000
launches after 100, in a fresh process. Where a sleeping thread takes tens of microseconds to
wake, a program of thousands of small parallel launches is bound by it: qdarray runs small
launches serially in the calling thread (kernels/launch.py), so the comparison of the
DiffTaichi programs on such a machine (compare_sims.py) favours it more than the kernels'
own speed does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

NUMBA = """
import time, numpy as np
from numba import njit, prange
@njit(parallel=True)
def k(x):
    for i in prange(x.shape[0]):
        x[i] += 1.0
x = np.zeros(16, np.float32)
for _ in range(100): k(x)
t = time.perf_counter()
for _ in range(5000): k(x)
print((time.perf_counter() - t) / 5000 * 1e6)
"""

TAICHI = """
import time, taichi as ti
ti.init(arch=ti.cpu, cpu_max_num_threads=2, log_level=ti.WARN)
x = ti.field(ti.f32, shape=16)
@ti.kernel
def parallel():
    for i in x:
        x[i] += 1.0
@ti.kernel
def serial():
    x[0] += 1.0
for f in (parallel, serial):
    for _ in range(100): f()
    ti.sync()
    t = time.perf_counter()
    for _ in range(5000): f()
    ti.sync()
    print((time.perf_counter() - t) / 5000 * 1e6)
"""


def run(python: str, code: str, **env: str) -> list[float]:
    """The figures `code` prints, run by `python` from a file (Taichi reads kernels' source)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
        f.write(code)
        f.flush()
        done = subprocess.run([python, f.name], env={**os.environ, **env},
                              capture_output=True, text=True, check=True)
    return [float(line) for line in done.stdout.splitlines() if line[:1].isdigit()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", default=os.environ.get("PEER_PYTHON",
                                                                "/work/peers/bin/python"))
    args = parser.parse_args(argv)
    (spin,) = run(sys.executable, NUMBA, NUMBA_NUM_THREADS="2")
    (sleep,) = run(sys.executable, NUMBA, NUMBA_NUM_THREADS="2", OMP_WAIT_POLICY="PASSIVE")
    print(f"numba prange, 16 elements, 2 threads: {spin:6.1f} us spinning workers, "
          f"{sleep:6.1f} us sleeping workers")
    try:
        parallel, serial = run(args.peer_python, TAICHI)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"taichi: skipped ({type(exc).__name__}: no taichi in {args.peer_python})")
        return
    print(f"taichi 1.7.4, 16 elements: {parallel:6.1f} us parallel for, {serial:6.1f} us "
          "serial kernel")


if __name__ == "__main__":
    main()
