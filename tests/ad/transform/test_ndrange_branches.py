"""Reverse mode through qd.ndrange nests whose body keeps values across branches: a local
assigned in a branch and read in a nested one becomes a local of its own in the reverse
(ad/transform/materialize.py), which must keep every loop of the nest (it once dropped the inner
loops, so the reverse lost their indices). The same body over one flattened index is the
oracle's twin; the gradients are checked against their closed form."""

from __future__ import annotations

import numpy as np

import qdarray as qd

N = 8


@qd.kernel(default_float=qd.float32)
def nested_ndrange(vi: qd.Array[qd.float32, 2], vo: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange(N, N):
        v = vi[i, j]
        if v < 0:
            lin = v
            if lin < 0:
                v = (1 + 0.5 * lin) * v
        vo[i, j] = v


@qd.kernel(default_float=qd.float32)
def nested_flat(vi: qd.Array[qd.float32, 2], vo: qd.Array[qd.float32, 2]):
    for k in range(N * N):
        i = k // N
        j = k % N
        v = vi[i, j]
        if v < 0:
            lin = v
            if lin < 0:
                v = (1 + 0.5 * lin) * v
        vo[i, j] = v


@qd.kernel(default_float=qd.float32)
def nested_ndrange_3d(vi: qd.Array[qd.float32, 3], vo: qd.Array[qd.float32, 3]):
    for i, j, k in qd.ndrange(2, 4, N):
        v = vi[i, j, k]
        if v < 0:
            lin = v
            if lin < 0:
                v = (1 + 0.5 * lin) * v
        vo[i, j, k] = v * (i + 1)


def gradient(kernel: object, shape: tuple[int, ...]) -> np.ndarray:
    x = np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    vi = qd.asarray(x, requires_grad=True)
    vo = qd.zeros(shape, dtype=qd.float32, requires_grad=True)
    with qd.ad.Tape() as tape:
        kernel(vi, vo)  # type: ignore[operator]
        loss = qd.sum(vo)
    tape.backward(loss)
    return np.asarray(vi.grad)


def closed_form(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, 1 + x, 1.0)  # d/dv of (1 + v/2) v, or of v


def test_flat_loop() -> None:
    x = np.linspace(-1.0, 1.0, N * N, dtype=np.float32).reshape(N, N)
    np.testing.assert_allclose(gradient(nested_flat, (N, N)), closed_form(x), rtol=1e-6)


def test_ndrange_loop() -> None:
    x = np.linspace(-1.0, 1.0, N * N, dtype=np.float32).reshape(N, N)
    np.testing.assert_allclose(gradient(nested_ndrange, (N, N)), closed_form(x), rtol=1e-6)


def test_ndrange_loop_of_three_axes() -> None:
    shape = (2, 4, N)
    x = np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    scale = np.arange(1, 3, dtype=np.float64).reshape(2, 1, 1)
    np.testing.assert_allclose(gradient(nested_ndrange_3d, shape), closed_form(x) * scale,
                               rtol=1e-6)
