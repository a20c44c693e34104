"""Signed integers widened in kernels on the Vulkan device, against NumPy.

Mesa 22.3's llvmpipe (the CI's lavapipe) miscompiled the uses of an int64 made by OpSConvert
from an int32: its signed comparisons against constants came out constant (c > 0 true for
c = -3 and c = 0), and max / min against constants and floor division with them; a reverse
with negative int32 trip counts raised a bogus AdStackOverflowError. The generator widens a
signed integer to 64 bits by a shift pair instead (codegen/spirv/ops.py, _sign_extend_64).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import qdarray as qd


def _probe(dst):  # type: ignore[no-untyped-def]
    @qd.kernel
    def probe(a, k, o):  # a: the source dtype, k: dst
        for i in range(a.shape[0]):
            c = qd.cast(a[i], dst)
            o[i, 0] = c
            o[i, 1] = 1 if c > 0 else 2
            o[i, 2] = 1 if c >= 0 else 2
            o[i, 3] = 1 if c < 5 else 2
            o[i, 4] = 1 if c <= -1 else 2
            o[i, 5] = 1 if c == -3 else 2
            o[i, 6] = max(c, 0)
            o[i, 7] = min(c, 1)
            o[i, 8] = c // 2
            o[i, 9] = c % 3
            o[i, 10] = c >> 1
            o[i, 11] = abs(c)
            o[i, 12] = 1 if c > k[0] else 2
            o[i, 13] = c * k[1]
    return probe


def _expected(a: np.ndarray, dst: type) -> np.ndarray:
    c = a.astype(dst)
    k = np.array([0, 3], dst)
    cols = [c, c > 0, c >= 0, c < 5, c <= -1, c == -3, np.maximum(c, 0), np.minimum(c, 1),
            c // 2, c % 3, c >> 1, np.abs(c), c > k[0], c * k[1]]
    return np.stack([np.where(x, 1, 2) if x.dtype == bool else x.astype(np.int64)
                     for x in cols], 1)


WIDENINGS = [(np.int8, np.int64), (np.int16, np.int64), (np.int32, np.int64),
             (np.int8, np.int32), (np.int16, np.int32), (np.int8, np.int16)]
KERNELS = {pair: _probe(getattr(qd, pair[1].__name__)) for pair in WIDENINGS}


@pytest.mark.parametrize("pair", WIDENINGS, ids=lambda p: f"{p[0].__name__}-{p[1].__name__}")
def test_signed_widening_against_constants(device, pair):
    src, dst = pair
    info = np.iinfo(src)
    a = np.array([-3, 0, 5, -7, 9, -1, 1, 4, -2, info.min, info.max, info.min + 1], src)
    o = qd.zeros((len(a), 14), dtype=qd.int64, device=device)
    KERNELS[pair](qd.asarray(a, device=device), qd.asarray(np.array([0, 3], dst), device=device),
                  o)
    np.testing.assert_array_equal(np.asarray(o.to_device("cpu")), _expected(a, dst))


@qd.kernel
def to_unsigned(a: qd.Array[qd.int32, 1], b: qd.Array[qd.int8, 1], o: qd.Array[qd.uint64, 2]):
    for i in range(a.shape[0]):
        c = qd.cast(a[i], qd.uint64)
        o[i, 0] = c
        o[i, 1] = qd.cast(b[i], qd.uint64)
        o[i, 2] = 1 if c > 5 else 2
        o[i, 3] = c // 2


def test_signed_widening_to_uint64_wraps_as_numpy(device):
    a = np.array([-3, 0, 5, -2**31, 2**31 - 1], np.int32)
    b = np.array([-3, 0, 5, -128, 127], np.int8)
    o = qd.zeros((5, 4), dtype=qd.uint64, device=device)
    to_unsigned(qd.asarray(a, device=device), qd.asarray(b, device=device), o)
    c = a.astype(np.uint64)
    want = np.stack([c, b.astype(np.uint64), np.where(c > 5, 1, 2).astype(np.uint64), c // 2], 1)
    np.testing.assert_array_equal(np.asarray(o.to_device("cpu")), want)


@qd.kernel
def computed(a: qd.Array[qd.int32, 1], n: qd.int32, o: qd.Array[qd.int64, 2]):
    for i in range(a.shape[0]):
        s = qd.cast(a[i] * 3 + n, qd.int64)   # an int32 computed, not loaded
        o[i, 0] = 1 if s > 0 else 2
        o[i, 1] = max(s, 0)
        d = qd.cast(n - 5, qd.int64)          # from a scalar parameter
        o[i, 2] = 1 if d < 0 else 2


def test_computed_int32_widened_against_constants(device):
    a = np.array([-3, 0, 5, -7, 9], np.int32)
    o = qd.zeros((5, 3), dtype=qd.int64, device=device)
    computed(qd.asarray(a, device=device), 2, o)
    s = a.astype(np.int64) * 3 + 2
    want = np.stack([np.where(s > 0, 1, 2), np.maximum(s, 0), np.full(5, 1)], 1)
    np.testing.assert_array_equal(np.asarray(o.to_device("cpu")), want)


def _sconverts_to_64_bits(words: bytes) -> int:
    """How many OpSConvert instructions of a SPIR-V module produce a 64-bit integer."""
    w = struct.unpack(f"<{len(words) // 4}I", words)
    wide, found, k = set(), 0, 5
    while k < len(w):
        count, op = w[k] >> 16, w[k] & 0xFFFF
        if op == 21 and w[k + 2] == 64:      # OpTypeInt %id 64 signedness
            wide.add(w[k + 1])
        if op == 114 and w[k + 1] in wide:   # OpSConvert %type %id %value
            found += 1
        k += count
    return found


def test_no_module_sign_extends_to_64_bits_with_sconvert(device):
    a = np.array([-3, 0, 5], np.int32)
    o = qd.zeros((3, 14), dtype=qd.int64, device=device)
    source = KERNELS[(np.int32, np.int64)].generated_source(
        qd.asarray(a, device=device), qd.asarray(np.array([0, 3], np.int64), device=device), o)
    stages = [bytes.fromhex(part.split("\n", 1)[1].strip()) for part in source.split("; ")[1:]]
    assert stages and all(_sconverts_to_64_bits(s) == 0 for s in stages)


@qd.kernel
def steps(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[i] = v


def test_reverse_with_negative_int32_trip_counts(device):
    # range(a[i]) with a[i] < 0 runs no iteration; the reverse's capacities are
    # 1 + max(a[i], 0) computed in int64 on the device (llvmpipe's miscompile of OpSConvert
    # made them wrong: a bogus AdStackOverflowError, "capacity 3, depth reached 1").
    a = np.array([-3, 2, 0, 5, -1], np.int32)
    grads = []
    for dev in ("cpu", device):
        x = qd.asarray(np.full(5, 0.5), device=dev, requires_grad=True)
        y = qd.zeros(5, dtype=qd.float64, device=dev, requires_grad=True)
        aa = qd.asarray(a, device=dev)
        steps(x, aa, y)
        y.grad[...] = 1.0
        steps.grad(x, aa, y)
        grads.append(np.asarray(x.grad.to_device("cpu")))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    np.testing.assert_array_equal(grads[1][a <= 0], 1.0)  # no iteration: y = x
    want = np.ones(5)
    v = np.full(5, 0.5)
    for t in range(a.max()):
        live = a > t
        want[live] *= 1 - 0.2 * v[live]
        v[live] = v[live] - 0.1 * v[live] ** 2 + 0.01
    np.testing.assert_allclose(grads[1], want, rtol=1e-12)
