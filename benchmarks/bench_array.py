"""asv benchmarks of array operations: elementwise functions, operators and reductions.

Each class times one operation for qdarray and, as `*_numpy`, the same operation in NumPy, on
float32 arrays of 16 elements (per-call overhead) and of 1e6 and 1e7 elements (throughput),
on every device present (`*_numpy` on the CPU only).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _array_ops import OPS, operands  # noqa: E402

import qdarray as qd  # noqa: E402

SIZES = [16, 1_000_000, 10_000_000]
DEVICES = [str(d) for d in qd.__array_namespace_info__().devices()]


class _Op:
    op = ""
    params = [SIZES, DEVICES]
    param_names = ["size", "device"]

    def setup(self, size: int, device: str) -> None:
        self.x, self.y, _, _ = operands(size, device=device)
        self.call = OPS[self.op][0]
        self.sync = self.x.device.backend.synchronize
        self.time_qdarray(size, device)  # warm-up: compiles the kernels of non-CPU devices

    def time_qdarray(self, size: int, device: str) -> None:
        r = self.call(self.x, self.y)
        self.sync(r.device)

    def peakmem_qdarray(self, size: int, device: str) -> None:
        self.call(self.x, self.y)


class Numpy:
    """The same operations in NumPy (the CPU yardstick)."""

    params = [list(OPS), SIZES]
    param_names = ["op", "size"]

    def setup(self, op: str, size: int) -> None:
        _, _, self.a, self.b = operands(size)
        self.call = OPS[op][1]

    def time_numpy(self, op: str, size: int) -> Any:
        return self.call(self.a, self.b)


class Add(_Op):
    op = "add"


class MultiplyScalar(_Op):
    op = "multiply_scalar"


class InplaceAdd(_Op):
    op = "iadd"


class Less(_Op):
    op = "less"


class Sin(_Op):
    op = "sin"


class Exp(_Op):
    op = "exp"


class Sqrt(_Op):
    op = "sqrt"


class Sum(_Op):
    op = "sum"


class Mean(_Op):
    op = "mean"


class Max(_Op):
    op = "max"


class CumulativeSum(_Op):
    op = "cumulative_sum"
