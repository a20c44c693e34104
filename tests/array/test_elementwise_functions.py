"""Elementwise functions against NumPy: values, dtypes and shapes, scalars, and errors."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst
from standard_values import std_expm1, std_floor_divide, std_tanh

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

builtins_abs = builtins.abs

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
KINDS = {
    "all": "biufc", "numeric": "iufc", "numeric or boolean": "biufc", "real numeric": "iuf",
    "real-valued": "biuf",
    "integer": "iu", "integer or boolean": "biu",
}
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
# The float dtype NumPy computes integer input in, with float16 raised to float32.
FLOAT_FOR = {"bool": "float32", "int8": "float32", "uint8": "float32", "int16": "float32",
             "uint16": "float32", "int32": "float64", "uint32": "float64", "int64": "float64",
             "uint64": "float64"}


# Where the standard's values differ from NumPy's, the oracle follows the standard.
# name -> (category, NumPy oracle, computed in float for integer input)
UNARY = {
    "abs": ("numeric", np.abs, False), "acos": ("all", np.arccos, True),
    "acosh": ("all", np.arccosh, True), "asin": ("all", np.arcsin, True),
    "asinh": ("all", np.arcsinh, True), "atan": ("all", np.arctan, True),
    "atanh": ("all", np.arctanh, True), "bitwise_invert": ("integer or boolean", np.invert, False),
    "ceil": ("real numeric", np.ceil, False), "conj": ("numeric", np.conjugate, False),
    "cos": ("all", np.cos, True), "cosh": ("all", np.cosh, True), "exp": ("all", np.exp, True),
    "expm1": ("all", std_expm1, True), "floor": ("real numeric", np.floor, False),
    "imag": ("numeric", np.imag, False), "isfinite": ("all", np.isfinite, False),
    "isinf": ("all", np.isinf, False), "isnan": ("all", np.isnan, False),
    "log": ("all", np.log, True), "log1p": ("all", np.log1p, True),
    "log2": ("all", np.log2, True), "log10": ("all", np.log10, True),
    "logical_not": ("all", np.logical_not, False), "negative": ("numeric", np.negative, False),
    "positive": ("numeric", np.positive, False), "real": ("numeric", np.real, False),
    "reciprocal": ("numeric", np.reciprocal, True), "round": ("numeric", np.round, False),
    "sign": ("numeric", np.sign, False), "signbit": ("real numeric", np.signbit, False),
    "sin": ("all", np.sin, True), "sinh": ("all", np.sinh, True),
    "square": ("numeric", np.square, False), "sqrt": ("all", np.sqrt, True),
    "tan": ("all", np.tan, True), "tanh": ("all", std_tanh, True),
    "trunc": ("real numeric", np.trunc, False),
}
BINARY = {
    "add": ("numeric or boolean", np.add, False), "atan2": ("real-valued", np.arctan2, True),
    "bitwise_and": ("integer or boolean", np.bitwise_and, False),
    "bitwise_left_shift": ("integer", np.left_shift, False),
    "bitwise_or": ("integer or boolean", np.bitwise_or, False),
    "bitwise_right_shift": ("integer", np.right_shift, False),
    "bitwise_xor": ("integer or boolean", np.bitwise_xor, False),
    "copysign": ("real-valued", np.copysign, True),
    "divide": ("numeric or boolean", np.divide, False),
    "equal": ("all", np.equal, False), "floor_divide": ("real-valued", std_floor_divide, False),
    "greater": ("real numeric", np.greater, False),
    "greater_equal": ("real numeric", np.greater_equal, False),
    "hypot": ("real-valued", np.hypot, True), "less": ("real numeric", np.less, False),
    "less_equal": ("real numeric", np.less_equal, False),
    "logaddexp": ("real-valued", np.logaddexp, True),
    "logical_and": ("all", np.logical_and, False), "logical_or": ("all", np.logical_or, False),
    "logical_xor": ("all", np.logical_xor, False), "maximum": ("real numeric", np.maximum, False),
    "minimum": ("real numeric", np.minimum, False),
    "multiply": ("numeric or boolean", np.multiply, False),
    "nextafter": ("real-valued", np.nextafter, True), "not_equal": ("all", np.not_equal, False),
    "pow": ("numeric or boolean", np.power, False),
    "remainder": ("real-valued", np.remainder, False),
    "subtract": ("numeric", np.subtract, False),
}


def allowed(category: str) -> list[str]:
    return [d for d in ALL if np.dtype(d).kind in KINDS[category]]


def rejected(category: str) -> list[str]:
    return [d for d in ALL if np.dtype(d).kind not in KINDS[category]]


def check(result: qd.Array, expected: np.ndarray) -> None:
    """Same shape, same dtype, same values (NaNs in the same places)."""
    expected = np.asarray(expected)
    assert type(result) is Array
    assert result.shape == expected.shape
    assert result.dtype == getattr(qd, expected.dtype.name)
    got = np.asarray(result)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6 if expected.dtype.itemsize > 4
                                   and expected.dtype.kind == "f" else 2e-6, atol=0,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def in_float(a: np.ndarray) -> np.ndarray:
    return a.astype(FLOAT_FOR[a.dtype.name]) if a.dtype.kind in "biu" else a


def unary_oracle(name: str, a: np.ndarray) -> np.ndarray:
    _, func, floating = UNARY[name]
    if floating:
        a = in_float(a)
    if name == "sign" and a.dtype.kind == "c":
        with np.errstate(all="ignore"):
            return np.where(a == 0, 0, a / np.abs(a)).astype(a.dtype)
    if name == "imag" and a.dtype.kind != "c":
        return np.zeros_like(a)
    return np.asarray(func(a))


# -- unary ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=20)
@given(data=st.data())
def test_unary_matches_numpy(name: str, data: st.DataObject) -> None:
    category = UNARY[name][0]
    dtype = data.draw(st.sampled_from(allowed(category)), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES), label="a")
    x = qd.asarray(a.copy())
    with np.errstate(all="ignore"):
        expected = unary_oracle(name, a)
        result = getattr(qd, name)(x)
    check(result, expected)
    np.testing.assert_array_equal(np.asarray(x), a)  # the input is untouched


@pytest.mark.parametrize("name", sorted(n for n in UNARY if rejected(UNARY[n][0])))
def test_unary_rejects_dtypes_outside_its_category(name: str) -> None:
    category = UNARY[name][0]
    for dtype in rejected(category):
        x = qd.zeros(3, dtype=getattr(qd, dtype))
        with pytest.raises(TypeError, match=rf"Only {category} dtypes are allowed in {name}; "
                                            rf"got qdarray\.{dtype}\. (Use|Try) "):
            getattr(qd, name)(x)


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"real"}))
def test_unary_results_are_new_arrays(name: str) -> None:
    dtype = allowed(UNARY[name][0])[-3]
    x = qd.ones((2, 3), dtype=getattr(qd, dtype))
    with np.errstate(all="ignore"):
        result = getattr(qd, name)(x)
    assert result._buffer is not x._buffer
    assert not np.shares_memory(np.asarray(result), np.asarray(x))


def test_small_integers_compute_in_float32_and_wide_ones_in_float64() -> None:
    for dtype, expected in FLOAT_FOR.items():
        x = qd.asarray(np.array([0, 1], dtype=dtype))
        assert qd.sqrt(x).dtype == getattr(qd, expected)
        assert qd.atan2(x, x).dtype == getattr(qd, expected)
    # a float operand decides, as in NumPy: an int8 array with a Python float is float64
    assert qd.atan2(qd.asarray([1], dtype=qd.int8), 1.0).dtype == qd.float64
    assert qd.atan2(qd.asarray([1], dtype=qd.int8), qd.ones(1, dtype=qd.float32)).dtype \
        == qd.float32
    # reciprocal of integers is a float, not NumPy's integer division
    check(qd.reciprocal(qd.asarray([1, 2, 4])), np.array([1.0, 0.5, 0.25]))


def test_real_and_imag_of_complex_are_views_that_share_the_buffer() -> None:
    z = qd.asarray([1 + 2j, 3 - 4j], dtype=qd.complex64)
    re, im = qd.real(z), qd.imag(z)
    assert re.dtype == qd.float32 and im.dtype == qd.float32
    assert re._buffer is z._buffer and im._buffer is z._buffer
    np.testing.assert_array_equal(np.asarray(im), [2, -4])
    x = qd.asarray([1.0, 2.0])
    assert qd.real(x)._buffer is not x._buffer
    check(qd.imag(x), np.zeros(2))


# -- binary ---------------------------------------------------------------------------------


def binary_oracle(name: str, a: np.ndarray | complex, b: np.ndarray | complex) -> np.ndarray:
    _, func, floating = BINARY[name]
    if floating:
        kinds = [np.asarray(v).dtype.kind if isinstance(v, np.ndarray) else
                 {bool: "b", int: "i", float: "f"}[type(v)] for v in (a, b)]
        if all(k in "biu" for k in kinds):
            common = np.result_type(*(v for v in (a, b) if isinstance(v, np.ndarray)))
            if common.kind in "biu":
                a = a.astype(FLOAT_FOR[common.name]) if isinstance(a, np.ndarray) else a
                b = b.astype(FLOAT_FOR[common.name]) if isinstance(b, np.ndarray) else b
    return np.asarray(func(a, b))


def _both_or_neither(name: str, qd_args: tuple, np_args: tuple) -> None:
    """Call both; they must agree on the value, or both raise the same exception type."""
    with np.errstate(all="ignore"):
        try:
            expected = binary_oracle(name, *np_args)
        except (ValueError, TypeError, OverflowError) as exc:
            with pytest.raises(type(exc)):
                getattr(qd, name)(*qd_args)
            return
        result = getattr(qd, name)(*qd_args)
    check(result, expected)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=20)
@given(data=st.data())
def test_binary_matches_numpy_with_broadcasting(name: str, data: st.DataObject) -> None:
    category = BINARY[name][0]
    d1 = data.draw(st.sampled_from(allowed(category)), label="d1")
    d2 = data.draw(st.sampled_from(allowed(category)), label="d2")
    s1, s2 = data.draw(npst.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                          max_side=4), label="shapes").input_shapes
    a = data.draw(npst.arrays(d1, s1), label="a")
    b = data.draw(npst.arrays(d2, s2), label="b")
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        b = np.abs(b) % (8 * np.dtype(d1).itemsize)  # negative or huge shifts are undefined
        b = b.astype(d2)
    _both_or_neither(name, (qd.asarray(a), qd.asarray(b)), (a, b))


def _scalar_for(kind: str) -> st.SearchStrategy:
    if kind == "b":
        return st.booleans()
    if kind == "u":
        return st.integers(0, 100)
    if kind == "i":
        return st.integers(-100, 100)
    if kind == "f":
        return st.floats(-1e3, 1e3, width=32) | st.integers(-100, 100)
    return st.complex_numbers(max_magnitude=1e3, allow_nan=False) | st.floats(-1e3, 1e3)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=15)
@given(data=st.data())
def test_python_scalars_are_weak_on_either_side(name: str, data: st.DataObject) -> None:
    category = BINARY[name][0]
    dtype = data.draw(st.sampled_from(allowed(category)), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES), label="a")
    kind = np.dtype(dtype).kind
    value = data.draw(_scalar_for(kind), label="scalar")
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        value = builtins_abs(int(value)) % 8  # negative or huge shifts are undefined
        a = (np.abs(a) % 8).astype(dtype)
    _both_or_neither(name, (qd.asarray(a), value), (a, value))
    _both_or_neither(name, (value, qd.asarray(a)), (value, a))


def test_weak_scalars_keep_the_array_dtype() -> None:
    x32 = qd.ones(3, dtype=qd.float32)
    assert (qd.multiply(x32, 2.0)).dtype == qd.float32
    assert (qd.add(2, x32)).dtype == qd.float32
    assert qd.add(qd.ones(2, dtype=qd.int8), 1).dtype == qd.int8
    assert qd.multiply(qd.ones(2, dtype=qd.complex64), 1.5).dtype == qd.complex64
    assert qd.add(qd.ones(2, dtype=qd.float32), 1j).dtype == qd.complex64
    # NumPy's mixed-kind rule: an integer array with a Python float is float64
    assert qd.add(qd.ones(2, dtype=qd.int16), 0.5).dtype == qd.float64


def test_numpy_scalars_are_typed_values() -> None:
    x = qd.ones(3, dtype=qd.float32)
    check(qd.add(x, np.float64(2)), np.ones(3, np.float32) + np.float64(2))
    check(qd.multiply(np.int8(3), qd.ones(2, dtype=qd.int8)), np.full(2, 3, np.int8))


def test_logical_functions_use_truthiness_on_any_dtype() -> None:
    a = np.array([0.0, 0.5, np.nan, -2.0])
    b = np.array([0, 3, 0, 1], dtype=np.int8)
    check(qd.logical_and(qd.asarray(a), qd.asarray(b)), np.logical_and(a, b))
    check(qd.logical_or(qd.asarray(a), 0), np.logical_or(a, 0))
    check(qd.logical_not(qd.asarray(b)), np.logical_not(b))


def test_divide_of_integers_is_float64() -> None:
    check(qd.divide(qd.asarray([1, 2], dtype=qd.int8), qd.asarray([2, 4], dtype=qd.int8)),
          np.array([0.5, 0.5]))


# -- clip -----------------------------------------------------------------------------------


@settings(max_examples=40)
@given(data=st.data())
def test_clip_matches_numpy_and_keeps_the_dtype(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(allowed("real numeric")), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES, elements={"allow_nan": False}
                              if np.dtype(dtype).kind == "f" else None), label="a")
    kind = np.dtype(dtype).kind
    bound = st.none() | (st.integers(-50, 50) if kind != "f" else st.floats(-50, 50, width=32))
    lo = data.draw(bound, label="min")
    hi = data.draw(bound, label="max")
    if kind in "iu":
        info = np.iinfo(dtype)
        if (lo is not None and lo > info.max) or (hi is not None and hi < info.min):
            with pytest.raises(OverflowError, match=r"clip's m(in|ax)=-?\d+ is outside the "
                                                    r"range of x's dtype"):
                qd.clip(qd.asarray(a), lo, hi)
            return
    result = qd.clip(qd.asarray(a), lo, hi)
    expected = a.copy()
    if lo is not None:
        expected = np.where(a < lo, np.asarray(lo).astype(dtype), expected)
    if hi is not None:
        expected = np.where(expected > hi, np.asarray(hi).astype(dtype), expected)
    check(result, expected.astype(dtype))


def test_clip_with_array_bounds_broadcasts() -> None:
    a = np.arange(6.0).reshape(2, 3)
    lo = np.array([1.0, 2.0, 3.0])
    check(qd.clip(qd.asarray(a), qd.asarray(lo), 4.0), np.clip(a, lo, 4.0))
    # a Python int beyond the dtype's range is no bound at all
    check(qd.clip(qd.asarray([1, 200], dtype=qd.uint8), -5, 1000),
          np.array([1, 200], dtype=np.uint8))


def test_clip_refuses_bounds_it_would_truncate() -> None:
    with pytest.raises(TypeError, match=r"clip of an integer array \(qdarray.int8\) got a "
                                        r"float min=1.5; use an integer bound"):
        qd.clip(qd.asarray([1, 2], dtype=qd.int8), 1.5, None)
    with pytest.raises(TypeError, match=r"clip's max has dtype qdarray.float64, which does "
                                        r"not cast to x's dtype qdarray.float32"):
        qd.clip(qd.ones(2, dtype=qd.float32), None, qd.asarray([0.5, 0.5]))
    with pytest.raises(TypeError, match="Only real numeric dtypes are allowed in clip"):
        qd.clip(qd.asarray([1j]), 0, 1)
    with pytest.raises(TypeError, match="clip expects None, a Python int or float"):
        qd.clip(qd.ones(2), "0", None)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(n for n in BINARY if rejected(BINARY[n][0])))
def test_binary_rejects_dtypes_outside_its_category(name: str) -> None:
    category = BINARY[name][0]
    good = qd.ones(2, dtype=getattr(qd, allowed(category)[-1]))
    for dtype in rejected(category):
        bad = qd.zeros(2, dtype=getattr(qd, dtype))
        for args in ((bad, good), (good, bad), (bad, 1)):
            with pytest.raises(TypeError, match=rf"Only {category} dtypes are allowed in "
                                                rf"{name}; got qdarray\.{dtype}\."):
                getattr(qd, name)(*args)


def test_scalars_of_a_kind_the_function_rejects() -> None:
    with pytest.raises(TypeError, match=r"Only integer or boolean values are allowed in "
                                        r"bitwise_and; got float 1\.5\. Use an integer"):
        qd.bitwise_and(qd.asarray([1, 2]), 1.5)
    with pytest.raises(TypeError, match=r"Only real numeric values are allowed in less; "
                                        r"got complex 1j"):
        qd.less(1j, qd.asarray([1.0]))


def test_two_scalars_and_foreign_types_are_refused() -> None:
    with pytest.raises(TypeError, match=r"add needs at least one Array operand; got int and "
                                        r"float\. Use qd.asarray"):
        qd.add(1, 2.0)
    with pytest.raises(TypeError, match=r"multiply expects a qdarray Array or a Python scalar "
                                        r"for x2; got list\. Use qd.asarray"):
        qd.multiply(qd.ones(2), [1, 2])
    with pytest.raises(TypeError, match=r"sin expects a qdarray Array for x; got ndarray"):
        qd.sin(np.ones(2))


def test_arrays_on_two_devices_are_refused_naming_both() -> None:
    other = Array._new(np.ones(2), Device("cuda:3"))
    with pytest.raises(ValueError, match=r"add got arrays on two devices, cpu and cuda:3; "
                                         r"move one with x.to_device"):
        qd.add(qd.ones(2), other)
    with pytest.raises(qd.DeviceMismatchError):
        qd.atan2(qd.ones(2), other)


def test_shapes_that_do_not_broadcast() -> None:
    with pytest.raises(ValueError):
        qd.add(qd.ones(2), qd.ones(3))


def test_every_function_has_a_docstring_and_positional_only_arrays() -> None:
    import inspect

    for name in list(UNARY) + list(BINARY) + ["clip"]:
        func = getattr(qd, name)
        assert func.__name__ == name
        assert func.__doc__ and "Args:" in func.__doc__ and "Returns:" in func.__doc__
        params = list(inspect.signature(func).parameters.values())
        assert params[0].kind is inspect.Parameter.POSITIONAL_ONLY


def test_booleans_in_arithmetic_follow_numpy() -> None:
    """`mask * x`, `np.multiply(mask, x)`, `x + mask`: the standard only says the operands
    "should" be numeric, so booleans do what NumPy does (they are refused by array-api-strict);
    `-` of booleans is refused by NumPy and here alike. On other devices the generated
    kernels follow the same rules (tests/opencl, tests/vulkan)."""
    m = np.array([True, False, True])
    x = np.array([2.0, -3.0, 0.5], dtype=np.float32)
    i = np.array([5, 7, -2], dtype=np.int8)
    qm, qx, qi = qd.asarray(m), qd.asarray(x), qd.asarray(i)
    check(qm * qx, m * x)
    check(qx + qm, x + m)
    check(np.multiply(qm, qx), np.multiply(m, x))
    check(qm * 2, m * 2)
    check(1.5 * qm, 1.5 * m)
    check(qm + qi, m + i)
    check(qm + qm, m + m)  # logical or
    check(qm * qm, m * m)  # logical and
    check(qm ** qm, m ** m)
    check(qx ** qm, x ** m)
    with np.errstate(all="ignore"):
        check(qi // qm, i // m)
        check(qm % qm, m % m)
        check(qm / qm, m / m)
    check(qd.sum(qm * qx), np.sum(m * x))
    with pytest.raises(TypeError, match="Only numeric dtypes are allowed in subtract"):
        qm - qm
    acc = qd.asarray(m.copy())
    acc += qd.asarray([False, True, False])
    check(acc, np.ones(3, bool))
    with pytest.raises(TypeError, match="would change dtype qdarray.bool to qdarray.int8"):
        acc //= qm
    check(acc, np.ones(3, bool))


def test_gradients_through_a_boolean_mask() -> None:
    x = qd.asarray([1.0, -2.0, 3.0])
    mask = x > 0
    g = qd.ad.grad(lambda x: qd.sum(mask * x * x))(x)
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 6.0])
