"""asv benchmarks of reverse-mode autodiff: forward and reverse launches of kernels whose
loop-carried locals need adstacks, and the stack sizing on its own (fresh and cached).

The main kernel is `v = v - 0.1*v*v + 0.01` repeated a[i] times (a[i] uniform in [0, 64)),
float32, then `y[0] += v`. `python benchmarks/compare.py` prints the same workloads side by
side with NumPy, hand-written numba and the peers that are installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import qdarray as qd
from qdarray.ad.sizing import bounds as sizing


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


@qd.kernel
def affine(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * 0.95 + 0.01
        y[0] += v


@qd.kernel
def halving(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = a[i]
        while k > 0:  # no symbolic bound: sized by the counting kernel
            v = v - 0.1 * v * v + 0.01
            k = k // 2
        y[0] += v


KERNELS = {"logistic": logistic, "affine": affine, "halving": halving}


def operands(n: int, seed: int = 0) -> tuple[Any, Any, Any]:
    """x in [0, 1), a uniform in [0, 64), y: x and y with gradients."""
    rng = np.random.default_rng(seed)
    x = qd.asarray(rng.random(n, dtype=np.float32), requires_grad=True)
    a = qd.asarray(rng.integers(0, 64, n).astype(np.int32))
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    return x, a, y


def sizing_call(x: Any, a: Any, y: Any, kernel: Any = logistic) -> Callable[[], Any]:
    """A callable doing the stack sizing of one reverse launch of `kernel` on (x, a, y), the
    way the reverse launcher does it before each launch (it compiles the reverse first)."""
    from qdarray.ad.launch import _CACHE

    kernel(x, a, y)
    y.grad[...] = 1.0
    kernel.grad(x, a, y)
    launcher = next(iter(_CACHE[kernel].values()))
    args = (x, a, y)
    size = getattr(launcher, "size", None)
    if size is not None:
        return lambda: size(args)
    params = launcher.rev.forward.params
    return lambda: sizing.capacities(launcher.exprs, launcher.threads,
                                     sizing.host_args(params, args),
                                     lambda: launcher.count(args))


class DynamicLoopReverse:
    """Forward and reverse launches of kernels with a dynamic inner loop (numba CPU): the
    nonlinear `logistic` (one adstack), the linear `affine` (its reverse needs no stored
    values) and the `halving` while loop (sized by the counting kernel)."""

    params = [["logistic", "affine", "halving"], [10_000, 1_000_000]]
    param_names = ["kernel", "n"]

    def setup(self, kernel: str, n: int) -> None:
        self.k = KERNELS[kernel]
        self.x, self.a, self.y = operands(n)
        self.k(self.x, self.a, self.y)
        self.y.grad[...] = 1.0
        self.k.grad(self.x, self.a, self.y)  # compile, size the heap once

    def time_forward(self, kernel: str, n: int) -> None:
        self.k(self.x, self.a, self.y)

    def time_reverse(self, kernel: str, n: int) -> None:
        self.k.grad(self.x, self.a, self.y)

    def time_forward_and_reverse(self, kernel: str, n: int) -> None:
        with qd.ad.Tape(loss=self.y):
            self.k(self.x, self.a, self.y)

    def peakmem_reverse(self, kernel: str, n: int) -> None:
        self.k.grad(self.x, self.a, self.y)


class Sizing:
    """Sizing the stacks of one reverse launch: with unchanged loop bounds (cached; goal
    under 2 us per launch) and after a write to the loop-bound array (fresh)."""

    params = [["logistic", "halving"], [16, 1_000_000]]
    param_names = ["kernel", "n"]

    def setup(self, kernel: str, n: int) -> None:
        self.x, self.a, self.y = operands(n)
        self.size = sizing_call(self.x, self.a, self.y, KERNELS[kernel])
        self.size()

    def time_cached(self, kernel: str, n: int) -> None:
        self.size()

    def time_fresh(self, kernel: str, n: int) -> None:
        self.a[0] = self.a[0]  # a host write bumps the generation of `a`
        self.size()


class ReverseLaunchOverhead:
    """A whole reverse launch over 16 threads: sizing, heap, launch and overflow check."""

    def setup(self) -> None:
        self.x, self.a, self.y = operands(16)
        logistic(self.x, self.a, self.y)
        self.y.grad[...] = 1.0
        logistic.grad(self.x, self.a, self.y)

    def time_reverse_16(self) -> None:
        logistic.grad(self.x, self.a, self.y)
