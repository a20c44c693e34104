"""The heaps of a reverse launch's adstacks, on the host side: their sizes per dtype, the pool
that keeps them across launches (sized against what the device can give), and the overflow
check after the launch. The IR that reads and writes them is ad/transform/adstack.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import AdStackOverflowError
from ..backends.host_memory import host_available_bytes


def heap_sizes(live: Sequence[Any], caps: list[int], threads: dict[Any, int]
               ) -> dict[Any, int]:
    """The heap size per dtype, in elements (Python ints: no overflow), for capacities `caps`
    and thread counts per task (see `layout_array`)."""
    sizes: dict[Any, int] = {}
    for s, cap in zip(live, caps, strict=True):
        dtype = s.desc.dtype
        sizes[dtype] = sizes.get(dtype, 0) + cap * threads.get(s.task, 1)
    return sizes


class HeapPool:
    """Heap buffers reused across launches: they grow by doubling, or to the exact size when
    the doubled size does not fit. Before growing, the size is compared with what the device
    can give (`available()`, bytes or None when unknown; the host's by default): a heap that
    cannot fit raises a MemoryError with the figures instead of being allocated. `alloc(n,
    np_dtype)` makes a buffer (NumPy by default; device memory for other devices)."""

    def __init__(self, alloc: Any = None, available: Any = None) -> None:
        self.buffers: dict[Any, Any] = {}
        self.available = available or host_available_bytes
        self.alloc = alloc  # None: np.empty

    def get(self, dtype: Any, size: int, describe: Any) -> Any:
        """A buffer of at least `size` elements of `dtype`; `describe(dtype, size,
        available)` gives the MemoryError's message."""
        size = max(size, 1)
        buf = self.buffers.get(dtype)
        if buf is not None and buf.size >= size:
            return buf
        itemsize = dtype.itemsize
        avail = self.available()
        if avail is not None and buf is not None:
            avail += buf.nbytes  # freed before the new one is made
        if avail is not None and size * itemsize > avail:
            raise MemoryError(describe(dtype, size, avail))
        want = max(size, 2 * buf.size) if buf is not None else size
        if avail is not None and want * itemsize > avail:
            want = size
        self.buffers.pop(dtype, None)
        del buf
        for n in dict.fromkeys((want, size)):
            try:
                new = (self.alloc or np.empty)(n, dtype._np)
            except (MemoryError, ValueError):
                continue
            self.buffers[dtype] = new
            return new
        raise MemoryError(describe(dtype, size, avail))

    def check_total(self, sizes: dict[Any, int], describe: Any) -> None:
        """MemoryError (message `describe(need, available)`) when the heaps of `sizes`
        (elements per dtype) together need more than the device can give, counting what
        this pool holds now as given back."""
        need = sum(n * d.itemsize for d, n in sizes.items())
        held = sum(b.nbytes for b in self.buffers.values())
        if need <= held:
            return  # (no system call on launches the pool already serves)
        avail = self.available()
        if avail is None:
            return
        avail += held
        if need > avail:
            raise MemoryError(describe(need, avail))

    def clear(self) -> None:
        self.buffers.clear()


POOL = HeapPool()


def check_overflow(overflow: np.ndarray, live: Sequence[Any], caps: list[int],
                   kernel: str) -> None:
    """Raise AdStackOverflowError for the first stack whose pushes went past its capacity
    (`overflow` has one element per stack id, `caps` one per live stack)."""
    if not overflow.any():
        return
    sid = int(np.flatnonzero(overflow)[0])
    k = next(j for j, s in enumerate(live) if s.id == sid)
    s = live[k]
    where = f"{s.desc.loc.file}:{s.desc.loc.line}"
    raise AdStackOverflowError(
        f"The adstack of '{s.desc.name}' ({where}) in the reverse of kernel '{kernel}' "
        f"overflowed: capacity {caps[k]}, depth reached {int(overflow[sid])}. Nothing was "
        "written out of bounds, but the gradients of this launch are not computed. The "
        "capacity comes from the loop bounds at launch; this means a loop ran more often "
        "than its bounds allow (a bound array changed during the launch?). Try running the "
        "reverse again with unchanged bound arrays.")
