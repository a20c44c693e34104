"""The array namespace on the CUDA device against the same calls on the CPU (NumPy).

Every function runs twice, on CPU arrays and on copies on the CUDA device; results must have
the same dtype, shape and values (integers, booleans and exact float results bit for bit;
transcendental functions, float sums and linear algebra within a tolerance). On a real GPU
this checks CuPy (through array-api-compat) against the standard's semantics as qdarray
implements them on the CPU; under the simulator it checks the backend's code paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import qdarray as qd

REAL = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float32, np.float64]
FLOAT = [np.float32, np.float64]


def on(device: str, x: np.ndarray) -> qd.Array:
    return qd.asarray(x, device=device)


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(got: qd.Array, want: qd.Array, rtol: float = 0.0) -> None:
    """Same dtype, shape and values (NaN where NaN); `rtol` for inexact float results."""
    assert got.device.kind == "cuda"
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = host(got), np.asarray(want)
    if rtol and w.dtype.kind in "fc":
        tiny = np.finfo(w.dtype).tiny * 16
        np.testing.assert_allclose(g, w, rtol=rtol, atol=tiny, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def _elements(dt: type) -> st.SearchStrategy:
    if np.dtype(dt).kind == "f":
        # (subnormals: their own test, test_float32_subnormals_follow_the_capability_flag)
        return st.floats(-1e3, 1e3, width=np.dtype(dt).itemsize * 8,
                         allow_subnormal=False) | st.sampled_from(
            [0.0, -0.0, np.inf, -np.inf, np.nan])
    return hnp.from_dtype(np.dtype(dt))


def arrays(dtypes: list[type], shape: st.SearchStrategy | None = None) -> st.SearchStrategy:
    shapes = shape if shape is not None else hnp.array_shapes(min_dims=0, max_dims=3,
                                                              max_side=5)
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(dt, shapes, elements=_elements(dt)))


def _call(func: object, *args: object, **kwargs: object) -> object:
    try:
        return ("ok", func(*args, **kwargs))  # type: ignore[operator]
    except (TypeError, ValueError, OverflowError) as exc:
        return ("raise", type(exc))


def both(device: str, func: object, *xs: np.ndarray, rtol: float = 0.0, **kwargs: object
         ) -> None:
    """`func` on CPU copies and on device copies of `xs`: same outcome, same results."""
    want = _call(func, *[qd.asarray(x) for x in xs], **kwargs)
    got = _call(func, *[on(device, x) for x in xs], **kwargs)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        g, w = got[1], want[1]
        if isinstance(w, tuple):
            for a, b in zip(g, w, strict=True):  # type: ignore[arg-type]
                same(a, b, rtol)
        else:
            same(g, w, rtol)  # type: ignore[arg-type]


# -- elementwise ---------------------------------------------------------------------------

EXACT_UNARY = ["abs", "negative", "square", "sign", "floor", "ceil", "trunc", "round",
               "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_invert"]
FLOAT_UNARY = ["sin", "cos", "tanh", "asinh", "exp", "expm1", "log", "log1p", "sqrt",
               "reciprocal"]


@pytest.mark.parametrize("name", EXACT_UNARY + FLOAT_UNARY)
@settings(max_examples=6)
@given(x=arrays(REAL))
def test_unary(device, name, x):
    both(device, getattr(qd, name), x, rtol=0 if name in EXACT_UNARY else 4e-6)


EXACT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                "minimum", "equal", "less", "logical_xor", "bitwise_and", "bitwise_left_shift",
                "bitwise_right_shift", "copysign", "nextafter"]
FLOAT_BINARY = ["divide", "pow", "atan2", "hypot", "logaddexp"]


@pytest.mark.parametrize("name", EXACT_BINARY + FLOAT_BINARY)
@settings(max_examples=6)
@given(data=st.data())
def test_binary_broadcasting(device, name, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=4))
    x1 = data.draw(arrays(REAL, st.just(shapes.input_shapes[0])))
    x2 = data.draw(arrays(REAL, st.just(shapes.input_shapes[1])))
    if name in ("bitwise_left_shift", "bitwise_right_shift") and x2.dtype.kind in "iu":
        x2 = (x2 % 70).astype(x2.dtype)
    if name == "pow" and x2.dtype.kind in "iu":
        x2 = np.abs(x2 % 5).astype(x2.dtype)
    both(device, getattr(qd, name), x1, x2, rtol=0 if name in EXACT_BINARY else 4e-6)


@pytest.mark.parametrize("scalar", [2, -3, 0.5, True, 300])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float32, np.bool_])
def test_python_scalars_are_weak(device, scalar, dtype):
    x = np.arange(6).astype(dtype)
    for name in ("add", "multiply", "less", "maximum"):
        want = _call(getattr(qd, name), qd.asarray(x), scalar)
        got = _call(getattr(qd, name), on(device, x), scalar)
        assert got[0] == want[0], (name, got, want)
        if want[0] == "ok":
            same(got[1], want[1])  # type: ignore[arg-type]


def test_integer_division_by_zero_wrapping_and_negative_powers(device):
    a = np.array([7, -7, 5, -128, 0], np.int8)
    b = np.array([2, 2, 0, -1, 0], np.int8)
    both(device, lambda x, y: x // y, a, b)
    both(device, lambda x, y: x % y, a, b)
    with pytest.raises(ValueError, match="negative integer powers"):
        on(device, np.array([2, 3])) ** on(device, np.array([1, -1]))


@pytest.mark.parametrize("exponent", [
    np.array([3, 0, 5, 2], np.int32), np.array([3, 0, 5, 2], np.uint8),
    np.array([1, -1, 2, 0], np.int16), np.array([0, 0, 0, -2], np.int64),
    np.array([1.5, -1.0, 2.0, 0.0], np.float32)])
def test_integer_powers_raise_like_numpy(device, exponent):
    """A negative element of an integer exponent raises (CuPy alone would give 0); other
    integer powers, and float exponents, compute as on the CPU (integers exactly, floats
    within CuPy's pow's last bit)."""
    base = np.array([2, 3, -1, 1], np.int32)
    both(device, lambda x, y: x ** y, base, exponent, rtol=4e-6)
    both(device, lambda x, y: y ** x, base, exponent, rtol=4e-6)

    def inplace(x: qd.Array, y: qd.Array) -> qd.Array:
        z = qd.asarray(x, copy=True)  # `both` shares the CPU copy's memory with `base`
        z **= y
        return z

    both(device, inplace, base, exponent, rtol=4e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.float32])
def test_powers_with_python_integer_exponents(device, dtype):
    base = np.array([2, 3, 1, 0], dtype)
    for k in (2, 0, -1, -3):
        both(device, lambda x, k=k: x ** k, base, rtol=4e-6)
        both(device, lambda x, k=k: k ** x, base, rtol=4e-6)
    both(device, lambda x: qd.pow(x, x), base, rtol=4e-6)


def test_floating_point_exceptions_give_values_without_warnings(device):
    x = on(device, np.array([1.0, -1.0, 0.0], np.float32))
    np.testing.assert_array_equal(host(x / 0.0)[:2], [np.inf, -np.inf])
    assert np.isnan(host(x / 0.0)[2]) and np.isnan(host(qd.log(x))[1])
    np.testing.assert_array_equal(host(qd.exp(x * 1000.0)), [np.inf, 0.0, 1.0])


# -- creation, casts, indexing, manipulation ---------------------------------------------------


def test_creation_functions_place_arrays_on_the_device(device):
    for make, want in [
        (lambda d: qd.arange(2, 11, 3, device=d), np.arange(2, 11, 3)),
        (lambda d: qd.linspace(0, 1, 5, dtype=qd.float32, device=d),
         np.linspace(0, 1, 5, dtype=np.float32)),
        (lambda d: qd.eye(3, 4, k=1, device=d), np.eye(3, 4, k=1)),
        (lambda d: qd.full((2, 3), 7, dtype=qd.int16, device=d), np.full((2, 3), 7, np.int16)),
        (lambda d: qd.zeros((2,), dtype=qd.bool, device=d), np.zeros(2, bool)),
        (lambda d: qd.ones(4, device=d), np.ones(4)),
    ]:
        x = make(device)
        assert x.device == qd.Device(device)
        np.testing.assert_array_equal(host(x), want)
        assert host(x).dtype == want.dtype
    x = on(device, np.arange(6.0).reshape(2, 3))
    for like in (qd.zeros_like, qd.ones_like, qd.empty_like):
        assert like(x).device == x.device and like(x).shape == (2, 3)
    np.testing.assert_array_equal(host(qd.tril(x)), np.tril(np.arange(6.0).reshape(2, 3)))
    grids = qd.meshgrid(on(device, np.arange(3)), on(device, np.arange(2)))
    assert all(g.device == x.device for g in grids)
    np.testing.assert_array_equal(host(grids[1]), np.meshgrid(np.arange(3), np.arange(2))[1])


@pytest.mark.parametrize("src", [np.float64, np.float32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("dst", [qd.float32, qd.int32, qd.uint16, qd.bool, qd.int64])
def test_astype(device, src, dst):
    x = (np.arange(-3, 5) * 2.5).astype(src)
    if np.dtype(src).kind == "f" and dst.kind == "u":
        # Out-of-range float -> integer casts are implementation-defined in the standard and
        # differ by device (NumPy wraps negative values, CuPy saturates them to 0; see
        # docs/arrays.md "Casting"): only in-range values have one answer.
        x = np.abs(x)
    both(device, lambda a: qd.astype(a, dst), x)


def test_indexing_reads_and_writes(device):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for key in [(1, 2), (slice(1, 3), slice(None, None, 2)), (Ellipsis, -1), (None, 0),
                (slice(None, None, -1),)]:
        both(device, lambda a, k=key: a[k], base)
    x = on(device, base)
    mask = base > 10
    same(x[on(device, mask)], qd.asarray(base)[qd.asarray(mask)])
    same(qd.take(x, on(device, np.array([3, 0, 3])), axis=1),
         qd.take(qd.asarray(base), qd.asarray(np.array([3, 0, 3])), axis=1))
    x[1:3, 2] = -1.0
    x[on(device, mask)] = 0.0
    want = base.copy()
    want[1:3, 2] = -1.0
    want[mask] = 0.0
    np.testing.assert_array_equal(host(x), want)
    view = x[2]
    view[...] = 5.0
    assert host(x)[2].tolist() == [5.0] * 6  # basic slices are views on the device too


def test_manipulation(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = np.arange(12, 24, dtype=np.int32).reshape(3, 4)
    both(device, lambda x, y: qd.concat([x, y], axis=1), a, b)
    both(device, lambda x, y: qd.stack([x, y], axis=0), a, b)
    both(device, lambda x: qd.reshape(x, (4, 3)), a)
    both(device, lambda x: qd.permute_dims(x, (1, 0)), a)
    both(device, lambda x: qd.flip(x, axis=0), a)
    both(device, lambda x: qd.roll(x, 5), a)
    both(device, lambda x: qd.expand_dims(x, axis=1), a)
    both(device, lambda x: qd.broadcast_to(x[:1], (5, 4)), a)
    both(device, lambda x: qd.tile(x, (2, 1)), a)
    both(device, lambda x: qd.repeat(x, 2, axis=1), a)
    both(device, lambda x: qd.squeeze(x[:1], axis=0), a)


# -- reductions, sorting, searching, sets --------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "std", "var",
                                  "cumulative_sum", "all", "any"])
@settings(max_examples=6)
@given(x=arrays([np.int32, np.uint8, np.float32, np.float64, np.bool_],
                hnp.array_shapes(min_dims=1, max_dims=3, max_side=6)))
def test_reductions(device, name, x):
    func = getattr(qd, name)
    rtol = 1e-5 if x.dtype.kind == "f" or name in ("mean", "std", "var") else 0
    both(device, func, x, rtol=rtol)
    axis = x.ndim - 1
    both(device, lambda a: func(a, axis=axis), x, rtol=rtol)


def test_sorting_is_stable_and_searching(device):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 200).astype(np.int32)
    both(device, lambda a: qd.argsort(a, stable=True), x)
    both(device, lambda a: qd.sort(a, descending=True), x)
    both(device, qd.argmax, x)
    both(device, lambda a: qd.argmin(a, axis=0), x.reshape(20, 10))
    both(device, qd.nonzero, x)
    both(device, lambda a, b: qd.searchsorted(a, b), np.sort(x), x[:7])
    both(device, lambda a: qd.where(a > 2, a, -a), x)
    both(device, qd.unique_values, x)
    both(device, lambda a: qd.unique_counts(a), x)
    f = np.array([3.0, np.nan, -1.0, np.nan, 2.0], np.float32)
    both(device, qd.sort, f)
    both(device, qd.argmax, f)


# -- linear algebra and fft ------------------------------------------------------------------


def test_linear_algebra_and_fft(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    b = rng.standard_normal((4, 3))
    both(device, qd.matmul, a, b, rtol=1e-12)
    both(device, lambda x, y: qd.tensordot(x, y, axes=1), a, b, rtol=1e-12)
    both(device, lambda x, y: qd.vecdot(x, y, axis=0), a, a, rtol=1e-12)
    both(device, qd.linalg.inv, a, rtol=1e-9)
    both(device, qd.linalg.solve, a, b, rtol=1e-9)
    both(device, qd.linalg.det, a, rtol=1e-9)
    both(device, lambda x: qd.linalg.matrix_norm(x), a, rtol=1e-12)
    both(device, lambda x: qd.linalg.eigvalsh(x + x.mT), a, rtol=1e-9)
    sig = rng.standard_normal(16).astype(np.float32)
    both(device, qd.fft.rfft, sig, rtol=1e-4)
    both(device, lambda x: qd.fft.irfft(qd.fft.rfft(x), n=16), sig, rtol=1e-4)


def test_mixing_devices_names_both(device):
    x = on(device, np.ones(3))
    with pytest.raises(ValueError, match=rf"cpu.*{device}|{device}.*cpu"):
        x + qd.ones(3)
    with pytest.raises(ValueError, match=rf"{device}"):
        qd.concat([x, qd.ones(3)])


def test_reshape_of_a_strided_view_copies_only_when_needed(device):
    # CuPy refuses an in-place reshape of such a view with AttributeError; copy=None copies
    z = np.arange(24.0).reshape(4, 6)
    x = on(device, z)
    np.testing.assert_array_equal(host(qd.reshape(x.T, (-1,))), z.T.reshape(-1))
    np.testing.assert_array_equal(host(qd.reshape(x[:, ::2], (12,))), z[:, ::2].reshape(12))
    with pytest.raises(ValueError, match="cannot view an array of shape"):
        qd.reshape(x.T, (-1,), copy=False)


SUBNORMALS = np.array([7e-41, 1.4e-45, -3e-39, 1.0, 0.0, -0.0, 7.2e-41], dtype=np.float32)


def test_float32_subnormals_follow_the_capability_flag(device: str) -> None:
    """Where the device reports that it keeps float32 subnormals, the truthiness functions and
    arithmetic give NumPy's results for them (docs/cuda.md: CuPy's kernels flush them)."""
    dev = qd.Device(device)
    if not dev.backend.capabilities(dev)["float32 subnormals"]:
        pytest.skip("this device flushes float32 subnormals (CuPy's -ftz=true; docs/cuda.md)")
    for func in (qd.all, qd.any, qd.count_nonzero, lambda x: x != 0, qd.sum, qd.sort,
                 lambda x: qd.astype(x, qd.bool), lambda x: x * 2.0, lambda x: x / 2.0):
        both(device, func, SUBNORMALS)
    assert bool(qd.all(on(device, SUBNORMALS[:1])))
    assert int(qd.count_nonzero(on(device, SUBNORMALS[:4]))) == 4


@pytest.mark.parametrize("dtype", [qd.float32, qd.float64, qd.complex128])
def test_negative_zero_keeps_its_sign(device, dtype):
    """CuPy makes a 0-d array from host data, and writes a scalar into an array, with
    `ndarray.fill`, which writes zero bytes when the value == 0: qd.asarray(-0.0) and
    x[...] = -0.0 gave +0.0 on a GPU (so did x + x, sin(x), atan2(x, 1) after them)."""
    def negative(a: qd.Array) -> np.ndarray:
        h = np.asarray(a.to_device("cpu"))
        return np.signbit(h.real) if np.iscomplexobj(h) else np.signbit(h)

    x = qd.asarray(-0.0, dtype=dtype, device=device)
    assert negative(x).all()
    for y in (x + x, x * 1.0, -qd.abs(x)):
        assert negative(y).all()
    if dtype != qd.complex128:
        assert negative(qd.sin(x)) and negative(qd.atan2(x, qd.ones((), dtype=dtype,
                                                                  device=device)))
    y = qd.ones(3, dtype=dtype, device=device)
    y[...] = -0.0
    assert negative(y).all()
    y = qd.ones(3, dtype=dtype, device=device)
    y[1] = -0.0
    assert negative(y).tolist() == [False, True, False]
    y.fill(-0.0)
    assert negative(y).all()
    assert negative(qd.full((2,), -0.0, dtype=dtype, device=device)).all()


def test_asarray_of_host_data_with_another_dtype(device):
    """float64 host data asked for as float32 on a GPU raised "asarray(copy=False) cannot
    convert": the transfer passes copy=False for its new data, which the CuPy backend took as
    the caller's. copy=False from the caller still raises, as on the CPU."""
    for src in (np.ones(3), qd.ones(3, device="cpu"), [1.0, 2.0, 3.0]):
        x = qd.asarray(src, dtype=qd.float32, device=device)
        assert x.dtype == qd.float32 and x.device == qd.Device(device)
        np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), np.ones(3) *
                                      (np.arange(1, 4) if isinstance(src, list) else 1))
    y = qd.asarray(qd.ones(3, device=device), dtype=qd.float32)
    assert y.dtype == qd.float32
    with pytest.raises(ValueError, match="copy=False"):
        qd.asarray(np.ones(3), dtype=qd.float32, device=device, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        qd.asarray(qd.ones(3, device=device), dtype=qd.float32, copy=False)


def test_eig_on_the_device(device):
    """CuPy's eig returns a plain tuple (it raised AttributeError on a GPU)."""
    rot = np.array([[0.0, -1.0], [1.0, 0.0]], dtype=np.float32)
    w, v = qd.linalg.eig(qd.asarray(rot, device=device))
    assert w.dtype == qd.complex64 and v.dtype == qd.complex64 and w.device == v.device
    np.testing.assert_allclose(np.sort_complex(np.asarray(w.to_device("cpu"))), [-1j, 1j],
                               atol=1e-6)
    vals = qd.linalg.eigvals(qd.asarray(np.diag([2.0, 3.0]), device=device))
    assert vals.dtype == qd.complex128
