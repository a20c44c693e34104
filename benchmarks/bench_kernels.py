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
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

import qdarray as qd

# -- kernels and their hand-written numba counterparts --------------------------------------


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@numba.njit(parallel=True)  # no cache: asv imports this module under another name
def saxpy_numba(a, x, y):  # noqa: ANN001, ANN201
    for i in numba.prange(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def stencil(u: qd.Array[qd.float32, 2], out: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@numba.njit(parallel=True)  # no cache: asv imports this module under another name
def stencil_numba(u, out):  # noqa: ANN001, ANN201
    for i in numba.prange(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = np.float32(0.25) * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                            + u[i, j + 1])


@qd.kernel
def histogram(x: qd.Array[qd.int32, 1], bins: qd.Array[qd.int64, 1]):
    for i in range(x.shape[0]):
        bins[x[i] % bins.shape[0]] += 1


@qd.kernel
def sum8(a: qd.Array[qd.float32, 1], b: qd.Array[qd.float32, 1], c: qd.Array[qd.float32, 1],
         d: qd.Array[qd.float32, 1], e: qd.Array[qd.float32, 1], f: qd.Array[qd.float32, 1],
         g: qd.Array[qd.float32, 1], out: qd.Array[qd.float32, 1]):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i]


@dataclass(frozen=True)
class Pair:
    x: Any
    y: Any


@qd.kernel
def saxpy_pair(a: qd.float32, p: Pair):
    for i in range(p.x.shape[0]):
        p.y[i] = a * p.x[i] + p.y[i]


def saxpy_operands(size: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    return np.float32(2.0), x, y


# -- asv suites -----------------------------------------------------------------------------


class LaunchOverhead:
    """One launch of a 16-element kernel with array arguments (goal: <= 10 us), and the cost
    of argument packing: eight arrays, and arrays inside a dataclass."""

    def setup(self) -> None:
        self.a, x, y = saxpy_operands(16)
        self.x, self.y = qd.asarray(x), qd.asarray(y)
        self.xn, self.yn = x, y
        self.eight = [qd.asarray(x.copy()) for _ in range(8)]
        self.pair = Pair(self.x, self.y)
        saxpy(2.0, self.x, self.y)
        saxpy(2.0, self.xn, self.yn)
        saxpy_numba(self.a, x, y)
        sum8(*self.eight)
        saxpy_pair(2.0, self.pair)

    def time_qdarray_arrays(self) -> None:
        saxpy(2.0, self.x, self.y)

    def time_numpy_arrays(self) -> None:
        saxpy(2.0, self.xn, self.yn)

    def time_numba_prange(self) -> None:
        saxpy_numba(self.a, self.xn, self.yn)

    def time_eight_arrays(self) -> None:
        sum8(*self.eight)

    def time_dataclass_argument(self) -> None:
        saxpy_pair(2.0, self.pair)


class Saxpy:
    """y = a * x + y on float32 (goal: within 1.1x of numba prange), NumPy arrays on the CPU."""

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


class SaxpyOnDevice:
    """The saxpy kernel over qdarray arrays on every device present (launch and sync)."""

    params = [[16, 10_000_000], [str(d) for d in qd.__array_namespace_info__().devices()]]
    param_names = ["size", "device"]

    def setup(self, size: int, device: str) -> None:
        a, x, y = saxpy_operands(size)
        self.x, self.y = qd.asarray(x, device=device), qd.asarray(y, device=device)
        self.dev = self.x.device
        self.time_qdarray(size, device)

    def time_qdarray(self, size: int, device: str) -> None:
        saxpy(2.0, self.x, self.y)
        self.dev.backend.synchronize(self.dev)


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
    from qdarray.kernels.codegen.numba.cpu_runtime import ipow

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


REVERSE_SCRIPT = textwrap.dedent('''
    import time
    import numpy as np
    import qdarray as qd

    @qd.kernel
    def steps(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1],
              y: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v - 0.1 * v * v + {salt}
            y[0] += v

    x = qd.ones(8, dtype=qd.float32, requires_grad=True)
    a = qd.asarray(np.arange(8, dtype=np.int32))
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    steps(x, a, y)
    t0 = time.perf_counter()
    y.grad[...] = 1.0
    steps.grad(x, a, y)
    print(time.perf_counter() - t0)
''')


def _run_script(workdir: str, text: str) -> list[float]:
    script = os.path.join(workdir, "first_call.py")
    with open(script, "w") as f:
        f.write(text)
    env = {**os.environ, "QDARRAY_CACHE_DIR": os.path.join(workdir, "cache")}
    out = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                         check=True)
    return [float(v) for v in out.stdout.strip().splitlines()[-1].split()]


def first_reverse_seconds(workdir: str, salt: float = 0.01) -> float:
    """Seconds of the first reverse launch of a dynamic-loop kernel in a new process (after
    its forward): building, compiling (or loading) the reverse and counting kernels."""
    return _run_script(workdir, REVERSE_SCRIPT.format(salt=salt))[0]


def first_call_seconds(workdir: str, salt: float = 1.0) -> tuple[float, float]:
    """(numba's start-up, the kernel's first call) in seconds, in a new Python process.

    The kernel lives in `workdir/first_call.py` and the compile cache in `workdir/cache`, so
    a second call with the same `workdir` and `salt` finds the first one's cache. The first
    call covers the frontend, code generation and compiling or loading from the disk
    cache; numba's process start-up (its type registries, measured by calling a cached
    numba helper first) is reported apart.
    """
    startup, first = _run_script(workdir, COMPILE_SCRIPT.format(salt=salt))
    return startup, first


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

    def track_reverse_first_compile_seconds(self) -> float:
        with tempfile.TemporaryDirectory() as workdir:
            return first_reverse_seconds(workdir, salt=0.01 + time.time() % 1 * 1e-6)

    track_reverse_first_compile_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_reverse_cached_load_seconds(self) -> float:
        with tempfile.TemporaryDirectory() as workdir:
            first_reverse_seconds(workdir)
            return first_reverse_seconds(workdir)

    track_reverse_cached_load_seconds.unit = "seconds"  # type: ignore[attr-defined]
