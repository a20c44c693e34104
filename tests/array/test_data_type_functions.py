"""astype, can_cast, finfo, iinfo, isdtype and result_type against NumPy and the standard."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


# -- astype ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), [(a, b) for a, b in itertools.product(ALL, ALL)
                                          if not (a.startswith("complex")
                                                  and not b.startswith("complex"))])
@settings(max_examples=5)
@given(data=st.data())
def test_astype_matches_numpy(src: str, dst: str, data: st.DataObject) -> None:
    elements = None
    if src.startswith("float") and not dst.startswith(("float", "complex")):
        # float -> integer is defined for values in range (truncation toward zero)
        elements = st.floats(-100, 100, width=np.dtype(src).itemsize * 8)
    a = data.draw(npst.arrays(src, SHAPES, elements=elements), label="a")
    x = qd.asarray(a)
    with np.errstate(all="ignore"):  # float64 -> float32 overflow to inf warns in both
        result = qd.astype(x, getattr(qd, dst))
        expected = a.astype(dst)
    assert result.dtype == getattr(qd, dst)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(result), expected)
    assert result._buffer is not x._buffer


def test_astype_copy_false_returns_the_array_when_nothing_changes() -> None:
    x = qd.ones(3, dtype=qd.float32)
    assert qd.astype(x, qd.float32, copy=False) is x
    y = qd.astype(x, qd.float32)
    assert y is not x and not np.shares_memory(np.asarray(y), np.asarray(x))
    assert qd.astype(x, qd.float64, copy=False).dtype == qd.float64
    assert qd.astype(x, qd.float32, device="cpu", copy=False) is x


def test_astype_truncates_floats_toward_zero() -> None:
    result = qd.astype(qd.asarray([1.7, -1.7, 2.5]), qd.int32)
    np.testing.assert_array_equal(np.asarray(result), [1, -1, 2])


def test_astype_refuses_complex_to_real() -> None:
    with pytest.raises(TypeError, match=r"astype from qdarray.complex64 to qdarray.float32 "
                                        r"would drop the imaginary part; use qd.real\(x\)"):
        qd.astype(qd.asarray([1j], dtype=qd.complex64), qd.float32)


def test_astype_argument_errors() -> None:
    with pytest.raises(TypeError, match="astype expects a qdarray Array for x; got list"):
        qd.astype([1, 2], qd.int8)
    with pytest.raises(TypeError, match="dtype 'float16' is not supported"):
        qd.astype(qd.ones(2), "float16")
    with pytest.raises(TypeError, match="astype expects a bool for copy; got int"):
        qd.astype(qd.ones(2), qd.float32, copy=0)


def test_astype_accepts_dtype_names_and_python_types() -> None:
    assert qd.astype(qd.ones(2), "int16").dtype == qd.int16
    assert qd.astype(qd.ones(2), int).dtype == qd.int64
    assert qd.astype(qd.ones(2), complex).dtype == qd.complex128


# -- can_cast -------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), list(itertools.product(ALL, ALL)))
def test_can_cast_is_lossless_promotion(a: str, b: str) -> None:
    da, db = getattr(qd, a), getattr(qd, b)
    expected = qd.result_type(da, db) == db
    assert qd.can_cast(da, db) is expected
    assert qd.can_cast(qd.zeros(1, dtype=da), db) is expected
    assert expected == bool(np.can_cast(a, b))


def test_can_cast_examples_and_errors() -> None:
    assert qd.can_cast(qd.int16, qd.float32)
    assert not qd.can_cast(qd.int32, qd.float32)
    assert not qd.can_cast(qd.float64, qd.float32)
    assert qd.can_cast(qd.bool, qd.uint8)
    assert not qd.can_cast(qd.int8, qd.uint64)
    with pytest.raises(TypeError, match="can_cast expects a qdarray dtype for to; got str"):
        qd.can_cast(qd.int8, "int16")
    with pytest.raises(TypeError, match="can_cast expects a qdarray dtype .* or an Array"):
        qd.can_cast(object(), qd.int16)


# -- finfo and iinfo ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_finfo_matches_numpy(dtype: str) -> None:
    info = qd.finfo(getattr(qd, dtype))
    ref = np.finfo(dtype)
    assert info.bits == ref.bits and type(info.bits) is int
    for field in ("eps", "max", "min", "smallest_normal"):
        value = getattr(info, field)
        assert type(value) is float
        assert value == float(getattr(ref, field))
    assert info.dtype == getattr(qd, ref.dtype.name)
    assert info.dtype in (qd.float32, qd.float64)
    assert qd.finfo(qd.zeros(2, dtype=getattr(qd, dtype))) == info


def test_finfo_closed_forms() -> None:
    assert qd.finfo(qd.float32).eps == 2.0 ** -23
    assert qd.finfo(qd.float64).eps == 2.0 ** -52
    assert qd.finfo(qd.float64).smallest_normal == 2.0 ** -1022
    assert qd.finfo(qd.complex64).dtype == qd.float32


@pytest.mark.parametrize("dtype", ALL[1:9])
def test_iinfo_matches_the_closed_form(dtype: str) -> None:
    info = qd.iinfo(getattr(qd, dtype))
    bits = np.dtype(dtype).itemsize * 8
    signed = dtype.startswith("int")
    assert info.bits == bits
    assert info.min == (-(2 ** (bits - 1)) if signed else 0)
    assert info.max == (2 ** (bits - 1) - 1 if signed else 2 ** bits - 1)
    assert type(info.max) is int
    assert info.dtype == getattr(qd, dtype)
    assert qd.iinfo(qd.zeros(1, dtype=getattr(qd, dtype))) == info


def test_finfo_and_iinfo_refuse_the_other_kind() -> None:
    with pytest.raises(TypeError, match=r"Only floating-point dtypes are allowed in finfo; got "
                                        r"qdarray.int32. Use qd.iinfo"):
        qd.finfo(qd.int32)
    with pytest.raises(TypeError, match=r"Only integer dtypes are allowed in iinfo; got "
                                        r"qdarray.float32. Use qd.finfo"):
        qd.iinfo(qd.float32)
    with pytest.raises(TypeError, match="Only integer dtypes are allowed in iinfo; got "
                                        "qdarray.bool"):
        qd.iinfo(qd.bool)
    with pytest.raises(TypeError, match="finfo expects a qdarray dtype"):
        qd.finfo(3)


# -- isdtype --------------------------------------------------------------------------------

KIND_MEMBERS = {
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "integral": {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"},
    "real floating": {"float32", "float64"},
    "complex floating": {"complex64", "complex128"},
    "numeric": set(ALL) - {"bool"},
}


@pytest.mark.parametrize("dtype", ALL)
def test_isdtype_kinds(dtype: str) -> None:
    d = getattr(qd, dtype)
    for kind, members in KIND_MEMBERS.items():
        assert qd.isdtype(d, kind) is (dtype in members)
    assert qd.isdtype(d, d)
    assert not qd.isdtype(d, qd.int8 if dtype != "int8" else qd.int16)
    assert qd.isdtype(d, ("bool", "numeric"))
    assert qd.isdtype(d, (qd.bool, d))


def test_isdtype_errors() -> None:
    with pytest.raises(ValueError, match="isdtype got an unknown kind 'integer'; use a dtype "
                                         "or one of 'bool'"):
        qd.isdtype(qd.int8, "integer")
    with pytest.raises(TypeError, match="isdtype expects a qdarray dtype as its first "
                                        "argument; got ndarray"):
        qd.isdtype(np.zeros(1), "numeric")
    with pytest.raises(TypeError, match="got int 3"):
        qd.isdtype(qd.int8, ("numeric", 3))


# -- result_type with arrays ----------------------------------------------------------------


def test_result_type_accepts_arrays_on_any_device() -> None:
    # dtype metadata only: an array on another device is fine (no data is touched)
    other = Array._new(np.ones(2, np.float32), Device("cuda:0"))
    assert qd.result_type(other, qd.int8) == qd.float32
