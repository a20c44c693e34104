"""Kernels of the Dask tests, at the top level of a module so that they pickle by reference
(workers import this module) and compile once per process; references in NumPy."""

from __future__ import annotations

import numpy as np

import qdarray as qd


@qd.kernel
def dynamic_loop(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                 y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def dynamic_loop_reference(x: np.ndarray, a: np.ndarray) -> float:
    total = 0.0
    for xi, ai in zip(x, a, strict=True):
        v = float(xi)
        for _ in range(int(ai)):
            v = v - 0.1 * v * v + 0.01
        total += v
    return total


@qd.kernel
def stencil(x: qd.Array[qd.float64, 2], w: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 2]):
    # A nonlinear five-point stencil over the interior; the edges of y are left as they are.
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            y[i, j] = (w[0] * x[i - 1, j] + w[1] * x[i, j] * x[i, j] + w[2] * x[i + 1, j]
                       + w[3] * x[i, j - 1] + w[4] * x[i, j + 1])


def stencil_reference(x: np.ndarray, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = y.copy()
    out[1:-1, 1:-1] = (w[0] * x[:-2, 1:-1] + w[1] * x[1:-1, 1:-1] ** 2 + w[2] * x[2:, 1:-1]
                       + w[3] * x[1:-1, :-2] + w[4] * x[1:-1, 2:])
    return out


@qd.kernel
def affine(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1], z: qd.Array[qd.float64, 1],
           top: qd.Array[qd.float64, 1], scale: qd.float64):
    for i in range(x.shape[0]):
        y[i] = x[i] * scale
        z[i] += x[i] * x[i]
        qd.atomic_max(top[0], x[i])


@qd.kernel
def scaled(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
