"""Launching user kernels on Vulkan devices: render the SPIR-V stages, size and dispatch them,
read back the debug error record.

`VulkanLauncher` is built once per kernel signature through the Vulkan devices' kernel target
(`TARGET`, kernels/target.py). Per call it packs the parameter block (array offsets, shapes
and strides in elements, scalars, each stage's loop bounds; kernels/codegen/spirv.py),
evaluates the host-computable instructions for the parallel stages' trip counts, and
records one dispatch per stage on the device's stream, in order. Host NumPy arrays passed
directly are copied to the device for the launch and back afterwards. In debug mode the error
record is zeroed before the launch and read after it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._devices import Device
from ..._dtypes import DType
from ..._errors import KernelTypeError
from ...kernels.codegen.spirv import LOCAL, SpirvProgram, render_spirv
from ...kernels.error_record import LENGTH as RECORD_LENGTH
from ...kernels.ir import For, KernelIR, walk
from ...kernels.launch import bump_generations
from ...kernels.target import DeviceKernels, Launcher, ReductionLayout, StackLayout
from ...kernels.types import ArrayType
from . import _instance, _pipelines
from ._array import VkArray
from ._memory import pool
from ._stream import stream

_MAX_GROUPS = 65535
_FORMATS = {"int64": "<q", "uint64": "<Q", "int32": "<i", "uint32": "<I", "float32": "<f",
            "float64": "<d"}


def _uses_float64(kernel: KernelIR) -> str | None:
    """Where `kernel` first uses float64, or None."""
    for p in kernel.params:
        t = p.value.type
        dt = t.dtype if isinstance(t, ArrayType) else t
        if getattr(dt, "name", "") == "float64":
            return f"parameter '{p.name}'"
    for s in walk(kernel.body):
        result = getattr(s, "result", None)
        if result is not None and getattr(result.type, "name", "") == "float64":
            return f"a float64 value at {s.loc.file}:{s.loc.line}"
        if isinstance(s, For) and getattr(s.index.type, "name", "") == "float64":
            return "a float64 loop index"
    return None


def caps_of(st: _instance.DeviceState) -> dict[str, Any]:
    """What the SPIR-V renderer needs to know about the device."""
    return {"max_push": st.limits["maxPushConstantsSize"],
            "int64_atomics": st.features["int64_atomics"],
            "float32_atomic_add": st.features["float32_atomic_add"],
            "float64_atomic_add": st.features["float64_atomic_add"],
            "device": f"device {st.label}"}


class _Variant:
    """The modules, pipelines and parameter-block layout of one variant of a kernel."""

    def __init__(self, st: _instance.DeviceState, prog: SpirvProgram) -> None:
        self.program = prog
        self.wide = frozenset(int(name[1:].split("_")[0]) for name, _ in prog.fields
                              if name.endswith("_addr"))
        n_buffers = prog.n_arrays + 2 + (0 if prog.push else 1)
        block_bytes = 8 * len(prog.fields)
        self.pipelines = [_pipelines.program(st, s.spirv, n_buffers,
                                             block_bytes if prog.push else 0)
                          for s in prog.stages]
        # name -> (byte offset, struct format, Python type the value is converted to)
        self.slot = {name: (8 * k, _FORMATS[dt], float if dt.startswith("float") else int)
                     for k, (name, dt) in enumerate(prog.fields)}
        self.block = bytearray(8 * len(prog.fields))

    def set(self, name: str, value: Any) -> None:
        offset, fmt, kind = self.slot[name]
        struct.pack_into(fmt, self.block, offset, kind(value))


class VulkanLauncher(Launcher):
    """Runs the SPIR-V stages of one kernel signature on one Vulkan device."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], debug: bool,
                 device: Device) -> None:
        super().__init__(kernel, packers, bumps)
        self.debug = debug
        st = self.st = _instance.state(device.index)
        where = _uses_float64(kernel)
        if where is not None and not st.features["float64"]:
            raise TypeError(
                f"Kernel '{kernel.name}' uses float64 ({where}), which device {st.label} "
                "does not support. Use float32 arrays and scalars (annotate scalar "
                "parameters qd.float32), or another device.")
        if not st.features["int64"]:
            raise TypeError(f"Kernels on {st.label} need 64-bit integers (shaderInt64) for "
                            "their indices, which the device does not have.")
        self.variants: dict[frozenset[int], _Variant] = {}
        base = self.variant(frozenset())  # compile errors surface at the first call
        self.plan = base.program.plan
        self.ncarry = self.plan.slots
        # Reused by every launch: the stream orders launches, so one launch's stages read
        # the carry its own serial stages wrote (a fresh pair per launch would hold two
        # allocations per queued launch until its batch has run).
        self.carry = VkArray.empty(st, (max(self.ncarry, 1),), np.uint64)
        self.err = VkArray.empty(st, (RECORD_LENGTH,), np.int64)

    def variant(self, wide: frozenset[int]) -> _Variant:
        """The modules for arrays `wide` (past the binding range) addressed by address."""
        found = self.variants.get(wide)
        if found is None:
            try:
                prog = render_spirv(self.kernel, debug=self.debug, caps=caps_of(self.st),
                                    wide=wide)
            except TypeError as exc:
                raise KernelTypeError(f"Kernel '{self.kernel.name}': {exc}") from None
            found = self.variants[wide] = _Variant(self.st, prog)
        return found

    def _arguments(self, v: _Variant, native: Sequence[Any]
                   ) -> tuple[list[Any], dict[int, Any], list[Any]]:
        """(buffers of the array parameters, host environment, host copies to write back)."""
        buffers: list[Any] = []
        env: dict[int, Any] = {}
        copies: list[Any] = []
        for p, x in zip(self.kernel.params, native, strict=True):
            t = p.value.type
            n = f"a{p.value.id}"
            if isinstance(t, ArrayType):
                if isinstance(x, np.ndarray):
                    dev = VkArray.from_host(self.st, x)
                    copies.append((x, dev))
                    x = dev
                env[p.value.id] = x
                # Any array-like with base_data (an Allocation), elem_offset, shape and
                # elem_strides(): VkArrays and the namespace kernels' windows.
                buffers.append(x.base_data)
                if p.value.id in v.wide:
                    v.set(f"{n}_addr", x.base_data.address)
                v.set(f"{n}_off", x.elem_offset)
                for d, (size, stride) in enumerate(zip(x.shape, x.elem_strides(),
                                                       strict=True)):
                    v.set(f"{n}_n{d}", size)
                    v.set(f"{n}_s{d}", stride)
            else:
                assert isinstance(t, DType)  # views are lowered to arrays before launch
                value = t._np.type(x)
                env[p.value.id] = value
                v.set(n, value)
        return buffers, env, copies

    def _wide(self, native: Sequence[Any]) -> frozenset[int]:
        """Array parameters whose buffers are larger than one binding may cover."""
        wide = []
        max_range = self.st.limits["maxStorageBufferRange"]
        for p, x in zip(self.kernel.params, native, strict=True):
            alloc = getattr(x, "base_data", None)
            if alloc is not None and alloc.size > max_range:
                if not alloc.address:
                    raise MemoryError(
                        f"Argument '{p.name}' of kernel '{self.kernel.name}' spans "
                        f"{alloc.size:,} bytes, more than {self.st.label} binds at once "
                        f"({max_range:,}), and the device has no buffer device "
                        "addresses to reach it otherwise. Use smaller arrays.")
                wide.append(p.value.id)
        return frozenset(wide)

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        st = self.st
        s = stream(st)
        wide = self._wide(native)
        v = self.variants.get(wide) or self.variant(wide)
        buffers, env, copies = self._arguments(v, native)
        self.plan.evaluate_host(env)
        carry, err = self.carry, self.err
        assert err.alloc is not None
        if self.debug:
            s.fill(err.alloc, 0, RECORD_LENGTH * 8, 0)
        carried: np.ndarray | None = None
        try:
            for stage, pipe in zip(self.plan.stages, v.pipelines, strict=True):
                total = 1
                for d, loop in enumerate(stage.loops):
                    if carried is None and not all(v.id in env for v in (loop.begin, loop.end)):
                        carried = carry.to_host()
                    b = self.plan.bound(loop.begin, env, carried)
                    e = self.plan.bound(loop.end, env, carried)
                    n = max(e - b, 0)
                    v.set(f"qd_b{d}", b)
                    v.set(f"qd_n{d}", max(n, 1))
                    total *= n
                if stage.loops and total == 0:
                    continue
                v.set("qd_total", total)
                groups = (1, 1, 1)
                if stage.loops:
                    count = -(-total // LOCAL)
                    gx = min(count, _MAX_GROUPS)
                    groups = (gx, -(-count // gx), 1)
                bound = [*buffers, carry.alloc, err.alloc]
                raw = bytes(v.block)
                if v.program.push:
                    pipe.dispatch(groups, bound, raw)
                else:
                    params = pool(st).alloc(len(raw), staging=True)
                    assert params.host is not None
                    params.host[:len(raw)] = np.frombuffer(raw, np.uint8)
                    pipe.dispatch(groups, [*bound, params], b"")
                if not stage.loops:
                    carried = None  # a serial stage may have written the carry buffer
            for host, dev in copies:
                host[...] = dev.to_host()
        finally:
            bump_generations(args, self.bumps)
        if self.debug:
            self.check(err.to_host(), native)


class VulkanKernels(DeviceKernels):
    """The kernel target of Vulkan devices (module docstring)."""

    name = "spirv"
    reduction = ReductionLayout(strided=True)
    # Adstacks depth-major within groups of 32 invocations (a subgroup of most GPUs).
    adstack = StackLayout(group=32)

    def render(self, kernel: KernelIR, *, debug: bool, device: Device) -> str:
        """The stages' SPIR-V modules, as words in hex under a header line each
        (`spirv-dis` disassembles the bytes of `render_spirv(...).stages[k].spirv`)."""
        st = _instance.state(device.index)
        prog = render_spirv(kernel, debug=debug, caps=caps_of(st))
        return "\n".join(f"; {s.name}\n{s.spirv.hex()}" for s in prog.stages)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Device) -> VulkanLauncher:
        return VulkanLauncher(kernel, packers, bumps, debug, device)




TARGET = VulkanKernels()
