"""The workloads of `compare.py`: their inputs, a float64 reference gradient, and qdarray's,
NumPy's and hand-written numba's implementations of each.

A workload is a name in `WORKLOADS`; an implementation of it is a `Case`: a callable doing one
complete, synchronised call. Peers (`_peers_kernels.py`, `_peers_arrays.py`) build their
cases from the same `Problem`, so every library starts from the same NumPy data.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

# name -> what it times (one call of `Case.run`)
WORKLOADS = {
    "launch16": "one launch of saxpy over 16 float32 elements",
    "saxpy": "y = a*x + y over float32 arrays",
    "fwd": "forward of the dynamic-loop kernel",
    "rev": "reverse of the dynamic-loop kernel",
    "fwd+rev": "forward and reverse (zeroed gradients, then a tape or its equivalent)",
}


class Skipped(Exception):
    """A peer (or one of its cases) that cannot run here; the message says why."""


@dataclass
class Case:
    """One implementation of one workload.

    Attributes:
        run: one complete call (synchronised: the work is done when it returns).
        gradient: for "fwd+rev" only: zero the gradients, run forward and reverse once and
            return d sum(v) / dx as a NumPy array, for the correctness check.
        note: how the peer formulates the workload, when that differs from a kernel.
    """

    run: Callable[[], Any]
    gradient: Callable[[], np.ndarray] | None = None
    note: str = ""


@dataclass
class Problem:
    """The inputs of all workloads, as NumPy arrays (each library converts them)."""

    saxpy_n: int = 10_000_000
    n: int = 1_000_000
    trips: int = 64
    seed: int = 0
    device: str = "cpu"
    # CPU threads every library may use: numba's (NUMBA_NUM_THREADS, else every core)
    threads: int = field(default_factory=lambda: int(os.environ.get("NUMBA_NUM_THREADS")
                                                     or os.cpu_count() or 1))
    arrays: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        self.arrays = {
            "x16": rng.random(16, dtype=np.float32),
            "y16": rng.random(16, dtype=np.float32),
            "sx": rng.random(self.saxpy_n, dtype=np.float32),
            "sy": rng.random(self.saxpy_n, dtype=np.float32),
            "x": rng.random(self.n, dtype=np.float32),
            "a": rng.integers(0, self.trips, self.n).astype(np.int32),
        }
        self.max_trips = int(self.arrays["a"].max())

    def __getitem__(self, name: str) -> Any:
        return self.arrays[name]

    @property
    def gpu(self) -> bool:
        return self.device.startswith("cuda")

    def cpu_only(self, peer: str) -> None:
        """Raise `Skipped` for a CPU-only peer in a run on another device."""
        if self.device != "cpu":
            raise Skipped(f"{peer} runs on the CPU; this run is on {self.device}")


def reference_gradient(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """d v_final / d x of `v = v - 0.1*v*v + 0.01` repeated a[i] times, in float64, by
    forward-mode differentiation (d <- d * (1 - 0.2 v) before each update)."""
    v = x.astype(np.float64)
    d = np.ones_like(v)
    for k in range(int(a.max(initial=0))):
        live = k < a
        d = np.where(live, d * (1.0 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    return d


def gradient_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest error of `got`, relative to the largest reference value."""
    got = np.asarray(got, np.float64).reshape(-1)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-300))


# -- qdarray --------------------------------------------------------------------------------


def qdarray_cases(p: Problem) -> dict[str, Case]:
    from bench_ad import logistic
    from bench_kernels import saxpy

    import qdarray as qd

    dev = qd.Device(p.device)
    x16, y16 = qd.asarray(p["x16"], device=dev, copy=True), qd.asarray(p["y16"], device=dev)
    sx, sy = qd.asarray(p["sx"], device=dev, copy=True), qd.asarray(p["sy"], device=dev)
    x = qd.asarray(p["x"], device=dev, copy=True, requires_grad=True)
    a = qd.asarray(p["a"], device=dev, copy=True)
    y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
    y.grad[...] = 1.0
    sync = dev.backend.synchronize

    def launch(xs: Any, ys: Any) -> None:
        saxpy(2.0, xs, ys)
        sync(dev)

    def forward() -> None:
        logistic(x, a, y)
        sync(dev)

    def reverse() -> None:
        logistic.grad(x, a, y)
        sync(dev)

    def both() -> None:
        x.grad[...] = 0.0
        with qd.ad.Tape(loss=y):
            logistic(x, a, y)
        sync(dev)

    def gradient() -> np.ndarray:
        both()
        return np.asarray(x.grad.to_device("cpu"))

    return {
        "launch16": Case(lambda: launch(x16, y16)),
        "saxpy": Case(lambda: launch(sx, sy)),
        "fwd": Case(forward),
        "rev": Case(reverse),
        "fwd+rev": Case(both, gradient),
    }


def qdarray_sizing(p: Problem) -> dict[str, Callable[[], Any]]:
    """The stack sizing of one reverse launch on its own: "cached" with unchanged loop
    bounds, "fresh" after a write to the loop-bound array (which invalidates any cache)."""
    from bench_ad import sizing_call

    import qdarray as qd

    dev = qd.Device(p.device)
    x = qd.asarray(p["x"], device=dev, copy=True, requires_grad=True)
    a = qd.asarray(p["a"], device=dev, copy=True)
    y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
    size = sizing_call(x, a, y)

    def fresh() -> None:
        a[0] = a[0]  # a host write: bumps the array's generation
        size()

    return {"cached": size, "fresh": fresh}


# -- NumPy ----------------------------------------------------------------------------------


def numpy_cases(p: Problem) -> dict[str, Case]:
    p.cpu_only("numpy")
    x16, y16 = p["x16"].copy(), p["y16"].copy()
    sx, sy = p["sx"].copy(), p["sy"].copy()
    x, a = p["x"], p["a"]
    trips = p.max_trips
    tmp = np.empty_like(sx)

    def saxpy_np(xx: np.ndarray, yy: np.ndarray, t: np.ndarray) -> None:
        np.multiply(xx, np.float32(2.0), out=t)
        np.add(t, yy, out=yy)

    def forward() -> np.float32:
        v = x.copy()
        for k in range(trips):
            v = np.where(k < a, v - np.float32(0.1) * v * v + np.float32(0.01), v)
        return v.sum()

    note = f"masked loop of {trips} steps (no reverse mode)"
    return {
        "launch16": Case(lambda: saxpy_np(x16, y16, tmp[:16]), note="two ufuncs with out="),
        "saxpy": Case(lambda: saxpy_np(sx, sy, tmp), note="two ufuncs with out="),
        "fwd": Case(forward, note=note),
    }


# -- hand-written numba ---------------------------------------------------------------------


def numba_cases(p: Problem) -> dict[str, Case]:
    p.cpu_only("hand-written numba")
    from _numba_kernels import logistic_forward, logistic_reverse, saxpy_serial
    from bench_kernels import saxpy_numba

    x16, y16 = p["x16"].copy(), p["y16"].copy()
    sx, sy = p["sx"].copy(), p["sy"].copy()
    x, a = p["x"], p["a"]
    gx = np.zeros_like(x)
    y = np.zeros(1, np.float32)
    stack = max(p.max_trips, 1)
    two = np.float32(2.0)

    def both() -> None:
        gx[:] = 0.0
        logistic_forward(x, a, y)
        logistic_reverse(x, a, np.float32(1.0), gx, stack)

    def gradient() -> np.ndarray:
        both()
        return gx.copy()

    note = "prange; hand-written adjoint with a per-chunk stack of max(a) values"
    return {
        "launch16": Case(lambda: saxpy_serial(two, x16, y16), note="njit, no prange"),
        "saxpy": Case(lambda: saxpy_numba(two, sx, sy)),
        "fwd": Case(lambda: logistic_forward(x, a, y), note="prange with a sum reduction"),
        "rev": Case(lambda: logistic_reverse(x, a, np.float32(1.0), gx, stack), note=note),
        "fwd+rev": Case(both, gradient, note=note),
    }
