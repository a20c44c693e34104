"""asv benchmarks of array operations: elementwise functions, operators and reductions.

Each class times one operation for qdarray and, as `*_numpy`, the same operation in NumPy, on
float32 arrays of 16 elements (per-call overhead) and of 1e6 and 1e7 elements (throughput).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _array_ops import OPS, operands  # noqa: E402

SIZES = [16, 1_000_000, 10_000_000]


class _Op:
    op = ""
    params = [SIZES]
    param_names = ["size"]

    def setup(self, size: int) -> None:
        self.x, self.y, self.a, self.b = operands(size)
        self.qd_call, self.np_call = OPS[self.op]

    def time_qdarray(self, size: int) -> Any:
        return self.qd_call(self.x, self.y)

    def time_numpy(self, size: int) -> Any:
        return self.np_call(self.a, self.b)


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
