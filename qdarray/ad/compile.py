"""Compiling the kernels reverse mode generates: reverse kernels, counting kernels and
max-reducers, through the same pipeline and code generators as user kernels."""

from __future__ import annotations

from typing import Any

from ..kernels.args import ArgSpec
from ..kernels.ir import KernelIR


def compile_ir(ir: KernelIR, specs: list[ArgSpec], names: list[str], target: str,
               debug: bool, bumps: list[Any], device: Any = None) -> Any:
    """A launcher (`launcher(args)`) for generated IR on `target` ("interp" or a code
    generator's name; "opencl_c" and "numba_cuda" need the `device`); `bumps` are the
    (argument index, field path) of written arrays."""
    from ..kernels.launch import InterpLauncher, NumbaLauncher, packer
    from ..kernels.passes import pipeline

    interp = target == "interp"
    ir = pipeline(ir, debug=debug, lower=not interp)
    packers = [packer(s, f"{ir.name}() argument '{n}'", interp, exact=debug)
               for n, s in zip(names, specs, strict=True)]
    if interp:
        return InterpLauncher(ir, packers, bumps)
    if target == "opencl_c" and device is not None:
        from ..backends.opencl_kernels import OpenCLLauncher

        return OpenCLLauncher(ir, packers, bumps, debug, device)
    if target == "numba_cuda" and device is not None:
        from ..backends.cuda_kernels import CudaLauncher

        return CudaLauncher(ir, packers, bumps, debug, device)
    if target == "numba_cuda":
        from ..backends.cuda_kernels import CudaLauncher

        return CudaLauncher(ir, packers, bumps, debug, device)
    if target != "numba_cpu":
        from .._errors import AutodiffError

        where = {"opencl_c": "OpenCL devices"}.get(target, f"the '{target}' target")
        raise AutodiffError(
            f"Reverse-mode autodiff (kernel.grad, qd.ad.Tape) does not run on {where} yet; "
            "forward kernels do. Use CPU arrays for the gradient (x.to_device('cpu')).")
    from ..kernels.cache import load_module
    from ..kernels.codegen.numba_cpu import render_numba_cpu

    return NumbaLauncher(ir, packers, bumps, load_module(render_numba_cpu(ir, debug=debug)),
                         debug)
