"""Every op against NumPy, on the interpreter and the CPU code generator.

Each kernel below computes a whole family of ops (one output row per op), so one compile
covers many ops; NumPy on the same inputs and dtypes is the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.ops.arith import cast_value

m = qd.math

UNARY = (m.sin, m.cos, m.tan, m.asin, m.acos, m.atan, m.sinh, m.cosh, m.tanh, m.asinh,
         m.acosh, m.atanh, m.exp, m.exp2, m.expm1, m.log, m.log2, m.log10, m.log1p, m.sqrt,
         m.rsqrt, m.cbrt, m.floor, m.ceil, m.trunc, m.round, m.sign, m.abs)
UNARY_NUMPY = (np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh,
               np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.exp, np.exp2, np.expm1, np.log,
               np.log2, np.log10, np.log1p, np.sqrt, lambda x: 1 / np.sqrt(x), np.cbrt,
               np.floor, np.ceil, np.trunc, np.rint, np.sign, np.abs)
PREDICATES = (m.isnan, m.isinf, m.isfinite)
BINARY = (m.atan2, m.hypot, m.copysign, m.fmod, m.nextafter, m.pow, m.min, m.max)
BINARY_NUMPY = (np.arctan2, np.hypot, np.copysign, np.fmod, np.nextafter, np.power, np.minimum,
                np.maximum)

TOL = {np.float32: {"rtol": 2e-6, "atol": 1e-6}, np.float64: {"rtol": 1e-13, "atol": 1e-14}}


@qd.kernel
def unary_all(x: qd.Array, out: qd.Array):
    for i in range(x.shape[0]):
        for k in qd.static(range(len(UNARY))):
            out[k, i] = UNARY[k](x[i])


@qd.kernel
def predicates_all(x: qd.Array, out: qd.Array):
    for i in range(x.shape[0]):
        for k in qd.static(range(len(PREDICATES))):
            out[k, i] = PREDICATES[k](x[i])


@qd.kernel
def binary_all(x: qd.Array, y: qd.Array, out: qd.Array):
    for i in range(x.shape[0]):
        for k in qd.static(range(len(BINARY))):
            out[k, i] = BINARY[k](x[i], y[i])


def _floats(dtype: type) -> np.ndarray:
    x = np.concatenate([np.linspace(-3.0, 3.0, 25), [0.0, -0.0, 0.5, 1.0, -1.0, 2.5, 7.25]])
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_math(launch, dtype):
    x = _floats(dtype)
    out = np.zeros((len(UNARY), x.size), dtype)
    launch(unary_all, x, out)
    with np.errstate(all="ignore"):
        for k, f in enumerate(UNARY_NUMPY):
            want = f(x).astype(dtype)
            np.testing.assert_allclose(out[k], want, equal_nan=True, err_msg=UNARY[k].__name__,
                                       **TOL[dtype])


@qd.kernel
def signs(x, y):
    for i in range(x.shape[0]):
        y[i] = qd.math.sign(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_of_zeros_is_positive_zero(launch, dtype):
    """NumPy's sign(-0.0) is +0.0 (the compiled CPU kernel gave -0.0, as numba's np.sign)."""
    x = np.array([-0.0, 0.0, -2.5, 3.0, np.nan, -np.inf, 1e-310 if dtype == np.float64 else 1e-40],
                 dtype)
    out = np.full(x.size, 7, dtype)
    launch(signs, x, out)
    with np.errstate(all="ignore"):
        want = np.sign(x)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))


@qd.kernel
def log1ps(x, y):
    for i in range(x.shape[0]):
        y[i] = qd.math.log1p(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log1p_of_tiny_values_is_the_value(launch, dtype):
    """log1p(x) rounds to x for |x| below 2**-54 (float32: 2**-25), subnormals included
    (PoCL's log1p gave 0 for the smallest subnormal and missed others by an ulp)."""
    fi = np.finfo(dtype)
    x = np.geomspace(fi.smallest_subnormal, fi.eps / 4, 200, dtype=dtype)
    x = np.concatenate([x, -x]).astype(dtype)
    out = np.zeros_like(x)
    launch(log1ps, x, out)
    np.testing.assert_array_equal(out, np.log1p(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_predicates(launch, dtype):
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0], dtype)
    out = np.zeros((3, x.size), bool)
    launch(predicates_all, x, out)
    np.testing.assert_array_equal(out, [np.isnan(x), np.isinf(x), np.isfinite(x)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_math(launch, dtype):
    x = _floats(dtype)
    y = np.roll(x, 3)[::-1].copy()
    y[4] = np.nan
    out = np.zeros((len(BINARY), x.size), dtype)
    launch(binary_all, x, y, out)
    with np.errstate(all="ignore"):
        for k, f in enumerate(BINARY_NUMPY):
            np.testing.assert_allclose(out[k], f(x, y).astype(dtype), equal_nan=True,
                                       err_msg=BINARY[k].__name__, **TOL[dtype])


def test_math_of_ints_is_float64(launch):
    x = np.array([1, 4, 9], np.int32)
    out = np.zeros((len(UNARY), 3), np.float64)
    launch(unary_all, x, out)
    np.testing.assert_allclose(out[0], np.sin(x.astype(np.float64)))
    np.testing.assert_allclose(out[19], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out[27], [1, 4, 9])  # abs keeps integers


# -- arithmetic, bitwise, comparisons -------------------------------------------------------

@qd.kernel
def arith_all(a: qd.Array, b: qd.Array, out: qd.Array, cmp: qd.Array):
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        out[0, i] = x + y
        out[1, i] = x - y
        out[2, i] = x * y
        out[3, i] = x // y
        out[4, i] = x % y
        out[5, i] = min(x, y)
        out[6, i] = max(x, y)
        out[7, i] = -x
        out[8, i] = abs(x)
        out[9, i] = qd.select(x < y, x, y)
        cmp[0, i] = x == y
        cmp[1, i] = x != y
        cmp[2, i] = x < y
        cmp[3, i] = x <= y
        cmp[4, i] = x > y
        cmp[5, i] = x >= y


@qd.kernel
def bitwise_all(a: qd.Array, b: qd.Array, s: qd.Array, out: qd.Array):
    for i in range(a.shape[0]):
        out[0, i] = a[i] & b[i]
        out[1, i] = a[i] | b[i]
        out[2, i] = a[i] ^ b[i]
        out[3, i] = ~a[i]
        out[4, i] = a[i] << s[i]
        out[5, i] = a[i] >> s[i]
        out[6, i] = a[i] ** s[i]


INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _operands(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "f":
        a = rng.normal(size=40) * 10
        b = rng.normal(size=40) * 10
        b[:3] = [0.0, -0.0, np.inf]
        return a.astype(dtype), b.astype(dtype)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=40, endpoint=True, dtype=dtype)
    b = rng.integers(info.min, info.max, size=40, endpoint=True, dtype=dtype)
    edges = [info.min, info.max, 0, 1, 7]
    a[:5] = edges
    b[:5] = [0, 0, 0, info.max, 3]
    if info.min < 0:
        a[5], b[5] = info.min, -1
        b[6:10] = [-1, -3, 5, -7]
    return a, b


@pytest.mark.parametrize("dtype", INTS + [np.float32, np.float64])
def test_arithmetic(launch, dtype):
    a, b = _operands(dtype)
    out = np.zeros((10, a.size), dtype)
    cmp = np.zeros((6, a.size), bool)
    launch(arith_all, a, b, out, cmp)
    with np.errstate(all="ignore"):
        floor = np.floor_divide(a, b)
        mod = np.remainder(a, b)
        if np.dtype(dtype).kind in "iu":
            floor = np.where(b == 0, 0, floor).astype(dtype)
            mod = np.where(b == 0, 0, mod).astype(dtype)
        want = [a + b, a - b, a * b, floor, mod, np.minimum(a, b), np.maximum(a, b), -a,
                np.abs(a), np.where(a < b, a, b)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k], np.asarray(w, dtype), err_msg=f"row {k}")
    np.testing.assert_array_equal(cmp, [a == b, a != b, a < b, a <= b, a > b, a >= b])


@qd.kernel
def divmod_all(a: qd.Array, b: qd.Array, out: qd.Array):
    for i in range(a.shape[0]):
        out[0, i] = a[i] // b[i]
        out[1, i] = a[i] % b[i]


FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 5.5, -5.5, 0.5, -2.5, 1e-30, -1e-30, 1e30,
               -1e30, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_division_and_remainder_edges_match_numpy_bits(launch, dtype):
    """Every pair of edge operands (signed zeros, infinities, NaN, tiny and huge values):
    the bits of NumPy's results, zero signs included (NaN where NaN)."""
    edges = np.array(FLOAT_EDGES, dtype)
    a, b = (g.ravel().copy() for g in np.meshgrid(edges, edges))
    out = np.zeros((2, a.size), dtype)
    launch(divmod_all, a, b, out)
    with np.errstate(all="ignore"):
        want = [np.floor_divide(a, b), np.remainder(a, b)]
    ints = np.int32 if dtype == np.float32 else np.int64
    for k, w in enumerate(want):
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(out[k]), nan, err_msg=f"row {k}: NaN places")
        got_bits, want_bits = out[k][~nan].view(ints), w[~nan].view(ints)
        bad = np.flatnonzero(got_bits != want_bits)
        assert bad.size == 0, [(a[~nan][j], b[~nan][j], out[k][~nan][j], w[~nan][j])
                               for j in bad[:8]]


def _int_power(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for k, (x, e) in enumerate(zip(a.tolist(), n.tolist(), strict=True)):
        if e < 0:
            out[k] = 1 if x == 1 else ((-1) ** (e % 2) if x == -1 else 0)
        else:
            out[k] = np.array(pow(x, e, 1 << 64), np.uint64).astype(a.dtype)
    return out


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_shifts_and_integer_power(launch, dtype):
    a, b = _operands(dtype)
    bits = np.dtype(dtype).itemsize * 8
    s = (np.arange(a.size) % (bits + 4)).astype(dtype)
    if np.dtype(dtype).kind == "i":
        s[-3:] = [-1, -5, -2]
    out = np.zeros((7, a.size), dtype)
    launch(bitwise_all, a, b, s, out)
    with np.errstate(all="ignore"):
        inside = (s >= 0) & (s < bits)
        shl = np.where(inside, np.left_shift(a, np.where(inside, s, 0)), 0)
        fill = np.where(a < 0, -1, 0) if np.dtype(dtype).kind == "i" else 0
        shr = np.where(inside, np.right_shift(a, np.where(inside, s, 0)), fill)
    want = [a & b, a | b, a ^ b, ~a, shl.astype(dtype), shr.astype(dtype), _int_power(a, s)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k], w, err_msg=f"row {k}")


@qd.kernel
def overflowing(a: qd.Array, b: qd.Array, out: qd.Array, cmp: qd.Array):
    for i in range(a.shape[0]):
        out[0, i] = a[i] + b[i]
        out[1, i] = a[i] - b[i]
        out[2, i] = a[i] * b[i]
        out[3, i] = -a[i]
        out[4, i] = abs(a[i])
        out[5, i] = a[i] << 3
        out[6, i] = a[i] ** 3
        out[7, i] = a[i] // b[i]
        out[8, i] = a[i] + 1
        out[9, i] = (a[i] * 100) // 100
        cmp[0, i] = a[i] + 1 > a[i]
        cmp[1, i] = a[i] - 1 < a[i]
        cmp[2, i] = (a[i] * 2) // 2 == a[i]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_overflow_wraps_around_as_numpy(launch, dtype):
    """Integer arithmetic wraps around, with NumPy's results, on every device: OpenCL C left
    signed overflow undefined and PoCL folded it (`x + 1 > x` true at the maximum, and
    `(x * 65536) // 65536` giving x back for int32 40000 where NumPy gives -25536)."""
    info = np.iinfo(dtype)
    edges = [info.min, info.min + 1, info.max, info.max - 1, info.max // 2 + 1, 0, 1, 40000]
    a = np.array([v for v in edges if info.min <= v <= info.max], dtype)
    a = np.repeat(a, 3)
    b = np.tile(np.array([info.max, 2, -1 if info.min < 0 else info.max], dtype), a.size // 3)
    out = np.zeros((10, a.size), dtype)
    cmp = np.zeros((3, a.size), bool)
    launch(overflowing, a, b, out, cmp)
    one, two, hundred = dtype(1), dtype(2), dtype(100)
    with np.errstate(all="ignore"):
        want = [a + b, a - b, a * b, -a, np.abs(a), np.left_shift(a, dtype(3)), a * a * a,
                np.floor_divide(a, b), a + one, (a * hundred) // hundred]
        want_cmp = [a + one > a, a - one < a, (a * two) // two == a]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k], np.asarray(w, dtype), err_msg=f"row {k}")
    for k, w in enumerate(want_cmp):
        np.testing.assert_array_equal(cmp[k], w, err_msg=f"comparison {k}")


@qd.kernel
def divide(a: qd.Array, b: qd.Array, out: qd.Array):
    for i in range(a.shape[0]):
        out[i] = a[i] / b[i]


@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.float32])
def test_true_division(launch, dtype):
    a, b = _operands(dtype)
    b[b == 0] = 3
    out = np.zeros(a.size, np.float64 if np.dtype(dtype).kind != "f" else dtype)
    launch(divide, a, b, out)
    # correctly rounded, as NumPy's (Vulkan and OpenCL allow 2.5 ulp; the devices round once)
    np.testing.assert_array_equal(out, (a / b).astype(out.dtype))


# -- casts ----------------------------------------------------------------------------------

KERNEL_DTYPES = [np.bool_] + INTS + [np.float32, np.float64]


@pytest.mark.parametrize("src", KERNEL_DTYPES)
@pytest.mark.parametrize("dst", KERNEL_DTYPES)
def test_cast_semantics_match_numpy(src, dst):
    kind = np.dtype(src).kind
    if kind == "f":
        x = np.array([0, 1, -1, 3.75, -7.5, 200.5, 70000.25, -(2.0**31), 2.0**40], src)
    elif kind == "b":
        x = np.array([True, False, True])
    else:
        x = np.array([0, 1, -1, 3, -7, 200, 70000, -(2**31), 2**40, 2**63 - 1]).astype(src)
    if np.dtype(dst).kind in "iu" and np.dtype(src).kind == "f":
        info = np.iinfo(dst)
        x = x[(x >= info.min) & (x <= info.max)]  # float -> int out of range is undefined
    dt = qd.kernels.types.KERNEL_DTYPES[KERNEL_DTYPES.index(dst)]
    with np.errstate(all="ignore"):
        got = [cast_value(dt, v) for v in x]
        want = x.astype(dst) if np.dtype(dst).kind != "b" else x != 0
    np.testing.assert_array_equal(np.array(got, dst), want)


@qd.kernel
def casts(x: qd.Array[qd.float64, 1], i: qd.Array[qd.int64, 1], out: qd.Array[qd.float64, 2]):
    for k in range(x.shape[0]):
        out[0, k] = int(x[k])
        out[1, k] = qd.float32(x[k])
        out[2, k] = qd.int8(i[k])
        out[3, k] = qd.uint8(i[k])
        out[4, k] = bool(x[k])
        out[5, k] = qd.cast(i[k], qd.float32)
        out[6, k] = float(qd.bool(i[k]))


def test_casts_in_kernels(launch):
    x = np.array([0.0, 1.7, -2.9, 0.1, 1e10, -0.0])
    i = np.array([0, 300, -129, 7, 2**40 + 5, -1])
    out = np.zeros((7, 6))
    launch(casts, x, i, out)
    want = [x.astype(np.int64), x.astype(np.float32), i.astype(np.int8), i.astype(np.uint8),
            x != 0, i.astype(np.float32), (i != 0).astype(float)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k], np.asarray(w, np.float64), err_msg=f"row {k}")
