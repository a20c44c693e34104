"""The array operations the array benchmarks time, each as a qdarray call and a NumPy call.

One table serves the asv suite (`bench_array.py`) and the side-by-side script
(`compare_numpy.py`), so both time the same work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import qdarray as qd

# name -> (qdarray call, NumPy call); each takes (x, y) of one float dtype and shape.
OPS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda x, y: x + y, lambda a, b: a + b),
    "multiply_scalar": (lambda x, y: x * 2.0, lambda a, b: a * 2.0),
    "iadd": (lambda x, y: x.__iadd__(y), lambda a, b: a.__iadd__(b)),
    "less": (lambda x, y: x < y, lambda a, b: a < b),
    "sin": (lambda x, y: qd.sin(x), lambda a, b: np.sin(a)),
    "exp": (lambda x, y: qd.exp(x), lambda a, b: np.exp(a)),
    "sqrt": (lambda x, y: qd.sqrt(x), lambda a, b: np.sqrt(a)),
    "sum": (lambda x, y: qd.sum(x), lambda a, b: np.sum(a)),
    "mean": (lambda x, y: qd.mean(x), lambda a, b: np.mean(a)),
    "max": (lambda x, y: qd.max(x), lambda a, b: np.max(a)),
    "cumulative_sum": (lambda x, y: qd.cumulative_sum(x), lambda a, b: np.cumulative_sum(a)),
    # The standard's sort is stable; NumPy's default sort is not, and is the one users time.
    "sort": (lambda x, y: qd.sort(x), lambda a, b: np.sort(a)),
}


def operands(size: int, dtype: str = "float32", device: str = "cpu"
             ) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """(x, y) as qdarray arrays on `device` and (a, b) as NumPy arrays holding the same
    values."""
    rng = np.random.default_rng(0)
    a = rng.random(size, dtype=np.float64).astype(dtype)
    b = rng.random(size, dtype=np.float64).astype(dtype)
    return qd.asarray(a.copy(), device=device), qd.asarray(b.copy(), device=device), a, b
