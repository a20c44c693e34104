"""The namespace's IR-built kernels on the OpenCL device: reproducers of the bugs the
conformance suite and adversarial use found, complex numbers on the device, indexing through
index arrays, and overlapping assignment. Every result is compared with the CPU namespace."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.codegen.c.opencl_c import render_opencl_c
from qdarray.kernels.library.maps import MapSpec, Operand, map_kernel
from qdarray.kernels.ops.math import fma_value
from qdarray.kernels.passes import pipeline


def on(device: str, x: object) -> qd.Array:
    return qd.asarray(np.asarray(x), device=device)


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(got: qd.Array, want: object, rtol: float = 0.0) -> None:
    want = np.asarray(want)
    g = host(got)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert g.shape == want.shape, (g.shape, want.shape)
    if rtol:
        np.testing.assert_allclose(g, want, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, want)


SPECIAL = [0.0, -0.0, 1.0, -2.5, 1e-300, 3e300, np.inf, -np.inf, np.nan]
Z = np.array([complex(a, b) for a, b in itertools.product(SPECIAL, repeat=2)])


# -- overlapping self-assignment (issue 18) -------------------------------------------------


def test_reversed_self_assignment(device):
    x = on(device, np.arange(6.0))
    x[:] = x[::-1]
    same(x, [5.0, 4.0, 3.0, 2.0, 1.0, 0.0])


def test_flip_self_assignment(device):
    x = on(device, np.arange(7, dtype=np.int32))
    x[...] = qd.flip(x)
    same(x, np.arange(7, dtype=np.int32)[::-1])


def test_transpose_self_assignment(device):
    z0 = np.arange(257 * 257, dtype=np.float32).reshape(257, 257)
    z = on(device, z0)
    z[...] = z.T
    same(z, z0.T)


def test_shifted_and_in_place_overlaps(device):
    x0 = np.arange(10.0)
    x = on(device, x0)
    x[1:] = x[:-1]
    same(x, np.concatenate([[0.0], x0[:-1]]))
    y = on(device, x0)
    y += y[::-1]
    same(y, x0 + x0[::-1])
    w = on(device, x0)
    w[on(device, np.array([0, 1]))] = w[8:]  # a scatter whose value is inside the target
    same(w, np.concatenate([x0[8:], x0[2:]]))


# -- complex dtypes (issue 15: raw KeyError: 'complex64') -----------------------------------


@pytest.mark.parametrize("dtype", [qd.complex64, qd.complex128])
def test_complex_eye_and_indexing(device, dtype):
    npt = np.dtype(dtype.name)
    same(qd.eye(3, 4, k=-1, dtype=dtype, device=device), np.eye(3, 4, k=-1, dtype=npt))
    x0 = (np.arange(12) * (1 - 2j)).astype(npt).reshape(3, 4)
    x = on(device, x0)
    i = np.array([2, 0, -1])
    same(x[on(device, i)], x0[i])
    same(x[on(device, x0.real > 4)], x0[x0.real > 4])
    same(qd.take(x, on(device, i), axis=1), np.take(x0, i, axis=1))
    idx = np.array([[1], [0], [3]])
    same(qd.take_along_axis(x, on(device, idx), axis=1), np.take_along_axis(x0, idx, axis=1))
    x[on(device, np.array([1]))] = on(device, np.zeros((1, 4), npt))
    x0[[1]] = 0
    same(x, x0)


def test_take_along_axis_with_an_empty_index_axis(device):
    x = on(device, np.arange(12.0).reshape(3, 4))
    got = qd.take_along_axis(x, on(device, np.zeros((3, 0), np.int64)), axis=1)
    assert got.shape == (3, 0)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "equal",
                                  "not_equal"])
def test_complex_arithmetic_matches_the_cpu_bit_for_bit(device, name):
    a, b = Z, np.roll(Z, 7)
    want = getattr(qd, name)(qd.asarray(a), qd.asarray(b))
    got = getattr(qd, name)(on(device, a), on(device, b))
    same(got, np.asarray(want))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_products_round_as_numpys_fused_loops(device, dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(dtype)
    b = (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(dtype)
    part = qd.float32 if dtype == np.complex64 else qd.float64
    got = host(on(device, a) * on(device, b))
    for x, y, z in zip(a, b, got, strict=True):  # fma(ar, br, -(ai bi)), fma(ar, bi, ai br)
        re = fma_value(part, x.real, y.real, -(x.imag * y.imag))
        im = fma_value(part, x.real, y.imag, x.imag * y.real)
        assert (z.real, z.imag) == (re, im)


@pytest.mark.parametrize("name", ["negative", "conj", "real", "imag", "square",
                                  "reciprocal", "isnan", "isinf", "isfinite", "sign", "abs",
                                  "round"])
def test_complex_unary_functions(device, name):
    want = np.asarray(getattr(qd, name)(qd.asarray(Z)))
    rtol = 1e-15 if name in ("abs", "sign") else 0.0  # NumPy's complex abs is not hypot
    same(getattr(qd, name)(on(device, Z)), want, rtol=rtol)


def test_complex_reductions_scans_and_products(device):
    rng = np.random.default_rng(0)
    z0 = (rng.standard_normal((5, 6)) + 1j * rng.standard_normal((5, 6))).astype(np.complex64)
    z = on(device, z0)
    same(qd.sum(z, axis=0), np.asarray(qd.sum(qd.asarray(z0), axis=0)), rtol=1e-6)
    same(qd.prod(z[:, :3], axis=1), np.asarray(qd.prod(qd.asarray(z0[:, :3]), axis=1)),
         rtol=1e-5)
    same(qd.cumulative_sum(z, axis=1), np.cumsum(z0, axis=1), rtol=1e-5)
    same(qd.mean(z), np.asarray(qd.mean(qd.asarray(z0))), rtol=1e-6)
    same(z @ z.T, z0 @ z0.T, rtol=1e-5)
    same(qd.vecdot(z, z), np.asarray(qd.vecdot(qd.asarray(z0), qd.asarray(z0))), rtol=1e-5)
    same(qd.any(z != 0, axis=1), np.any(z0 != 0, axis=1))
    same(qd.count_nonzero(z), np.asarray(np.count_nonzero(z0)))


def test_complex_transcendental_functions_compute_on_the_host(device):
    z = Z[np.isfinite(Z)]
    for name in ("exp", "log", "sqrt", "sin", "tanh"):
        same(getattr(qd, name)(on(device, z)), np.asarray(getattr(qd, name)(qd.asarray(z))))
    caps = qd.Device(device).backend.capabilities(qd.Device(device))
    assert any("complex transcendental" in f for f in caps["host functions"])


# -- indexing through index arrays on the device ---------------------------------------------


KEYS = [
    lambda a, d: (on(d, [1, 0, 1]),),
    lambda a, d: (slice(None), on(d, [[2, 0], [-1, 2]])),
    lambda a, d: (on(d, [1, 0]), slice(None), on(d, [2, -4])),
    lambda a, d: (1, on(d, [2, 0])),
    lambda a, d: (None, on(d, [0]), Ellipsis, None),
    lambda a, d: (on(d, np.arange(24).reshape(2, 3, 4) % 3 == 0),),
    lambda a, d: (slice(None, None, -1), on(d, [True, False, True])),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_advanced_indexing_matches_numpy(device, k):
    x0 = np.arange(24.0).reshape(2, 3, 4)
    key = KEYS[k](x0, device)
    host_key = tuple(np.asarray(part.to_device("cpu")) if isinstance(part, qd.Array) else part
                     for part in key)
    x = on(device, x0)
    same(x[key], x0[host_key])
    y0 = x0.copy()
    y0[host_key] = -1.0
    x[key] = -1.0
    same(x, y0)


def test_nonzero_and_repeat_run_on_the_device(device):
    x0 = np.array([[0, 3, 0], [1, 0, 2]])
    for got, want in zip(qd.nonzero(on(device, x0)), np.nonzero(x0), strict=True):
        same(got, want.astype(np.int64))
    caps = qd.Device(device).backend.capabilities(qd.Device(device))
    assert not any(f.startswith(("nonzero", "repeat", "diff")) for f in caps["host functions"])
    same(qd.repeat(on(device, [1.0, 2.0, 3.0]), on(device, [0, 3, 1])), [2.0, 2.0, 2.0, 3.0])


# -- DLPack (issue 15) -----------------------------------------------------------------------


def test_from_dlpack_of_a_device_array_copies_or_moves(device):
    x = on(device, [1.0, 2.0])
    y = qd.from_dlpack(x, copy=True)
    y[0] = 5.0
    assert y.device == x.device and host(x)[0] == 1.0
    z = qd.from_dlpack(x, device="cpu")
    assert z.device == qd.Device("cpu")
    np.testing.assert_array_equal(np.asarray(z), [1.0, 2.0])
    with pytest.raises(BufferError, match="copy=False"):
        qd.from_dlpack(x, device="cpu", copy=False)


# -- the kernels are the compiler's -----------------------------------------------------------


def test_namespace_kernels_are_rendered_by_the_kernel_compiler():
    c64 = qd.complex64
    spec = MapSpec("multiply", c64, c64, (Operand(True, c64, c64), Operand(True, c64, c64)), 1)
    source = render_opencl_c(pipeline(map_kernel(spec), debug=False, lower=True))
    assert "float2" in source and "Generated by qdarray" in source


def test_booleans_in_arithmetic_follow_numpy(device):
    """`mask * x`, True + True (or), `*` of booleans (and), `//` and `**` of booleans (int8),
    in place, as on the CPU (tests/array/test_elementwise_functions.py)."""
    m = np.array([True, False, True, False])
    x = np.array([2.0, -3.0, 0.5, 4.0], dtype=np.float32)
    i = np.array([5, 7, -2, 1], dtype=np.int8)
    qm, qx, qi = (qd.asarray(v, device=device) for v in (m, x, i))
    with np.errstate(divide="ignore"):
        floor = i // ~m
    for got, want in [(qm * qx, m * x), (qx + qm, x + m), (qm * 2, m * 2), (1.5 * qm, 1.5 * m),
                      (qm + qi, m + i), (qm + qm, m + m), (qm * qm, m * m), (qm ** qm, m ** m),
                      (qi // qd.asarray(~m, device=device), floor),
                      (qd.sum(qm * qx), np.sum(m * x))]:
        assert got.device == qd.Device(device)
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)
        assert got.dtype == np.asarray(want).dtype
    qm += qd.asarray([False, True, False, False], device=device)
    np.testing.assert_array_equal(np.asarray(qm.to_device("cpu")), [True, True, True, False])
