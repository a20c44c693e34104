"""Host data to a GPU without a GPU: CuPy's behaviour modelled where it loses information.

CuPy (14.2 checked on an H200) builds a 0-d array from host data with `ndarray.fill(value)`,
and assigns a Python scalar with `fill` too, which writes zero bytes (a memset) when
`value == 0`: -0.0 becomes +0.0. tests/cuda/device/test_cuda_namespace.py checks the signs on
the device itself."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import numpy as np

from qdarray.backends.cuda.target import upload


def _asarray_like_cupy(host: Any) -> np.ndarray:
    host = np.asarray(host)
    if host.ndim == 0:  # ndarray.fill(value): memset when value == 0
        out = np.empty((), host.dtype)
        out[()] = 0 if host == 0 else host
        return out
    return host.copy()


FAKE_CUPY = SimpleNamespace(asarray=_asarray_like_cupy,
                            cuda=SimpleNamespace(Device=lambda i: contextlib.nullcontext()))


def test_a_0d_negative_zero_goes_up_with_its_sign() -> None:
    assert not np.signbit(_asarray_like_cupy(np.array(-0.0)))   # the model loses it
    for dtype in (np.float32, np.float64):
        up = upload(FAKE_CUPY, np.array(-0.0, dtype))
        assert up.shape == () and up.dtype == dtype and np.signbit(up)
    z = upload(FAKE_CUPY, np.array(complex(-0.0, -0.0)))
    assert np.signbit(z.real) and np.signbit(z.imag)
    np.testing.assert_array_equal(np.signbit(upload(FAKE_CUPY, np.array([-0.0, 0.0]))),
                                  [True, False])
