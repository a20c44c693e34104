"""Type promotion: the standard's table, NumPy's cross-kind rules, weak Python scalars."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import qdarray as qd

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
SHORT = {"b": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
         "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "f4": "float32",
         "f8": "float64", "c8": "complex64", "c16": "complex128"}

# The standard's promotion table (the pairs it specifies), written out as it prints them.
SPEC_TABLE = """
b b b
i1 i1 i1 | i1 i2 i2 | i1 i4 i4 | i1 i8 i8 | i2 i2 i2 | i2 i4 i4 | i2 i8 i8 | i4 i4 i4
i4 i8 i8 | i8 i8 i8
u1 u1 u1 | u1 u2 u2 | u1 u4 u4 | u1 u8 u8 | u2 u2 u2 | u2 u4 u4 | u2 u8 u8 | u4 u4 u4
u4 u8 u8 | u8 u8 u8
u1 i1 i2 | u1 i2 i2 | u1 i4 i4 | u1 i8 i8 | u2 i1 i4 | u2 i2 i4 | u2 i4 i4 | u2 i8 i8
u4 i1 i8 | u4 i2 i8 | u4 i4 i8 | u4 i8 i8
f4 f4 f4 | f4 f8 f8 | f8 f8 f8 | c8 c8 c8 | c8 c16 c16 | c16 c16 c16
f4 c8 c8 | f4 c16 c16 | f8 c8 c16 | f8 c16 c16
"""


def _spec_pairs() -> list[tuple[str, str, str]]:
    rows = []
    for line in SPEC_TABLE.strip().splitlines():
        for cell in line.split("|"):
            a, b, r = (SHORT[t] for t in cell.split())
            rows.append((a, b, r))
    return rows


SPEC = {(a, b): r for a, b, r in _spec_pairs()} | {(b, a): r for a, b, r in _spec_pairs()}


@pytest.mark.parametrize(("a", "b"), sorted(SPEC))
def test_the_standards_table(a: str, b: str) -> None:
    expected = getattr(qd, SPEC[(a, b)])
    assert qd.result_type(getattr(qd, a), getattr(qd, b)) == expected
    x, y = qd.zeros(2, dtype=getattr(qd, a)), qd.ones(2, dtype=getattr(qd, b))
    if a != "bool":
        assert qd.add(x, y).dtype == expected
    assert qd.equal(x, y).dtype == qd.bool
    assert qd.where(qd.asarray([True, False]), x, y).dtype == expected


@pytest.mark.parametrize(("a", "b"), [(a, b) for a, b in itertools.product(ALL, ALL)
                                      if (a, b) not in SPEC])
def test_pairs_the_standard_leaves_open_follow_numpy(a: str, b: str) -> None:
    expected = np.result_type(a, b)
    assert expected.name in ALL  # never float16 or an extended type
    assert qd.result_type(getattr(qd, a), getattr(qd, b)) == getattr(qd, expected.name)
    if "bool" not in (a, b):
        x, y = qd.zeros(2, dtype=getattr(qd, a)), qd.ones(2, dtype=getattr(qd, b))
        assert qd.multiply(x, y).dtype == getattr(qd, expected.name)


def test_cross_kind_examples() -> None:
    assert qd.result_type(qd.int8, qd.float32) == qd.float32
    assert qd.result_type(qd.int32, qd.float32) == qd.float64
    assert qd.result_type(qd.int64, qd.uint64) == qd.float64
    assert qd.result_type(qd.uint8, qd.complex64) == qd.complex64
    assert qd.result_type(qd.bool, qd.int8) == qd.int8


# -- Python scalars -------------------------------------------------------------------------

# (array dtype kind, scalar type) -> whether the array's dtype is kept (the standard's rule).
KEPT = {("b", bool), ("i", bool), ("i", int), ("u", bool), ("u", int), ("f", bool),
        ("f", int), ("f", float), ("c", bool), ("c", int), ("c", float), ("c", complex)}
SCALARS = {bool: True, int: 3, float: 0.5, complex: 1 + 1j}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("kind", [bool, int, float, complex])
def test_python_scalars_are_weak(dtype: str, kind: type) -> None:
    value = SCALARS[kind]
    d = getattr(qd, dtype)
    if (np.dtype(dtype).kind, kind) in KEPT:
        expected = d
    else:
        # outside the standard: NumPy 2 (NEP 50), e.g. int8 with 0.5 -> float64
        expected = getattr(qd, np.result_type(np.dtype(dtype), value).name)
    assert qd.result_type(d, value) == expected
    assert qd.result_type(value, d) == expected
    if dtype != "bool" or kind is not bool:
        x = qd.ones(2, dtype=d)
        if dtype == "bool":
            assert qd.logical_and(x, value).dtype == qd.bool
        else:
            assert qd.add(x, value).dtype == expected
            assert qd.add(value, x).dtype == expected


def test_out_of_range_python_ints_are_refused_not_wrapped() -> None:
    with pytest.raises(OverflowError, match="300"):
        qd.add(qd.ones(2, dtype=qd.int8), 300)
    with pytest.raises(OverflowError, match="-1"):
        qd.ones(2, dtype=qd.uint8) - (-1)


def test_result_type_of_many_arguments() -> None:
    x = qd.ones(2, dtype=qd.int16)
    assert qd.result_type(qd.int8, x, qd.uint8) == qd.int16
    assert qd.result_type(qd.int8, qd.uint16, qd.float32) == qd.float32
    assert qd.result_type(qd.float32, 1.0, 2, True) == qd.float32
    assert qd.result_type(qd.float32, 1j) == qd.complex64
    assert qd.result_type(x, 1.5) == qd.float64
    assert qd.result_type(qd.complex64, qd.float64) == qd.complex128
    assert qd.result_type(qd.float64) == qd.float64


def test_result_type_errors() -> None:
    with pytest.raises(ValueError, match="at least one array or dtype; got none"):
        qd.result_type()
    with pytest.raises(ValueError, match=r"got only Python scalars \(1, 2.0\)"):
        qd.result_type(1, 2.0)
    with pytest.raises(TypeError, match="expects arrays, qdarray dtypes or Python scalars; "
                                        "got str 'float32'"):
        qd.result_type(qd.int8, "float32")
    with pytest.raises(TypeError, match="got ndarray"):
        qd.result_type(np.ones(2))
