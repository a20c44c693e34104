"""Array operators and in-place operators against NumPy's, and their dtype-preserving rules."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst
from standard_values import std_floor_divide

import qdarray as qd
from qdarray import _dispatch
from qdarray._array import Array
from qdarray._devices import Device

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _floordiv(a: object, b: object) -> object:
    """`a // b`, with the standard's values for NumPy operands (the oracle)."""
    if isinstance(a, qd.Array) or isinstance(b, qd.Array):
        return a // b  # type: ignore[operator]
    return std_floor_divide(a, b)  # type: ignore[arg-type]


def _ifloordiv(a: object, b: object) -> object:
    if isinstance(a, qd.Array):
        a //= b  # type: ignore[operator]
        return a
    a[...] = std_floor_divide(a, b)  # type: ignore[index, arg-type]
    return a


# operator -> (namespace function, NumPy operator; the standard's values where they differ)
BINARY_OPS = {
    "__add__": ("add", operator.add), "__sub__": ("subtract", operator.sub),
    "__mul__": ("multiply", operator.mul), "__truediv__": ("divide", operator.truediv),
    "__floordiv__": ("floor_divide", _floordiv), "__mod__": ("remainder", operator.mod),
    "__pow__": ("pow", operator.pow), "__and__": ("bitwise_and", operator.and_),
    "__or__": ("bitwise_or", operator.or_), "__xor__": ("bitwise_xor", operator.xor),
    "__lshift__": ("bitwise_left_shift", operator.lshift),
    "__rshift__": ("bitwise_right_shift", operator.rshift),
    "__lt__": ("less", operator.lt), "__le__": ("less_equal", operator.le),
    "__gt__": ("greater", operator.gt), "__ge__": ("greater_equal", operator.ge),
    "__eq__": ("equal", operator.eq), "__ne__": ("not_equal", operator.ne),
}
INPLACE_OPS = {
    "__iadd__": ("add", operator.iadd), "__isub__": ("subtract", operator.isub),
    "__imul__": ("multiply", operator.imul), "__itruediv__": ("divide", operator.itruediv),
    "__ifloordiv__": ("floor_divide", _ifloordiv),
    "__imod__": ("remainder", operator.imod), "__ipow__": ("pow", operator.ipow),
    "__iand__": ("bitwise_and", operator.iand), "__ior__": ("bitwise_or", operator.ior),
    "__ixor__": ("bitwise_xor", operator.ixor),
    "__ilshift__": ("bitwise_left_shift", operator.ilshift),
    "__irshift__": ("bitwise_right_shift", operator.irshift),
}
UNARY_OPS = {"__neg__": ("negative", operator.neg), "__pos__": ("positive", operator.pos),
             "__abs__": ("abs", operator.abs), "__invert__": ("bitwise_invert", operator.invert)}


def allowed(func: str) -> list[str]:
    kinds = _dispatch.KINDS[_dispatch.CATEGORIES[func]]
    return [d for d in ALL if np.dtype(d).kind in kinds]


def check(result: qd.Array, expected: np.ndarray) -> None:
    expected = np.asarray(expected)
    assert type(result) is Array
    assert result.shape == expected.shape
    assert result.dtype == getattr(qd, expected.dtype.name)
    np.testing.assert_array_equal(np.asarray(result), expected)


def _operands(data: st.DataObject, func: str) -> tuple[np.ndarray, np.ndarray]:
    dtype = data.draw(st.sampled_from(allowed(func)), label="dtype")
    s1, s2 = data.draw(npst.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                          max_side=4)).input_shapes
    a = data.draw(npst.arrays(dtype, s1), label="a")
    b = data.draw(npst.arrays(dtype, s2), label="b")
    if func.startswith("bitwise_") and func.endswith("shift") or func == "pow" and \
            np.dtype(dtype).kind in "iu":
        b = (np.abs(b) % 8).astype(dtype)  # negative shifts and powers are errors/undefined
    return a, b


@pytest.mark.parametrize("op", sorted(BINARY_OPS))
@settings(max_examples=15)
@given(data=st.data())
def test_binary_operators_match_numpy(op: str, data: st.DataObject) -> None:
    func, py_op = BINARY_OPS[op]
    a, b = _operands(data, func)
    with np.errstate(all="ignore"):
        expected = py_op(a, b)
        result = py_op(qd.asarray(a), qd.asarray(b))
    check(result, expected)


@pytest.mark.parametrize("op", sorted(BINARY_OPS))
def test_operators_and_functions_accept_the_same_dtypes(op: str) -> None:
    func, py_op = BINARY_OPS[op]
    for dtype in ALL:
        x = qd.ones(2, dtype=getattr(qd, dtype))
        outcomes = []
        for call in (py_op, getattr(qd, func)):
            try:
                with np.errstate(all="ignore"):
                    outcomes.append(call(x, x).dtype)
            except TypeError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__",
                                "__mod__", "__floordiv__", "__lt__", "__eq__", "__and__"])
@settings(max_examples=15)
@given(data=st.data())
def test_reflected_operators_with_python_scalars(op: str, data: st.DataObject) -> None:
    func, py_op = BINARY_OPS[op]
    dtype = data.draw(st.sampled_from([d for d in allowed(func) if d != "bool"]))
    a = data.draw(npst.arrays(dtype, SHAPES, elements=st.integers(1, 5)
                              if np.dtype(dtype).kind in "iu" else None), label="a")
    value = data.draw(st.integers(1, 5), label="value")
    with np.errstate(all="ignore"):
        check(py_op(value, qd.asarray(a)), py_op(value, a))
        check(py_op(qd.asarray(a), value), py_op(a, value))


@pytest.mark.parametrize("op", sorted(UNARY_OPS))
@settings(max_examples=15)
@given(data=st.data())
def test_unary_operators_match_numpy(op: str, data: st.DataObject) -> None:
    func, py_op = UNARY_OPS[op]
    dtype = data.draw(st.sampled_from(allowed(func)), label="dtype")
    a = data.draw(npst.arrays(dtype, SHAPES), label="a")
    with np.errstate(all="ignore"):
        check(py_op(qd.asarray(a)), py_op(a))


# -- in place -------------------------------------------------------------------------------


# Booleans give int8 in these (as in NumPy), so `b op= c` of booleans is a dtype change,
# refused (test_booleans_in_arithmetic_follow_numpy)
_BOOL_TO_INT8 = ("pow", "floor_divide", "remainder")


@pytest.mark.parametrize("op", sorted(INPLACE_OPS))
@settings(max_examples=15)
@given(data=st.data())
def test_inplace_operators_write_into_the_left_operand(op: str, data: st.DataObject) -> None:
    func, py_op = INPLACE_OPS[op]
    dtype = data.draw(st.sampled_from([d for d in allowed(func)
                                       if not (func == "divide" and d in ALL[:9])
                                       and not (d == "bool" and func in _BOOL_TO_INT8)]))
    shape = data.draw(SHAPES, label="shape")
    a = data.draw(npst.arrays(dtype, shape), label="a")
    b_shape = data.draw(st.sampled_from([shape, (), shape[1:]]), label="b shape")
    b = data.draw(npst.arrays(dtype, b_shape), label="b")
    if func.endswith("shift") or func == "pow" and np.dtype(dtype).kind in "iu":
        b = (np.abs(b) % 8).astype(dtype)
    x = qd.asarray(a.copy())
    before = x._buffer.generation
    with np.errstate(all="ignore"):
        expected = py_op(a.copy(), b)
        result = py_op(x, qd.asarray(b))
    assert result is x
    assert x._buffer.generation == before + 1
    check(x, expected)


@pytest.mark.parametrize("op", ["__iadd__", "__imul__", "__isub__", "__itruediv__",
                                "__ipow__", "__iand__", "__ilshift__"])
def test_inplace_operators_with_python_scalars(op: str) -> None:
    func, py_op = INPLACE_OPS[op]
    for dtype in allowed(func):
        if func == "divide" and dtype in ALL[:9] or dtype == "bool" and func in _BOOL_TO_INT8:
            continue
        a = np.arange(1, 5).astype(dtype)
        value = True if dtype == "bool" else 2
        x = qd.asarray(a.copy())
        with np.errstate(all="ignore"):
            py_op(x, value)
            check(x, py_op(a.copy(), value))


def test_float32_inplace_with_a_python_float_stays_float32() -> None:
    x = qd.ones(3, dtype=qd.float32)
    x *= 0.5
    x += 1
    x **= 2.0
    check(x, np.full(3, 2.25, np.float32))


def test_inplace_refuses_a_dtype_change_and_leaves_x_untouched() -> None:
    cases = [
        (qd.asarray([1, 2, 3]), operator.itruediv, 2, "int64 to qdarray.float64; use x = x / y"),
        (qd.asarray([1, 2, 3]), operator.iadd, 0.5, "int64 to qdarray.float64; use x = x \\+ y"),
        (qd.ones(3, dtype=qd.float32), operator.iadd, qd.ones(3),
         "float32 to qdarray.float64"),
        (qd.ones(2), operator.iadd, 1j, "float64 to qdarray.complex128"),
    ]
    for x, py_op, value, message in cases:
        before = np.asarray(x).copy()
        generation = x._buffer.generation
        with pytest.raises(TypeError, match=f"In-place .* would change dtype qdarray.{message}"):
            py_op(x, value)
        np.testing.assert_array_equal(np.asarray(x), before)
        assert x._buffer.generation == generation + 1  # np.asarray above counts as a write


def test_inplace_stores_a_wider_integer_result_whose_values_fit() -> None:
    # As NumPy, CuPy and PyTorch do (SciPy's nsum counts into int32 with int64 counts), but
    # with the range checked as assignments check it, instead of wrapping.
    n = qd.asarray([1, 2, 3], dtype=qd.int32)
    n += qd.asarray([10, 20, 30], dtype=qd.int64)
    check(n, np.array([11, 22, 33], np.int32))
    mask = qd.asarray([True, False, True])
    n[mask] += qd.asarray([1, 1], dtype=qd.int64)
    check(n, np.array([12, 22, 34], np.int32))
    u = qd.asarray([1, 2], dtype=qd.uint8)
    with pytest.raises(OverflowError, match=r"Value -1 \(dtype qdarray.int16\) is out of range "
                                            r"for dtype qdarray.uint8 \(\[0, 255\]\); nothing "
                                            "was written"):
        u *= qd.asarray([-1, 2], dtype=qd.int8)
    check(u, np.array([1, 2], np.uint8))


def test_inplace_refuses_to_broadcast_the_left_operand() -> None:
    x = qd.zeros(3)
    with pytest.raises(ValueError, match=r"In-place add cannot broadcast shape \(3,\) to "
                                         r"\(2, 3\); the left operand's shape must not change"):
        x += qd.ones((2, 3))
    np.testing.assert_array_equal(np.asarray(x), np.zeros(3))


def test_inplace_integer_power_with_a_negative_exponent_fails_before_writing() -> None:
    x = qd.asarray([2, 3, 4])
    with pytest.raises(ValueError, match="negative integer powers"):
        x **= qd.asarray([1, -1, 1])
    np.testing.assert_array_equal(np.asarray(x), [2, 3, 4])


def test_inplace_with_aliased_operands() -> None:
    a = np.arange(6.0)
    x = qd.asarray(a.copy())
    x += x
    check(x, a + a)


def test_inplace_on_a_boolean_array() -> None:
    x = qd.asarray([True, False, True])
    x &= qd.asarray([True, True, False])
    x |= False
    check(x, np.array([True, False, False]))
    with pytest.raises(TypeError, match="In-place bitwise_and would change dtype qdarray.bool"):
        x &= 1


# -- operands of other types ----------------------------------------------------------------


def test_numpy_scalars_are_typed_operands() -> None:
    x = qd.ones(2, dtype=qd.float32)
    check(x * np.float64(2), np.ones(2, np.float32) * np.float64(2))
    check(x + np.float32(1), np.full(2, 2, np.float32))
    x += np.float32(1)
    check(x, np.full(2, 2, np.float32))


def test_numpy_operands_on_the_left_stay_in_qdarray() -> None:
    x = qd.ones(2, dtype=qd.float32)
    result = np.float32(3) * x
    assert type(result) is Array
    check(result, np.full(2, 3, np.float32))
    check(np.float64(1) - x, np.zeros(2))


def test_numpy_arrays_mix_in_without_copies_on_the_cpu() -> None:
    x = qd.ones(2)
    a = np.arange(2.0)
    for result in (x + a, a + x, x * [1.0, 2.0], [1.0, 2.0] * x):
        assert type(result) is Array
    check(x + a, np.ones(2) + a)
    check(a - x, a - np.ones(2))
    check(x == np.ones(2), np.array([True, True]))
    y = qd.zeros(2)
    y += a  # the ndarray is the operand itself: no copy is made of it
    check(y, a)
    # NumPy's own functions return qdarray arrays (see test_numpy_protocols.py)
    assert type(np.sin(x)) is Array


def test_unsupported_operand_types_raise_type_error() -> None:
    with pytest.raises(TypeError):
        assert qd.ones(2) < "a"
    with pytest.raises(TypeError):
        qd.ones(2) + {1: 2}
    assert (qd.ones(2) == None) is False  # noqa: E711 - identity fallback, as for any object


def test_operators_refuse_dtypes_like_the_functions() -> None:
    with pytest.raises(TypeError, match="Only numeric dtypes are allowed in negative; got "
                                        "qdarray.bool"):
        -qd.asarray([True])
    with pytest.raises(TypeError, match="Only real numeric dtypes are allowed in less; got "
                                        "qdarray.complex128"):
        assert qd.asarray([1j]) < qd.asarray([2j])
    with pytest.raises(TypeError, match="Only integer dtypes are allowed in bitwise_left_shift"):
        qd.ones(2) << 1


def test_operators_refuse_arrays_on_two_devices() -> None:
    other = Array._new(np.ones(2), Device("cuda:2"))
    with pytest.raises(qd.DeviceMismatchError, match="cpu and cuda:2"):
        qd.ones(2) * other
    x = qd.ones(2)
    with pytest.raises(qd.DeviceMismatchError, match="cpu and cuda:2"):
        x += other


def test_inplace_through_overlapping_views_matches_numpy() -> None:
    a = np.arange(8.0)
    x = qd.asarray(a.copy())
    view = x[1:]
    view += x[:-1]
    a[1:] += a[:-1]
    np.testing.assert_array_equal(np.asarray(x), a)


def test_a_0d_array_refuses_iteration_when_asked_like_numpy() -> None:
    # iter() itself raises, so np.iterable answers False (SciPy tells a lone argument from a
    # tuple of them this way); 1-D arrays iterate over their elements.
    with pytest.raises(TypeError, match="iteration over a 0-D array"):
        iter(qd.asarray(3.0))
    assert not np.iterable(qd.asarray(3.0)) and np.iterable(qd.asarray([3.0]))
    assert [float(v) for v in qd.asarray([1.0, 2.0])] == [1.0, 2.0]
