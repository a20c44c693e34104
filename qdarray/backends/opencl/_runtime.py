"""OpenCL devices, contexts, queues, allocation and the program cache.

Devices are numbered in one documented, stable order: GPUs first, then CPUs, then any other
kind (accelerators, custom); within a kind by platform name (then platform version, for two
installations of one implementation), then by the device's position within its platform.
Platforms are told apart by name, never by the order the ICD loader happens to list them in.
A device whose compiler cannot build a trivial kernel (an old PoCL on a CPU its LLVM does
not know, say) is left out; `unusable()` says which and why.
`QDARRAY_OPENCL_PLATFORM=<substring>` keeps only the platforms whose name contains the
substring (case-insensitive), e.g. `pocl` or `nvidia`.

Each device has one in-order command queue, so every operation is ordered after the ones
enqueued before it; host reads block on that queue. Device memory comes from a pyopencl
memory pool per device. Programs are built once per (device, source) and kept in memory;
pyopencl also caches the binaries on disk, so a second process does not recompile.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.tools as cl_tools

from ..._devices import Device
from ...kernels.ir import KernelIR
from ..kernel_xp.device import Launcher, target_launcher
from ._clarray import ClArray

_TYPE_RANK = {"GPU": 0, "CPU": 1}

def _kind(device: cl.Device) -> str:
    t = device.type
    if t & cl.device_type.GPU:
        return "GPU"
    if t & cl.device_type.CPU:
        return "CPU"
    if t & cl.device_type.ACCELERATOR:
        return "ACCELERATOR"
    return "OTHER"


@dataclass
class DeviceState:
    """One OpenCL device as qdarray uses it (the `KernelDevice` of the IR-built namespace,
    backends/kernel_xp/device.py)."""

    index: int
    cl_device: cl.Device
    platform: str
    kind: str
    context: cl.Context
    queue: cl.CommandQueue
    allocator: Any
    fp64: bool
    int64_atomics: bool
    int64_minmax: bool
    options: tuple[str, ...] = ()
    programs: dict[str, cl.Program] = field(default_factory=dict)
    kernels: dict[tuple[str, str], cl.Kernel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A cl.Kernel holds its arguments: setting them and enqueueing is one step under this
    # lock, or a thread launching the same kernel could run it on another thread's arguments.
    enqueue_lock: threading.Lock = field(default_factory=threading.Lock)
    launchers: dict[Hashable, Any] = field(default_factory=dict)
    max_alloc: int = 0  # CL_DEVICE_MAX_MEM_ALLOC_SIZE (0: read on first use)

    # -- KernelDevice ------------------------------------------------------------------------

    @property
    def device(self) -> Device:
        """The qdarray Device."""
        return Device(f"opencl:{self.index}")

    @property
    def gpu(self) -> bool:
        return self.kind == "GPU"

    @property
    def workers(self) -> int:
        return int(self.cl_device.max_compute_units) * (2048 if self.kind == "GPU" else 64)

    def has_fp64(self) -> bool:
        return has_fp64(self)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> ClArray:
        return ClArray.empty(self, shape, dtype)

    def from_host(self, host: np.ndarray) -> ClArray:
        return ClArray.from_host(self, host)

    def copy_bytes(self, dst: Any, src: Any) -> None:
        cl.enqueue_copy(self.queue, dst.base_data, src.base_data,
                        byte_count=src.size * src.dtype.itemsize, src_offset=src.offset,
                        dst_offset=dst.offset)

    def launcher(self, ir: KernelIR) -> Launcher:
        """Compile a namespace kernel through the OpenCL kernel target."""
        return target_launcher(self, ir)

    @property
    def local_size(self) -> int:
        """The work-group size of one-item-per-element kernels."""
        return int(min(256 if self.kind == "GPU" else 64, self.cl_device.max_work_group_size))

    @property
    def name(self) -> str:
        return f"{self.cl_device.name.strip()} ({self.platform}, {self.kind})"

    def build(self, source: str, options: tuple[str, ...] = ()) -> cl.Program:
        """The built program for `source` (built once per device and source)."""
        options = options + self.options
        key = hashlib.sha256((source + "\0" + " ".join(options)).encode()).hexdigest()
        prog = self.programs.get(key)
        if prog is None:
            with self.lock:
                prog = self.programs.get(key)
                if prog is None:
                    try:
                        with warnings.catch_warnings():
                            # Compiler remarks on generated code (constant operands, unused
                            # values) are not the user's concern; errors still raise.
                            warnings.simplefilter("ignore", cl.CompilerWarning)
                            prog = cl.Program(self.context, source).build(
                                options=list(options))
                    except cl.RuntimeError as exc:
                        raise _build_error(self, source, exc) from None
                    self.programs[key] = prog
        return prog

    def kernel(self, source: str, name: str, scalars: list[Any] | None = None) -> cl.Kernel:
        """Kernel `name` of the program built from `source` (one Kernel object each).

        `scalars` gives each argument's NumPy dtype (None for buffers): pyopencl then packs
        Python numbers directly, which makes a launch several times cheaper."""
        key = (source, name)
        knl = self.kernels.get(key)
        if knl is None:
            knl = cl.Kernel(self.build(source), name)
            if scalars is not None:
                knl.set_scalar_arg_dtypes(scalars)
            self.kernels[key] = knl
        return knl


# Each discovery makes its own contexts and queues: two, made by two threads' first
# launches at once, would put one thread's arrays on one queue and its kernels on another,
# whose results a read on the first queue need not wait for.
_DISCOVERY = threading.Lock()
_STATE: dict[str, Any] = {"devices": None, "overrides": {}, "unusable": []}
_PROBE = "__kernel void probe(__global int *x) { x[get_global_id(0)] += 1; }"


def _platform_filter() -> str:
    return os.environ.get("QDARRAY_OPENCL_PLATFORM", "").strip().lower()


def _discover() -> list[DeviceState]:
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    wanted = _platform_filter()
    found: list[tuple[int, str, str, int, cl.Device, str]] = []
    for platform in platforms:
        pname = platform.name.strip()
        pversion = platform.version.strip()
        if wanted and wanted not in pname.lower():
            continue
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for pos, dev in enumerate(devices):
            kind = _kind(dev)
            found.append((_TYPE_RANK.get(kind, 2), pname, pversion, pos, dev, kind))
    found.sort(key=lambda t: t[:4])
    states: list[DeviceState] = []
    for _, pname, pversion, _, dev, kind in found:
        try:
            ctx = cl.Context([dev])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                cl.Program(ctx, _PROBE).build()
        except cl.Error as exc:
            lines = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
            _STATE["unusable"].append(
                f"{dev.name.strip()} ({pname}, {pversion}): {lines[-1] if lines else exc}")
            continue
        index = len(states)
        queue = cl.CommandQueue(ctx)
        ext = dev.extensions.split()
        states.append(DeviceState(
            index=index, cl_device=dev, platform=pname, kind=kind, context=ctx, queue=queue,
            allocator=cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue)),
            fp64=bool(dev.double_fp_config) or "cl_khr_fp64" in ext,
            int64_atomics="cl_khr_int64_base_atomics" in ext,
            int64_minmax="cl_khr_int64_extended_atomics" in ext,
            options=_options(dev),
        ))
    return states


def _options(dev: cl.Device) -> tuple[str, ...]:
    """Build options: float32 division and sqrt correctly rounded (as NumPy's are) where the
    device can (OpenCL otherwise allows 2.5 ulp; NVIDIA's driver uses that freedom)."""
    if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        return ("-cl-fp32-correctly-rounded-divide-sqrt",)
    return ()


def devices() -> list[DeviceState]:
    """Every usable OpenCL device, in qdarray's order (see the module docstring)."""
    states = _STATE["devices"]
    if states is None:
        with _DISCOVERY:  # threads making their first launch together share one discovery
            states = _STATE["devices"]
            if states is None:
                states = _STATE["devices"] = _discover()
    return states  # type: ignore[no-any-return]


def state(index: int) -> DeviceState:
    """The device `opencl:<index>`; a ValueError listing the present ones when absent."""
    states = devices()
    if not 0 <= index < len(states):
        present = ", ".join(f"opencl:{s.index} = {s.name}" for s in states) or "none"
        raise ValueError(
            f"There is no OpenCL device opencl:{index}; present: {present}. Use one of those, "
            "or install an OpenCL driver (pip install 'qdarray[pocl]' gives a CPU one)."
        )
    return states[index]


def has_fp64(st: DeviceState) -> bool:
    """Whether the device reports double precision (a test override can deny it)."""
    override = _STATE["overrides"].get(st.index, {}).get("fp64")
    return st.fp64 if override is None else bool(override)


def set_override(index: int, **caps: Any) -> None:
    """Pretend device `index` lacks (or has) a capability: `fp64=False`. Tests use this
    to exercise devices without float64 on one that has it; `fp64=None` removes it."""
    entry = _STATE["overrides"].setdefault(index, {})
    for k, v in caps.items():
        if v is None:
            entry.pop(k, None)
        else:
            entry[k] = v


def scalar_arg(value: Any, dtype: np.dtype) -> Any:
    """A kernel argument of `dtype` from a Python or NumPy scalar (bool as one byte)."""
    if dtype == np.bool_:
        return np.uint8(bool(value))
    return dtype.type(value)


def _build_error(st: DeviceState, source: str, exc: Exception) -> RuntimeError:
    """The compiler's complaint with the numbered source: a generated program that does not
    build is a bug in qdarray, and the source is what a report needs."""
    numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate(source.splitlines(), 1))
    errors = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
    return RuntimeError(
        f"OpenCL C generated by qdarray failed to build on {st.name}: "
        f"{'; '.join(errors) or exc}\n{numbered}\nPlease report this with the source above.")


def unusable() -> list[str]:
    """Devices that were found but left out, each with the reason."""
    devices()
    return list(_STATE["unusable"])
