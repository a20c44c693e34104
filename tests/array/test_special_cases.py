"""The standard's special cases where NumPy gives other values, pinned value by value.

The backend functions compute with NumPy (CuPy on CUDA) and correct these cases
(qdarray/backends/special_cases.py); every expected value below is the standard's, signs of
zeros included, from the special-case lists of `floor_divide`, `expm1` and `tanh`.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import qdarray as qd

INF = math.inf
NAN = math.nan

# (x1, x2, standard's x1 // x2)
FLOOR_DIVIDE = [
    (INF, 2.0, INF), (INF, -2.0, -INF), (-INF, 2.0, -INF), (-INF, -2.0, INF),
    (1.0, INF, 0.0), (1.0, -INF, -0.0), (-1.0, INF, -0.0), (-1.0, -INF, 0.0),
    (INF, INF, NAN), (-INF, INF, NAN), (INF, 0.0, INF), (INF, -0.0, -INF),
    (0.0, INF, 0.0), (-0.0, INF, -0.0), (NAN, INF, NAN), (INF, NAN, NAN),
    # finite operands keep NumPy's (and Python's) values
    (7.0, 2.0, 3.0), (-7.0, 2.0, -4.0), (1.0, 0.1, 9.0), (-0.0, 3.0, -0.0), (1.0, 0.0, INF),
]


def same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaNs in the same places and the same signs of zeros (a NaN's sign is
    not part of its value)."""
    np.testing.assert_array_equal(got, want)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("spelling", ["function", "operator", "in place"])
def test_floor_divide_with_infinities_is_floor_of_the_quotient(dtype: str, spelling: str
                                                              ) -> None:
    x1 = qd.asarray([c[0] for c in FLOOR_DIVIDE], dtype=getattr(qd, dtype))
    x2 = qd.asarray([c[1] for c in FLOOR_DIVIDE], dtype=getattr(qd, dtype))
    want = np.array([c[2] for c in FLOOR_DIVIDE], dtype=dtype)
    if spelling == "function":
        got = qd.floor_divide(x1, x2)
    elif spelling == "operator":
        got = x1 // x2
    else:
        got = x1
        got //= x2
        assert got is x1
    assert got.dtype == getattr(qd, dtype)
    same_values(np.asarray(got), want)


def test_floor_divide_with_scalars_and_0d_arrays() -> None:
    for x1, x2, want in FLOOR_DIVIDE:
        same_values(np.asarray(qd.asarray(x1) // x2), np.float64(want))
        same_values(np.asarray(x1 // qd.asarray(x2)), np.float64(want))
    # an integer array with a float scalar computes in float64
    got = qd.asarray([3, -3]) // -INF
    assert got.dtype == qd.float64
    same_values(np.asarray(got), np.array([-0.0, 0.0]))
    # integers are untouched: x // 0 is 0, as in NumPy
    np.testing.assert_array_equal(np.asarray(qd.asarray([7, -7, 5]) // qd.asarray([2, 2, 0])),
                                  [3, -4, 0])


def test_floor_divide_broadcasts_into_the_inplace_operand() -> None:
    x = qd.asarray([[INF, 1.0], [-1.0, 4.0]])
    x //= qd.asarray([2.0, -INF])
    same_values(np.asarray(x), np.array([[INF, -0.0], [-1.0, -0.0]]))


def cplx(re: float, im: float) -> complex:
    return complex(re, im)


# (z, the standard's expm1(z)); None where the standard leaves a sign unspecified, checked apart
EXPM1 = [
    (cplx(0.0, 0.0), cplx(0.0, 0.0)),
    (cplx(-0.0, 0.0), cplx(0.0, 0.0)),
    (cplx(1.0, INF), cplx(NAN, NAN)),
    (cplx(1.0, NAN), cplx(NAN, NAN)),
    (cplx(INF, 0.0), cplx(INF, 0.0)),
    (cplx(-INF, 1.0), cplx(-1.0, 0.0)),     # -1 + 0 cis(1)
    (cplx(-INF, -1.0), cplx(-1.0, -0.0)),   # -1 + 0 cis(-1)
    (cplx(INF, 1.0), cplx(INF * math.cos(1.0), INF * math.sin(1.0))),
    (cplx(NAN, 0.0), cplx(NAN, 0.0)),
    (cplx(NAN, 1.0), cplx(NAN, NAN)),
    (cplx(NAN, NAN), cplx(NAN, NAN)),
]


def parts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return z.real.copy(), z.imag.copy()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_expm1_special_cases(dtype: str) -> None:
    z = qd.asarray([c[0] for c in EXPM1], dtype=getattr(qd, dtype))
    got = np.asarray(qd.expm1(z))
    want = np.array([c[1] for c in EXPM1], dtype=dtype)
    for g, w in zip(parts(got), parts(want), strict=True):
        same_values(g, w)
    # the cases whose signs the standard leaves open
    loose = qd.asarray([cplx(-INF, INF), cplx(-INF, NAN), cplx(INF, INF), cplx(INF, NAN)],
                       dtype=getattr(qd, dtype))
    re, im = parts(np.asarray(qd.expm1(loose)))
    np.testing.assert_array_equal(re[:2], [-1.0, -1.0])
    np.testing.assert_array_equal(im[:2], [0.0, 0.0])
    np.testing.assert_array_equal(np.abs(re[2:]), [INF, INF])
    assert np.isnan(im[2:]).all()


def test_complex_expm1_of_finite_values_is_numpys() -> None:
    z = np.array([1e-10 + 1e-10j, 1.5 - 2j, -3 + 0.25j, 20 + 1j])
    np.testing.assert_allclose(np.asarray(qd.expm1(qd.asarray(z))), np.expm1(z), rtol=1e-15)
    # a 0-d array
    assert complex(qd.expm1(qd.asarray(cplx(-0.0, 0.0)))) == 0j
    assert not math.copysign(1.0, complex(qd.expm1(qd.asarray(cplx(-0.0, 0.0)))).real) < 0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_tanh_at_infinite_real_parts(dtype: str) -> None:
    ys = [0.0, -0.0, 0.5, 2.0, 3.0, -2.0, 1e30]  # sin(2y) < 0 for y = 2.0 and 3.0
    for sign in (1.0, -1.0):
        z = qd.asarray([cplx(sign * INF, y) for y in ys], dtype=getattr(qd, dtype))
        re, im = parts(np.asarray(qd.tanh(z)))
        same_values(re, np.full(len(ys), sign, dtype=re.dtype))
        same_values(im, np.copysign(np.zeros(len(ys)), ys).astype(im.dtype))
    # finite and NaN arguments keep NumPy's values
    z = np.array([0.5 + 0.25j, cplx(NAN, 0.0), cplx(1.0, INF)], dtype=dtype)
    with np.errstate(invalid="ignore"):
        want = np.tanh(z)
    np.testing.assert_allclose(np.asarray(qd.tanh(qd.asarray(z))), want, rtol=1e-6)


def test_real_functions_are_numpys() -> None:
    x = np.array([-INF, -1.0, -0.0, 0.0, 1e-300, 1.0, INF, NAN])
    same_values(np.asarray(qd.expm1(qd.asarray(x))), np.expm1(x))
    same_values(np.asarray(qd.tanh(qd.asarray(x))), np.tanh(x))
    with np.errstate(invalid="ignore"):  # NumPy's inf // 3.0
        want = np.where(np.isinf(x), x, np.floor_divide(x, 3.0))
    same_values(np.asarray(operator.floordiv(qd.asarray(x), 3.0)), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "complex64", "complex128"])
def test_the_gpu_sign_is_the_standards(dtype: str) -> None:
    # the replacement CuPy gets (no boolean-mask assignment), run here with NumPy as the module
    from qdarray.backends.special_cases import functions

    sign = functions(np, check_first=False)["sign"]
    if dtype.startswith("complex"):
        x = np.array([3 + 4j, 0j, -2j, complex(np.nan, 1), -1 + 0j], dtype)
        with np.errstate(invalid="ignore"):
            want = np.where(x == 0, 0, x / np.abs(np.where(x == 0, 1, x))).astype(dtype)
    elif dtype.startswith("float"):
        x = np.array([-2.5, -0.0, 0.0, 3.0, np.nan, -np.inf], dtype)
        want = np.sign(x)
    else:
        x = np.array([-7, 0, 5], dtype)
        want = np.sign(x)
    with np.errstate(invalid="ignore"):
        got = sign(x)
    assert got.dtype == x.dtype
    if dtype.startswith("complex"):  # z scaled first: within a few ulp of z / |z|
        np.testing.assert_allclose(got, want, rtol=4 * float(np.finfo(dtype).eps), atol=0)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sign_of_subnormal_and_huge_values_is_a_unit(dtype: str) -> None:
    """z / |z| overflows for subnormal z (|z| rounds down): the sign scales z first. The
    closed forms: sign(t (3 + 4j)) = 0.6 + 0.8j and sign(t (1 + 1j)) = (1 + 1j) / sqrt(2)
    for every t > 0 (t a power of two, so that the inputs are exact)."""
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    ts = [tiny, tiny * 4, float(info.smallest_normal), 1.0, float(info.max) / 8]
    z = np.array([t * c for t in ts for c in (3 + 4j, 1 + 1j, -1 - 1j, -1j)
                  if not (t == tiny and c == 3 + 4j)], dtype)
    units = np.array([c / abs(c) for t in ts for c in (3 + 4j, 1 + 1j, -1 - 1j, -1j)
                      if not (t == tiny and c == 3 + 4j)])
    # every device: the CPU's NumPy path, and the kernels' (complex_math.sign) on the others
    for device in qd.__array_namespace_info__().devices():
        with np.errstate(all="raise"):  # no overflow on the way either
            got = np.asarray(qd.sign(qd.asarray(z, device=device)).to_device("cpu"))
        assert got.dtype == z.dtype
        np.testing.assert_allclose(got, units, rtol=4 * float(info.eps), atol=0,
                                   err_msg=str(device))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sign_is_numpys_at_special_and_ordinary_values(dtype: str) -> None:
    """NumPy 2's sign, signs of zeros included, on every device except where its |z| rounds
    (subnormal z, the test above): one infinite part gives +-1 there and +0 in the other (a
    NaN beside it too), two give NaN, a NaN part alone NaN + NaN j, finite z its parts over
    |z| (Vulkan's division and hypot round within a few ulp: checked to that)."""
    parts = [0.0, -0.0, 2.0, -3.0, 0.1, -0.7, 1e30, INF, -INF, NAN]
    z = np.array([complex(a, b) for a in parts for b in parts], dtype)
    with np.errstate(all="ignore"):
        want = np.sign(z)
    for device in qd.__array_namespace_info__().devices():
        got = np.asarray(qd.sign(qd.asarray(z, device=device)).to_device("cpu"))
        if str(device).startswith("vulkan"):
            np.testing.assert_allclose(got, want, rtol=4 * float(np.finfo(dtype).eps),
                                       atol=0, err_msg=str(device))
        else:
            same_complex(got, want)


EDGES = [0.0, -0.0, 1.5, -1.5, -1.0, 7.0, INF, -INF, NAN, 5e-324]


def same_complex(got: np.ndarray, want: np.ndarray) -> None:
    """Both parts equal, NaNs in the same places, zeros of the same sign."""
    for part in ("real", "imag"):
        g, w = getattr(got, part), getattr(want, part)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        keep = ~np.isnan(w)
        np.testing.assert_array_equal(g[keep], w[keep])
        np.testing.assert_array_equal(np.signbit(g[keep & (w == 0)]),
                                      np.signbit(w[keep & (w == 0)]))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name, numpy_name", [("log", "log"), ("log1p", "log1p"),
                                              ("acosh", "arccosh"), ("tanh", "tanh")])
def test_the_gpu_complex_special_cases_are_numpys(dtype: str, name: str,
                                                  numpy_name: str) -> None:
    """CuPy's complex log, log1p, acosh and tanh differ from the standard where a part is
    infinite or NaN; the replacements CuPy gets, run here with NumPy as the module, give
    NumPy's values there (the standard's: the CPU passes array-api-tests' special cases),
    and NumPy's own everywhere else. tanh is the CPU's (NumPy's corrected at inf + yj)."""
    from qdarray.backends.special_cases import functions

    gpu = functions(np, check_first=False)[name]
    cpu = functions(np, check_first=True).get(name, getattr(np, numpy_name))
    x = np.array([complex(a, b) for a in EDGES for b in EDGES], dtype)
    with np.errstate(all="ignore"):
        got, want = gpu(x), cpu(x)
    assert got.dtype == want.dtype
    same_complex(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_gpu_remainder_is_numpys(dtype: str) -> None:
    """CuPy's float remainder is x - floor(x / y) * y (1.0 % -inf is NaN, -0.0 % 5.0 is
    -0.0); the replacement is NumPy's rule, checked against NumPy on edge values, also into
    an `out` operand (`%=`)."""
    from qdarray.backends.special_cases import functions

    remainder = functions(np, check_first=False)["remainder"]
    v = np.array(EDGES + [-2.5, 3.0, -7.0, 1e-310], dtype)
    x1, x2 = np.meshgrid(v, v)
    with np.errstate(all="ignore"):
        want = np.remainder(x1, x2)
        got = remainder(x1, x2)
        out = x1.copy()
        remainder(out, x2, out=out)
    assert got.dtype == want.dtype
    for g in (got, out):
        np.testing.assert_array_equal(g, want)
        zeros = want == 0
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(want[zeros]))
    ints = np.arange(-5, 6)
    np.testing.assert_array_equal(remainder(ints, 3), np.remainder(ints, 3))


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float64"])
def test_prod_multiplies_by_the_identity_once_as_numpy(dtype: str) -> None:
    """NumPy's prod is 1 * x0 * x1 * ...: the identity once, first, which fixes the signs of
    zero results ((1 + 0j)(-0 - 0j) is 0 - 0j; a second 1 * would make it 0 + 0j). Every
    device gives NumPy's values and zero signs, also over rows long enough to split into
    partial products."""
    rows = [[complex(-0.0, -0.0)], [0j, complex(-0.0, -0.0)],
            [complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0)], [-0.0], [2.0, -0.5]]
    if dtype == "float64":
        rows = [[-0.0], [-0.0, -0.0], [2.0, -0.0, 3.0], [-2.0, 0.0]]
    long_row = np.ones(5000, dtype)
    long_row[0] = -0.0
    for device in qd.__array_namespace_info__().devices():
        for row in [np.array(r, dtype) for r in rows] + [long_row]:
            got = np.asarray(qd.prod(qd.asarray(row, device=device)).to_device("cpu"))
            want = np.prod(row)
            if dtype.startswith("complex"):
                same_complex(got.reshape(1), np.asarray(want).reshape(1))
            else:
                same_values(got.reshape(1), np.asarray(want).reshape(1))
