"""Every op is defined once, executed by the interpreter and spelled by every code generator."""

from __future__ import annotations

import pytest

from qdarray.kernels import interp
from qdarray.kernels.codegen.c import opencl_ops
from qdarray.kernels.codegen.numba import cpu as numba_cpu
from qdarray.kernels.codegen.numba import gpu as numba_cuda
from qdarray.kernels.ir import Op
from qdarray.kernels.ops import OPS

# Ops no code generator meets, with the reason.
BEFORE_CODEGEN: dict[Op, str] = {
    Op.SUBVIEW: "kernel-side subviews are resolved to offsets by passes/resolve_views.py, the "
                "first pass of every compile",
    **{op: "vector and matrix values are split into scalars by passes/scalarize.py, the first "
           "pass of every compile" for op in (Op.VEC_PACK, Op.VEC_ELEM)},
    **{op: "adstack ops are lowered to memory ops by passes/lower_adstack.py"
       for op in (Op.ADSTACK_PUSH, Op.ADSTACK_POP, Op.ADSTACK_TOP, Op.ADSTACK_OWN)},
}
# Ops of host worker threads, which devices without them never meet.
HOST_WORKERS: dict[Op, str] = {
    op: "reverse mode asks for the worker and lane only on targets that keep adstacks in "
        "per-worker scratch (StackLayout.scratch: the CPU)" for op in (Op.WORKER, Op.LANE)}
# Ops a target does not implement, with the reason.
DOCUMENTED_GAPS: dict[str, dict[Op, str]] = {
    "interp": {}, "numba_cpu": dict(BEFORE_CODEGEN),
    "numba_cuda": {**BEFORE_CODEGEN, **HOST_WORKERS},
    "numba_cuda (simulator)": {**BEFORE_CODEGEN, **HOST_WORKERS},
    "opencl_c": {**BEFORE_CODEGEN, **HOST_WORKERS}}
# Statements the C walker (codegen/c/csource.py) writes itself.
STATEMENTS = {Op.IF, Op.FOR, Op.WHILE, Op.BREAK, Op.CONTINUE}


def test_every_op_has_one_definition():
    assert set(OPS) == set(Op)
    for op, d in OPS.items():
        assert d.op is op
        assert d.family in ("arith", "math", "complex", "memory", "atomics", "control",
                            "vector")
        assert callable(d.type_rule)
        assert d.adjoint is None or callable(d.adjoint)


def test_interpreter_covers_every_op():
    assert interp.covered_ops() == set(Op) - set(DOCUMENTED_GAPS["interp"])


@pytest.mark.parametrize("name,table", [
    ("numba_cpu", numba_cpu.TABLE), ("numba_cuda", numba_cuda.TABLE),
    ("numba_cuda (simulator)", numba_cuda.SIMULATED_TABLE),
    ("opencl_c", {**opencl_ops.TABLE, **dict.fromkeys(STATEMENTS)})])
def test_code_generators_cover_every_op(name, table):
    assert set(table) == set(Op) - set(DOCUMENTED_GAPS[name])


def test_side_effects_are_declared():
    impure = {op for op, d in OPS.items() if not d.pure}
    assert {Op.LOAD, Op.STORE, Op.STORE_VAR, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX,
            Op.CHECK_INDEX} <= impure
    assert Op.ADD not in impure and Op.SHAPE not in impure
