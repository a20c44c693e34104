"""The Vulkan runtime's bandwidth: saxpy (y = a*x + y, float32) as a SPIR-V module that
qdarray's writer builds, dispatched through qdarray's runtime and timed with timestamp
queries; beside it, where CuPy and a CUDA GPU are present, the same saxpy in CuPy timed with
CUDA events. Prints GB/s (3 x 4 bytes per element) and the ratio.

    python benchmarks/compare_vulkan_runtime.py --n 100000000 [--device vulkan:0] [--json f]

On lavapipe keep n at most 33,554,432 (its storage buffers bind 128 MiB at most).
"""

from __future__ import annotations

import argparse
import json
import struct
import time

import numpy as np

from qdarray.kernels.codegen.spirv.enums import SC, BuiltIn, Cap, Dec, Op
from qdarray.kernels.codegen.spirv.module import Module

LOCAL = 256


def saxpy_module() -> bytes:
    """y[i] += a * x[i] for i < n, a grid-stride loop (push block: uint n, float a)."""
    m = Module()
    m.capability(Cap.Shader)
    f32, u32, i32, bool_ = m.t_float(32), m.t_int(32, False), m.t_int(32, True), m.t_bool()
    block = m.t_struct([m.t_runtime_array(f32, 4)], [0], block=True)
    bufs = []
    for b in range(2):
        v = m.variable(m.t_pointer(SC.StorageBuffer, block), SC.StorageBuffer)
        m.decorate(v, Dec.DescriptorSet, 0)
        m.decorate(v, Dec.Binding, b)
        bufs.append(v)
    push = m.variable(m.t_pointer(SC.PushConstant, m.t_struct([u32, f32], [0, 4], block=True)),
                      SC.PushConstant)
    v3 = m.t_vector(u32, 3)
    gid = m.variable(m.t_pointer(SC.Input, v3), SC.Input)
    m.decorate(gid, Dec.BuiltIn, BuiltIn.GlobalInvocationId)
    groups = m.variable(m.t_pointer(SC.Input, v3), SC.Input)
    m.decorate(groups, Dec.BuiltIn, BuiltIn.NumWorkgroups)
    f = m.function(m.t_void(), "main")
    n = f.load(u32, f.op(Op.AccessChain, m.t_pointer(SC.PushConstant, u32), push,
                         m.const(i32, 0)))
    a = f.load(f32, f.op(Op.AccessChain, m.t_pointer(SC.PushConstant, f32), push,
                         m.const(i32, 1)))
    step = f.op(Op.IMul, u32, f.op(Op.CompositeExtract, u32, f.load(v3, groups), 0),
                m.const(u32, LOCAL))
    i = f.var(m.t_pointer(SC.Function, u32))
    f.store(i, f.op(Op.CompositeExtract, u32, f.load(v3, gid), 0))
    with f.loop() as lp:
        iv = f.load(u32, i)
        lp.exit_unless(f.op(Op.ULessThan, bool_, iv, n))
        ptr = m.t_pointer(SC.StorageBuffer, f32)
        px = f.op(Op.AccessChain, ptr, bufs[0], m.const(i32, 0), iv)
        py = f.op(Op.AccessChain, ptr, bufs[1], m.const(i32, 0), iv)
        f.store(py, f.op(Op.FAdd, f32, f.op(Op.FMul, f32, a, f.load(f32, px)),
                         f.load(f32, py)))
        lp.continuing()
        f.store(i, f.op(Op.IAdd, u32, f.load(u32, i), step))
    f.ret_void()
    m.entry_point(f, "main", [gid, groups], (LOCAL, 1, 1))
    return m.assemble()


def vulkan_saxpy(n: int, device: str, repeat: int) -> dict[str, float]:
    import qdarray as qd
    from qdarray.backends.vulkan import _instance, _pipelines, _stream
    from qdarray.backends.vulkan._array import VkArray

    st = _instance.state(qd.Device(device).index)
    x = VkArray.from_host(st, np.ones(n, np.float32))
    y = VkArray.from_host(st, np.zeros(n, np.float32))
    prog = _pipelines.program(st, saxpy_module(), 2, 8)
    groups = min(-(-n // LOCAL), st.limits["maxComputeWorkGroupCountX"], 65535)
    push = struct.pack("<If", n, 2.0)
    s = _stream.stream(st)
    prog.dispatch((groups, 1, 1), [x.alloc, y.alloc], push)  # warm-up (pipeline JIT)
    s.finish()
    times = []
    for _ in range(repeat):
        t = s.timer()
        t.start()
        prog.dispatch((groups, 1, 1), [x.alloc, y.alloc], push)
        t.stop()
        times.append(t.elapsed_ns() * 1e-9)
    host0 = time.perf_counter()
    for _ in range(repeat):
        prog.dispatch((groups, 1, 1), [x.alloc, y.alloc], push)
    s.finish()
    wall = (time.perf_counter() - host0) / repeat
    check = y.to_host()
    expected = 2.0 * (1 + 2 * repeat)
    if not np.all(check == expected):
        raise AssertionError(f"saxpy result wrong: {check[:4]} != {expected}")
    best = min(times)
    return {"device": st.label, "n": n, "seconds": best, "wall_seconds": wall,
            "GBps": 12 * n / best / 1e9}


def cupy_saxpy(n: int, repeat: int) -> dict[str, float] | None:
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() == 0:
            return None
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: no reference figure
        return None
    x = cp.ones(n, cp.float32)
    y = cp.zeros(n, cp.float32)
    kernel = cp.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y",
                                  "qd_saxpy")
    kernel(np.float32(2.0), x, y)
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel(np.float32(2.0), x, y)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    best = min(times)
    return {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "n": n,
            "seconds": best, "GBps": 12 * n / best / 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--device", default="vulkan:0")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    result: dict[str, object] = {"vulkan": vulkan_saxpy(args.n, args.device, args.repeat)}
    cuda = cupy_saxpy(args.n, args.repeat)
    if cuda is not None:
        result["cupy"] = cuda
        result["ratio"] = result["vulkan"]["GBps"] / cuda["GBps"]  # type: ignore[index]
    for key, value in result.items():
        print(f"{key:8s} {value}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
