"""The kernel target of OpenCL devices: build the generated program, size and enqueue its
stages, read back the debug error record.

`OpenCLKernels` is the target (`kernels/target.py`); its `OpenCLLauncher` is built once per
kernel signature. Per call it packs the arguments (no copies), evaluates the host-computable
instructions to get each parallel stage's trip counts, enqueues the stages in order on the
device's queue and, in debug mode, reads the error record and raises `KernelIndexError`.
Programs are built once per device and source (and cached on disk by pyopencl).

Host NumPy arrays passed directly are copied to the device for the launch and back
afterwards. Reverse mode passes its own buffers (adstack heaps, layout, overflow flags,
counts) as device arrays, so its launches copy nothing large (qdarray/ad/device_buffers.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from ..._devices import Device
from ..._dtypes import DType
from ..._errors import KernelTypeError
from ...kernels.codegen.c.opencl_c import render_opencl_c
from ...kernels.error_record import LENGTH as RECORD_LENGTH
from ...kernels.ir import KernelIR
from ...kernels.passes.stages import plan_stages
from ...kernels.target import DeviceKernels, Launcher, ReductionLayout, StackLayout, float64_use
from ...kernels.types import ArrayType
from . import _runtime as runtime
from ._clarray import ClArray

# The float64 scratch of a reverse kernel (qdarray/ad/transform/generator.py, `Gen.params`).
_SCRATCH = "@adj_outer"


def caps_of(device: Device) -> dict[str, Any]:
    """The capabilities of `device` that the OpenCL C generator needs."""
    st = runtime.state(device.index)
    return {"int64_atomics": st.int64_atomics, "int64_minmax": st.int64_minmax,
            "device": f"device {device} ({st.name})"}


class OpenCLLauncher(Launcher):
    """Runs the OpenCL C stages of one kernel signature on one device."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], debug: bool,
                 device: Device) -> None:
        super().__init__(kernel, packers, bumps)
        self.debug = debug
        self.st = runtime.state(device.index)
        st = self.st
        where = float64_use(kernel)
        if where == f"parameter '{_SCRATCH}'" and not runtime.has_fp64(st):
            name = kernel.name.removesuffix("_reverse")
            raise TypeError(
                f"The reverse of kernel '{name}' sums the gradients of locals of its serial "
                "code that its parallel loops read in float64, which device "
                f"{device} ({st.name}) does not support. Try assigning such locals inside "
                "the parallel loop (each thread its own), or compute this gradient on a "
                "device with float64 (x.to_device('cpu')).")
        if where is not None and not runtime.has_fp64(st):
            raise TypeError(
                f"Kernel '{kernel.name}' uses float64 ({where}), which device {device} "
                f"({st.name}) does not support. Use float32 arrays and scalars (annotate "
                "scalar parameters qd.float32), or another device.")
        self.caps = caps_of(device)
        self.plan = plan_stages(kernel)
        self.variants: dict[frozenset[int], list[Any]] = {}
        self.params = kernel.params
        self.source(frozenset())  # code generation errors surface at once; programs are
        # built per variant when a call needs it (a kernel called with contiguous arrays only
        # never builds the general variant)
        self.dummy = ClArray.empty(st, (1,), np.int64)
        self.local = st.local_size

    def source(self, unit: frozenset[int]) -> str:
        """The OpenCL C of the variant for arrays with unit innermost stride `unit`."""
        try:
            return render_opencl_c(self.kernel, debug=self.debug, caps=self.caps,
                                   unit_stride=unit)
        except TypeError as exc:
            raise KernelTypeError(f"Kernel '{self.kernel.name}': {exc}") from None

    def stages_for(self, unit: frozenset[int]) -> list[Any]:
        """The stage kernels of the variant for arrays with unit innermost stride `unit`."""
        stages = self.variants.get(unit)
        if stages is None:
            source = self.source(unit)
            stages = [self.st.kernel(source, s.name, self.scalar_dtypes(s))
                      for s in self.plan.stages]
            self.variants[unit] = stages
        return stages

    def scalar_dtypes(self, stage: Any) -> list[Any]:
        """The argument dtypes of a stage kernel (None for buffers), as `_args` packs them,
        then the carry buffer and the error record."""
        i64 = np.dtype(np.int64)
        out: list[Any] = []
        for p in self.params:
            t = p.value.type
            if isinstance(t, ArrayType):
                out += [None, i64] + [i64] * (2 * t.ndim)
            else:
                assert isinstance(t, DType)  # views are lowered to arrays before launch
                out.append(np.dtype(np.uint8) if t.kind == "b" else t._np)
        return out + [None, None]

    def _args(self, native: Sequence[Any]
              ) -> tuple[list[Any], dict[int, Any], list[Any], frozenset[int]]:
        """(kernel arguments, host environment of parameter values, host copies, ids of
        arrays with unit innermost stride)."""
        args: list[Any] = []
        unit: list[int] = []
        env: dict[int, Any] = {}
        copies: list[Any] = []
        for p, x in zip(self.params, native, strict=True):
            t = p.value.type
            if isinstance(t, ArrayType):
                if isinstance(x, np.ndarray):
                    dev = ClArray.from_host(self.st, x)
                    copies.append((x, dev))
                    x = dev
                env[p.value.id] = x
                args.append(x.base_data if x.base_data is not None else self.dummy.base_data)
                args.append(x.elem_offset)
                args += x.shape
                strides = x.elem_strides()
                args += strides
                if strides and strides[-1] == 1:
                    unit.append(p.value.id)
            else:
                assert isinstance(t, DType)  # views are lowered to arrays before launch
                value = t._np.type(x)
                env[p.value.id] = value
                args.append(runtime.scalar_arg(value, t._np))
        return args, env, copies, frozenset(unit)

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        kargs, env, copies, unit = self._args(native)
        kernels = self.variants.get(unit) or self.stages_for(unit)
        self.plan.evaluate_host(env)
        st = self.st
        carry = ClArray.empty(st, (self.plan.slots,), np.uint64) if self.plan.slots else self.dummy
        err = ClArray.empty(st, (RECORD_LENGTH,), np.int64) if self.debug else self.dummy
        if self.debug:
            cl.enqueue_fill_buffer(st.queue, err.qd_buffer, np.zeros(1, np.int64), 0,
                                   RECORD_LENGTH * 8)
        carried: np.ndarray | None = None
        try:
            for stage, knl in zip(self.plan.stages, kernels, strict=True):
                if carried is None and not self.plan.on_host(stage, env):
                    carried = carry.to_host()
                total = self.plan.trips(stage, env, carried)
                if stage.loops and total == 0:
                    continue
                gsize = math.ceil(total / self.local) * self.local if stage.loops else 1
                lsize = (self.local,) if stage.loops else None
                with st.enqueue_lock:  # (the arguments live on the shared cl.Kernel)
                    knl(st.queue, (gsize,), lsize, *kargs, carry.base_data, err.base_data)
                if not stage.loops:
                    carried = None  # a serial stage may have written the carry buffer
            for host, dev in copies:
                host[...] = dev.to_host()
        finally:
            self.bump(args)
        if self.debug:
            self.check(err.to_host(), native)


class OpenCLKernels(DeviceKernels):
    """The kernel target of OpenCL devices (module docstring)."""

    name = "opencl_c"
    reduction = ReductionLayout(strided=True)
    # Adstacks depth-major within groups of 32 work-items (a sub-group or warp of most GPUs).
    adstack = StackLayout(group=32)

    def render(self, kernel: KernelIR, *, debug: bool, device: Device) -> str:
        return render_opencl_c(kernel, debug=debug, caps=caps_of(device))

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Device) -> OpenCLLauncher:
        return OpenCLLauncher(kernel, packers, bumps, debug, device)




TARGET = OpenCLKernels()
