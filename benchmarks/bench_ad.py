"""asv benchmarks of reverse-mode autodiff: the forward and the reverse launch of a kernel
whose loop-carried local needs an adstack, and the stack sizing on its own.

The kernel is `v = v - 0.1*v*v + 0.01` repeated a[i] times (a[i] uniform in [0, 64)),
float32, then `y[0] += v`. `python benchmarks/compare_ad.py` prints the reverse / forward
ratio measured in one run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import qdarray as qd
from qdarray.ad import sizing


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def operands(n: int, seed: int = 0) -> tuple[Any, Any, Any]:
    """x in [0, 1), a uniform in [0, 64), y: x and y with gradients."""
    rng = np.random.default_rng(seed)
    x = qd.asarray(rng.random(n, dtype=np.float32), requires_grad=True)
    a = qd.asarray(rng.integers(0, 64, n).astype(np.int32))
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    return x, a, y


class LogisticReverse:
    """Forward and reverse launches of `logistic` (numba CPU)."""

    params = [10_000, 1_000_000]
    param_names = ["n"]

    def setup(self, n: int) -> None:
        self.x, self.a, self.y = operands(n)
        logistic(self.x, self.a, self.y)
        self.y.grad[...] = 1.0
        logistic.grad(self.x, self.a, self.y)  # compile, size the heap once

    def time_forward(self, n: int) -> None:
        logistic(self.x, self.a, self.y)

    def time_reverse(self, n: int) -> None:
        logistic.grad(self.x, self.a, self.y)

    def time_sizing(self, n: int) -> None:
        from qdarray.ad.launch import _CACHE

        launcher = next(iter(_CACHE[logistic].values()))
        args = sizing.host_args(launcher.rev.forward.params, [self.x, self.a, self.y])
        sizing.symbolic(launcher.exprs, launcher.threads, args)
