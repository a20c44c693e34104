"""The kernel target of CUDA devices: the generated numba.cuda module's stages, sized per
device, with arguments passed without copies.

`CudaKernels` is the target (`kernels/target.py`); its `CudaLauncher` is built once per
kernel signature. Per call it packs the arguments (CuPy arrays as they are), evaluates the
host-computable instructions to get each parallel stage's trip count, launches the stages in
order on CuPy's current stream of the device (the legacy default stream unless the caller
chose another) and, in debug mode, reads the error record and raises `KernelIndexError`.

The first call with each combination of array layouts goes through numba's dispatcher (which
compiles the stages); later calls pack the parameters themselves and launch each stage's
compiled function directly (cuda/direct_launch.py), which costs a few microseconds where numba's
dispatch costs tens. After the first direct launch of a layout the whole launch is written
out for it (`direct_launch.compile_fast`) and tried first at every call.

Launch configuration: `TPB` (256) threads per block and `min(ceil(n / TPB), SMs x 32)`
blocks for a parallel stage of `n` iterations (the kernel loops with a grid stride, so a
stage whose trip count the host cannot compute gets the largest grid); one thread for a
serial stage. A parallel stage that keeps adstacks (a reverse kernel's, reading or writing
a heap parameter: ops/adstack.py PARAM_PREFIX) gets `ceil(n / TPB)` blocks, one thread per
iteration: its threads replay loops of different lengths, and with a grid stride the threads
that stride over the same places of ad/transform/reorder.py's sorted windows would all get the
longest (or all the shortest) loops; whole blocks let the GPU's block scheduler balance them (on an
H200, the reverse of the benchmark kernel 8 to 10% faster, where a forward or a saxpy runs
faster with the capped grid).

Host NumPy arrays passed directly (what the autodiff launcher passes for small bookkeeping
arrays) are copied to the device for the launch and back afterwards. Under the simulator,
NumPy arrays are the device's storage and are passed as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from numba import config as numba_config
from numba import cuda

from ..._devices import Device
from ...kernels.cache import load_module
from ...kernels.codegen.numba.gpu import TPB, TPB_SIMULATED, render_numba_cuda
from ...kernels.error_record import LENGTH as RECORD_LENGTH
from ...kernels.ir import Block, KernelIR, instrs
from ...kernels.ops.adstack import PARAM_PREFIX
from ...kernels.passes.stages import Plan, plan_stages
from ...kernels.target import DeviceKernels, Launcher, ReductionLayout, StackLayout
from ...kernels.types import ArrayType
from .direct_launch import DirectLaunch, compile_fast, direct_launch, layout_key

# numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 before numba is imported): no GPU, no CuPy.
SIMULATED = bool(numba_config.ENABLE_CUDASIM)  # type: ignore[attr-defined]

# Serial stages are single-thread launches by design: numba's low-occupancy warning for them
# (an error under `-W error`) says nothing useful.
numba_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0  # type: ignore[attr-defined]

_BLOCKS_PER_SM = 32
_MAX_BLOCKS: dict[int, int] = {}
_SMS: dict[int, int] = {}
# Blocks per SM of a one-pass reduction (the max-reducer), each thread striding over the
# input. Measured on an H200 (1e8 int32, benchmarks/gpu/profile_launch.py): 2 blocks per SM
# 1.46 TB/s, 4: 2.27, 8: 2.25, 16: 2.56, 32 (2**20 work-items): 2.44; one resident wave
# (4 or 8) keeps too few loads in flight.
REDUCTION_BLOCKS_PER_SM = 16

# numba-cuda's first use of a device in a process (its driver's device table) and its
# dispatchers' first launches are not safe from several threads at once ("key already in
# dictionary" when eight threads made their first launch together on an H200): they run
# under this lock. A layout that ran before launches directly, without it.
_NUMBA_LOCK = threading.RLock()


def multiprocessors(index: int) -> int:
    """The number of streaming multiprocessors of device `index`."""
    n = _SMS.get(index)
    if n is None:
        with _NUMBA_LOCK, cuda.gpus[index]:
            sms = cuda.get_current_device().MULTIPROCESSOR_COUNT  # type: ignore[no-untyped-call]
        n = _SMS[index] = int(sms)
    return n


def max_blocks(index: int) -> int:
    """The largest grid of a parallel stage on device `index`: SMs x 32 blocks (2 blocks
    under the simulator, whose threads are Python threads)."""
    if SIMULATED:
        return 2
    n = _MAX_BLOCKS.get(index)
    if n is None:
        n = _MAX_BLOCKS[index] = multiprocessors(index) * _BLOCKS_PER_SM
    return n


def reduction_items(index: int) -> int:
    """Work-items of a one-pass reduction on device `index`: REDUCTION_BLOCKS_PER_SM blocks of
    TPB threads per SM (the largest grid under the simulator)."""
    if SIMULATED:
        return max_blocks(index) * TPB_SIMULATED
    return multiprocessors(index) * REDUCTION_BLOCKS_PER_SM * TPB


def whole_grid_stages(kernel: KernelIR, plan: Plan) -> list[bool]:
    """For each stage of `plan`: whether it is a parallel stage that keeps adstacks (reads or
    writes a heap parameter of a reverse kernel), which launches one thread per iteration
    (the module docstring)."""
    heaps = {p.value.id for p in kernel.params if p.name.startswith(PARAM_PREFIX)}
    return [bool(s.loops) and any(v.id in heaps for i in instrs(Block(s.body)) for v in i.args)
            for s in plan.stages]


def stage_blocks(total: int | None, tpb: int, most: int, whole: bool) -> int:
    """The blocks of a parallel stage of `total` iterations (None: unknown on the host) of
    `tpb` threads each: at most `most`, the threads striding over the rest, unless `whole`
    (one thread per iteration)."""
    if total is None:
        return most
    blocks = -(-total // tpb)
    return blocks if whole else min(blocks, most)


def upload(cp: Any, host: np.ndarray) -> Any:
    """`host` copied to CuPy's current GPU, bit for bit. A 0-d array goes up as one element:
    CuPy makes a 0-d array from host data with `ndarray.fill(value)`, which writes zero bytes
    (a memset) when `value == 0`, so -0.0 arrived as +0.0 (and sin, atan2, ... of it
    followed)."""
    if host.ndim == 0:
        return cp.asarray(host.reshape(1)).reshape(())
    return cp.asarray(host)


class CudaLauncher(Launcher):
    """Runs the numba.cuda stages of one kernel signature (see the module docstring)."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], debug: bool,
                 device: Device) -> None:
        super().__init__(kernel, packers, bumps)
        self.debug = debug
        self.device = device
        self.backend = cast(Any, device.backend)  # a CupyBackend or the simulator's
        self.cp: Any = None if SIMULATED else self.backend.cp  # CuPy
        self.plan = plan_stages(kernel)
        self.module = load_module(render_numba_cuda(kernel, debug=debug, simulated=SIMULATED))
        self.stages = [getattr(self.module, f"stage{k}") for k in range(len(self.plan.stages))]
        self.params: list[tuple[int, Any]] = [(p.value.id, p.value.type)
                                              for p in kernel.params]
        carried: list[Any] = [v.type for v in self.plan.carried_values]
        carried += [var.dtype for var in self.plan.carried_vars]
        self.carry_dtypes = [t._np for t in carried]
        self.tpb = TPB_SIMULATED if SIMULATED else TPB
        self.bounds = [[(f.begin.id, f.end.id) for f in s.loops] for s in self.plan.stages]
        self.whole_grid = whole_grid_stages(kernel, self.plan)
        self.carries: dict[tuple[int, int], list[Any]] = {}  # by (device, stream)
        self.issuing = threading.Lock()
        # the launch written out for the layouts of the last direct launch (direct_launch.
        # compile_fast), and those of every layout so far by (device index, layouts)
        self.fast: Any = None
        self.fasts: dict[tuple[int, tuple[int, ...]], Any] = {}
        # positions of the array arguments of a launch: parameters, carries, error record
        self.arrays = [k for k, (_, t) in enumerate(self.params) if isinstance(t, ArrayType)]
        nparams = len(self.params)
        self.arrays += range(nparams, nparams + len(self.carry_dtypes) + int(debug))
        # DirectLaunch (or False: numba's dispatch) by (device index, layouts)
        self.direct: dict[tuple[int, tuple[int, ...]], Any] = {}
        self.why_not_direct = ""

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
                if not SIMULATED and type(x) is not self.cp.ndarray:
                    if type(x) is np.ndarray:
                        dev = self._to_device(x, index)
                        copies.append((x, dev))
                        x = dev
                    else:  # another library's device array: a CuPy view of its memory
                        x = self.cp.asarray(x)
                args.append(x)
            else:
                value = t._np.type(x)
                env[vid] = value
                args.append(value)
        return args, env, copies

    def _to_device(self, x: np.ndarray, index: int) -> Any:
        cp = self.cp
        with cp.cuda.Device(index):
            return upload(cp, x)

    def _carries(self, index: int) -> list[Any]:
        """One one-element array per carried value or local (a serial stage writes it, a
        later stage reads it). On a GPU they are made once per device and stream and reused:
        a launch issues all its stages under the launcher's `issuing` lock, so on one stream
        no other launch's stages run between them; another stream gets its own."""
        if SIMULATED:
            return self._new_carries(index)  # (the simulator's stages run unlocked)
        cp = self.cp
        if cp.cuda.runtime.getDevice() == index:
            stream = cp.cuda.get_current_stream().ptr
        else:
            with cp.cuda.Device(index):
                stream = cp.cuda.get_current_stream().ptr
        key = (index, stream)
        found = self.carries.get(key)
        if found is None:
            found = self.carries[key] = self._new_carries(index)
        return found

    def _new_carries(self, index: int) -> list[Any]:
        """Zeroed carries, views of one allocation in 8-byte slots."""
        slots = [-(-np.dtype(d).itemsize // 8) for d in self.carry_dtypes]
        memory = self._zeros(sum(slots), np.int64, index)
        out = []
        at = 0
        for d, n in zip(self.carry_dtypes, slots, strict=True):
            out.append(memory[at:at + n].view(d)[:1])
            at += n
        return out

    def _zeros(self, n: int, dtype: Any, index: int) -> Any:
        if SIMULATED:
            return np.zeros(n, dtype)
        cp = self.cp
        with cp.cuda.Device(index):
            return cp.zeros(n, dtype)

    def __call__(self, args: Sequence[Any]) -> None:
        fast = self.fast
        if fast is not None and fast(args):
            return
        native = self.pack(args)
        index = self.device.index
        err: Any = None
        try:
            kargs, env, copies = self._args(native, index)
            self.plan.evaluate_host(env)
            if self.debug:
                err = self._zeros(RECORD_LENGTH, np.int64, index)
            grids = self._grids(env, index)
            with self.issuing:
                if self.carry_dtypes:
                    kargs += self._carries(index)
                if err is not None:
                    kargs.append(err)
                used = self._launch(kargs, grids, index)
            if used is not None and not copies:
                self.fast = self._fast(*used)
            for host, dev in copies:
                host[...] = self.backend.to_host(dev)
        finally:
            self.bump(args)
        if err is not None:
            self.check(np.asarray(self.backend.to_host(err)), native)

    def _fast(self, key: tuple[int, tuple[int, ...]], direct: DirectLaunch) -> Any:
        """The launch written out for the layouts `key` (device index, contiguity of each
        array argument) that `direct` launched (None where the general path must run:
        debug mode, a 0-d array parameter)."""
        found = self.fasts.get(key)
        if found is not None or self.debug or not hasattr(self.cp.ndarray, "_c_contiguous"):
            return found  # (the written-out test reads CuPy's contiguity flags)
        index, layouts = key
        params: list[tuple[int, Any, int]] = []
        arrays = 0
        for vid, t in self.params:
            if isinstance(t, ArrayType):
                if t.ndim == 0:
                    return None
                params.append((vid, None, layouts[arrays]))
                arrays += 1
            else:
                params.append((vid, t._np.type, 0))
        stages = list(zip(self.bounds, self.whole_grid, strict=True))
        cp = self.cp
        found = self.fasts[key] = compile_fast(
            pack=self.pack, bump=self.bump, params=params, steps=self.plan.steps,
            stages=stages, tpb=self.tpb, most=max_blocks(index), index=index, direct=direct,
            device_array=cp.ndarray, current_device=cp.cuda.runtime.getDevice,
            current_stream=cp.cuda.get_current_stream,
            launch_kernel=cp.cuda.driver.launchKernel, carries=self.carries,
            ncarries=len(self.carry_dtypes), issuing=self.issuing)
        return found

    def _grids(self, env: dict[int, Any], index: int) -> list[tuple[int, int]]:
        """(blocks, threads) of each stage; 0 blocks for a parallel stage without
        iterations."""
        tpb = self.tpb
        out = []
        for bounds, whole in zip(self.bounds, self.whole_grid, strict=True):
            if not bounds:
                out.append((1, 1))
                continue
            total: int | None = 1
            for b, e in bounds:
                if b in env and e in env and total is not None:
                    total *= max(int(env[e]) - int(env[b]), 0)
                else:
                    total = None
            out.append((stage_blocks(total, tpb, max_blocks(index), whole and not SIMULATED),
                        tpb))
        return out

    def _launch(self, kargs: list[Any], grids: list[tuple[int, int]], index: int
                ) -> tuple[tuple[int, tuple[int, ...]], DirectLaunch] | None:
        """Run the stages; (its layout key, the DirectLaunch) where they were launched
        directly on the current device, else None."""
        if SIMULATED:
            self._run_numba([_simulated_array(a) for a in kargs], grids)
            return None
        cp = self.cp
        if cp.cuda.runtime.getDevice() == index:
            return self._run(kargs, grids, index)
        with _NUMBA_LOCK, cuda.gpus[index], cp.cuda.Device(index):
            self._run(kargs, grids, index)
        return None

    def _run(self, kargs: list[Any], grids: list[tuple[int, int]], index: int
             ) -> tuple[tuple[int, tuple[int, ...]], DirectLaunch] | None:
        """The stages on the current device: directly when this layout has run before."""
        key = (index, layout_key(kargs, self.arrays))
        direct = self.direct.get(key)
        if direct:
            stream = self.cp.cuda.get_current_stream().ptr
            direct(kargs, grids, stream)
            return key, direct
        with _NUMBA_LOCK:
            numba_args = [_device_array(a) if k in self.arrays else a
                          for k, a in enumerate(kargs)]
            self._run_numba(numba_args, grids)
            if direct is None:
                try:
                    found = direct_launch(self.stages, numba_args, _pointer,
                                          self._launch_kernel)
                except (AttributeError, TypeError, ValueError) as exc:
                    # a numba-cuda whose internals differ: its own dispatch stays correct
                    self.why_not_direct = f"{type(exc).__name__}: {exc}"
                    found = None
                self.direct[key] = found or False
        return None

    def _run_numba(self, kargs: list[Any], grids: list[tuple[int, int]]) -> None:
        for knl, (blocks, threads) in zip(self.stages, grids, strict=True):
            if blocks:
                knl[blocks, threads](*kargs)

    def _launch_kernel(self, handle: int, blocks: int, threads: int, stream: int,
                       params: int) -> None:
        self.cp.cuda.driver.launchKernel(handle, blocks, 1, 1, threads, 1, 1, 0, stream,
                                         params, 0)


def _pointer(x: Any) -> int:
    """The device address of a CuPy array's first element."""
    return x.data.ptr  # type: ignore[no-any-return]


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


class CudaKernels(DeviceKernels):
    """The kernel target of CUDA devices (module docstring)."""

    name = "numba_cuda"
    # One pass, each block's maxima reduced in the block before one atomic (codegen's
    # block_sums.py), over `reduction_items` work-items.
    reduction = ReductionLayout(strided=True, single_pass=True,
                                work_items=lambda device: reduction_items(device.index))
    # Adstacks depth-major within each warp: a warp's pushes at one depth are one run; their
    # positions in 32 bits where the tape allows.
    adstack = StackLayout(group=32, narrow=True)

    def render(self, kernel: KernelIR, *, debug: bool, device: Device) -> str:
        return render_numba_cuda(kernel, debug=debug, simulated=SIMULATED)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Device) -> CudaLauncher:
        return CudaLauncher(kernel, packers, bumps, debug, device)




TARGET = CudaKernels()
