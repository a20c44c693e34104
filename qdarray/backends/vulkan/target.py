"""Launching user kernels on Vulkan devices: render the SPIR-V stages, size and dispatch them,
read back the debug error record.

`VulkanLauncher` is built once per kernel signature through the Vulkan devices' kernel target
(`TARGET`, kernels/target.py). Per call it packs the parameter block (array offsets, shapes
and strides in elements, scalars, each stage's loop bounds; kernels/codegen/spirv/render.py),
evaluates the host-computable instructions for the parallel stages' trip counts, and
records one dispatch per stage on the device's stream, in order. A storage buffer is bound
for each array parameter the kernel reads, writes or updates, not for those it leaves alone
or whose shape alone it reads (their slots are in the block all the same; SpirvProgram.bound),
so that a kernel taking a large dataclass stays within the device's storage buffers per
stage. The block is push constants
where it fits the device's limit; a larger one is written into the launcher's own device
buffer by the stream (vkCmdUpdateBuffer) before each dispatch, so a launch allocates nothing
and binds the same descriptor set each time. When every buffer is below 2 GiB the narrow
program runs (32-bit offsets and strides, also in the block: a smaller block fits push
constants more often); a launch whose offsets or strides do not fit 32 bits runs the 64-bit
one. Host NumPy arrays passed directly are copied to the device for the launch and back
afterwards. In debug mode the error record is zeroed before the launch and read after it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._devices import Device
from ..._dtypes import DType
from ..._errors import KernelTypeError, LoopLimitError
from ...kernels.codegen.spirv.render import CUT_SLOT, LOCAL, SpirvProgram, render_spirv
from ...kernels.error_record import LENGTH as RECORD_LENGTH
from ...kernels.ir import KernelIR
from ...kernels.target import DeviceKernels, Launcher, ReductionLayout, StackLayout, float64_use
from ...kernels.types import ArrayType
from . import _instance, _pipelines
from ._array import VkArray, unit_last
from ._loop_guard import WORDS as RECORD_WORDS
from ._loop_guard import guard, message
from ._memory import pool
from ._probes import fused_fma, loop_limit
from ._stream import stream

# Most workgroups of a parallel stage's dispatch (of LOCAL invocations each, running the flat
# index space as a grid-stride loop; codegen/spirv/render.py): enough to fill a large GPU several
# times over, and within every device's maxComputeWorkGroupCount[0] (at least 65,535).
GROUPS = 65535
_FORMATS = {"int64": "q", "uint64": "Q", "int32": "i", "uint32": "I", "float32": "f",
            "float64": "d"}


def caps_of(st: _instance.DeviceState) -> dict[str, Any]:
    """What the SPIR-V renderer needs to know about the device."""
    return {"max_push": st.limits["maxPushConstantsSize"],
            "int64_atomics": st.features["int64_atomics"],
            "float32_atomic_add": st.features["float32_atomic_add"],
            "float64_atomic_add": st.features["float64_atomic_add"],
            "float64": st.features["float64"],
            "fused_fma": fused_fma(st),
            "device": f"device {st.label}"}


class _Variant:
    """The modules, pipelines and parameter-block layout of one variant of a kernel.

    The block is packed by one `struct.Struct` from a list of slot values in the order of
    their offsets (codegen/spirv/render.py, `block_layout`): `arrays` and `scalars` say which slots
    each parameter fills, `loops` which ones a stage's bounds fill. `narrowed`: whether some
    slots are 4-byte array offsets or strides (packing a value they cannot hold raises
    struct.error)."""

    def __init__(self, st: _instance.DeviceState, prog: SpirvProgram, kernel: KernelIR,
                 array_args: list[int]) -> None:
        self.program = prog
        self.wide = frozenset(int(name[1:].split("_")[0]) for name, _ in prog.fields
                              if name.endswith("_addr"))
        n_buffers = len(prog.bound) + 2 + (0 if prog.push else 1)
        self.pipelines = [_pipelines.program(st, s.spirv, n_buffers,
                                             prog.block_bytes if prog.push else 0)
                          for s in prog.stages]
        order = sorted(range(len(prog.fields)), key=prog.offsets.__getitem__)
        index = {prog.fields[k][0]: rank for rank, k in enumerate(order)}
        dtypes = dict(prog.fields)
        self.struct = struct.Struct("<" + "".join(_FORMATS[prog.fields[k][1]] for k in order))
        assert self.struct.size == prog.block_bytes  # the layout has no padding
        self.values: list[Any] = [0.0 if prog.fields[k][1].startswith("float") else 0
                                  for k in order]
        self.narrowed = any(name.endswith("_off") and dt == "int32"
                            for name, dt in prog.fields)
        # (value id, slot of the address or -1, of the offset, of each shape, of each stride)
        self.arrays: list[tuple[int, int, int, list[int], list[int]]] = []
        # (value id, slot, NumPy scalar type of the parameter, Python type of the slot)
        self.scalars: list[tuple[int, int, Any, type]] = []
        for p in kernel.params:
            t = p.value.type
            n = f"a{p.value.id}"
            if isinstance(t, ArrayType):
                self.arrays.append((p.value.id, index.get(f"{n}_addr", -1), index[f"{n}_off"],
                                    [index[f"{n}_n{d}"] for d in range(t.ndim)],
                                    [index[f"{n}_s{d}"] for d in range(t.ndim)]))
            else:
                assert isinstance(t, DType)  # views are lowered to arrays before launch
                if t.kind == "c":  # two slots, the real part's first
                    self.scalars.append((p.value.id, index[f"{n}_re"], t._np.type, complex))
                    continue
                slot = index[n]
                kind = float if dtypes[n].startswith("float") else int
                self.scalars.append((p.value.id, slot, t._np.type, kind))
        # Whether each array parameter has a storage buffer (those the kernel reads, writes or
        # updates: codegen/spirv/ctx.bound_arrays); every one has its slots in the block.
        self.binds = [vid in prog.bound for vid, *_ in self.arrays]
        # (argument position, value id, slots of (offset, *shape, *strides), whether it has a
        # buffer) of each array parameter, for launches whose arrays all give
        # `VkArray.launch_layout()`
        self.array_fill = [(k, vid, (off, *shape, *strides), bind)
                           for k, (vid, _, off, shape, strides), bind
                           in zip(array_args, self.arrays, self.binds, strict=True)]
        # The scalars' slots, packed apart to compare one launch's scalars with the last's
        # (bytes: -0.0 and 0.0 differ, NaN equals itself), and the last launch of this
        # variant that `VulkanLauncher._replay` may repeat: (scalar bytes, (block, slot
        # values) of each array, (pipeline, workgroups, block) of each dispatch).
        self.scalar_slots = [slot + part for _, slot, _, kind in self.scalars
                             for part in ((0, 1) if kind is complex else (0,))]
        self.scalar_struct = struct.Struct("<" + "".join(
            _FORMATS[prog.fields[order[slot]][1]] for slot in self.scalar_slots))
        self.memo: tuple[bytes, list[tuple[Any, tuple[int, ...]]], list[Any]] | None = None
        nest = max((len(stage.loops) for stage in prog.plan.stages), default=0)
        self.loops = [(index[f"qd_b{d}"], index[f"qd_n{d}"]) for d in range(nest)]
        self.total = index["qd_total"]


# A variant's key: (wide arrays, narrow, arrays with a last stride of one, aliased arrays)
Key = tuple[frozenset[int], bool, frozenset[int], frozenset[int]]


class _Narrow(Exception):
    """A narrow program's 4-byte slot cannot hold an array's offset or stride."""


# Buffers smaller than this have every element offset below 2**31: their kernels compute
# offsets in 32-bit arithmetic (codegen/spirv/render.py, `narrow`).
NARROW = 1 << 31


class VulkanLauncher(Launcher):
    """Runs the SPIR-V stages of one kernel signature on one Vulkan device."""

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], debug: bool,
                 device: Device) -> None:
        super().__init__(kernel, packers, bumps)
        self.debug = debug
        st = self.st = _instance.state(device.index)
        where = float64_use(kernel)
        if where is not None and not st.features["float64"]:
            raise TypeError(
                f"Kernel '{kernel.name}' uses float64 ({where}), which device {st.label} "
                "does not support. Use float32 arrays and scalars (annotate scalar "
                "parameters qd.float32), or another device.")
        if not st.features["int64"]:
            raise TypeError(f"Kernels on {st.label} need 64-bit integers (shaderInt64) for "
                            "their indices, which the device does not have.")
        self.stream = stream(st)
        # On a driver that ends long loops early, every loop reports a cut (_loop_guard.py):
        # `mark` names this kernel there.
        self.limit = loop_limit(st)
        self.guard = guard(st, self.limit) if self.limit else None
        self.mark = self.guard.mark(kernel.name) if self.guard is not None else 0
        self.max_range = st.limits["maxStorageBufferRange"]
        # positions of the array and of the scalar parameters
        self.array_args = [k for k, p in enumerate(kernel.params)
                           if isinstance(p.value.type, ArrayType)]
        self.scalar_args = [k for k, p in enumerate(kernel.params)
                            if not isinstance(p.value.type, ArrayType)]
        self.variants: dict[Key, _Variant] = {}
        # the variant key of launches whose arrays all take the fast path, by the masks (of
        # positions among the arrays) of those with a last stride of one element and of
        # those whose buffer another one shares
        self.small_keys: dict[tuple[int, int], Key] = {}
        # Compile errors surface at the first call; its variant is the common one, every
        # array with a last stride of one element.
        base = self.variant(frozenset(), True, frozenset(
            p.value.id for p in kernel.params
            if isinstance(p.value.type, ArrayType) and p.value.type.ndim), frozenset())
        self.plan = base.program.plan
        # whether each array parameter has a storage buffer (the same in every variant)
        self.binds = base.binds
        self.ncarry = self.plan.slots
        # Reused by every launch: the stream orders launches, so one launch's stages read
        # the carry its own serial stages wrote (a fresh pair per launch would hold two
        # allocations per queued launch until its batch has run).
        self.carry = VkArray.empty(st, (max(self.ncarry, 1),), np.uint64)
        # The debug record (RECORD_WORDS: the record and the loop guard's slot); without
        # debug mode, the loop guard's buffer, checked at the next synchronisation.
        self.err = VkArray.empty(st, (RECORD_WORDS,), np.int64)
        if self.guard is not None and not debug:
            self.err = VkArray(st, self.guard.alloc, np.dtype(np.int64), (RECORD_WORDS,), (8,))
        self._params: Any = None

    def params(self, nbytes: int) -> Any:
        """The device buffer of the parameter blocks that do not fit push constants: one per
        launcher, rewritten before each dispatch in the stream's order (so its descriptor
        set is written once, and a launch allocates nothing)."""
        if self._params is None or self._params.size < nbytes:
            self._params = pool(self.st).alloc(nbytes)
        return self._params

    def variant(self, wide: frozenset[int], narrow: bool, unit: frozenset[int],
                aliased: frozenset[int]) -> _Variant:
        """The modules for arrays `wide` (past the binding range) addressed by address,
        with 32-bit element offsets where `narrow` (every buffer below NARROW bytes),
        arrays `unit` (a last stride of one element) indexed without that stride, and
        arrays `aliased` (on a buffer another array parameter is on too) declared Aliased
        (SPIR-V takes storage buffers not to alias otherwise)."""
        key = (wide, narrow, unit, aliased)
        found = self.variants.get(key)
        if found is None:
            caps = caps_of(self.st)
            if self.mark:
                caps["loop_guard"] = self.mark
            try:
                prog = render_spirv(self.kernel, debug=self.debug, caps=caps,
                                    wide=wide, narrow=narrow, unit=unit, aliased=aliased)
            except TypeError as exc:
                raise KernelTypeError(f"Kernel '{self.kernel.name}': {exc}") from None
            found = self.variants[key] = _Variant(self.st, prog, self.kernel,
                                                  self.array_args)
        return found

    def _arguments(self, v: _Variant, native: Sequence[Any]
                   ) -> tuple[list[Any], dict[int, Any], list[Any]]:
        """(buffers of the array parameters, host environment, host copies to write back);
        fills the parameters' slots of `v.values`."""
        buffers: list[Any] = []
        env: dict[int, Any] = {}
        copies: list[Any] = []
        values = v.values
        for k, (vid, addr, off, shape, strides), bind in zip(self.array_args, v.arrays, v.binds,
                                                            strict=True):
            x = native[k]
            if type(x) is np.ndarray:
                dev = VkArray.from_host(self.st, x)
                copies.append((x, dev))
                x = dev
            env[vid] = x
            # Any array-like with base_data (an Allocation), elem_offset, shape and
            # elem_strides(): VkArrays and the namespace kernels' windows.
            alloc = x.base_data
            if bind:
                buffers.append(alloc)
            if addr >= 0:
                values[addr] = alloc.address
            values[off] = x.elem_offset
            for slot, size in zip(shape, x.shape, strict=True):
                values[slot] = size
            for slot, stride in zip(strides, x.elem_strides(), strict=True):
                values[slot] = stride
        self._fill_scalars(v, native, env)
        return buffers, env, copies

    def _shapes(self, native: Sequence[Any]) -> Key:
        """(array parameters whose buffers are larger than one binding may cover, whether
        every buffer is smaller than NARROW bytes, array parameters whose last stride is
        one element, array parameters on a buffer another one is on too: host arrays,
        copied for the launch, are counted among neither of the last two)."""
        wide = []
        unit = []
        narrow = True
        max_range = self.max_range
        blocks: dict[Any, list[int]] = {}
        for k, bind in zip(self.array_args, self.binds, strict=True):
            x = native[k]
            alloc = getattr(x, "base_data", None)
            if type(x) is not np.ndarray:
                if unit_last(x):
                    unit.append(self.kernel.params[k].value.id)
                if alloc is not None and bind:  # (an array without a buffer aliases none)
                    blocks.setdefault(alloc.block, []).append(self.kernel.params[k].value.id)
            # (no allocation: a host array, copied for the launch, or an empty window)
            if (alloc.size if alloc is not None else getattr(x, "nbytes", 0)) >= NARROW:
                narrow = False
            if alloc is not None and alloc.size > max_range:
                p = self.kernel.params[k]
                if not alloc.address:
                    raise MemoryError(
                        f"Argument '{p.name}' of kernel '{self.kernel.name}' spans "
                        f"{alloc.size:,} bytes, more than {self.st.label} binds at once "
                        f"({max_range:,}), and the device has no buffer device "
                        "addresses to reach it otherwise. Use smaller arrays.")
                wide.append(p.value.id)
        aliased = frozenset(v for ids in blocks.values() if len(ids) > 1 for v in ids)
        return frozenset(wide), narrow, frozenset(unit), aliased

    def _layouts(self, native: Sequence[Any]) -> tuple[list[tuple[Any, ...]], Key] | None:
        """(each array parameter's `VkArray.launch_layout()`, the variant key) when every
        one is a VkArray whose buffer is below NARROW bytes and within one binding (the
        narrow program of no wide arrays); else None (`_shapes` decides)."""
        small = min(NARROW, self.max_range + 1)  # (NARROW read here: tests lower it)
        out = []
        mask = 0
        bit = 1
        for k in self.array_args:
            x = native[k]
            if type(x) is not VkArray:
                return None
            layout = x._launch or x.launch_layout()
            if layout[2] >= small:
                return None
            if layout[3]:
                mask |= bit
            bit <<= 1
            out.append(layout)
        shared = 0
        # (one Allocation per loan of a buffer, shared by the views of an array)
        if len(out) > 1 and len({id(layout[0]) for layout in out}) < len(out):
            # (an array without a buffer aliases none)
            allocs = [layout[0] if bind else None for layout, bind in zip(out, self.binds,
                                                                           strict=True)]
            for pos, alloc in enumerate(allocs):
                if alloc is not None and allocs.count(alloc) > 1:
                    shared |= 1 << pos
        key = self.small_keys.get((mask, shared))
        if key is None:
            ids = [self.kernel.params[k].value.id for k in self.array_args]
            key = self.small_keys[(mask, shared)] = (
                frozenset(), True, frozenset(v for pos, v in enumerate(ids) if mask >> pos & 1),
                frozenset(v for pos, v in enumerate(ids) if shared >> pos & 1))
        return out, key

    def _fast_arguments(self, v: _Variant, native: Sequence[Any],
                        layouts: list[tuple[Any, ...]]) -> tuple[list[Any], dict[int, Any]]:
        """`_arguments` for arrays given by their layouts (`_layouts`), which need no host
        copies."""
        buffers: list[Any] = []
        env: dict[int, Any] = {}
        values = v.values
        for (k, vid, slots, bind), (alloc, numbers, _, _) in zip(v.array_fill, layouts,
                                                                 strict=True):
            env[vid] = native[k]
            if bind:
                buffers.append(alloc)
            for slot, number in zip(slots, numbers, strict=True):
                values[slot] = number
        self._fill_scalars(v, native, env)
        return buffers, env

    def _fill_scalars(self, v: _Variant, native: Sequence[Any], env: dict[int, Any]) -> None:
        """Put the scalar arguments into `v.values` (a complex one as two slots) and `env`."""
        values = v.values
        for k, (vid, slot, np_type, kind) in zip(self.scalar_args, v.scalars, strict=True):
            value = np_type(native[k])
            env[vid] = value
            if kind is complex:
                values[slot] = float(value.real)
                values[slot + 1] = float(value.imag)
            else:
                values[slot] = kind(value)

    def _scalar_bytes(self, v: _Variant) -> bytes:
        values = v.values
        return v.scalar_struct.pack(*[values[slot] for slot in v.scalar_slots])

    def _replay(self, args: Sequence[Any], native: Sequence[Any], v: _Variant,
                layouts: list[tuple[Any, ...]]) -> bool:
        """Issue the dispatches of this variant's last launch again when this launch's
        arguments pack the same (scalars bit for bit, every array on the same block with the
        same offset, shape and strides): nothing is evaluated or packed. False when they
        differ."""
        memo = v.memo
        assert memo is not None
        scalar_bytes, arrays, dispatches = memo
        values = v.values
        for k, (_, slot, np_type, kind) in zip(self.scalar_args, v.scalars, strict=True):
            value = np_type(native[k])
            if kind is complex:
                values[slot] = float(value.real)
                values[slot + 1] = float(value.imag)
            else:
                values[slot] = kind(value)
        if v.scalar_slots and self._scalar_bytes(v) != scalar_bytes:
            return False
        buffers = []
        for (alloc, numbers, _, _), (block, known), bind in zip(layouts, arrays, v.binds,
                                                                strict=True):
            if numbers != known:
                return False
            if not bind:  # (its buffer is not bound: its numbers alone are in the block)
                continue
            if alloc is None:
                if block is not None:
                    return False
                alloc = _pipelines.dummy(self.st)
            elif alloc.block is not block:
                return False
            buffers.append(alloc)
        buffers += (self.carry.alloc, self.err.alloc)
        for pipe, groups, raw in dispatches:
            self._issue(v, pipe, groups, buffers, raw)
        self.bump(args)
        return True

    def _issue(self, v: _Variant, pipe: Any, groups: tuple[int, int, int], bound: list[Any],
               raw: bytes) -> None:
        """Add one stage's dispatch to the stream, its parameter block `raw` in push
        constants or in the launcher's parameter buffer."""
        if v.program.push:
            pipe.enqueue(groups, bound, raw)
        else:  # the stream orders the update after the dispatches reading it
            params = self.params(len(raw))
            self.stream.update(params, 0, raw)
            pipe.enqueue(groups, [*bound, params], b"")

    def __call__(self, args: Sequence[Any]) -> None:
        native = self.pack(args)
        found = self._layouts(native)
        layouts: list[tuple[Any, ...]] | None = None
        if found is None:
            key = self._shapes(native)
        else:
            layouts, key = found
        v = self.variants.get(key) or self.variant(*key)
        try:
            self._launch(args, native, v, layouts)
        except _Narrow:  # an offset or stride past 32 bits: the 64-bit program
            self._launch(args, native, self.variant(key[0], False, key[2], key[3]), None)

    def _launch(self, args: Sequence[Any], native: Sequence[Any], v: _Variant,
                layouts: list[tuple[Any, ...]] | None) -> None:
        if layouts is not None and v.memo is not None and not self.debug:
            if self._replay(args, native, v, layouts):
                return
        copies: list[Any]
        if layouts is None:
            buffers, env, copies = self._arguments(v, native)
        else:
            (buffers, env), copies = self._fast_arguments(v, native, layouts), []
        plan = self.plan
        plan.evaluate_host(env)
        carry, err = self.carry, self.err
        assert err.alloc is not None
        if self.debug:
            self.stream.fill(err.alloc, 0, RECORD_WORDS * 8, 0)
        carried: np.ndarray | None = None
        values = v.values
        bound = [*buffers, carry.alloc, err.alloc]
        if None in bound:  # an empty array: a binding must name a buffer
            bound = [b if b is not None else _pipelines.dummy(self.st) for b in bound]
        retried = False
        # what `_replay` may repeat: none where a bound came from the device
        dispatches: list[Any] | None = [] if layouts is not None and not self.debug else None
        try:
            for stage, pipe in zip(plan.stages, v.pipelines, strict=True):
                total = 1
                for loop, (b_slot, n_slot) in zip(stage.loops, v.loops, strict=False):
                    if carried is None and not (loop.begin.id in env and loop.end.id in env):
                        carried = carry.to_host()
                        dispatches = None
                    b = plan.bound(loop.begin, env, carried)
                    n = max(plan.bound(loop.end, env, carried) - b, 0)
                    values[b_slot] = b
                    values[n_slot] = max(n, 1)
                    total *= n
                if stage.loops and total == 0:
                    continue
                values[v.total] = total
                groups = (1, 1, 1)
                if stage.loops:  # a grid-stride loop: each invocation may run several
                    groups = (min(-(-total // LOCAL), GROUPS), 1, 1)
                    if self.limit and total > (self.limit - 1) * GROUPS * LOCAL:
                        # a driver that ends loops early would end the grid loop itself
                        # (a stage whose body has no loop carries no guard: spirv/render.py)
                        raise LoopLimitError(message(self.kernel.name, self.st.label,
                                                     self.limit))
                try:
                    raw = v.struct.pack(*values)
                except struct.error:
                    # Array slots are the same in every stage: the first one packed fails,
                    # before anything of this launch is recorded (but a debug record's fill).
                    if v.narrowed:
                        retried = True
                        raise _Narrow from None
                    raise
                self._issue(v, pipe, groups, bound, raw)
                if dispatches is not None:
                    dispatches.append((pipe, groups, raw))
                if not stage.loops:
                    carried = None  # a serial stage may have written the carry buffer
            for host, dev in copies:
                host[...] = dev.to_host()
            if dispatches is not None and layouts is not None:
                v.memo = (self._scalar_bytes(v) if v.scalar_slots else b"",
                          [(a.block if a is not None else None, numbers)
                           for a, numbers, _, _ in layouts], dispatches)
        finally:
            if not retried:
                self.bump(args)
        if self.debug:
            record = err.to_host()
            if self.guard is not None and record[CUT_SLOT]:
                self.guard.raise_cut(int(record[CUT_SLOT]))
            self.check(record[:RECORD_LENGTH], native)


# Work-items of a max-reduction on a CPU implementation (lavapipe): each invocation costs far
# more there than on a GPU, and a few thousand fill every core (GPUs get the reducer's
# default, ad/reducer.STRIDED_ITEMS).
CPU_REDUCTION_ITEMS = 16384


def _reduction_items(device: Device) -> int:
    if _instance.state(device.index).kind == "CPU":
        return CPU_REDUCTION_ITEMS
    return 1 << 30  # no cap beyond the reducer's own


def _int64_atomics(device: Device) -> bool:
    return device is not None and bool(_instance.state(device.index).features["int64_atomics"])


class VulkanKernels(DeviceKernels):
    """The kernel target of Vulkan devices (module docstring)."""

    name = "spirv"
    # The max-reducer in one pass where the device has 64-bit atomics (its uint64 atomic
    # max, reduced per workgroup first: codegen/spirv/blocks.py), else partial maxima.
    reduction = ReductionLayout(strided=True, single_pass=_int64_atomics,
                                work_items=_reduction_items)
    # Adstacks depth-major within groups of 32 invocations (a subgroup of most GPUs).
    adstack = StackLayout(group=32)

    def render(self, kernel: KernelIR, *, debug: bool, device: Device) -> str:
        """The stages' SPIR-V modules, as words in hex under a header line each
        (`spirv-dis` disassembles the bytes of `render_spirv(...).stages[k].spirv`)."""
        st = _instance.state(device.index)
        caps = caps_of(st)
        if loop_limit(st):
            caps["loop_guard"] = guard(st, loop_limit(st)).mark(kernel.name)
        prog = render_spirv(kernel, debug=debug, caps=caps)
        return "\n".join(f"; {s.name}\n{s.spirv.hex()}" for s in prog.stages)

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Device) -> VulkanLauncher:
        return VulkanLauncher(kernel, packers, bumps, debug, device)




TARGET = VulkanKernels()
