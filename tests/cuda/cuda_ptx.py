"""Compiling the CUDA generator's modules to PTX with numba's CUDA compiler, without a GPU.

`compile_stages(ir, debug)` renders the real-GPU module of a kernel's IR (views lowered),
imports it and compiles every stage kernel for compute capability 9.0, with argument types
derived from the IR's parameters: what numba would compile at the first launch on an H100.
It needs NVVM (`pip install 'numba-cuda[cu13]'`) but no driver. numba compiles the device
functions a kernel calls for the current device's compute capability; without a GPU there is
none, so `no_device()` supplies one while compiling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from numba import types as nt
from numba.np import numpy_support

from qdarray.kernels.cache import load_module
from qdarray.kernels.codegen.numba.gpu import render_numba_cuda
from qdarray.kernels.ir import KernelIR
from qdarray.kernels.passes.stages import plan_stages
from qdarray.kernels.types import ArrayType

CC = (9, 0)


def nvvm_missing() -> str | None:
    """Why numba cannot compile CUDA code here (None: it can)."""
    try:
        from numba import cuda

        def probe(a: Any) -> None:
            a[0] = 1.0

        cuda.compile_ptx(probe, "void(float32[:])", cc=CC)
    except Exception as exc:  # noqa: BLE001 - any failure means no compiler
        return f"numba cannot compile CUDA code here ({type(exc).__name__}: {exc})"[:300]
    return None


class _Device:
    compute_capability = CC


@contextlib.contextmanager
def no_device() -> Iterator[None]:
    """numba's device-function compiles ask for the current device's compute capability."""
    import numba.cuda.dispatcher as dispatcher

    try:
        dispatcher.get_current_device()
        yield  # a real GPU answers
        return
    except Exception:  # noqa: BLE001 - no driver or no device
        pass
    real = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        yield
    finally:
        dispatcher.get_current_device = real


def _numba_type(t: Any) -> Any:
    if isinstance(t, ArrayType):
        return nt.Array(numpy_support.from_dtype(t.dtype._np), max(t.ndim, 1), "A")
    return numpy_support.from_dtype(t._np)


def compile_stages(ir: KernelIR, debug: bool, ptx: list[str] | None = None) -> str:
    """Compile every stage of `ir`'s CUDA module to PTX; return the module's source (and
    append each stage's PTX to `ptx`)."""
    from numba import cuda

    source = render_numba_cuda(ir, debug=debug, simulated=False)
    module = load_module(source)
    p = plan_stages(ir)
    params = [_numba_type(q.value.type) for q in ir.params]
    carried = [v.type for v in p.carried_values] + [v.dtype for v in p.carried_vars]
    params += [nt.Array(numpy_support.from_dtype(t._np), 1, "C") for t in carried]
    if debug:
        params.append(nt.Array(nt.int64, 1, "C"))
    with no_device():
        for k in range(len(p.stages)):
            text, _ = cuda.compile_ptx(getattr(module, f"stage{k}").py_func, nt.void(*params),
                                       cc=CC)
            if ptx is not None:
                ptx.append(text)
    return source
