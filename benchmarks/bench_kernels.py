"""asv benchmarks of user kernels: launch overhead, throughput against hand-written numba,
and compile times (first compile, and loading from the disk cache in a new process).

`python benchmarks/compare_kernels.py` prints the same measurements side by side as ratios.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any

import numba
import numpy as np

import qdarray as qd

# -- kernels and their hand-written numba counterparts --------------------------------------


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@numba.njit(parallel=True, cache=True)
def saxpy_numba(a, x, y):  # noqa: ANN001, ANN201
    for i in numba.prange(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def stencil(u: qd.Array[qd.float32, 2], out: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@numba.njit(parallel=True, cache=True)
def stencil_numba(u, out):  # noqa: ANN001, ANN201
    for i in numba.prange(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = np.float32(0.25) * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                            + u[i, j + 1])


@qd.kernel
def histogram(x: qd.Array[qd.int32, 1], bins: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        bins[x[i] % bins.shape[0]] += 1


def saxpy_operands(size: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    return np.float32(2.0), x, y


# -- asv suites -----------------------------------------------------------------------------


class LaunchOverhead:
    """One launch of a 16-element kernel with array arguments (goal: <= 10 us)."""

    def setup(self) -> None:
        self.a, x, y = saxpy_operands(16)
        self.x, self.y = qd.asarray(x), qd.asarray(y)
        self.xn, self.yn = x, y
        saxpy(2.0, self.x, self.y)
        saxpy(2.0, self.xn, self.yn)
        saxpy_numba(self.a, x, y)

    def time_qdarray_arrays(self) -> None:
        saxpy(2.0, self.x, self.y)

    def time_numpy_arrays(self) -> None:
        saxpy(2.0, self.xn, self.yn)

    def time_numba_prange(self) -> None:
        saxpy_numba(self.a, self.xn, self.yn)


class Saxpy:
    """y = a * x + y on float32 (goal: within 1.1x of numba prange)."""

    params = [[100_000, 10_000_000]]
    param_names = ["size"]

    def setup(self, size: int) -> None:
        self.a, self.x, self.y = saxpy_operands(size)
        saxpy(self.a, self.x, self.y)
        saxpy_numba(self.a, self.x, self.y)

    def time_qdarray(self, size: int) -> None:
        saxpy(self.a, self.x, self.y)

    def time_numba_prange(self, size: int) -> None:
        saxpy_numba(self.a, self.x, self.y)


class Stencil:
    """A 5-point stencil over a 2-D float32 grid (qd.ndrange against nested prange/range)."""

    params = [[256, 2048]]
    param_names = ["n"]

    def setup(self, n: int) -> None:
        self.u = np.random.default_rng(1).random((n, n), dtype=np.float32)
        self.out = np.zeros_like(self.u)
        stencil(self.u, self.out)
        stencil_numba(self.u, self.out)

    def time_qdarray(self, n: int) -> None:
        stencil(self.u, self.out)

    def time_numba_prange(self, n: int) -> None:
        stencil_numba(self.u, self.out)


class Histogram:
    """Atomic += into 64 bins from 1e7 threads."""

    def setup(self) -> None:
        self.x = np.random.default_rng(2).integers(0, 1 << 20, 10_000_000).astype(np.int32)
        self.bins = np.zeros(64, np.int64)
        histogram(self.x, self.bins)

    def time_qdarray(self) -> None:
        histogram(self.x, self.bins)


# -- compile times (each in a new process) ----------------------------------------------------

COMPILE_SCRIPT = textwrap.dedent('''
    import time
    import numpy as np
    import qdarray as qd
    from qdarray.kernels.intrinsics import ipow

    @qd.kernel
    def small(x: qd.Array[qd.float64, 1], s: float):
        for i in range(x.shape[0]):
            x[i] = x[i] * s + {salt}

    x = np.ones(8)
    t0 = time.perf_counter()
    ipow(np.int64(2), np.int64(3))  # numba's own start-up, paid once by any numba program
    t1 = time.perf_counter()
    small(x, 2.0)
    print(t1 - t0, time.perf_counter() - t1)
''')


def first_call_seconds(workdir: str, salt: float = 1.0) -> tuple[float, float]:
    """(numba's start-up, the kernel's first call) in seconds, in a new Python process.

    The kernel lives in `workdir/first_call.py` and the compile cache in `workdir/cache`, so
    a second call with the same `workdir` and `salt` finds the first one's cache. The first
    call covers the frontend, code generation and compiling or loading from the disk
    cache; numba's process start-up (its type registries, measured by calling a cached
    numba helper first) is reported apart.
    """
    script = os.path.join(workdir, "first_call.py")
    with open(script, "w") as f:
        f.write(COMPILE_SCRIPT.format(salt=salt))
    env = {**os.environ, "QDARRAY_CACHE_DIR": os.path.join(workdir, "cache")}
    out = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                         check=True)
    startup, first = out.stdout.strip().splitlines()[-1].split()
    return float(startup), float(first)


class CompileTime:
    """First compile of a small kernel (goal < 1 s) and its load from the disk cache in a new
    process (goal < 0.2 s)."""

    timeout = 120
    number = 1
    repeat = 3

    def track_first_compile_seconds(self) -> float:
        with tempfile.TemporaryDirectory() as workdir:
            return first_call_seconds(workdir, salt=time.time())[1]

    track_first_compile_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_cached_load_seconds(self) -> float:
        with tempfile.TemporaryDirectory() as workdir:
            first_call_seconds(workdir)
            return first_call_seconds(workdir)[1]

    track_cached_load_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_numba_startup_seconds(self) -> float:
        with tempfile.TemporaryDirectory() as workdir:
            return first_call_seconds(workdir)[0]

    track_numba_startup_seconds.unit = "seconds"  # type: ignore[attr-defined]
