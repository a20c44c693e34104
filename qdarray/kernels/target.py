"""What the kernel compiler and reverse mode ask of a device: its kernel target.

Every device backend (`qdarray/backends/`) carries a `KernelTarget` as `backend.target`: one
object per device kind that renders lowered IR in the device's language, loads it and returns
a launcher, and states the policies that depend on the device (the max-reducer's layout, the
memory that a launch's own buffers live in). The compiler (`launch.py`) and reverse mode
(`qdarray/ad/`) only ever call these methods: they never compare device kinds or target
names. The interpreter is a target too (`interp.INTERP`), used by `kernel.interpret()`.

A new device implements this protocol in its backend package; see docs/writing_a_device.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import debug as debug_mod
from . import error_record
from .generations import compile_bump
from .ir import For, KernelIR, Op, instrs, walk


@dataclass(frozen=True)
class ReductionLayout:
    """How the max-reducer (qdarray/ad/sizing/max_reducer.py) lays out a reduction on a target.

    Attributes:
        strided: each work-item c reads elements c, c + n, c + 2n, ... (neighbouring
            work-items read neighbouring elements: GPUs); False: each work-item reduces one
            contiguous chunk (vectorizable inner loops: CPUs).
        single_pass: one launch that folds each work-item's maximum into one element with an
            atomic max (of uint64), which the target reduces within a block first; needs
            `strided`. A callable says it per device (Vulkan devices without 64-bit
            atomics write partial maxima instead).
        serial_below: contiguous chunks: a reduction of fewer elements is one chunk (the
            launcher runs it serially), a larger one at least this many chunks.
        work_items: strided: the most work-items of one reduction on a device (None: the
            reducer's default, enough to keep a GPU's memory busy).
    """

    strided: bool = False
    single_pass: bool | Callable[[Any], bool] = False
    serial_below: int = 1
    work_items: Callable[[Any], int] | None = None

    def one_pass(self, device: Any) -> bool:
        """Whether reductions on `device` run as the single pass."""
        if callable(self.single_pass):
            return bool(self.single_pass(device))
        return self.single_pass


@dataclass(frozen=True)
class StackLayout:
    """Where reverse mode keeps adstack entries on a target (qdarray/ad/transform/adstack.py).

    Packed (`scratch` False): the whole launch's entries live in one heap per dtype. The
    threads of a parallel loop are taken in groups of `group` consecutive threads (flat
    index t: group t // group, lane t % group). Within a group the entries of one depth are
    adjacent (depth-major), so a warp or work-group whose threads push at the same depth
    writes one contiguous run, and one thread's entries are `group` apart; with `group` 1
    each thread's stack is one contiguous slice. Each group's region is as large as its
    threads' own capacities (a prefix sum of them places the regions), and a thread at depth
    d whose group-mates' stacks are shallower shares no slot with them.

    Scratch (`scratch` True; CPUs): only the threads that the host's workers run at one
    moment need entries, so each worker thread owns one region of `group` x capacity entries
    per stack, reused by every thread (or lane group) it runs one after the other: lane k of
    a group (the kernel's LANE) keeps its entries at `k * capacity` of its worker's (WORKER)
    region, contiguous. A thread's forward replay and its reverse run back to back, so its
    entries stay in the core's cache instead of streaming a launch-sized tape through memory.
    Each lane has its own depth (masked pushes and pops), and a push past the capacity is
    recorded as in the packed layout. Stacks of a kernel's serial code stay packed.

    Attributes:
        group: packed: threads per group: a GPU's warp or sub-group (coalesced pushes and
            pops), 1 where threads run one at a time. Scratch: the most threads that run
            together in the lanes of one worker (the lane group width; 1 without lanes).
        scratch: the scratch layout (see above) instead of the packed one.
        workers: scratch: the number of worker threads whose regions a launch allocates
            (asked at each launch; every WORKER value is below it).
        narrow: packed: a launch whose heap positions and table fit 31 bits runs a variant
            of the reverse kernel that computes them in 32 bits (passes/lower_adstack.py),
            where 64-bit integer arithmetic costs two instructions (GPUs).
    """

    group: int = 1
    scratch: bool = False
    workers: Callable[[], int] | None = None
    narrow: bool = False

    def regions(self) -> int:
        """Scratch: the worker regions of one launch."""
        return max(int(self.workers()), 1) if self.workers is not None else 1


class Launcher:
    """Per-signature launch: pack, run, bump generations, report debug errors. A target's
    launcher adds `__call__(args)`; `module_key` names its compiled code in the disk cache
    (None: not kept there; see `KernelTarget.caches_modules`)."""

    module_key: str | None = None
    # What the compile read from Python (env.Recorder; None: not recorded), see entries.py
    deps: list[tuple[tuple[str, ...], str]] | None = None
    # What this process checks at each call (env.Recorder.watched: also what has no
    # fingerprint, by identity)
    watched: list[tuple[tuple[str, ...], str]] | None = None
    # What the kernel reads and writes of each array parameter (regions.derive; None for
    # kernels qdarray builds itself)
    access: Any = None
    # the tape's evaluator of `access` (ad/tape/snapshots.py), made on first use
    regions: Any = None
    leaves: Any = None  # args.array_leaves for this signature, made on first use
    recorder: Any = None  # the tape's recording function (ad/tape/kernel_records.py; False: none)
    reverses: Any = None  # the reverse launchers of this signature (ad/launch.py)
    # Set by the kernel that compiled it (kernel.py): whether arguments have its signature
    # (args.compile_fits), and the note of what a launch read (bound_reads.compile_record)
    fits: Any = None
    record_reads: Any = None

    # The native values of a launch's arguments: `pack_all`, or the same as straight-line
    # code written for the signature (kernels/launch.py: compile_pack)
    pack: Callable[[Sequence[Any]], list[Any]]

    def __init__(self, kernel: KernelIR, packers: list[Any], bumps: list[Any]) -> None:
        self.kernel = kernel
        self.packers = packers
        self.bumps = bumps
        self.bump = compile_bump(bumps)  # the write generations after a launch
        self.sites = {i.attrs[0]: i for i in instrs(kernel.body) if i.op is Op.CHECK_INDEX}
        self.pack = self.pack_all

    def pack_all(self, args: Sequence[Any]) -> list[Any]:
        native: list[Any] = []
        for p, a in zip(self.packers, args):  # noqa: B905 - lengths checked by the kernel
            p(a, native)
        return native

    def check(self, record: np.ndarray, native: Sequence[Any]) -> None:
        """Raise the failed index check a debug-mode launch wrote into its error record
        (`native`: the packed arguments of the launch); nothing when no check failed."""
        if record[error_record.SITE]:
            raise self.decode(record, native)

    def decode(self, err: np.ndarray, native: Sequence[Any]) -> Exception:
        """The exception of a claimed error record (error_record.py)."""
        site_id, thread, vals = error_record.read(err)
        site = self.sites[site_id]
        _, name, kind = debug_mod.site_info(site.attrs)
        offset = None
        if kind in ("view", "subview"):
            for p, v in zip(self.kernel.params, native, strict=True):
                if p.name == f"{name}@offset":
                    offset = int(v)
        return debug_mod.check_error(self.kernel.name, site.attrs, vals, thread,
                                     site.loc.frames(), offset)


class KernelTarget(Protocol):
    """A device kind's kernel target (see the module docstring).

    Attributes:
        name: the target's name in cache keys and messages ("numba_cpu", "opencl_c", ...).
        lowers_views: whether its kernels take views lowered to (base, offset, size); the
            interpreter takes views whole.
        caches_modules: whether its launchers' compiled code is kept in the disk cache under
            a key (`Launcher.module_key`), so that reverse-mode plans can name it and a later
            process can load it again (`cached_launcher`).
        reduction: the max-reducer's layout on this target.
        adstack: where reverse kernels keep their adstack entries on this target.
    """

    name: str
    lowers_views: bool
    caches_modules: bool
    reduction: ReductionLayout
    adstack: StackLayout

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        """The source the target generates for `kernel` (after the compile pipeline)."""
        ...

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> Launcher:
        """Render, load and wrap `kernel` (after the compile pipeline) as a launcher for
        arrays on `device`; `packers` pack each argument, `bumps` name the written arrays."""
        ...

    def cached_launcher(self, key: str, kernel: KernelIR, packers: list[Any],
                        bumps: list[Any], *, debug: bool, device: Any) -> Launcher | None:
        """The launcher of the compiled code stored under `key` (`Launcher.module_key`),
        with `kernel` a skeleton of its IR (parameters and check sites); None when the disk
        cache no longer holds it (or the target keeps nothing there)."""
        ...

    def buffer_device(self, device: Any) -> Any:
        """The device whose memory holds the buffers a launch makes for itself (adstack
        heaps, counters, partial maxima) when its arrays are on `device`; None: host
        memory (NumPy arrays)."""
        ...


class DeviceKernels:
    """The defaults of a device's kernel target, which a target subclasses: views lowered,
    no disk cache of compiled code, the reducer's chunked layout, each thread's adstacks
    contiguous, the launch's own buffers in the device's memory. A subclass sets `name` (and
    `reduction` or `adstack` where the device wants another layout) and writes `render` and
    `launcher`."""

    name = "device"
    lowers_views = True
    caches_modules = False
    reduction = ReductionLayout()
    adstack = StackLayout()

    def render(self, kernel: KernelIR, *, debug: bool, device: Any) -> str:
        raise NotImplementedError

    def launcher(self, kernel: KernelIR, packers: list[Any], bumps: list[Any], *,
                 debug: bool, device: Any) -> Launcher:
        raise NotImplementedError

    def cached_launcher(self, key: str, kernel: KernelIR, packers: list[Any],
                        bumps: list[Any], *, debug: bool, device: Any) -> Launcher | None:
        return None

    def buffer_device(self, device: Any) -> Any:
        return device


def target_of(device: Any) -> KernelTarget:
    """The kernel target of `device`'s backend; NotImplementedError for a device whose
    backend has none yet."""
    target: KernelTarget | None = device.backend.target
    if target is None:
        raise NotImplementedError(
            f"Kernels on {device} need a kernel target for its device kind, which qdarray "
            "does not have yet. Use a CPU array (x.to_device('cpu')) or kernel.interpret(...).")
    return target


def float64_use(kernel: KernelIR) -> str | None:
    """Where `kernel` first uses float64 or complex128 (a parameter, a value, a loop index),
    for the error of a device without double precision; None where it does not."""
    wide = ("float64", "complex128")
    for p in kernel.params:
        t = p.value.type
        dt = getattr(t, "dtype", t)  # an array's element type, or the scalar's
        if getattr(dt, "name", "") in wide:
            return f"parameter '{p.name}'"
    for s in walk(kernel.body):
        result = getattr(s, "result", None)
        if result is not None and getattr(result.type, "name", "") in wide:
            return f"a float64 value at {s.loc.file}:{s.loc.line}"
        if isinstance(s, For) and getattr(s.index.type, "name", "") == "float64":
            return "a float64 loop index"
    return None
