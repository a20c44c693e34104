"""Reverse mode through a qd.ndrange loop whose body assigns a local in a branch and reads it
in a nested branch: the reverse transform loses a value of the flattened nest (an
AssertionError "%N is not available in the reverse sweep" from ad/transform.py). The same
body in a plain loop over the flattened index differentiates (DiffMPM's grid_op hits this)."""

from __future__ import annotations

import numpy as np
import pytest

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


def gradient(kernel: object) -> np.ndarray:
    x = np.linspace(-1.0, 1.0, N * N, dtype=np.float32).reshape(N, N)
    vi = qd.asarray(x, requires_grad=True)
    vo = qd.zeros((N, N), dtype=qd.float32, requires_grad=True)
    with qd.ad.Tape() as tape:
        kernel(vi, vo)  # type: ignore[operator]
        loss = qd.sum(vo)
    tape.backward(loss)
    want = np.where(x < 0, 1 + x, 1.0)  # d/dv of (1 + v/2) v, or of v
    np.testing.assert_allclose(np.asarray(vi.grad), want, rtol=1e-6)
    return np.asarray(vi.grad)


def test_flat_loop() -> None:
    gradient(nested_flat)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="the reverse of an ndrange nest loses a value read in a nested branch")
def test_ndrange_loop() -> None:
    gradient(nested_ndrange)
