"""The SPIR-V module writer (kernels/codegen/spirv/module.py): every module built here passes
`spirv-val` for Vulkan 1.2, disassembles to the instructions meant, and computes the right
values on the Vulkan device."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from qdarray.kernels.codegen.spirv.enums import GLSL, SC, BuiltIn, Cap, Dec, Op
from qdarray.kernels.codegen.spirv.module import Function, Module


def validate(tool: str, words: bytes, tmp_path: Path) -> None:
    path = tmp_path / "module.spv"
    path.write_bytes(words)
    done = subprocess.run([tool, "--target-env", "vulkan1.2", str(path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def disassemble(words: bytes, tmp_path: Path) -> str:
    path = tmp_path / "module.spv"
    path.write_bytes(words)
    return subprocess.run(["spirv-dis", str(path)], capture_output=True, text=True,
                          check=True).stdout


class Kernel:
    """A compute module over float32 storage buffers 0..n-1 and a push block (uint n, float a),
    one invocation per element: the scaffolding the tests fill with a body."""

    def __init__(self, n_buffers: int) -> None:
        m = self.m = Module()
        m.capability(Cap.Shader)
        self.f32, self.u32, self.i32 = m.t_float(32), m.t_int(32, False), m.t_int(32, True)
        self.bool = m.t_bool()
        block = m.t_struct([m.t_runtime_array(self.f32, 4)], [0], block=True)
        self.buffers = []
        for b in range(n_buffers):
            v = m.variable(m.t_pointer(SC.StorageBuffer, block), SC.StorageBuffer)
            m.decorate(v, Dec.DescriptorSet, 0)
            m.decorate(v, Dec.Binding, b)
            self.buffers.append(v)
        push = m.t_struct([self.u32, self.f32], [0, 4], block=True)
        self.push = m.variable(m.t_pointer(SC.PushConstant, push), SC.PushConstant)
        v3 = m.t_vector(self.u32, 3)
        self.gid = m.variable(m.t_pointer(SC.Input, v3), SC.Input)
        m.decorate(self.gid, Dec.BuiltIn, BuiltIn.GlobalInvocationId)
        f = self.f = m.function(m.t_void(), "main")
        self.i = f.op(Op.CompositeExtract, self.u32, f.load(v3, self.gid), 0)
        self.n = f.load(self.u32, f.op(Op.AccessChain, m.t_pointer(SC.PushConstant, self.u32),
                                       self.push, m.const(self.i32, 0)))
        self.a = f.load(self.f32, f.op(Op.AccessChain, m.t_pointer(SC.PushConstant, self.f32),
                                       self.push, m.const(self.i32, 1)))

    def element(self, b: int) -> int:
        m = self.m
        return self.f.op(Op.AccessChain, m.t_pointer(SC.StorageBuffer, self.f32),
                         self.buffers[b], m.const(self.i32, 0), self.i)

    def finish(self) -> bytes:
        self.f.ret_void()
        self.m.entry_point(self.f, "main", [self.gid], (64, 1, 1))
        return self.m.assemble()


def loop_kernel() -> bytes:
    """y[i] = |y[i] + a*x[i]*(count of k in [0, 10) before k == 7, skipping k == 3)| for
    i < n: a while loop with a continue and a break inside nested selections."""
    k = Kernel(2)
    m, f = k.m, k.f
    with f.if_(f.op(Op.ULessThan, k.bool, k.i, k.n)):
        px, py = k.element(0), k.element(1)
        acc = f.var(m.t_pointer(SC.Function, k.f32))
        f.store(acc, f.load(k.f32, py))
        j = f.var(m.t_pointer(SC.Function, k.u32), m.const(k.u32, 0))
        with f.loop() as lp:
            jv = f.load(k.u32, j)
            lp.exit_unless(f.op(Op.ULessThan, k.bool, jv, m.const(k.u32, 10)))
            with f.if_(f.op(Op.IEqual, k.bool, jv, m.const(k.u32, 3))):
                lp.continue_()
            with f.if_(f.op(Op.IEqual, k.bool, jv, m.const(k.u32, 7))) as sel:
                lp.break_()
                sel.otherwise()
                step = f.op(Op.FMul, k.f32, k.a, f.load(k.f32, px))
                f.store(acc, f.op(Op.FAdd, k.f32, f.load(k.f32, acc), step))
            lp.continuing()
            f.store(j, f.op(Op.IAdd, k.u32, f.load(k.u32, j), m.const(k.u32, 1)))
        f.store(py, f.ext(GLSL.FAbs, k.f32, f.load(k.f32, acc)))
    return k.finish()


def test_structured_loop_with_break_and_continue_validates(spirv_val, tmp_path):
    words = loop_kernel()
    validate(spirv_val, words, tmp_path)
    text = disassemble(words, tmp_path)
    for expected in ("OpLoopMerge", "OpSelectionMerge", "OpBranchConditional",
                     "OpEntryPoint GLCompute %main \"main\"", "LocalSize 64 1 1",
                     "OpExtInst %float %1 FAbs", "ArrayStride 4", "Block"):
        assert expected.split("%1")[0] in text, expected


def test_both_branches_leaving_the_loop_validate(spirv_val, tmp_path):
    # An if whose branches both break or continue leaves its merge block unreachable; the
    # statements after it go into that block, which must still be structured.
    k = Kernel(1)
    f = k.f
    with f.loop() as lp:
        with f.if_(f.op(Op.ULessThan, k.bool, k.i, k.n)) as sel:
            lp.break_()
            sel.otherwise()
            lp.continue_()
        f.store(k.element(0), k.a)  # unreachable
    validate(spirv_val, k.finish(), tmp_path)


def test_constants_and_types_are_interned_and_64_bit_values_take_two_words(spirv_val,
                                                                           tmp_path):
    m = Module()
    for cap in (Cap.Shader, Cap.Int64, Cap.Float64):
        m.capability(cap)
    i64, f64 = m.t_int(64, True), m.t_float(64)
    assert m.t_int(64, True) == i64 and m.t_pointer(SC.Function, f64) == m.t_pointer(
        SC.Function, f64)
    big = m.const(i64, -(2**40) - 3)
    assert m.const(i64, -(2**40) - 3) == big
    half = m.const(f64, 0.5)
    f = m.function(m.t_void(), "main")
    v = f.var(m.t_pointer(SC.Function, f64))
    f.store(v, f.op(Op.FMul, f64, f.op(Op.ConvertSToF, f64, big), half))
    f.ret_void()
    m.entry_point(f, "main", [], (1, 1, 1))
    words = m.assemble()
    validate(spirv_val, words, tmp_path)
    text = disassemble(words, tmp_path)
    assert "OpConstant %long -1099511627779" in text and "OpConstant %double 0.5" in text


def test_physical_storage_buffer_pointers_validate(spirv_val, tmp_path):
    # The adstack heap is addressed through a 64-bit device address from push constants.
    m = Module()
    for cap in (Cap.Shader, Cap.Int64, Cap.PhysicalStorageBufferAddresses):
        m.capability(cap)
    m.extension("SPV_KHR_physical_storage_buffer")
    f32, u64, i32 = m.t_float(32), m.t_int(64, False), m.t_int(32, True)
    heap = m.t_struct([m.t_runtime_array(f32, 4)], [0], block=True)
    pheap = m.t_pointer(SC.PhysicalStorageBuffer, heap)
    push = m.t_struct([u64], [0], block=True)
    pc = m.variable(m.t_pointer(SC.PushConstant, push), SC.PushConstant)
    f = m.function(m.t_void(), "main")
    addr = f.load(u64, f.op(Op.AccessChain, m.t_pointer(SC.PushConstant, u64), pc,
                            m.const(i32, 0)))
    base = f.op(Op.ConvertUToPtr, pheap, addr)
    slot = f.op(Op.AccessChain, m.t_pointer(SC.PhysicalStorageBuffer, f32), base,
                m.const(i32, 0), m.const(i32, 5))
    f.op_void(Op.Store, slot, m.const(f32, 1.5), 2, 4)  # Aligned 4
    f.ret_void()
    m.entry_point(f, "main", [], (1, 1, 1))
    validate(spirv_val, m.assemble(), tmp_path)


def test_a_function_must_end_in_a_terminator():
    m = Module()
    f = m.function(m.t_void(), "main")
    assert isinstance(f, Function) and f.open
    with pytest.raises(ValueError, match="without a terminator"):
        m.assemble()


def test_the_loop_kernel_computes_on_the_device(device):
    from qdarray.backends.vulkan import _instance, _pipelines
    from qdarray.backends.vulkan._array import VkArray

    st = _instance.state(0)
    n = 1000
    x = VkArray.from_host(st, np.arange(n, dtype=np.float32))
    y = VkArray.from_host(st, np.full(n, -1.0, np.float32))
    prog = _pipelines.program(st, loop_kernel(), 2, 8)
    assert _pipelines.program(st, loop_kernel(), 2, 8) is prog  # cached per module
    prog.dispatch(((n + 63) // 64, 1, 1), [x.alloc, y.alloc], struct.pack("<If", n, 0.5))
    # k runs 0..6 without 3: six steps of a * x
    np.testing.assert_array_equal(y.to_host(), np.abs(-1.0 + 6 * 0.5 * np.arange(n,
                                                                                 dtype=np.float32)))


def test_the_runtime_benchmark_module_validates_and_runs(spirv_val, tmp_path, device):
    import sys

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        import compare_vulkan_runtime as bench_module
    finally:
        sys.path.remove(str(bench))
    validate(spirv_val, bench_module.saxpy_module(), tmp_path)
    result = bench_module.vulkan_saxpy(70_001, device, 2)  # checks its own result
    assert result["GBps"] > 0 and result["n"] == 70_001
