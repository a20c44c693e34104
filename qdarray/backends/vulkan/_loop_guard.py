"""Reporting the loops a Vulkan driver ended early (Mesa's llvmpipe: `_probes.loop_limit`).

On such a device every kernel's stages are rendered with a loop guard
(kernels/codegen/spirv/control.py, `LoopGuard`): a loop that the driver cut writes its
kernel's mark (a number per kernel name, given here) into slot `CUT_SLOT` of the buffer
bound as the stage's error record. A launch in debug mode binds its own record, read after
the launch: the launch itself raises. Other launches bind the device's guard buffer, which
is checked at every synchronisation (`Stream.finish`: each read of an array, each
`synchronize`), so that no result of a cut launch reaches the host: the first
synchronisation after it raises `LoopLimitError`, naming the kernel, and clears the buffer.
Reading the buffer after every launch would make every launch wait for the device.
"""

from __future__ import annotations

import threading

import numpy as np

from ..._errors import LoopLimitError
from ...kernels.codegen.spirv.render import CUT_SLOT
from ._instance import DeviceState
from ._memory import Allocation, pool

WORDS = CUT_SLOT + 1  # int64 words of a buffer bound as a stage's error record


def message(kernel: str, label: str, limit: int) -> str:
    return (f"Kernel '{kernel}' ran loops that device {label} ended early: its driver "
            f"(Mesa's llvmpipe) stops the loops of each batch of threads after {limit:,} "
            "iterations in all (the back edges of every loop a thread runs, and of the "
            "threads it runs beside), silently. The launch's results are wrong and were not "
            "returned. Split the work over more threads (fewer loop iterations per thread: "
            "fewer than the limit in all, the inner loops' iterations included), or run the "
            "kernel on another device.")


class Guard:
    """The guard buffer of one device and the names of the kernels by mark."""

    def __init__(self, st: DeviceState, limit: int) -> None:
        self.st = st
        self.limit = limit
        self.lock = threading.Lock()
        self.marks: dict[str, int] = {}
        self.names: list[str] = []
        # host-visible (staging) memory: the check reads it where it lies
        self.alloc: Allocation = pool(st).alloc(WORDS * 8, staging=True)
        assert self.alloc.host is not None
        self.words = self.alloc.host[:WORDS * 8].view(np.int64)
        self.words[:] = 0

    def mark(self, kernel: str) -> int:
        """The number a cut loop of kernel `kernel` writes (from 1)."""
        with self.lock:
            found = self.marks.get(kernel)
            if found is None:
                self.names.append(kernel)
                found = self.marks[kernel] = len(self.names)
            return found

    def name(self, mark: int) -> str:
        return self.names[mark - 1] if 0 < mark <= len(self.names) else f"#{mark}"

    def raise_cut(self, mark: int) -> None:
        raise LoopLimitError(message(self.name(mark), self.st.label, self.limit))

    def check(self) -> None:
        """After the device has run everything submitted: raise for a cut loop (once)."""
        mark = int(self.words[CUT_SLOT])
        if mark:
            self.words[CUT_SLOT] = 0
            self.raise_cut(mark)


_guards: dict[int, Guard] = {}
_lock = threading.Lock()


def guard(st: DeviceState, limit: int) -> Guard:
    """The device's Guard (made on first use; its stream checks it at each `finish`)."""
    from ._stream import stream

    with _lock:
        found = _guards.get(st.index)
        if found is None:
            found = _guards[st.index] = Guard(st, limit)
            stream(st).checks.append(found.check)
        return found
