"""The dynamic-loop kernel hand-written in numba: forward, and its adjoint written by hand.

These are the yardsticks a numba programmer would write without qdarray: saxpy over 16
elements as a plain `njit` loop (a `prange` would cost a thread-pool wake-up), the forward as a
`prange` loop with a sum reduction, the reverse recomputing each thread's loop into a small
stack (one per chunk of threads, allocated once per chunk) and walking it backwards.
"""

from __future__ import annotations

import numba
import numpy as np

CHUNK = 4096


@numba.njit
def saxpy_serial(a, x, y):  # noqa: ANN001, ANN201
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@numba.njit(parallel=True)  # no cache: asv imports this module under another name
def logistic_forward(x, a, y):  # noqa: ANN001, ANN201
    s = np.float32(0.0)
    for i in numba.prange(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - np.float32(0.1) * v * v + np.float32(0.01)
        s += v
    y[0] += s


@numba.njit(parallel=True)  # no cache: asv imports this module under another name
def logistic_reverse(x, a, gy, gx, capacity):  # noqa: ANN001, ANN201
    n = x.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    for c in numba.prange(chunks):
        stack = np.empty(capacity, np.float32)
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            v = x[i]
            m = a[i]
            for k in range(m):
                stack[k] = v
                v = v - np.float32(0.1) * v * v + np.float32(0.01)
            g = gy
            for k in range(m - 1, -1, -1):
                g = g * (np.float32(1.0) - np.float32(0.2) * stack[k])
            gx[i] += g
