"""Launching user kernels on CUDA devices: the generated numba.cuda module's stages, sized per
device, with arguments passed without copies.

`CudaLauncher` is built once per kernel signature (kernels/launch.py picks it for target
"numba_cuda"). Per call it packs the arguments (CuPy arrays go to numba as they are, through
the CUDA Array Interface), evaluates the host-computable instructions to get each parallel
stage's trip count, launches the stages in order on the device's default stream and, in debug
mode, reads the error record and raises `KernelIndexError`.

Launch configuration: `TPB` (256) threads per block and `min(ceil(n / TPB), SMs x 32)`
blocks for a parallel stage of `n` iterations (the kernel loops with a grid stride, so a
stage whose trip count the host cannot compute gets the largest grid); one thread for a
serial stage.

Host NumPy arrays passed directly (what the autodiff launcher passes for small bookkeeping
arrays) are copied to the device for the launch and back afterwards. Under the simulator,
NumPy arrays are the device's storage and are passed as they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import config as numba_config
from numba import cuda

from .._devices import Device
from ..kernels.cache import load_module
from ..kernels.codegen.numba_cuda import TPB, TPB_SIMULATED, render_numba_cuda
from ..kernels.codegen.opencl_c import plan
from ..kernels.ir import KernelIR
from ..kernels.launch import ERR_LEN, Launcher, bump_generations
from ..kernels.ops import OPS
from ..kernels.types import ArrayType
from .cuda import BACKEND, SIMULATED

# Serial stages are single-thread launches by design: numba's low-occupancy warning for them
# (an error under `-W error`) says nothing useful.
numba_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0  # type: ignore[attr-defined]

_BLOCKS_PER_SM = 32
_MAX_BLOCKS: dict[int, int] = {}


def max_blocks(index: int) -> int:
    """The largest grid of a parallel stage on device `index`: SMs x 32 blocks (2 blocks
    under the simulator, whose threads are Python threads)."""
    if SIMULATED:
        return 2
    n = _MAX_BLOCKS.get(index)
    if n is None:
        with cuda.gpus[index]:
            sms = cuda.get_current_device().MULTIPROCESSOR_COUNT  # type: ignore[no-untyped-call]
        n = _MAX_BLOCKS[index] = int(sms) * _BLOCKS_PER_SM
    return n


class CudaLauncher(Launcher):
    """Runs the numba.cuda stages of one kernel signature (see the module docstring)."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], debug: bool,
                 device: Device | None) -> None:
        super().__init__(kernel, packers, bumps)
        self.debug = debug
        self.device = device
        self.plan = plan(kernel)
        self.module = load_module(render_numba_cuda(kernel, debug=debug, simulated=SIMULATED))
        self.stages = [getattr(self.module, f"stage{k}") for k in range(len(self.plan.stages))]
        self.host_steps: list[Any] = [(i.result.id, OPS[i.op].impl, i.result.type, i.attrs,
                            [a.id for a in i.args]) for i in self.plan.host
                           if i.result is not None]
        self.params: list[tuple[int, Any]] = [(p.value.id, p.value.type)
                                              for p in kernel.params]
        carried: list[Any] = [v.type for v in self.plan.carried_values]
        carried += [var.dtype for var in self.plan.carried_vars]
        self.carry_dtypes = [t._np for t in carried]
        self.tpb = TPB_SIMULATED if SIMULATED else TPB
        self.bounds = [[(f.begin.id, f.end.id) for f in s.loops] for s in self.plan.stages]

    def _device_of(self, native: Sequence[Any]) -> int:
        if self.device is not None:
            return int(self.device.index)  # type: ignore[attr-defined]
        if not SIMULATED:
            cp = BACKEND.cp  # type: ignore[attr-defined]
            for x in native:
                if isinstance(x, cp.ndarray):
                    return int(x.device.id)
        return 0

    def _args(self, native: Sequence[Any], index: int
              ) -> tuple[list[Any], dict[int, Any], list[tuple[Any, Any]]]:
        """(kernel arguments, host values of the parameters, (host, device) copies)."""
        args: list[Any] = []
        env: dict[int, Any] = {}
        copies: list[tuple[Any, Any]] = []
        for (vid, t), x in zip(self.params, native, strict=True):
            if isinstance(t, ArrayType):
                env[vid] = x
                if t.ndim == 0:
                    x = x.reshape(1)  # a view: kernels address 0-d arrays as [0]
                if type(x) is np.ndarray and not SIMULATED:
                    dev = self._to_device(x, index)
                    copies.append((x, dev))
                    x = dev
                args.append(_simulated_array(x) if SIMULATED else _device_array(x))
            else:
                value = t._np.type(x)
                env[vid] = value
                args.append(value)
        return args, env, copies

    def _to_device(self, x: np.ndarray, index: int) -> Any:
        cp = BACKEND.cp  # type: ignore[attr-defined]
        with cp.cuda.Device(index):
            return cp.asarray(x)

    def _zeros(self, n: int, dtype: Any, index: int) -> Any:
        if SIMULATED:
            return np.zeros(n, dtype)
        cp = BACKEND.cp  # type: ignore[attr-defined]
        with cp.cuda.Device(index):
            return cp.zeros(n, dtype)

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        index = self._device_of(native)
        err: Any = None
        try:
            kargs, env, copies = self._args(native, index)
            for rid, impl, rtype, attrs, arg_ids in self.host_steps:
                env[rid] = impl(rtype, attrs, *(env[a] for a in arg_ids))
            extra = [self._zeros(1, d, index) for d in self.carry_dtypes]
            err = self._zeros(ERR_LEN + 1, np.int64, index) if self.debug else None
            if err is not None:
                extra.append(err)
            if SIMULATED:
                extra = [_simulated_array(a) for a in extra]
            self._launch(kargs + extra, env, index)
            for host, dev in copies:
                host[...] = BACKEND.to_host(dev)
        finally:
            bump_generations(args, self.bumps)
        if err is not None:
            record = np.asarray(BACKEND.to_host(err))
            if record[0]:
                raise self.decode(record, native)

    def _launch(self, kargs: list[Any], env: dict[int, Any], index: int) -> None:
        if SIMULATED:
            self._run_stages(kargs, env, index)
            return
        if BACKEND.cp.cuda.runtime.getDevice() == index:  # type: ignore[attr-defined]
            self._run_stages(kargs, env, index)
            return
        with cuda.gpus[index]:
            self._run_stages(kargs, env, index)

    def _run_stages(self, kargs: list[Any], env: dict[int, Any], index: int) -> None:
        tpb = self.tpb
        for knl, bounds in zip(self.stages, self.bounds, strict=True):
            if not bounds:
                knl[1, 1](*kargs)
                continue
            total: int | None = 1
            for b, e in bounds:
                if b in env and e in env and total is not None:
                    total *= max(int(env[e]) - int(env[b]), 0)
                else:
                    total = None
            if total == 0:
                continue
            most = max_blocks(index)
            blocks = most if total is None else min(math.ceil(total / tpb), most)
            knl[blocks, tpb](*kargs)


def _device_array(x: Any) -> Any:
    """A CuPy array as a numba device array, sharing its memory. numba's own conversion of a
    CUDA Array Interface argument synchronises the exporting stream first (the whole device,
    for CuPy's default stream); kernels are launched on that same stream, after the work that
    produced their arguments, so the launch needs no synchronisation."""
    return cuda.from_cuda_array_interface(x.__cuda_array_interface__, owner=x, sync=False)


def _simulated_array(x: Any) -> Any:
    """A NumPy array as the simulator's device array, without the copy in and out the
    simulator makes of NumPy arguments (the arrays are the simulated device's memory)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return FakeCUDAArray(x) if type(x) is np.ndarray else x  # type: ignore[no-untyped-call]
