"""Launching reverse kernels: compile once per signature, size the stacks, run, check.

`kernel.grad(*args)` (and `kernel.grad.interpret(*args)`) land in `launch_reverse`. A
`ReverseLauncher` is built once per (signature, which arguments have gradients, debug mode,
target): it holds the compiled reverse kernel, the compiled counting kernel and each stack's
capacity expression. Each call sizes the stacks (`sizing.capacities`), takes heap buffers
from the pool (reused across launches), runs the reverse, raises `AdStackOverflowError` if a
push went past its capacity, and bumps the write generation of the gradients it wrote.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import Array
from .._errors import AutodiffError
from ..buffer_view import BufferView
from ..kernels.args import ArgSpec, signature_key
from ..kernels.debug import _state
from ..kernels.ir import KernelIR
from ..kernels.types import ArrayType, ViewType
from . import sizing
from .adstack import LAYOUT_FIELDS, POOL, check_overflow, layout_array
from .reverse import Reverse, build_reverse

_HEAPS_IN_USE = threading.Lock()
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


def grad_of(arg: Any) -> Any:
    """The gradient companion of an Array or BufferView argument (None if it has none)."""
    t = type(arg)
    if t is Array or t is BufferView:
        return arg.grad
    return None


def _compile(ir: KernelIR, specs: list[ArgSpec], names: list[str], target: str, debug: bool,
             bumps: list[Any]) -> Any:
    from ..kernels.launch import InterpLauncher, NumbaLauncher, packer
    from ..kernels.passes import pipeline

    interp = target == "interp"
    ir = pipeline(ir, debug=debug, lower=not interp)
    packers = [packer(s, f"{ir.name}() argument '{n}'", interp)
               for n, s in zip(names, specs, strict=True)]
    if interp:
        return InterpLauncher(ir, packers, bumps)
    if target != "numba_cpu":
        raise NotImplementedError(
            f"Reverse kernels need the '{target}' code generator, which qdarray does not have "
            "yet. Use CPU arrays, or kernel.grad.interpret(...).")
    from ..kernels.cache import load_module
    from ..kernels.codegen.numba_cpu import render_numba_cpu

    return NumbaLauncher(ir, packers, bumps, load_module(render_numba_cpu(ir, debug=debug)),
                         debug)


def _array_spec(dtype: Any) -> ArgSpec:
    return ArgSpec("array", ArrayType(dtype, 1))


class ReverseLauncher:
    """The reverse of one kernel for one signature (see the module docstring)."""

    def __init__(self, kernel: Any, rev: Reverse, specs: list[tuple[str, ArgSpec]],
                 target: str, debug: bool) -> None:
        self.name = kernel.__name__
        self.rev = rev
        self.specs = specs
        self.target = target
        self.debug = debug
        params = rev.kernel.params
        nfwd = len(rev.forward.params)
        i64 = _dtypes.int64
        ext: list[ArgSpec] = [s for _, s in specs]
        names = [n for n, _ in specs]
        bumps = []
        for p in params[nfwd:]:
            t = p.value.type
            if p.name.endswith("@grad"):
                bumps.append((len(ext), ()))
                ext.append(ArgSpec("view", t) if isinstance(t, ViewType) else ArgSpec("array", t))
            else:
                ext.append(ArgSpec("array", t))
            names.append(p.name)
        self.run = _compile(rev.kernel, ext, names, target, debug, bumps)
        self.count_specs = [s for _, s in specs] + [_array_spec(i64)]
        self.count_names = [n for n, _ in specs] + ["@counts"]
        self.counter: Any = None
        deriver = sizing.Deriver(rev.structure)
        self.exprs = [deriver.capacity(s.sites, s.task) for s in rev.stacks]
        self.threads = [deriver.threads(t) for t in rev.tasks]

    def count(self, args: Sequence[Any]) -> tuple[list[int], list[int]]:
        """Run the counting kernel: (largest depth per live stack, threads per task)."""
        if self.counter is None:
            self.counter = _compile(self.rev.counting, self.count_specs, self.count_names,
                                    self.target, self.debug, [])
        rev = self.rev
        counts = np.zeros(rev.n_stacks + len(rev.tasks), np.int64)
        self.counter(list(args) + [counts])
        return ([int(counts[s.id]) for s in rev.stacks],
                [int(counts[rev.n_stacks + k]) for k in range(len(rev.tasks))])

    def __call__(self, args: Sequence[Any]) -> None:
        with _HEAPS_IN_USE:  # one reverse launch at a time uses the shared heap buffers
            self.launch(args)

    def launch(self, args: Sequence[Any]) -> None:
        rev = self.rev
        flat = flatten(self.specs, args)
        grads = [grad_of(flat[k][1]) for k in rev.grads]
        caps, threads = sizing.capacities(
            self.exprs, self.threads, sizing.host_args(rev.forward.params, [a for _, a in flat]),
            lambda: self.count(args))
        extra: list[Any] = list(grads)
        if rev.outer_slots:
            extra.append(np.zeros(rev.outer_slots, np.float64))
        per_task = {t: n for t, n in zip(rev.tasks, threads, strict=True)}
        lay, sizes = layout_array(rev.stacks, caps, per_task)
        heaps = [POOL.get(d, sizes.get(d, 0), self.describe(caps, per_task))
                 for d in rev.heaps]
        extra += heaps
        overflow = None
        if rev.n_stacks:
            layout = np.zeros(LAYOUT_FIELDS * rev.n_stacks, np.int64)
            for k, s in enumerate(rev.stacks):
                layout[LAYOUT_FIELDS * s.id:LAYOUT_FIELDS * (s.id + 1)] = \
                    lay[LAYOUT_FIELDS * k:LAYOUT_FIELDS * (k + 1)]
            overflow = np.zeros(rev.n_stacks, np.int64)
            extra += [layout, overflow]
        self.run(list(args) + extra)
        if overflow is not None:
            check_overflow(overflow, rev.stacks, caps, self.name)

    def describe(self, caps: list[int], threads: dict[Any, int]) -> Any:
        def message(dtype: Any, size: int) -> str:
            stacks = [(s, c) for s, c in zip(self.rev.stacks, caps, strict=True)
                      if s.desc.dtype is dtype]
            n = max((threads.get(s.task, 1) for s, _ in stacks), default=1)
            cap = max((c for _, c in stacks), default=0)
            return (f"The adstacks of the reverse of kernel '{self.name}' need "
                    f"{size * dtype.itemsize} bytes of {dtype.name} storage: up to {n} threads "
                    f"x capacity {cap} x {dtype.itemsize} bytes x {len(stacks)} stacks, which "
                    "cannot be allocated. Try launching over fewer threads at a time (split "
                    "the parallel loop's range), fewer iterations of the dynamic loops, or "
                    "float32 locals instead of float64.")
        return message


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


def prepare_reverse(kernel: Any, args: Sequence[Any], target: str | None,
                    debug: bool) -> ReverseLauncher:
    """Build the reverse launcher of `kernel` for `args` (no caching)."""
    from ..kernels.frontend import build
    from ..kernels.launch import signature
    from ..kernels.passes import pipeline

    specs, device = signature(kernel, args)
    if target is None:
        target = device.backend.target
    with_grad = _with_grad(specs, args)
    if not with_grad:
        raise AutodiffError(
            f"{kernel.__name__}.grad(): no argument has a gradient, so there is nothing to "
            "compute. Use requires_grad=True when creating the arrays whose gradients you "
            "want (qd.zeros(n, requires_grad=True)).")
    forward = pipeline(build(kernel.source(), specs), debug=False, lower=False)
    rev = build_reverse(forward, set(with_grad))
    return ReverseLauncher(kernel, rev, specs, target, debug)


def launch_reverse(kernel: Any, args: Sequence[Any], target: str | None) -> None:
    """Run the reverse of `kernel` on `args` (target None: the arrays' device)."""
    debug = _state["debug"]
    table = _CACHE.setdefault(kernel, {})
    key = (debug, target, tuple(signature_key(a) for a in args), _mask(args))
    launcher = table.get(key)
    if launcher is None:
        launcher = prepare_reverse(kernel, args, target, debug)
        table[key] = launcher
    launcher(args)


class GradKernel:
    """`kernel.grad`: call it to run the reverse of `kernel` (see `Kernel.grad`)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        k = self.kernel
        if kwargs or len(args) != len(k.param_names):
            args = k._bind(args, kwargs)
        launch_reverse(k, args, None)

    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the reverse through the IR interpreter (the reference semantics)."""
        k = self.kernel
        if kwargs or len(args) != len(k.param_names):
            args = k._bind(args, kwargs)
        launch_reverse(k, args, "interp")

    def ir(self, *args: Any) -> Reverse:
        """The reverse kernel's IR for `args` (and what the launcher knows about it)."""
        return prepare_reverse(self.kernel, args, "interp", False).rev

    def __repr__(self) -> str:
        return f"<reverse of {self.kernel!r}>"
