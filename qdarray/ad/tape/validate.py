"""Validation mode: find launches that break the rule reverse mode relies on.

The reverse of a kernel reloads what the forward launch read. The tape keeps a copy of what a
thread overwrites of what it read itself (ad/tape/snapshots.py), but a thread must not overwrite
an element another thread of the same launch read: which value that thread saw depends on
the order the threads ran in (a race), and the reverse cannot know it. `check_launch` runs
the kernel through an instrumented interpreter on copies of its arguments (arguments over
one piece of memory, such as one array passed for two parameters, stay over one piece of
memory in the copies), records every element read and by which thread (by address, so views
of one buffer are one array), and raises `AutodiffError` naming the array, the element, both
threads and both source lines at the first overwrite of an element another thread read.
It is slow (the interpreter) and meant for debugging: `qd.ad.Tape(loss, validation=True)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._array import Array
from ..._devices import CPU
from ..._errors import AutodiffError
from ...buffer_view import BufferView
from ...kernels.frontend.diagnostics import format_location
from ...kernels.interp import INTERP, Interpreter, typed_arguments
from ...kernels.ir import Instr, Op
from ...kernels.launch import prepare
from ...kernels.ops.memory import element

_WRITES = (Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX)


class _Checker(Interpreter):
    """The interpreter, recording each element's first read and checking each write."""

    def __init__(self, kernel: Any, names: dict[int, str]) -> None:
        super().__init__(kernel)
        self.names = names
        # address -> (the load, its index, the thread that read it; None: several threads)
        self.reads: dict[int, tuple[Instr, tuple[int, ...], tuple[int, ...] | None]] = {}

    def address(self, instr: Instr, n: int) -> tuple[int, tuple[int, ...]]:
        mem = self.values[instr.args[0].id]
        idx = tuple(int(self.values[a.id]) for a in instr.args[1:1 + n])
        arr, where = element(mem, idx)
        if not all(0 <= w < s for w, s in zip(where, arr.shape, strict=True)):
            return -1, idx  # out of bounds: debug mode reports it; nothing to record
        addr = arr.__array_interface__["data"][0] + sum(
            w * s for w, s in zip(where, arr.strides, strict=True))
        return addr, idx

    def instr(self, instr: Instr) -> None:
        op = instr.op
        if op is Op.LOAD:
            addr, idx = self.address(instr, len(instr.args) - 1)
            if addr >= 0:
                seen = self.reads.get(addr)
                if seen is None or seen[2] == self.thread:
                    self.reads[addr] = (instr, idx, self.thread)
                else:  # read by several threads: any of them is another than a writer
                    self.reads[addr] = (instr, idx, None)
        elif op in _WRITES:
            addr, idx = self.address(instr, len(instr.args) - 2)
            seen = self.reads.get(addr)
            if seen is not None and seen[2] != self.thread:
                self.violation(instr, idx, seen[0], seen[2])
        super().instr(instr)

    def violation(self, write: Instr, idx: tuple[int, ...], read: Instr,
                  reader: tuple[int, ...] | None) -> None:
        name = self.names.get(write.args[0].id, "?")
        element_ = f"{name}[{', '.join(map(str, idx))}]"
        by = "other threads" if reader is None else f"thread {reader}"
        raise AutodiffError(
            f"Kernel '{self.kernel.name}' overwrites {element_} in thread {self.thread} after "
            f"{by} of the same launch read it. What the reader saw depends on the order the "
            "threads ran in, and its reverse cannot know it, so the gradients would be wrong."
            f"\nWritten here:\n"
            f"{format_location(write.loc)}\nRead here:\n{format_location(read.loc)}\n"
            "Use a separate output array (y[i] = f(x[i - 1]) instead of x[i] = f(x[i - 1])), "
            "qd.atomic_add for accumulation, or two kernel launches.")


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _host_copy(a: np.ndarray, memo: dict[int, np.ndarray]) -> np.ndarray:
    """A copy of `a` in which arrays over one piece of memory stay over one piece of memory
    (`memo`: the copies of the memories met so far, by their root array)."""
    root = _root(a)
    if not root.flags.c_contiguous:
        return a.copy()
    copied = memo.get(id(root))
    if copied is None:
        copied = memo[id(root)] = root.copy()
    return np.ndarray(a.shape, a.dtype, buffer=copied, offset=_address(a) - _address(root),
                      strides=a.strides)


def _copy(x: Any, memo: dict[int, Any]) -> Any:
    """A host copy of an argument; arguments that share memory share it in their copies, so
    an overwrite through one of them of what another read is seen (`kernel(x, x)`)."""
    t = type(x)
    if t is Array:  # a host copy: the interpreter checks the launch in host memory
        if x._device == CPU:
            return Array._new(_host_copy(x._data, memo), CPU)
        copied = memo.get(id(x._data))  # device memory: the same array passed twice
        if copied is None:
            copied = memo[id(x._data)] = np.array(x._device.backend.to_host(x._data),
                                                   copy=True)
        return Array._new(copied, CPU)
    if t is BufferView:
        base = _copy(x._base, memo)
        return BufferView(base, offset=x._offset, size=x._size)
    if t is np.ndarray:
        return _host_copy(x, memo)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(x, **{f.name: _copy(getattr(x, f.name), memo)
                                         for f in dataclasses.fields(x)})
    return x


def check_launch(kernel: Any, args: Sequence[Any]) -> None:
    """Raise AutodiffError if launching `kernel` on `args` overwrites an element another
    thread of the launch read."""
    launcher = prepare(kernel, args, INTERP, False)
    memo: dict[int, Any] = {}
    copies = [_copy(a, memo) for a in args]
    ir = launcher.kernel
    names = {p.value.id: p.name for p in ir.params}
    _Checker(ir, names).run(typed_arguments(ir, launcher.pack(copies)))
