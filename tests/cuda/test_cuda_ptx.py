"""The real-GPU CUDA modules compile: every kernel of the kernel and reverse-mode test suites,
rendered for a GPU (libdevice math, forced inlining, CUDA atomics, block reductions) and
compiled to PTX by numba's CUDA compiler, with no GPU needed (tests/cuda/cuda_ptx.py).

The simulator runs the other spelling of the same modules (NumPy math); this checks the one
real GPUs run, in every CI run. The programs still run, through the interpreter, so the
kernel tests' assertions hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from cuda_ptx import compile_stages, nvvm_missing
from device_harness import load

import qdarray as qd
from qdarray.kernels.launch import build_ir, signature
from qdarray.kernels.passes import pipeline

REASON = nvvm_missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))

_ops = load("cuda_ptx", "test_ops")
_atomics = load("cuda_ptx", "test_atomics")
_language = load("cuda_ptx", "test_language")
_transform = load("cuda_ptx", "test_transform", "ad")


@pytest.fixture(scope="session")
def backend() -> str:
    return "cuda"


@pytest.fixture
def n() -> int:
    return 500


@pytest.fixture(scope="session")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("programs")


@pytest.fixture
def launch() -> Callable[..., None]:
    """Compile the kernel's CUDA module for these arguments, then interpret it."""

    def run(kern: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != len(kern.param_names):
            args = kern._bind(args, kwargs)
        specs, _ = signature(kern, args)
        ir = build_ir(kern, specs, debug=qd.debug_mode(), lower=True)[0]
        compile_stages(ir, qd.debug_mode())
        kern.interpret(*args)

    return run


test_unary_math = _ops.test_unary_math
test_binary_math = _ops.test_binary_math
test_arithmetic = _ops.test_arithmetic
test_float_floor_division_and_remainder_edges_match_numpy_bits = \
    _ops.test_float_floor_division_and_remainder_edges_match_numpy_bits
test_bitwise_shifts_and_integer_power = _ops.test_bitwise_shifts_and_integer_power
test_casts_in_kernels = _ops.test_casts_in_kernels
test_predicates = _ops.test_predicates
test_one_element_under_contention = _atomics.test_one_element_under_contention
test_min_max = _atomics.test_min_max
test_min_max_return_the_value_they_replaced = \
    _atomics.test_min_max_return_the_value_they_replaced
test_multidimensional_atomics = _atomics.test_multidimensional_atomics
test_loops_break_continue_step_while = _language.test_loops_break_continue_step_while
test_top_level_statements_run_in_order = _language.test_top_level_statements_run_in_order
test_ndrange_parallel_and_nested = _language.test_ndrange_parallel_and_nested
test_zero_dimensional_array = _language.test_zero_dimensional_array
test_frozen_dataclass_arguments = _language.test_frozen_dataclass_arguments


@pytest.mark.parametrize("debug", [False, True])
def test_debug_mode_checks_compile(debug):
    @qd.kernel
    def gather(x: qd.Array[qd.float32, 2], i: qd.Array[qd.int64, 1],
               y: qd.BufferView[qd.float32]):
        for t in range(i.shape[0]):
            y[t] = x[i[t], t % x.shape[1]]

    args = (np.ones((4, 3), np.float32), np.arange(5), qd.zeros(5, dtype=qd.float32))
    ir = build_ir(gather, signature(gather, args)[0], debug=debug, lower=True)[0]
    source = compile_stages(ir, debug)
    assert ("report_index_error(err" in source) is debug


@pytest.mark.parametrize("kern", [_transform.logistic, _transform.logistic32, _transform.decay])
def test_reverse_and_counting_kernels_compile(kern):
    x = qd.ones(8, dtype=qd.float32 if kern is not _transform.logistic else qd.float64,
                requires_grad=True)
    y = qd.zeros(1, dtype=x.dtype, requires_grad=True)
    a = qd.asarray(np.arange(8, dtype=np.int32))
    rev = kern.grad.ir(x, a, y)
    for ir in (rev.kernel, rev.counting):
        source = compile_stages(pipeline(ir, debug=False, lower=True), False)
        # overflow flags or counting slots, where there are stacks (decay needs none)
        assert ("cuda.atomic.max" in source) is bool(rev.stacks)


def test_one_address_atomics_are_reduced_per_block():
    @qd.kernel
    def total(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1], m: qd.Array[qd.int64, 1],
              k: qd.Array[qd.int32, 1]):
        for i in range(x.shape[0]):
            y[0] += x[i]                      # one element for every thread: reduced
            qd.atomic_max(m, 0, qd.int64(i))  # reduced too
            k[i % 3] += 1                     # the element depends on the thread: atomic

    args = (np.ones(4, np.float32), np.zeros(1, np.float32), np.zeros(1, np.int64),
            np.zeros(3, np.int32))
    ir = build_ir(total, signature(total, args)[0], debug=False, lower=True)[0]
    source = compile_stages(ir, False)
    assert "cuda.shared.array(TPB, np.float32)" in source
    assert "cuda.shared.array(TPB, np.int64)" in source
    assert "cuda.shared.array(TPB, np.int32)" not in source
    assert source.count("cuda.atomic.add(") == 2  # k's per-thread atomic, y's per block


def test_the_single_pass_reducer_compiles_with_one_atomic_per_block():
    """The CUDA max-reducer (ad/sizing/max_reducer.py): strided reads folded in a register, the
    atomic max of the encoded result reduced within each block, and nothing else written but the
    zeroed other element."""
    from qdarray import _dtypes
    from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
    from qdarray.ad.sizing.max_reducer import Reducer, chain_of
    from qdarray.backends.cuda import target as cuda_kernels
    from qdarray.kernels.types import ArrayType

    i, j = LoopVar(1, "i"), LoopVar(2, "j")
    for e, types in (
            (MaxOverRange(i, Const(0), Const(10), Read("a", (i,))),
             {"a": ArrayType(_dtypes.int32, 1)}),
            (MaxOverRange(i, Const(0), Const(4), MaxOverRange(j, Const(1), Const(5),
                                                              Read("g", (i, j)))),
             {"g": ArrayType(_dtypes.int16, 2)})):
        # the CUDA kernel target without its backend (no GPU or CuPy needed)
        reducer = Reducer(chain_of(e), types, cuda_kernels.TARGET, qd.Device("cuda:0"))
        assert reducer.single
        source = compile_stages(pipeline(reducer.ir, debug=False, lower=True), False)
        assert "cuda.shared.array(TPB, np.uint64)" in source
        assert source.count("cuda.atomic.max(") == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_jit_kernels_round_each_multiply_and_user_kernels_contract(dtype):
    """NVVM contracts a * x + b into a fused multiply-add; a qd.jit fused run stands for
    separate namespace calls (each rounded), so its multiplies are libdevice's `mul_rn`,
    which NVVM leaves alone; a user kernel keeps the contraction (docs/cuda.md)."""
    from qdarray import _dtypes
    from qdarray.jit.fused_kernel import FusedSpec, Node, fused_ir

    t = getattr(_dtypes, dtype)
    spec = FusedSpec(1, (t, t, t), (), (
        Node("multiply", t, t, (("in", 0), ("in", 1))),
        Node("add", t, t, (("node", 0), ("in", 2)))), (1,))
    fused: list[str] = []
    compile_stages(pipeline(fused_ir(spec), debug=False, lower=True), False, fused)
    suffix = "f32" if dtype == "float32" else "f64"
    assert f"mul.rn.{suffix}" in fused[0] and "fma" not in fused[0]

    @qd.kernel
    def axpb(a: qd.Array, x: qd.Array, b: qd.Array, y: qd.Array):
        for i in range(y.shape[0]):
            y[i] = a[i] * x[i] + b[i]

    arrays = [np.ones(4, dtype) for _ in range(4)]
    specs, _ = signature(axpb, arrays)
    user: list[str] = []
    compile_stages(build_ir(axpb, specs, debug=False, lower=True)[0], False, user)
    assert f"fma.rn.{suffix}" in user[0]
