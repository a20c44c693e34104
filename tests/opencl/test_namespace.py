"""The array namespace on the OpenCL device against the same calls on the CPU (NumPy).

Every function runs twice, on CPU arrays and on copies on the OpenCL device; results must
have the same dtype and shape and equal values (integers, booleans and exact float results
bit for bit; transcendental functions and float sums within a few ulp).
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
INT = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT = [np.float32, np.float64]


def on(device: str, x: np.ndarray) -> qd.Array:
    return qd.asarray(x, device=device)


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(got: qd.Array, want: qd.Array, rtol: float = 0.0) -> None:
    """Same dtype, shape and values (NaN where NaN); `rtol` for inexact float results."""
    assert got.device != qd.Device("cpu")
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = host(got), np.asarray(want)
    if rtol and w.dtype.kind in "fc":
        tiny = np.finfo(w.dtype).tiny * 16
        np.testing.assert_allclose(g, w, rtol=rtol, atol=tiny, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def arrays(dtypes: list[type], shape: st.SearchStrategy | None = None) -> st.SearchStrategy:
    shapes = shape if shape is not None else hnp.array_shapes(min_dims=0, max_dims=3,
                                                              max_side=5)
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(dt, shapes, elements=_elements(dt)))


def _elements(dt: type) -> st.SearchStrategy:
    if np.dtype(dt).kind == "f":
        return st.floats(-1e3, 1e3, width=np.dtype(dt).itemsize * 8) | st.sampled_from(
            [0.0, -0.0, np.inf, -np.inf, np.nan])
    return hnp.from_dtype(np.dtype(dt))


# -- elementwise ---------------------------------------------------------------------------

EXACT_UNARY = ["abs", "negative", "positive", "square", "sign", "floor", "ceil", "trunc",
               "round", "isnan", "isinf", "isfinite", "signbit", "logical_not",
               "bitwise_invert"]
FLOAT_UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
               "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
               "reciprocal"]


def _call(name: str, *args: object) -> object:
    try:
        return ("ok", getattr(qd, name)(*args))
    except (TypeError, ValueError, OverflowError) as exc:
        return ("raise", type(exc))


@pytest.mark.parametrize("name", EXACT_UNARY + FLOAT_UNARY)
@settings(max_examples=8)
@given(x=arrays(REAL))
def test_unary(device, name, x):
    want = _call(name, qd.asarray(x))
    got = _call(name, on(device, x))
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        same(got[1], want[1], rtol=0 if name in EXACT_UNARY else 4e-6)


EXACT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                "minimum", "equal", "not_equal", "less", "less_equal", "greater",
                "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                "copysign", "nextafter"]
FLOAT_BINARY = ["divide", "pow", "atan2", "hypot", "logaddexp"]


@pytest.mark.parametrize("name", EXACT_BINARY + FLOAT_BINARY)
@settings(max_examples=8)
@given(data=st.data())
def test_binary_broadcasting(device, name, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=4))
    x1 = data.draw(arrays(REAL, st.just(shapes.input_shapes[0])))
    x2 = data.draw(arrays(REAL, st.just(shapes.input_shapes[1])))
    if name in ("bitwise_left_shift", "bitwise_right_shift") and x2.dtype.kind in "iu":
        x2 = (x2 % 70).astype(x2.dtype)  # NumPy's shifts by >= 64 differ on the host
    if name == "pow" and x2.dtype.kind in "iu":
        x2 = np.abs(x2 % 5).astype(x2.dtype)
    want = _call(name, qd.asarray(x1), qd.asarray(x2))
    got = _call(name, on(device, x1), on(device, x2))
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        same(got[1], want[1], rtol=0 if name in EXACT_BINARY else 4e-6)


@pytest.mark.parametrize("scalar", [2, -3, 0.5, True, 300])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float32, np.float64,
                                   np.bool_])
def test_python_scalars_are_weak(device, scalar, dtype):
    x = np.arange(6).astype(dtype)
    for name in ("add", "multiply", "less", "maximum"):
        want = _call(name, qd.asarray(x), scalar)
        got = _call(name, on(device, x), scalar)
        assert got[0] == want[0], (name, got, want)
        if want[0] == "ok":
            same(got[1], want[1])


def test_integer_division_by_zero_and_wrapping(device):
    a = np.array([7, -7, 5, -128, 0], np.int8)
    b = np.array([2, 2, 0, -1, 0], np.int8)
    same(on(device, a) // on(device, b), qd.asarray(a) // qd.asarray(b))
    same(on(device, a) % on(device, b), qd.asarray(a) % qd.asarray(b))


def test_negative_integer_powers_raise(device):
    with pytest.raises(ValueError, match="negative integer powers"):
        on(device, np.array([2, 3])) ** on(device, np.array([1, -1]))


def test_where_and_clip(device):
    x = np.array([-2.0, np.nan, 0.5, 3.0], np.float32)
    c = x > 0
    same(qd.where(on(device, c), on(device, x), 0.0), qd.where(qd.asarray(c), qd.asarray(x),
                                                               0.0))
    same(qd.clip(on(device, x), -1.0, 1.0), qd.clip(qd.asarray(x), -1.0, 1.0))
    same(qd.clip(on(device, x), max=on(device, np.zeros(4, np.float32))),
         qd.clip(qd.asarray(x), max=qd.asarray(np.zeros(4, np.float32))))


def test_in_place_operators_write_the_device_array(device):
    x = on(device, np.arange(5, dtype=np.float32))
    view = x[1:4]
    view *= 2.0
    x += 1
    np.testing.assert_array_equal(host(x), [1, 3, 5, 7, 5])


def test_negative_shapes_raise_value_error_as_numpy(device):
    """qd.zeros(-1) made an array of shape (-1,) on the Vulkan device and raised pyopencl's
    own TypeError on OpenCL; NumPy's ValueError on every device, and empty shapes still work."""
    for make in (lambda s: qd.zeros(s, device=device), lambda s: qd.ones(s, device=device),
                 lambda s: qd.empty(s, device=device),
                 lambda s: qd.full(s, 1.0, dtype=qd.float32, device=device)):
        for shape in (-1, (2, -3)):
            with pytest.raises(ValueError, match="negative dimensions are not allowed"):
                make(shape)
        assert make((0, 2)).shape == (0, 2)
