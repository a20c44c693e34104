"""Running fused kernels: their arguments, their results' memory, the CPU entries.

On other devices the same kernels run through the device's kernel target, their results in
the device's memory (`Backend.empty`), broadcast inputs as the device namespace's views.

`FusedKernel` runs the kernel of one result shape of a fused run (fusion.py): its inputs
flat (one loop over the elements) when every input has the output's shape and is
C-contiguous, as broadcast strided views otherwise; 0-d inputs as scalars read at each
call. It keeps the memory of its last results and writes the next results there when
nothing else refers to it any more (the caller dropped them; the reference count says so),
which saves the first-touch page faults of a fresh allocation (about as long as the kernel
itself at N = 1e7 on the CPU). `ReduceKernel` also reduces one result over every element.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._array import Array
from .._autodiff import record
from .._devices import CPU
from ..backends.cpu.target import PARALLEL_MIN, NumbaLauncher
from . import fused_kernel
from .fused_kernel import LANES, FusedSpec
from .program import build


def _references() -> int:
    spare = [np.empty(1)]
    o = spare.pop()
    return sys.getrefcount(o)


_FREE = _references()  # the count of an array that only `_memory` refers to


class _Launch:
    """A fused kernel's launcher. The CPU target's launchers run a serial entry below
    `PARALLEL_MIN` iterations and a parallel one above, choosing by a trip count they
    compute from the arguments; a fused loop's trip count is its size, so the entries are
    called directly here (a 16-element launch: 0.6 us instead of 2.5 us)."""

    __slots__ = ("launcher", "serial", "parallel")

    def __init__(self, launcher: Any) -> None:
        self.launcher = launcher
        entries = getattr(launcher, "serial", None), getattr(launcher, "parallel", None)
        direct = isinstance(launcher, NumbaLauncher) and not launcher.debug
        self.serial = entries[0] if direct else None
        self.parallel = entries[1] if direct else None

    def __call__(self, args: list[Any], size: int) -> None:
        if self.serial is None:
            self.launcher(args)
        elif size >= PARALLEL_MIN and self.parallel is not None:
            self.parallel(*args)
        else:
            self.serial(*args)


class FusedKernel:
    """One generated kernel of a run: its outputs' slots and shape, its inputs (templates of
    arrays), scalar values, and the flat and strided specs."""

    __slots__ = ("shape", "outs", "dtypes", "inputs", "scalars", "reads", "flat", "strided",
                 "donor", "spare", "launchers", "contiguous", "reverse", "device")

    def __init__(self, shape: tuple[int, ...], outs: list[int], dtypes: list[Any],
                 inputs: list[Any], scalars: list[Any], flat: FusedSpec, strided: FusedSpec
                 ) -> None:
        self.shape = shape
        self.outs = outs
        self.dtypes = dtypes
        self.inputs = inputs
        self.scalars = scalars
        self.reads: list[tuple[int, Any]] = []  # (scalar, template of a 0-d array input)
        self.flat = flat
        self.strided = strided
        self.donor: tuple[int, int] | None = None  # (output, input) sharing memory
        self.spare: list[list[Any]] = [[] for _ in outs]  # the last results' memory
        self.launchers: dict[bool, Any] = {}  # flat or not -> the compiled launcher
        # the strides of each input when it is C-contiguous of the result's shape
        self.contiguous: list[tuple[int, ...]] = []
        # each stored result's VJP plan (reverse.py; None: not floating-point), or None
        self.reverse: list[Any] | None = None
        self.device: Any = CPU  # where its arrays are

    def run(self, env: list[Any]) -> None:
        shape = self.shape
        device = self.device
        datas = [build(t, env)._data for t in self.inputs]
        # C-contiguous of the result's shape (strides compared: cheaper than `flags`)
        flat = all(d.shape == shape and tuple(d.strides) == s
                   for d, s in zip(datas, self.contiguous, strict=True))
        outs = [self._memory(k) for k in range(len(self.dtypes))]
        if self.donor is not None:
            self._donated(outs, datas)
        if flat:
            args = outs + datas if len(shape) == 1 else \
                [o.reshape(-1) for o in outs] + [d.reshape(-1) for d in datas]
            spec = self.flat
        else:
            spread = np.broadcast_to if device is CPU else device.backend.xp.broadcast_to
            args = outs + [spread(d, shape) for d in datas]
            spec = self.strided
        scalars = self.scalars
        if self.reads:
            scalars = list(scalars)
            for i, t in self.reads:
                scalars[i] = build(t, env)._data[()]
        size = outs[0].size
        if size:
            launch = self.launchers.get(flat)
            if launch is None:
                launch = self.launchers[flat] = _Launch(fused_kernel.launcher(spec, device))
            launch(args + scalars, size)
        for slot, o, spare in zip(self.outs, outs, self.spare, strict=True):
            env[slot] = Array._new(o, device)
            spare.append(o)

    def record(self, env: list[Any]) -> None:
        """Record each stored floating-point result on the recording tape, as one operation
        over the kernel's inputs whose VJP is the generated reverse (reverse.py)."""
        inputs = tuple([build(t, env) for t in self.inputs]
                       + [build(t, env) for _, t in self.reads])
        for slot, plan in zip(self.outs, self.reverse or (), strict=True):
            if plan is not None:
                record("jit.fused", env[slot], inputs, {"plan": plan, "inputs": inputs})

    def _memory(self, k: int) -> Any:
        """Output k's memory: the last one's when only this kernel refers to it (popped
        first, so that two threads never take one)."""
        spare = self.spare[k]
        while spare:
            o = spare.pop()
            # three references: `o`, getrefcount's argument, and none else (the list let go)
            if sys.getrefcount(o) <= _FREE:
                return o
        device = self.device
        if device is CPU:
            return np.empty(self.shape, self.dtypes[k])
        return device.backend.empty(self.shape, self.dtypes[k], device)

    def _donated(self, outs: list[Any], datas: list[Any]) -> None:
        k, j = self.donor  # type: ignore[misc]
        d = datas[j]
        if d.base is None and d.flags.c_contiguous and d.flags.writeable and not any(
                i != j and np.may_share_memory(d, x) for i, x in enumerate(datas)):
            outs[k] = d  # each element is read before it is written, by the same thread


BLOCKS = 128  # the most blocks of a fused reduction, LANES partial results each
BLOCK_MIN = 8192  # elements per block at least (fewer blocks for smaller arrays)


class ReduceKernel(FusedKernel):
    """A fused kernel over one flat shape that also reduces one node (sum, max, min or
    mean) over every element: the elements are cut into contiguous blocks, each reduced by
    LANES work-items, lane l taking elements l, l + LANES, ... of the block in order
    (fused_kernel._reduce_ir); NumPy then reduces the partials (pairwise for sums). Sums and
    means are reassociated: within a few ulp per element of NumPy's (docs/jit.md)."""

    __slots__ = ("op", "acc", "result")
    op: str  # sum, mean, max or min
    acc: Any  # the result's NumPy dtype
    result: int  # the slot of the reduction's result

    def ready(self, env: list[Any]) -> bool:
        """Whether every input is C-contiguous of the reduced shape (the flat loop)."""
        shape = self.shape
        for t in self.inputs:
            d = build(t, env)._data
            if d.shape != shape or not d.flags.c_contiguous:
                return False
        return bool(self.inputs)

    def run(self, env: list[Any]) -> None:
        datas = [build(t, env)._data for t in self.inputs]
        outs = [self._memory(k) for k in range(len(self.dtypes))]
        scalars = self.scalars
        if self.reads:
            scalars = list(scalars)
            for i, t in self.reads:
                scalars[i] = build(t, env)._data[()]
        n = datas[0].size
        blocks = min(BLOCKS, max(1, n // BLOCK_MIN))
        per = (n + blocks - 1) // blocks
        size = (per + LANES - 1) // LANES * LANES  # a multiple of LANES
        part = np.empty((blocks, LANES), self.acc)
        launch = self.launchers.get(True)
        if launch is None:
            launch = self.launchers[True] = fused_kernel.launcher(self.flat, CPU)
        launch([o.reshape(-1) for o in outs] + [d.reshape(-1) for d in datas] + scalars
               + [part, size])
        if self.op == "max":
            value = np.max(part)
        elif self.op == "min":
            value = np.min(part)
        else:
            value = np.sum(part)
            if self.op == "mean":
                value = value / n
        env[self.result] = Array._new(np.asarray(value, self.acc), CPU)
        for slot, o, spare in zip(self.outs, outs, self.spare, strict=True):
            env[slot] = Array._new(o, CPU)
            spare.append(o)
