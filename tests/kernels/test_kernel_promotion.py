"""Types in kernels follow NumPy 2: typed values promote by result_type, Python literals and
unannotated Python scalars are weak."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.ir import Op, instrs

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64]


def result_of(kern, *args, op=Op.ADD):
    (instr,) = [i for i in instrs(kern.ir(*args).body) if i.op is op]
    return instr.result.type


@qd.kernel
def add_two(a: qd.Array, b: qd.Array, out: qd.Array[qd.float64, 1]):
    out[0] = a[0] + b[0]


@pytest.mark.parametrize("da,db", [p for p in itertools.product(DTYPES, DTYPES)
                                   if not (p[0] is np.bool_ and p[1] is np.bool_)])
def test_typed_values_promote_like_numpy(da, db):
    got = result_of(add_two, np.zeros(1, da), np.zeros(1, db), np.zeros(1))
    assert got._np == np.result_type(da, db)


@qd.kernel
def add_literals(a: qd.Array, out: qd.Array[qd.float64, 1]):
    out[0] = a[0] + 1
    out[1] = a[0] + 2.5
    out[2] = a[0] * True


@pytest.mark.parametrize("dtype", DTYPES[1:])
def test_literals_are_weak(dtype):
    ir = add_literals.ir(np.zeros(1, dtype), np.zeros(3))
    types = [i.result.type._np for i in instrs(ir.body) if i.op in (Op.ADD, Op.MUL)]
    assert types == [np.result_type(dtype, 1), np.result_type(dtype, 2.5),
                     np.result_type(dtype, True)]


@qd.kernel
def mixed(a: qd.Array, s, out: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        out[i] = a[i] * s + i * 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_python_scalar_arguments_and_loop_indices_are_weak(dtype):
    ir = mixed.ir(np.zeros(2, dtype), 3, np.zeros(2))
    mul, half, add = [i for i in instrs(ir.body) if i.op in (Op.MUL, Op.ADD)]
    assert mul.result.type._np == np.result_type(dtype, 3)
    assert half.result.type is qd.float64  # Python int * Python float
    assert add.result.type._np == np.result_type(np.result_type(dtype, 3), 0.5)


@qd.kernel
def divide(a: qd.Array, b: qd.Array, out: qd.Array[qd.float64, 1]):
    out[0] = a[0] / b[0]


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.float32])
def test_true_division(dtype):
    want = np.true_divide(np.ones(1, dtype), np.ones(1, dtype)).dtype
    assert result_of(divide, np.ones(1, dtype), np.ones(1, dtype), np.zeros(1),
                     op=Op.TRUEDIV)._np == want


@qd.kernel
def sine(a: qd.Array, out: qd.Array[qd.float64, 1]):
    out[0] = qd.math.sin(a[0])


@pytest.mark.parametrize("dtype,want", [(np.float32, np.float32), (np.float64, np.float64),
                                        (np.int32, np.float64), (np.uint8, np.float64)])
def test_math_functions_take_floats(dtype, want):
    assert result_of(sine, np.ones(1, dtype), np.zeros(1), op=Op.SIN)._np == want


@qd.kernel
def compare(a: qd.Array, out: qd.Array[qd.bool, 1]):
    out[0] = a[0] < 2.5


def test_comparisons_give_bool_after_promotion():
    ir = compare.ir(np.ones(1, np.int32), np.zeros(1, bool))
    (lt,) = [i for i in instrs(ir.body) if i.op is Op.LT]
    assert lt.result.type is qd.bool and lt.args[0].type is qd.float64
