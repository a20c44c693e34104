"""The CPU's kernel target: numba modules generated from the IR, launched serially or in
parallel.

`render` is `kernels/codegen/numba_cpu.py`; the module is loaded through the disk cache
(`kernels/cache.py`, which numba's own cache of machine code sits beside), so the target
caches modules and reverse-mode plans can name them. A `NumbaLauncher` calls the module's
`entry_serial` for small launches and `entry_parallel` (prange) for large ones, choosing by
the module's `work(...)`, the largest parallel trip count computed from the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..kernels.cache import load_module, module_for_key, module_key
from ..kernels.codegen.numba_cpu import render_numba_cpu
from ..kernels.error_record import LENGTH as RECORD_LENGTH
from ..kernels.ir import KernelIR
from ..kernels.launch import bump_generations
from ..kernels.target import DeviceKernels, Launcher, ReductionLayout

# Launches whose parallel loops have fewer iterations than this run serially (no threads).
PARALLEL_MIN = 32768


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
                bump_generations(args, self.bumps)
            self.check(err, native)
            return
        try:
            entry(*native)
        finally:
            bump_generations(args, self.bumps)


class CpuKernels(DeviceKernels):
    """The kernel target of the CPU device (module docstring)."""

    name = "numba_cpu"
    caches_modules = True
    reduction = ReductionLayout(serial_below=PARALLEL_MIN)

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        return render_numba_cpu(kernel, debug=debug)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> NumbaLauncher:
        module = load_module(render_numba_cpu(kernel, debug=debug))
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
