"""The CPU's kernel target: numba modules generated from the IR, launched serially or in
parallel.

`render` is `kernels/codegen/numba/cpu.py`; the module is loaded through the disk cache
(`kernels/cache.py`, which numba's own cache of machine code sits beside), so the target
caches modules and reverse-mode plans can name them. A `NumbaLauncher` calls the module's
`entry_serial` for small launches and `entry_parallel` (prange) for large ones, choosing by
the module's `work(...)`, the largest parallel trip count computed from the arguments.

Parallel loops run in SIMD lanes (kernels/codegen/numba/lanes.py): groups of `lane_width()`
consecutive threads, 16 lanes per vector where numba compiles for AVX-512 and 8 elsewhere,
`VECTORS` vectors per group (in flight together, which hides the latency of each
dependent step); QDARRAY_CPU_LANES=0 turns them off. `SCALAR` is the same target thread by
thread. Reverse kernels keep their adstacks in per-worker scratch (`StackLayout.scratch`):
one region per worker of numba's pool, of lane-group width x capacity entries per stack.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import numba
import numpy as np
from llvmlite import binding as llvm  # type: ignore[import-untyped]

from ...kernels.cache import load_module, module_for_key, module_key
from ...kernels.error_record import LENGTH as RECORD_LENGTH
from ...kernels.ir import KernelIR
from ...kernels.target import DeviceKernels, Launcher, ReductionLayout, StackLayout

# Launches whose parallel loops have fewer iterations than this run serially (no threads).
PARALLEL_MIN = 32768
# Vectors per lane group.
VECTORS = 2


def lane_width(setting: str | None = None) -> int | None:
    """Threads per lane group, from `setting` (the environment variable QDARRAY_CPU_LANES
    when None): "auto" or unset, `VECTORS` vectors of 16 lanes where numba compiles for
    AVX-512 (numba's CPU name and features, the host's by default) and of 8 elsewhere; "0",
    None (thread by thread); a number from 1 to 64, that many threads per group."""
    value = os.environ.get("QDARRAY_CPU_LANES", "auto") if setting is None else setting
    text = value.strip().lower()
    if text in ("", "auto"):
        config: Any = numba.config
        features = config.CPU_FEATURES
        if features is None:
            name = config.CPU_NAME
            host = name in (None, "host")
            features = llvm.get_host_cpu_features().flatten() if host else ""
        return VECTORS * (16 if "+avx512f" in features.split(",") else 8)
    width = int(text) if text.isdigit() else -1
    if not 0 <= width <= 64:
        raise ValueError(f"QDARRAY_CPU_LANES={value!r} is not a lane setting: use 'auto' (the "
                         "default), 0 (parallel loops run thread by thread) or the threads per "
                         "lane group, from 1 to 64")
    return width or None


class NumbaLauncher(Launcher):
    """Runs generated numba code: serial entry for small launches, parallel for large."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], module: Any,
                 debug: bool) -> None:
        super().__init__(kernel, packers, bumps)
        self.serial = module.entry_serial
        self.parallel = getattr(module, "entry_parallel", None)
        self.work = module.work
        self.debug = debug
        self.module = module
        self.module_key = module_key(module)

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        entry = self.serial
        if self.parallel is not None:
            try:
                big = self.work(*native) >= PARALLEL_MIN
            except Exception:  # noqa: BLE001 - a heuristic only: run in parallel
                big = True
            if big:
                entry = self.parallel
        if self.debug:
            err = np.zeros(RECORD_LENGTH, np.int64)
            try:
                entry(*native, err)
            finally:
                self.bump(args)
            self.check(err, native)
            return
        try:
            entry(*native)
        finally:
            self.bump(args)


def host_workers() -> int:
    """The worker threads of numba's pool (every `numba.get_thread_id()` is below it)."""
    config: Any = numba.config
    return int(config.NUMBA_NUM_THREADS)


class CpuKernels(DeviceKernels):
    """The kernel target of the CPU device (module docstring); `lanes`: threads per lane
    group, None for thread by thread, "auto" for `lane_width()`."""

    caches_modules = True
    reduction = ReductionLayout(serial_below=PARALLEL_MIN)

    def __init__(self, lanes: int | None | Literal["auto"] = "auto") -> None:
        self.lanes = lane_width() if lanes == "auto" else lanes
        # the name keys the disk cache's entries: one per setting (the default's is "numba_cpu")
        default = lane_width("auto")
        self.name = ("numba_cpu" if self.lanes == default else
                     f"numba_cpu_lanes{self.lanes}" if self.lanes else "numba_cpu_scalar")
        # adstacks in per-worker scratch, one region per lane group (kernels/target.py)
        self.adstack = StackLayout(group=self.lanes or 1, scratch=True, workers=host_workers)

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        # The code generator (with the op definitions and the lowering passes) loads with
        # the first compile: a process whose kernels all come from the disk cache never
        # imports it (a part of its start-up, benchmarks/warm_start.py).
        from ...kernels.codegen.numba.cpu import render_numba_cpu

        return render_numba_cpu(kernel, debug=debug, lanes=self.lanes)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> NumbaLauncher:
        module = load_module(self.render(kernel, debug=debug, device=device))
        return NumbaLauncher(kernel, packers, bumps, module, debug)

    def cached_launcher(self, key: str, kernel: KernelIR, packers: list[Any],
                        bumps: list[Any], *, debug: bool, device: Any) -> NumbaLauncher | None:
        module = module_for_key(key)
        if module is None:
            return None
        return NumbaLauncher(kernel, packers, bumps, module, debug)

    def buffer_device(self, device: Any) -> None:
        return None  # the CPU's arrays are host memory


TARGET = CpuKernels()
# The same target thread by thread (tests compare the two, bit for bit).
SCALAR = CpuKernels(None)
