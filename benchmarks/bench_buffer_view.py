"""asv benchmarks of BufferView kernel arguments: launch overhead with a view made on every
call (an Array slice or a BufferView) against an array argument, and a large window passed
without a copy (its time is the kernel's, not a copy's).

`python benchmarks/compare_buffer_view.py` prints the same measurements side by side.
"""

from __future__ import annotations

import numpy as np

import qdarray as qd


@qd.kernel
def scale_view(v: qd.BufferView[qd.float32], factor: qd.float32):
    for i in range(v.size):
        v[i] = v[i] * factor


@qd.kernel
def scale_array(x: qd.Array[qd.float32, 1], factor: qd.float32):
    for i in range(x.shape[0]):
        x[i] = x[i] * factor


@qd.kernel
def scale_halves(v: qd.BufferView[qd.float32], factor: qd.float32):
    half = v.size // 2
    lo = v[:half]
    hi = v.subview(half, v.size - half)
    for i in range(lo.size):
        lo[i] = lo[i] * factor
        hi[i] = hi[i] * factor


class ViewLaunchOverhead:
    """One launch over 16 elements; the goal is within 2 us of the array argument."""

    def setup(self) -> None:
        self.data = qd.asarray(np.ones(32, np.float32))
        self.window = self.data[:16]
        self.view = qd.BufferView(self.data, 0, 16)
        scale_array(self.window, 1.0)
        scale_view(self.data[:16], 1.0)
        scale_view(self.view, 1.0)

    def time_array_argument(self) -> None:
        scale_array(self.window, 1.0)

    def time_view_built_once(self) -> None:
        scale_view(self.view, 1.0)

    def time_slice_every_call(self) -> None:
        scale_view(self.data[:16], 1.0)

    def time_buffer_view_every_call(self) -> None:
        scale_view(qd.BufferView(self.data, 16, 16), 1.0)


class LargeWindow:
    """A 10-million-element window of a larger array: no copy, so it runs like an array."""

    def setup(self) -> None:
        self.data = qd.asarray(np.ones(12_000_000, np.float32))
        self.window = self.data[1_000_000:11_000_000]
        scale_array(self.window, 1.0)
        scale_view(self.window, 1.0)
        scale_halves(self.window, 1.0)

    def time_array(self) -> None:
        scale_array(self.window, 1.0)

    def time_view(self) -> None:
        scale_view(self.data[1_000_000:11_000_000], 1.0)

    def time_kernel_side_subviews(self) -> None:
        scale_halves(self.data[1_000_000:11_000_000], 1.0)

    def peakmem_view(self) -> None:
        scale_view(self.data[1_000_000:11_000_000], 1.0)
