"""Machine instructions per step of the reverse kernel's loops on an H100/H200, without a GPU.

    python benchmarks/gpu/tape_sass.py [--index wide|narrow|both] [--dump DIR]

Builds the reverse of the dynamic-loop kernel of benchmarks/gpu/tapes_gpu.py
(`v = v - 0.1*v*v + 0.01` repeated a[i] times, float32; bench_ad.logistic) as the CUDA target
generates it (ad/launch.py's IR, the compile pipeline, codegen/numba/gpu.py), compiles its
stages with numba-cuda for compute capability 9.0, assembles the PTX with `ptxas
-arch=sm_90` and disassembles it with `cuobjdump -sass`. Then, for each loop of the reverse
stage (a backward branch), it prints the loop's instructions and how many steps of the
kernel's loop one pass through it makes (NVVM unrolls: each step has one FFMA, forward and
reverse alike), so instructions per step compare across changes; those of the cheapest pass
through it, which a push or pop in the run of full depths takes (the first depths of a
group's row, where all its threads have an entry: no table read, no check; with threads
sorted by their loops' lengths nearly every step); and those through the table (without
the blocks of the tail, a thread's depths past its group's row, and of the overflow record,
which a push or pop within the row never runs); loads and stores per step beside them. `--index
narrow` compiles the variant the launcher runs when the tape's
positions fit 32 bits (docs/autodiff.md), `wide` the 64-bit one.

Needs numba-cuda with NVVM and the ptxas / cuobjdump / nvdisasm executables:
`pip install "cuda-toolkit[nvvm,nvcc,cuobjdump,nvdisasm]==13.*"` (the wheels of the CUDA
version numba-cuda uses). The counts are static: predicated instructions count whatever
their predicate (they issue), and the hot path takes every branch of the table's side.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

CC = (9, 0)


def tool(name: str) -> str:
    """The path of a CUDA executable: in the nvidia wheels of this Python (the CUDA version
    of its NVVM, whose PTX an older ptxas refuses), else on PATH."""
    try:
        import nvidia  # type: ignore[import-not-found]

        roots = list(nvidia.__path__)
    except ImportError:
        roots = []
    for root in roots:
        for sub in ("cu13/bin", "cu12/bin", "cuda_nvcc/bin", "cuda_cuobjdump/bin",
                    "cuda_nvdisasm/bin"):
            path = os.path.join(root, sub, name)
            if os.path.exists(path):
                return path
    found = shutil.which(name)
    if found:
        return found
    raise SystemExit(f"{name} not found: pip install \"cuda-toolkit[nvcc,cuobjdump,nvdisasm]"
                     "==13.*\" (or put the CUDA toolkit's bin directory on PATH)")


def reverse_ir(index: str) -> Any:
    """The lowered reverse kernel IR of bench_ad.logistic for the CUDA target."""
    from bench_ad import logistic

    import qdarray as qd
    from qdarray.kernels.passes import pipeline
    from qdarray.kernels.passes.lower_adstack import narrowed

    x = qd.ones(64, dtype=qd.float32, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    a = qd.asarray(np.arange(64, dtype=np.int32))
    ir = logistic.grad.ir(x, a, y).kernel
    if index == "narrow":
        ir = narrowed(ir)
    return pipeline(ir, debug=False, lower=True)


class _Device:
    compute_capability = CC


def compile_sass(ir: Any, workdir: str) -> list[list[tuple[int, str]]]:
    """(address, instruction) of each stage kernel of `ir`'s CUDA module."""
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda
    from numba import types as nt
    from numba.np import numpy_support

    from qdarray.kernels.cache import load_module
    from qdarray.kernels.codegen.numba.gpu import render_numba_cuda
    from qdarray.kernels.passes.stages import plan_stages
    from qdarray.kernels.types import ArrayType

    def numba_type(t: Any, layout: str = "C") -> Any:
        if isinstance(t, ArrayType):
            return nt.Array(numpy_support.from_dtype(t.dtype._np), max(t.ndim, 1), layout)
        return numpy_support.from_dtype(t._np)

    source = render_numba_cuda(ir, debug=False, simulated=False)
    with open(os.path.join(workdir, "module.py"), "w") as f:
        f.write(source)
    module = load_module(source)
    plan = plan_stages(ir)
    params = [numba_type(p.value.type) for p in ir.params]
    params += [nt.Array(numpy_support.from_dtype(t._np), 1, "C")
               for t in [v.type for v in plan.carried_values]
               + [v.dtype for v in plan.carried_vars]]
    real = dispatcher.get_current_device
    try:
        real()
    except Exception:  # noqa: BLE001 - no GPU: device functions ask for a compute capability
        dispatcher.get_current_device = lambda: _Device()
    out = []
    try:
        for k in range(len(plan.stages)):
            ptx, _ = cuda.compile_ptx(getattr(module, f"stage{k}").py_func, nt.void(*params),
                                      cc=CC)
            base = os.path.join(workdir, f"stage{k}")
            with open(base + ".ptx", "w") as f:
                f.write(ptx)
            subprocess.run([tool("ptxas"), f"-arch=sm_{CC[0]}{CC[1]}", "-o", base + ".cubin",
                            base + ".ptx"], check=True)
            env = dict(os.environ)
            env["PATH"] = os.path.dirname(tool("nvdisasm")) + os.pathsep + env.get("PATH", "")
            sass = subprocess.run([tool("cuobjdump"), "-sass", base + ".cubin"], check=True,
                                  capture_output=True, text=True, env=env).stdout
            instrs = [(int(m.group(1), 16), m.group(2)) for m in
                      (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
                       for line in sass.splitlines()) if m]
            with open(base + ".sass", "w") as f:
                f.write("\n".join(f"{a:05x} {t}" for a, t in instrs) + "\n")
            out.append(instrs)
    finally:
        dispatcher.get_current_device = real
    return out


def loops(instrs: list[tuple[int, str]]) -> list[tuple[int, int, list[tuple[int, str]]]]:
    """(start, end, (address, instruction)s) of each innermost loop: a backward branch's
    range that holds no other backward branch."""
    found = []
    for a, text in instrs:
        m = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a:
            found.append((int(m.group(1), 16), a))
    inner = [(s, e) for s, e in found
             if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in found)]
    return [(s, e, [(a, t) for a, t in instrs if s <= a <= e]) for s, e in inner]


def _blocks(body: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """The basic blocks of a loop's instructions: split at branch targets and after
    branches."""
    targets = {int(m.group(1), 16) for _, t in body
               if (m := re.search(r"\bBRA (0x[0-9a-f]+)", t))}
    out: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    for a, t in body:
        if a in targets and cur:
            out.append(cur)
            cur = []
        cur.append((a, t))
        if re.search(r"\bBRA\b|\bEXIT\b|\bRET\b", t):
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def cold(body: list[tuple[int, str]]) -> set[int]:
    """The addresses of a loop's instructions off its hot path: the blocks that record an
    overflow (an atomic), and the tail's blocks, which a conditional branch sends there (the
    block that branches and both its successors). What remains runs at each push or pop
    within a thread's row (the table branch); predicated instructions count as hot."""
    bl = _blocks(body)
    start = {b[0][0]: k for k, b in enumerate(bl)}

    def successors(k: int) -> list[int]:
        last = bl[k][-1][1]
        m = re.search(r"\bBRA (0x[0-9a-f]+)", last)
        out = [start[int(m.group(1), 16)]] if m and int(m.group(1), 16) in start else []
        if (not m or last.startswith("@")) and k + 1 < len(bl):
            out.append(k + 1)
        return out

    atomic = {k for k, b in enumerate(bl) if any(re.search(r"\b(RED|ATOM)G?\.", t)
                                                 for _, t in b)}
    off = set(atomic)
    for k in range(len(bl)):
        if set(successors(k)) & atomic and bl[k][-1][1].startswith("@"):
            off.add(k)
            off.update(successors(k))
    return {a for k in off for a, _ in bl[k]}


def shortest(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The instructions of the cheapest pass through a loop: from its first instruction to its
    backward branch, along forward branches, fewest instructions. A push or pop within the
    run of full depths (ops/adstack.py) takes that path: no table read, no check."""
    bl = _blocks(body)
    start = {b[0][0]: k for k, b in enumerate(bl)}
    best: dict[int, list[tuple[int, str]]] = {0: list(bl[0])}
    for k, b in enumerate(bl):
        if k not in best:
            continue
        last = b[-1][1]
        m = re.search(r"\bBRA (0x[0-9a-f]+)", last)
        succ = []
        if m and int(m.group(1), 16) in start and start[int(m.group(1), 16)] > k:
            succ.append(start[int(m.group(1), 16)])
        if (not m or last.startswith("@")) and k + 1 < len(bl):
            succ.append(k + 1)
        for j in succ:
            path = best[k] + list(bl[j])
            if j not in best or len(path) < len(best[j]):
                best[j] = path
    return best[len(bl) - 1]


def _opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def describe(loop: list[tuple[int, str]]) -> dict[str, Any]:
    """Counts of one loop's instructions (per pass and per step)."""
    body = [t for _, t in loop]
    ops = [_opcode(t) for t in body]
    steps = sum(1 for o in ops if o.startswith("FFMA"))
    per = max(steps, 1)
    heap_stores = sum(1 for o in ops if o == "STG.E")
    heap_loads = sum(1 for o in ops if o == "LDG.E")
    kind = ("forward replay (pushes)" if heap_stores else
            "reverse (pops)" if heap_loads else "other")
    wide = sum(1 for o in ops if o.startswith(("IMAD.X", "IADD3.X", "LEA.HI.X"))
               or ".EX" in o)
    run = [_opcode(t) for _, t in shortest(loop)]
    return {"kind": kind, "instructions": len(body), "steps": steps,
            "run per step": len(run) / per,
            "run loads per step": sum(1 for o in run if o.startswith("LDG")) / per,
            "per step": len(body) / per, "hot per step": (len(body) - len(cold(loop))) / per,
            "global loads per step": sum(1 for o in ops if o.startswith("LDG")) / per,
            "global stores per step": sum(1 for o in ops if o.startswith("STG")) / per,
            "64-bit carry/compare halves per step": wide / per,
            "predicated per step": sum(1 for t in body if t.startswith("@")) / per,
            "branches per step": sum(1 for o in ops if o.startswith("BRA")) / per}


def report(index: str, dump: str | None) -> None:
    workdir = dump or tempfile.mkdtemp(prefix="tape_sass_")
    os.makedirs(workdir, exist_ok=True)
    stages = compile_sass(reverse_ir(index), workdir)
    print(f"== {index} tape positions ({len(stages)} stages, SASS in {workdir})")
    for k, instrs in enumerate(stages):
        print(f"stage{k}: {len(instrs)} instructions")
        for s, e, body in loops(instrs):
            d = describe(body)
            if not d["steps"]:
                print(f"  loop {s:#06x}-{e:#06x}: {d['instructions']} instructions "
                      "(no kernel step: a prologue loop)")
                continue
            print(f"  loop {s:#06x}-{e:#06x} {d['kind']}: {d['instructions']} instructions "
                  f"for {d['steps']} steps = {d['per step']:.2f} per step, "
                  f"{d['run per step']:.2f} in the run of full depths (global loads "
                  f"{d['run loads per step']:.2f}), {d['hot per step']:.2f} through the "
                  "table (global loads "
                  f"{d['global loads per step']:.2f}, stores {d['global stores per step']:.2f}"
                  f", 64-bit halves {d['64-bit carry/compare halves per step']:.1f}, "
                  f"predicated {d['predicated per step']:.1f}, branches "
                  f"{d['branches per step']:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", choices=("wide", "narrow", "both"), default="both")
    ap.add_argument("--dump", help="keep the module, PTX, cubin and SASS there")
    args = ap.parse_args()
    for index in ("wide", "narrow") if args.index == "both" else (args.index,):
        report(index, os.path.join(args.dump, index) if args.dump else None)


if __name__ == "__main__":
    main()
