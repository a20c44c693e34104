"""The IR: nodes, text form, source locations; and the verifier's rules."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels.ir import (
    Block,
    Break,
    For,
    Frame,
    If,
    Instr,
    KernelIR,
    Op,
    Param,
    SourceLoc,
    Value,
    Var,
    format_kernel,
    instrs,
    max_ids,
)
from qdarray.kernels.types import ArrayType
from qdarray.kernels.verify import verify

I64 = qd.int64
F64 = qd.float64
ARR = ArrayType(F64, 1)


def kernel(*stmts, params=None):
    params = params or (Param("x", Value(0, ARR)),)
    return KernelIR("k", tuple(params), Block(tuple(stmts)))


def const(vid, value, dtype=I64):
    return Instr(Op.CONST, Value(vid, dtype), (), (value, dtype))


def test_text_form_of_a_compiled_kernel():
    @qd.kernel
    def double(x: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                x[i] = x[i] * 2.0

    assert format_kernel(double.ir(np.zeros(3))) == (
        "kernel double(x=%0: Array[float64, 1]):\n"
        "  %1: int64 = SHAPE %0 0\n"
        "  %2: int64 = CONST 0 int64\n"
        "  parallel for %3: int64 in [%2, %1):\n"
        "    %4: float64 = LOAD %0 %3\n"
        "    %5: float64 = CONST 0.0 float64\n"
        "    %6: bool = GT %4 %5\n"
        "    if %6:\n"
        "      %7: float64 = LOAD %0 %3\n"
        "      %8: float64 = CONST 2.0 float64\n"
        "      %9: float64 = MUL %7 %8\n"
        "      STORE %0 %3 %9")


def test_every_node_knows_its_source_and_call_stack():
    @qd.func
    def get(x, i):
        return x[i]

    @qd.kernel
    def copy(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            y[i] = get(x, i)

    ir = copy.ir(np.zeros(2), np.zeros(2))
    load = next(i for i in instrs(ir.body) if i.op is Op.LOAD)
    assert load.loc.func == "get" and load.loc.file == __file__
    (caller,) = load.loc.stack
    assert caller.func == "copy" and caller.file == __file__
    assert load.loc.frames() == (caller, Frame("get", __file__, load.loc.line))
    assert load.loc.line == caller.line - 5
    assert str(caller) == f"copy ({__file__}:{caller.line})"


def test_nodes_are_frozen():
    v = Value(0, I64)
    with pytest.raises(AttributeError):
        v.id = 3  # type: ignore[misc]
    loc = SourceLoc("f.py", 1, 0, 1, "k")
    with pytest.raises(AttributeError):
        loc.line = 2  # type: ignore[misc]


def test_max_ids():
    var = Var(5, "acc", I64)
    k = kernel(const(1, 0), Instr(Op.STORE_VAR, None, (Value(1, I64),), (var,)),
               For(Value(7, I64), Value(1, I64), Value(1, I64), Block(()), False))
    assert max_ids(k) == (7, 5)


# -- verifier -------------------------------------------------------------------------------

def test_verifier_accepts_what_the_frontend_builds():
    @qd.kernel
    def busy(x: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            k = 0
            while k < 3:
                k += 1
                if x[i] > k:
                    continue
                x[i] += qd.math.sqrt(float(k))

    verify(busy.ir(np.zeros(3)))


@pytest.mark.parametrize("build,message", [
    (lambda: kernel(Instr(Op.ADD, Value(2, I64), (Value(1, I64), Value(1, I64)))),
     "%1 is used outside the region that defines it"),
    (lambda: kernel(const(1, 0), const(1, 1)), "%1 is defined twice"),
    (lambda: kernel(const(1, 0), Instr(Op.ADD, Value(2, F64), (Value(1, I64), Value(1, I64)))),
     "ADD gives int64 but its result is typed float64"),
    (lambda: kernel(const(1, 0), const(2, 1.5, F64),
                    Instr(Op.ADD, Value(3, I64), (Value(1, I64), Value(2, F64)))),
     "ADD: operands must be one numeric dtype; got (int64, float64)"),
    (lambda: kernel(const(1, 1.0, F64), Instr(Op.STORE, None, (Value(0, ARR), Value(1, F64),
                                                               Value(1, F64)))),
     "STORE indices must be integers; got float64"),
    (lambda: kernel(Break()), "break outside a loop"),
    (lambda: kernel(const(1, 0), For(Value(2, I64), Value(1, I64), Value(1, I64),
                                     Block((Break(),)), True)),
     "break directly in a parallel loop"),
    (lambda: kernel(const(1, 0), const(9, True, qd.bool), If(Value(9, qd.bool), Block((
        For(Value(2, I64), Value(1, I64), Value(1, I64), Block(()), True),)), Block(()))),
     "a parallel loop must be a top-level statement of the kernel"),
    (lambda: kernel(const(1, 0), If(Value(1, I64), Block(()), Block(()))),
     "if condition must be bool"),
    (lambda: kernel(const(1, 0), If(Value(9, qd.bool), Block(()), Block(()))),
     "%9 is used outside the region"),
    (lambda: kernel(const(1, 0), const(2, 1, qd.int32),
                    For(Value(3, I64), Value(1, I64), Value(2, qd.int32), Block(()), False)),
     "for bounds and index must share one integer dtype"),
    (lambda: kernel(const(1, 0), For(Value(2, I64), Value(1, I64), Value(1, I64),
                                     Block((const(3, 1),)), False),
                    Instr(Op.NEG, Value(4, I64), (Value(3, I64),))),
     "%3 is used outside the region"),
    (lambda: kernel(const(1, 0), Instr(Op.STORE_VAR, None, (Value(1, I64),),
                                       (Var(0, "t", F64),))),
     "STORE_VAR of int64 into $t.0 (float64)"),
    (lambda: kernel(Instr(Op.SHAPE, Value(1, I64), (Value(0, ARR),), (1,))),
     "SHAPE axis 1 out of range for Array[float64, 1]"),
])
def test_verifier_rejects(build, message):
    with pytest.raises(AssertionError, match="invalid IR") as info:
        verify(build())
    assert message in str(info.value)
