"""Launching reverse kernels: compile once per signature, size the stacks, run, check.

`kernel.grad(*args)` (and `kernel.grad.interpret(*args)`) land in `launch_reverse`. A
`ReverseLauncher` is built once per (signature, which arguments have gradients, debug mode,
kernel target) from the kernel's `ReversePlan` (`ad/transform/plan.py`): it holds the compiled
reverse kernel, the compiled counting kernel and the stacks' `Sizer`. On targets that keep their
modules in the disk cache (`KernelTarget.caches_modules`) the plan is stored there too
(`ad/transform/plan_json.py`), so another process builds the launcher from it without running the
reverse-mode transform. Everything device-specific comes from the kernel target: how kernels
compile and launch, where the launch's own buffers live, how the max-reducer is laid out.

Each call checks that the integer arrays the forward launch read are unchanged
(`kernels/bound_reads.py`), sizes the stacks (nothing to do when the sizing cache holds the
answer), takes heap buffers from the pool (reused across launches), runs the reverse, raises
`AdStackOverflowError` if a push went past its capacity, and bumps the write generation of the
gradients it wrote.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _dtypes
from .._array import Array
from .._errors import AdStackSizingError, AutodiffError
from ..buffer_view import BufferView
from ..kernels.args import KEY_FUNCS, ArgSpec, signature_key
from ..kernels.bound_reads import buffer_at, read_paths
from ..kernels.cache import count
from ..kernels.debug import _state
from ..kernels.entries import entry_key
from ..kernels.env import Pinned, Recorder, changed, fingerprint, holds
from ..kernels.ir import KernelIR, Param, Value
from ..kernels.launch import compile_ir, compile_pack, packer, signature, written_paths
from ..kernels.target import KernelTarget, target_of
from ..kernels.types import ArrayType, ViewType
from .aliasing import check_pairs, check_wrappers, wrapper_pairs
from .device_buffers import DeviceBuffers
from .heaps import check_overflow, heap_sizes
from .sizing import at_launch as sizer_mod
from .sizing.at_launch import STATS, Entry, Sizer
from .sizing.checkpoint_stride import Checkpointer, uncountable
from .sizing.packed_layout import Packed, Packer, TooLarge
from .sizing.thread_caps import ThreadCaps
from .tape.snapshots import refuse_own_overwrites
from .transform.plan import COUNT_SLOTS, KernelRecord, ReversePlan, launcher_of, plan_of, record_of
from .transform.plan_json import load_plan, store_plan

if TYPE_CHECKING:
    from .transform.reverse_kernel import Reverse

# Heaps of this many bytes or more are never attempted (nor their offsets put in int64).
MAX_HEAP_BYTES = 1 << 62

_HEAPS_IN_USE = threading.Lock()
# What `execute` reports of each launch in `STATS`
_LAUNCH_STATS = ("adstack_bytes", "adstack_index_bytes", "checkpoint_stride", "reordered_tasks",
                 "group_efficiency", "group_efficiency_reordered", "adstack_position_bits")
_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, ReverseLauncher]] = weakref.WeakKeyDictionary()


def flatten(specs: Sequence[tuple[str, ArgSpec]], args: Sequence[Any]) -> list[tuple[str, Any]]:
    """(parameter name, argument) for every kernel parameter, dataclass fields included."""
    out: list[tuple[str, Any]] = []
    for (name, spec), arg in zip(specs, args, strict=True):
        if spec.kind == "struct":
            out += flatten([(f"{name}.{f}", s) for f, s in spec.fields],
                           [getattr(arg, f) for f, _ in spec.fields])
        else:
            out.append((name, arg))
    return out


def flattener(specs: Sequence[tuple[str, ArgSpec]]) -> Any:
    """`[a for _, a in flatten(specs, args)]` as one generated function of `args`."""
    items: list[str] = []

    def walk(spec: ArgSpec, expr: str) -> None:
        if spec.kind == "struct":
            for f, s in spec.fields:
                walk(s, f"{expr}.{f}")
        else:
            items.append(expr)

    for k, (_, spec) in enumerate(specs):
        walk(spec, f"args[{k}]")
    namespace: dict[str, Any] = {}
    exec(f"def flat(args):\n    return [{', '.join(items)}]\n",  # noqa: S102 - our text
         namespace)
    return namespace["flat"]


def grad_of(arg: Any) -> Any:
    """The gradient companion of an Array or BufferView argument (None if it has none)."""
    t = type(arg)
    if t is Array or t is BufferView:
        return arg.grad
    return None


def _array_spec(dtype: Any) -> ArgSpec:
    return ArgSpec("array", ArrayType(dtype, 1))


class ReverseLauncher:
    """The reverse of one kernel for one signature (see the module docstring)."""

    def __init__(self, kernel: Any, plan: ReversePlan, specs: list[tuple[str, ArgSpec]],
                 target: KernelTarget, debug: bool, written: Sequence[str],
                 device: Any, rev: Any = None, checkpointed: bool = False) -> None:
        """`rev` is the Reverse the plan comes from, or a function building it (called only
        when a kernel the plan records is not in the disk cache any more); `checkpointed`:
        the plan's loops keep every k-th state, k the launch's stride
        (ad/transform/checkpoint.py)."""
        self.name = kernel.__name__
        self.kernel = kernel
        self.plan = plan
        # the transform's result, or the function that builds it (None once it has run)
        self._rev = None if callable(rev) else rev
        self._build = rev if callable(rev) else None
        self.specs = specs
        self.target = target
        self.debug = debug
        self.flat_args = not any(s.kind == "struct" for _, s in specs)
        self.flat = None if self.flat_args else flattener(specs)
        i64 = _dtypes.int64
        ext: list[ArgSpec] = [s for _, s in specs]
        names = [n for n, _ in specs]
        bumps = []
        for name, t in plan.extra:
            if name.endswith("@grad"):
                bumps.append((len(ext), ()))
                ext.append(ArgSpec("view", t) if isinstance(t, ViewType) else ArgSpec("array", t))
            elif name == "@checkpoint":
                ext.append(ArgSpec("scalar", t))
            else:
                ext.append(ArgSpec("array", t))
            names.append(name)
        self.device = device
        # the launch's own buffers (heaps, layout, flags, counts), where the target keeps them
        self.buffers = DeviceBuffers(target.buffer_device(device))
        self.run = self._compile(plan.reverse, "kernel", ext, names, bumps)
        # the variant with 32-bit tape positions (compiled at its first launch), or None
        self.narrow: Any = None
        self.narrow_args: tuple[Any, ...] | None = None
        if target.adstack.narrow and not debug and "@adstack_table" in names:
            at = names.index("@adstack_table")
            ext32 = list(ext)
            ext32[at] = _array_spec(_dtypes.int32)
            self.narrow_args = (ext32, names, bumps)
        self.count_specs = [s for _, s in specs] + [_array_spec(i64), _array_spec(i64)]
        self.count_names = [n for n, _ in specs] + ["@counts", "@starts"]
        self.counter: Any = None
        self.exprs = list(plan.exprs)
        self.threads = list(plan.threads)
        named = list(plan.params) + ([("@checkpoint", i64)] if checkpointed else [])
        params = [Param(n, Value(k, t)) for k, (n, t) in enumerate(named)]
        # A checkpointed kernel's stacks are sized by their expressions only: the counting
        # pass sweeps forward, not the blocks its reverse runs again.
        count = uncountable if checkpointed else self.count
        self.sizer = Sizer(self.exprs, self.threads, params, plan.count_deps, count,
                           [s.id for s in plan.stacks], plan.n_stacks, target, device,
                           fits=None if checkpointed or not _may_exit_early(kernel.fn)
                           else self.fits)
        self.written = tuple(written)
        self.deps: list[tuple[tuple[str, ...], str]] | None = None
        self.watched: list[tuple[tuple[str, ...], str]] = []
        self.reads = read_paths(specs, written_paths(kernel.param_names, written))
        self.packer = Packer(target, device)
        self.thread_caps = ThreadCaps(plan, self.sizer, None if checkpointed else self.count,
                                      target, device)
        self.checkpointer = Checkpointer(self)
        self.no_starts: Any = None
        self.overflow = self.buffers.zeros(max(plan.n_stacks, 1), np.int64)
        self.no_overflow = np.zeros(max(plan.n_stacks, 1), np.int64).tobytes()
        # (sizing, packed layout, MemoryError message) of the last sizing, and those of the
        # last few sizings, most recent first (a program alternating between inputs keeps
        # each one's layout, as the sizer keeps each one's sizing)
        self.sized: tuple[Any, ...] = (None,)
        self.layouts: list[tuple[Any, ...]] = []
        # A reverse without stacks, heaps or scratch needs no sizing: after its first launch
        # (which records the statistics it leaves) it runs straight (see `launch`).
        self.straight = not (plan.n_stacks or plan.heaps or plan.outer_slots or checkpointed)
        self.fast: Any = None  # the straight launch written out (compile_straight)

    @property
    def rev(self) -> Reverse:
        """The transform's result for this launcher (built now if it was loaded from a
        stored plan)."""
        if self._build is not None:
            self._rev = self._build()[0]
            self._build = None
        return self._rev  # type: ignore[return-value]

    def _compile(self, record: KernelRecord | None, which: str, specs: list[ArgSpec],
                 names: list[str], bumps: list[Any]) -> Any:
        """A launcher of the reverse ("kernel") or counting ("counting") kernel: from the
        plan's record when it has one and its module is in the disk cache, else from IR."""
        if record is not None:
            lowers = self.target.lowers_views
            packers = [packer(s, f"{record.name}() argument '{n}'", not lowers,
                              exact=self.debug) for n, s in zip(names, specs, strict=True)]
            launcher = launcher_of(record, packers, bumps, self.target, self.debug,
                                   self.device)
            if launcher is not None:
                launcher.pack = compile_pack(packers)
                return launcher
        ir: KernelIR = getattr(self.rev, which)
        return compile_ir(ir, specs, names, self.target, self.debug, bumps, self.device)

    def counting_launcher(self) -> Any:
        """The compiled counting kernel (compiled on first use)."""
        if self.counter is None:
            self.counter = self._compile(self.plan.counting, "counting", self.count_specs,
                                         self.count_names, [])
        return self.counter

    def count(self, args: Sequence[Any], per_thread: tuple[int, Any] | None = None) -> Any:
        """Run the counting kernel: the counts array (`reverse.counting_kernel`; an Array
        in device memory on devices other than the CPU). `per_thread`: (the array's length,
        the `starts` array) where threads also store their own depths."""
        counter = self.counting_launcher()
        plan = self.plan
        if per_thread is None:
            if self.no_starts is None:
                self.no_starts = self.buffers.upload(np.full(max(plan.n_stacks, 1), -1,
                                                             np.int64))
            per_thread = (plan.n_stacks * COUNT_SLOTS + plan.n_tasks, self.no_starts)
        n, starts = per_thread
        counts = self.buffers.as_argument(self.buffers.zeros(n, np.int64))
        counter(list(args) + [counts, starts])
        return counts

    def __call__(self, args: Sequence[Any], check: bool = True) -> None:
        fast = self.fast
        if fast is not None:  # no adstacks: no heap buffers to share
            fast(args, check)
            return
        with _HEAPS_IN_USE:  # one reverse launch at a time uses the shared heap buffers
            self.launch(args, check)

    def check_reads(self, args: Sequence[Any]) -> None:
        """Raise when an array the forward launch read was written since."""
        reads = self.kernel._reads
        if not reads:
            return
        for index, path in self.reads:
            buf = buffer_at(args, index, path)
            seen = reads.seen(buf) if buf is not None else None
            if seen is None or seen == buf.generation:
                continue
            name = ".".join((self.kernel.param_names[index],) + path)
            spec = self.specs[index][1]
            for field in path:
                spec = dict(spec.fields)[field]
            what = (f"'{name}', an array kernel '{self.name}' read at its forward launch, was "
                    f"written after that launch and before its reverse ({self.name}.grad)")
            fix = (f"Run {self.name}(...) again before {self.name}.grad(...), or write to a "
                   "copy (qd.asarray(x, copy=True)) instead.")
            if spec.type.dtype.kind in "iu":
                raise AdStackSizingError(
                    f"{what}. It may bound loops (or give indices), so the reverse would size "
                    f"and run them with the new values and the gradients would be wrong. {fix}")
            raise AutodiffError(
                f"{what}. The reverse reloads the values the forward read, so it would use "
                f"the new ones and the gradients would be wrong. {fix}")

    def read_only_gradient(self, k: int) -> None:
        name = self.plan.params[k][0]
        raise ValueError(
            f"The gradient of argument '{name}' of kernel '{self.name}' is read-only memory "
            "(a broadcast view, whose elements alias each other, or read-only data), so "
            f"{self.name}.grad cannot accumulate into it. Pass the array it views and index "
            "it in the kernel instead (x[j] for every i), or a copy without a gradient.")

    def size(self, args: Sequence[Any]) -> tuple[list[int], list[int]]:
        """The stack sizing one launch on `args` does: (capacity per live stack, thread count
        per task), from the sizing cache when the bound arrays are unchanged."""
        flat = args if self.flat is None else self.flat(args)
        return self.sizer.size(flat, args)

    def launch(self, args: Sequence[Any], check: bool = True) -> None:
        flat = args if self.flat is None else self.flat(args)
        if self.reads and check:
            self.check_reads(args)
        self.execute(args, flat, None)
        if self.straight:
            self.fast = self.compile_straight({k: STATS[k] for k in _LAUNCH_STATS}, flat)

    def compile_straight(self, stats: dict[str, Any], flat: Sequence[Any]) -> Any:
        """`fast(args, check)`: a launch of a reverse without adstacks, heaps or scratch,
        whose first launch left `stats` (`flat`: its flattened arguments, whose types are
        the signature's), written out: the read check, the statistics, each gradient
        argument (refused when read-only) and the launch."""
        lines = ["def fast(args, check):"]
        if self.reads:
            lines.append("    if check: check_reads(args)")
        lines.append("    update(STATS_OF_LAUNCH)")
        lines.append("    flat = args" if self.flat is None else "    flat = flatten(args)")
        grads = []
        for k in self.plan.grads:
            if type(flat[k]) is Array:
                lines += [f"    g{k} = flat[{k}]._grad", f"    m = g{k}._data"]
            else:
                lines += [f"    g{k} = grad_of(flat[{k}])", f"    m = g{k}._base._data"]
            lines.append("    if not getattr(getattr(m, 'flags', None), 'writeable', True): "
                         f"read_only({k})")
            grads.append(f"g{k}")
        lines.append(f"    run([*args, {', '.join(grads)}])")
        names = {"check_reads": self.check_reads, "update": STATS.update,
                 "STATS_OF_LAUNCH": stats, "flatten": self.flat, "grad_of": grad_of,
                 "read_only": self.read_only_gradient, "run": self.run}
        exec(compile("\n".join(lines) + "\n", f"<qdarray reverse of {self.name}>", "exec"),
             names)  # noqa: S102
        return names["fast"]

    def prepare(self, args: Sequence[Any], flat: Sequence[Any], stride: int | None
                ) -> tuple[Any, ...]:
        """(sizing, packed layout, MemoryError message) for a launch on `args` (`flat`:
        flattened), with checkpoint stride `stride` on a checkpointed launcher."""
        if stride is not None:
            flat = list(flat) + [stride]
        sized = self.sizer.size(flat, args)
        if sized is not self.sized[0]:
            laid = next((laid for laid in self.layouts if laid[0] is sized), None)
            if laid is None:
                self.sized = (None,)  # (a layout that fails is not kept)
                laid = (sized,) + self.layout(sized, flat, args)
            self.sized = laid
            others = [old for old in self.layouts if old is not laid]
            self.layouts = [laid, *others[: Entry.SIZE - 1]]
        return self.sized

    def execute(self, args: Sequence[Any], flat: Sequence[Any], stride: int | None) -> None:
        """Size, lay out and run (stride: a checkpointed launcher's; None: all iterations
        kept, or the checkpointed launcher when the adstacks would not fit)."""
        plan = self.plan
        sized, packed, describe = self.prepare(args, flat, stride)
        if (stride is None and self.checkpointer.needed(packed)
                and self.checkpointer.launch(args, flat, packed)):
            return
        STATS["adstack_bytes"] = packed.tape_bytes
        STATS["adstack_index_bytes"] = packed.index_bytes
        STATS["checkpoint_stride"] = stride or 0
        STATS["reordered_tasks"] = packed.reordered
        STATS["group_efficiency"] = packed.efficiency(False)
        STATS["group_efficiency_reordered"] = packed.efficiency(True)
        sizes = packed.sizes
        heaps = {d: n for d, n in sizes.items() if n}
        if len(heaps) > 1:  # each heap alone is checked as the pool gives it
            self.buffers.pool.check_total(heaps, self.describe_total(heaps))
        call = list(args)
        for k in plan.grads:
            g = grad_of(flat[k])
            memory = g._data if type(g) is Array else g._base._data
            if not getattr(getattr(memory, "flags", None), "writeable", True):
                self.read_only_gradient(k)
            call.append(g)
        if plan.outer_slots:
            call.append(self.buffers.zeros(plan.outer_slots, np.float64))
        pool = self.buffers.pool
        for d in plan.heaps:
            call.append(pool.get(d, sizes.get(d, 0), describe))
        overflow = self.overflow
        if plan.n_stacks:
            call += (packed.layout, packed.table, packed.rows, overflow)
        if stride is not None:
            call.append(stride)
        self.runner(packed, call)(call)
        if not plan.n_stacks:
            return
        # On a device, this read is the synchronisation point where an overflow is reported.
        flags = self.buffers.to_host(overflow)
        if flags.tobytes() != self.no_overflow:  # cheaper than any()
            seen = flags.copy()
            overflow[:] = 0
            check_overflow(seen, plan.stacks, sized[0], self.name)

    def runner(self, packed: Packed, call: list[Any]) -> Any:
        """The reverse kernel for this layout: the narrow variant (its table argument in
        `call` replaced by the table's int32 view) where the target has one and every heap
        position and table index fits 31 bits, else the 64-bit one."""
        if self.narrow_args is None or not fits_narrow(packed):
            STATS["adstack_position_bits"] = 64
            return self.run
        if self.narrow is None:
            from ..kernels.passes.lower_adstack import narrowed

            ext32, names, bumps = self.narrow_args
            self.narrow = compile_ir(narrowed(self.rev.kernel), ext32, names, self.target,
                                     self.debug, bumps, self.device)
        at = self.narrow_args[1].index("@adstack_table")
        call[at] = call[at].view(np.int32)
        STATS["adstack_position_bits"] = 32
        return self.narrow

    def checkpointed(self, args: Sequence[Any]) -> ReverseLauncher:
        """The launcher of this signature's checkpointed reverse (ad/transform/checkpoint.py)."""
        return prepare_reverse(self.kernel, args, self.target, self.debug, checkpoint=True)

    def fits(self, caps: list[int], threads: list[int]) -> bool:
        """Whether heaps for these sizes could be allocated on the device (a symbolic bound
        that does not fit is sized exactly by the counting pass instead)."""
        sizes = heap_sizes(self.plan.stacks, caps, dict(enumerate(threads)))
        need = sum(n * d.itemsize for d, n in sizes.items())
        if need >= MAX_HEAP_BYTES:
            return False
        pool = self.buffers.pool
        avail = pool.available()
        return avail is None or need <= avail + sum(b.nbytes for b in pool.buffers.values())

    def layout(self, sized: tuple[list[int], list[int]], flat: Sequence[Any],
               args: Sequence[Any]) -> tuple[Packed, Any]:
        """(the packed layout, the MemoryError message of its heaps) for one sizing."""
        caps, threads = sized
        plan = self.plan
        # scratch: parallel loops' stacks take the largest capacity in each lane, and the
        # serial code's one thread its capacity: no per-thread capacities needed
        uniform = (sizer_mod._TEST_CAPACITY_OVERRIDE is not None
                   or self.target.adstack.scratch)
        per_thread = self.thread_caps.source(flat, args, threads, uniform)
        per_task = dict(enumerate(threads))  # by task index (StackRecord.task)
        try:
            packed = self.packer.pack(plan.stacks, plan.n_stacks, caps, threads, per_thread,
                                      plan.n_tasks)
        except TooLarge:
            raise MemoryError(self.describe(caps, per_task, None)(
                plan.stacks[0].desc.dtype, 1 << 61, None)) from None
        return packed, self.describe(caps, per_task, packed)

    def describe_total(self, sizes: dict[Any, int]) -> Any:
        """The MemoryError message of heaps (`sizes`: entries per dtype) that do not fit
        together, though each may alone."""
        def message(need: int, available: int | None) -> str:
            parts = "; ".join(f"{d.name}: {n} entries x {d.itemsize} bytes = "
                              f"{n * d.itemsize}" for d, n in sizes.items())
            return (f"The adstacks of the reverse of kernel '{self.name}' need {need} bytes "
                    f"in all ({parts}), but the device can give about {available} bytes now. "
                    "Try launching over fewer threads at a time (split the parallel loop's "
                    "range), fewer iterations of the dynamic loops, or float32 locals instead "
                    "of float64.")
        return message

    def describe(self, caps: list[int], threads: dict[Any, int], packed: Packed | None
                 ) -> Any:
        def message(dtype: Any, size: int, available: int | None) -> str:
            stacks = [(s, c) for s, c in zip(self.plan.stacks, caps, strict=True)
                      if s.desc.dtype is dtype]
            n = max((threads.get(s.task, 1) for s, _ in stacks), default=1)
            cap = max((c for _, c in stacks), default=0)
            have = ("cannot be allocated" if available is None else
                    f"but the device can give about {available} bytes now")
            layout = self.target.adstack
            if layout.scratch and any(s.task is not None for s, _ in stacks):
                lanes = min(layout.group, n)
                what = (f"{layout.regions()} workers' scratch, each the capacity of {lanes} "
                        f"lanes, at most {cap}")
            else:
                what = f"the capacities of {n} threads, each at most {cap}"
            return (f"The adstacks of the reverse of kernel '{self.name}' need "
                    f"{size * dtype.itemsize} bytes of {dtype.name} storage: {size} entries "
                    f"({what}) x {dtype.itemsize} bytes over {len(stacks)} stacks, {have}. "
                    "Try launching over fewer threads at a time (split the parallel loop's "
                    "range), fewer iterations of the dynamic loops, or float32 locals instead "
                    "of float64.")
        return message


def fits_narrow(packed: Packed) -> bool:
    """Whether a layout's heap positions, depths and table indices fit 31 bits (the narrow
    lowering's condition, passes/lower_adstack.py)."""
    limit = 1 << 31
    return (all(n < limit for n in packed.sizes.values())
            and 2 * int(packed.table.size) < limit)


@functools.lru_cache(maxsize=256)
def _may_exit_early(fn: Any) -> bool:
    """Whether `fn`'s loops may stop before their bound (`break`, `while`): only then can
    a symbolic stack bound lie far above the depth reached, so that counting (which costs
    about what the forward's loops cost) can size stacks the bound would not fit. A loop
    without early exits reaches its bound, and counting would find the same sizes."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(node, (ast.Break, ast.While)) for node in ast.walk(tree))


def _with_grad(specs: Sequence[tuple[str, ArgSpec]], args: Sequence[Any]) -> tuple[str, ...]:
    return tuple(name for name, arg in flatten(specs, args) if grad_of(arg) is not None)


def _mask(args: Sequence[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for a in args:
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            out.append(_mask([getattr(a, f.name) for f in dataclasses.fields(a)]))
        else:
            out.append(grad_of(a) is not None)
    return tuple(out)


def prepare_reverse(kernel: Any, args: Sequence[Any], target: KernelTarget | None,
                    debug: bool, checkpoint: bool = False,
                    pinned: dict[tuple[str, ...], Any] | None = None) -> ReverseLauncher:
    """Build the reverse launcher of `kernel` for `args` (no caching in memory; target None:
    the kernel target of the arrays' device). From the stored plan when the disk cache has
    one: then neither the frontend nor the transform runs. `checkpoint`: the launcher of
    the checkpointed reverse (built from IR, not stored). `pinned`: the Python values to
    compile with (path -> value, `env.Pinned`) in place of those bound now; such a reverse
    is not stored on disk."""
    specs, device = signature(kernel, args)
    if target is None:
        target = target_of(device)
    with_grad = _with_grad(specs, args)
    if not with_grad:
        raise AutodiffError(
            f"{kernel.__name__}.grad(): no argument has a gradient, so there is nothing to "
            "compute. Use requires_grad=True when creating the arrays whose gradients you "
            "want (qd.zeros(n, requires_grad=True)).")
    if checkpoint:
        rev, written = _build_reverse(kernel, specs, debug, set(with_grad), None, True,
                                      target.adstack.scratch)
        return ReverseLauncher(kernel, plan_of(rev, kernel.__name__), specs, target, debug,
                               written, device, rev, checkpointed=True)
    key = None
    if pinned is not None:
        rev, written = _build_reverse(kernel, specs, debug, set(with_grad),
                                      Pinned(kernel.source(), pinned),
                                      scratch=target.adstack.scratch)
        return ReverseLauncher(kernel, plan_of(rev, kernel.__name__), specs, target, debug,
                               written, device, rev)
    if target.caches_modules:
        layout = "scratch:" if target.adstack.scratch else ""
        key = entry_key(kernel, specs, target.name, debug,
                        f"reverse:{layout}" + ",".join(sorted(with_grad)))
    stored = load_plan(key, kernel.fn) if key is not None else None
    if stored is not None:
        plan, written, deps = stored
        build = functools.partial(_build_reverse, kernel, specs, debug, set(with_grad),
                                  scratch=target.adstack.scratch)
        launcher = ReverseLauncher(kernel, plan, specs, target, debug, written, device, build)
        launcher.deps = launcher.watched = deps
        if launcher._build is not None:
            count("reverse_plans_loaded")
            return launcher
        # A module the plan names is gone: the transform ran after all; stored again below.
    else:
        recorder = Recorder(kernel.source())
        rev, written = _build_reverse(kernel, specs, debug, set(with_grad), recorder,
                                      scratch=target.adstack.scratch)
        launcher = ReverseLauncher(kernel, plan_of(rev, kernel.__name__), specs, target,
                                   debug, written, device, rev)
        launcher.deps = recorder.result()
        launcher.watched = recorder.watched()
    if key is not None and launcher.deps is not None:
        launcher.plan = recorded(launcher)
        store_plan(key, launcher.plan, launcher.written, launcher.deps)
    return launcher


def _build_reverse(kernel: Any, specs: list[tuple[str, ArgSpec]], debug: bool,
                   with_grad: set[str], recorder: Recorder | None = None,
                   checkpoint: bool = False, scratch: bool = False
                   ) -> tuple[Reverse, tuple[str, ...]]:
    """The transform's result for this signature, and the parameters the forward writes."""
    # The frontend, the passes and the transform load when it first runs: a reverse built
    # from a stored plan (in a process whose kernels all come from the disk cache) imports
    # none of them.
    from ..kernels.frontend import build
    from ..kernels.passes import resolve_views, scalarize, simplify
    from .transform.reverse_kernel import build_reverse

    built = build(kernel.source(), specs, recorder, default_float=kernel.resolved_float())
    written = dict(built.meta).get("written", ())
    # The forward passes of `pipeline` before its bounds checks (the reverse kernel's own
    # compile adds those for every access); in debug mode resolve_views checks subviews.
    forward = simplify(resolve_views(scalarize(built), debug=debug))
    return build_reverse(forward, with_grad, checkpoint, scratch), written


def recorded(launcher: ReverseLauncher) -> ReversePlan:
    """The launcher's plan with its compiled kernels recorded (the counting kernel is
    compiled now if it was not yet: generating it needs the transform's IR)."""
    return dataclasses.replace(launcher.plan, reverse=record_of(launcher.run),
                               counting=record_of(launcher.counting_launcher()))


def _array_key(a: Array) -> Any:
    return (_ARRAY_KEY(a), a._grad is not None)


def _view_key(v: BufferView) -> Any:
    return (_VIEW_KEY(v), v._grad_base is not None)


# Per-argument keys of the launcher table: the signature key, and whether it has a gradient.
_ARRAY_KEY = KEY_FUNCS[Array]
_VIEW_KEY = KEY_FUNCS[BufferView]
# (dataclasses left out: their keys lack the gradient mask, so they take `_mask`'s path)
_KEYS: dict[type, Any] = {**{t: f for t, f in KEY_FUNCS.items() if not dataclasses.is_dataclass(t)},
                          Array: _array_key, BufferView: _view_key}


def launch_reverse(kernel: Any, args: Sequence[Any], target: KernelTarget | None,
                   table: dict[Any, ReverseLauncher] | None = None, check: bool = True,
                   constants: Any = None, leaves: Any = None, forward: Any = None,
                   mask: tuple[bool, ...] | None = None) -> None:
    """Run the reverse of `kernel` on `args` (target None: the arrays' device); `table` is
    the kernel's launcher table when the caller holds it. `check`: compare the arrays the
    last forward launch read with what they are now (a tape, which checks each recorded
    launch's own, passes False). `constants`: what `kernel.snapshot_constants()` returned
    when the forward launched (a tape keeps it with the launch); when a global or attribute
    the kernel read was rebound since, the reverse compiles with the forward's values, so
    the gradient is the forward's. `leaves`: the (name, array) pairs of `args` when the
    caller has them (`kernels.args.array_leaves`); with them, `forward` (the launcher the
    forward ran) keeps the reverse launchers of its signature by which arrays have
    gradients, so a tape's reverses skip the signature key; `mask`, when the caller has it:
    whether each of `leaves` has a gradient."""
    debug = _state["debug"]
    if kernel._guards and not holds(kernel.fn, kernel._guards):
        kernel.environment_changed()
    pinned = (changed(kernel.fn, constants) if constants is not None
              and constants is not kernel.snapshot_constants() else None)
    fl = kernel.resolved_float()
    if pinned is None and forward is not None and leaves is not None:
        if mask is None:
            mask = tuple([grad_of(a) is not None for _, a in leaves])
        key = (debug, fl.name, target, mask)  # (a dtype hashes in Python, its name in C)
        reverses = forward.reverses
        if reverses is None:
            reverses = forward.reverses = {}
        found = reverses.get(key)
        if found is None:
            found = reverses[key] = (_launcher(kernel, args, target, table, debug, fl),
                                     wrapper_pairs(leaves, mask))
        if found[1] is not None:  # (else no pair of arguments check_wrappers compares)
            check_pairs(kernel, leaves, found[1])
        found[0](args, check)
        return
    if mask is None or False in mask:  # (every array with a gradient: no wrapper to find)
        check_wrappers(kernel, args, leaves)
    if pinned is not None:
        _launch_pinned(kernel, args, target, debug, pinned, check)
        return
    _launcher(kernel, args, target, table, debug, fl)(args, check)


def _launcher(kernel: Any, args: Sequence[Any], target: KernelTarget | None,
              table: dict[Any, ReverseLauncher] | None, debug: bool, fl: Any
              ) -> ReverseLauncher:
    """The reverse launcher of `args`' signature (compiled on first use)."""
    if table is None:
        table = _CACHE.get(kernel)
        if table is None:
            table = _CACHE[kernel] = {}
            kernel.register_table(table)
    try:
        key: Any = (debug, fl, target, tuple([_KEYS[type(a)](a) for a in args]))
    except KeyError:
        key = (debug, fl, target, tuple(signature_key(a) for a in args), _mask(args))
    launcher = table.get(key)
    if launcher is None:
        launcher = prepare_reverse(kernel, args, target, debug)
        table[key] = launcher
        kernel.watch(launcher.watched)
    return launcher


# Reverse launchers compiled with earlier values of a kernel's globals (`launch_reverse`'s
# `constants`), by the values' fingerprints; values without one (watched by identity) are
# compiled at each use, since an identity can be reused once its object is gone.
_PINNED: weakref.WeakKeyDictionary[Any, dict[Any, ReverseLauncher]] = (
    weakref.WeakKeyDictionary())


def _launch_pinned(kernel: Any, args: Sequence[Any], target: KernelTarget | None, debug: bool,
                   pinned: dict[tuple[str, ...], Any], check: bool) -> None:
    fps = tuple(sorted((path, fingerprint(v)) for path, v in pinned.items()))
    key = None
    if all(fp is not None for _, fp in fps):
        key = (debug, target, tuple(signature_key(a) for a in args), _mask(args), fps)
    table = _PINNED.setdefault(kernel, {})
    launcher = table.get(key) if key is not None else None
    if launcher is None:
        launcher = prepare_reverse(kernel, args, target, debug, pinned=pinned)
        if key is not None:
            table[key] = launcher
    launcher(args, check)


class GradKernel:
    """`kernel.grad`: call it to run the reverse of `kernel` (see `Kernel.grad`)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.table = _CACHE.setdefault(kernel, {})
        kernel.register_table(self.table)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        k = self.kernel
        if kwargs or len(args) != k._nparams:
            args = k._bind(args, kwargs)
        refuse_own_overwrites(k, args, k.forward_launcher(args))
        launch_reverse(k, args, None, self.table)

    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the reverse through the IR interpreter (the reference semantics)."""
        from ..kernels.interp import INTERP

        k = self.kernel
        if kwargs or len(args) != len(k.param_names):
            args = k._bind(args, kwargs)
        launch_reverse(k, args, INTERP)

    def ir(self, *args: Any) -> Reverse:
        """The reverse kernel's IR for `args` (and what the launcher knows about it), with
        debug-mode checks when debug mode is on."""
        from ..kernels.interp import INTERP

        return prepare_reverse(self.kernel, args, INTERP, _state["debug"]).rev

    def __repr__(self) -> str:
        return f"<reverse of {self.kernel!r}>"
