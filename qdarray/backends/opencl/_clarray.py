"""`ClArray`: a pyopencl array with NumPy's view and indexing semantics.

qdarray's namespace treats native arrays as NumPy treats its own; the view and indexing logic
is `kernel_xp.StridedArray`'s (shared by every backend whose namespace is built from IR
kernels). pyopencl's array covers contiguous data only, so `ClArray` subclasses it (it *is* a
`pyopencl.array.Array`, usable with pyopencl's own functions where those accept its layout)
and adds the rest. Strides and offsets are in bytes, as in NumPy and pyopencl.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.compyte.array import ArrayFlags

from ..kernel_xp.array import StridedArray
from ..kernel_xp.layout import c_strides


class ClDevice(Protocol):
    """What an array needs of its OpenCL device: the namespace's view of it (`KernelDevice`)
    and pyopencl's context, queue, allocator and device (`_runtime.DeviceState` is one)."""

    index: int
    cl_device: cl.Device
    context: cl.Context
    queue: cl.CommandQueue
    allocator: Any
    max_alloc: int

    @property
    def name(self) -> str: ...

DL_OPENCL = 4


class Flags(ArrayFlags):
    """pyopencl's layout flags plus NumPy's `writeable` (False for broadcast views)."""

    def __init__(self, ary: ClArray) -> None:
        super().__init__(ary)
        self.writeable = not ary.qd_readonly


class ClArray(StridedArray, cla.Array):
    """A pyopencl array on one qdarray OpenCL device (see the module docstring)."""

    qd_state: ClDevice

    @property
    def qd_device(self) -> Any:  # type: ignore[override]  # (_runtime.DeviceState)
        return self.qd_state

    @property
    def flags(self) -> Flags:
        return Flags(self)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def wrap(cls, st: ClDevice, data: Any, shape: tuple[int, ...], strides: tuple[int, ...],
             offset: int, dtype: np.dtype) -> ClArray:
        size = 1
        for n in shape:
            size *= n
        self = cls(None, shape, dtype, allocator=st.allocator, strides=strides, data=data,
                   offset=offset, _fast=True, _context=st.context, _queue=st.queue,
                   _size=size)
        self.qd_state = st
        return self

    @classmethod
    def empty(cls, st: ClDevice, shape: tuple[int, ...], dtype: Any) -> ClArray:
        dtype = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        size = 1
        for n in shape:
            size *= n
        # Rounded up to 8 bytes: atomics on 8- and 16-bit elements update whole 32-bit words.
        nbytes = -(-size * dtype.itemsize // 8) * 8
        if not st.max_alloc:
            st.max_alloc = int(st.cl_device.max_mem_alloc_size)
        if nbytes > st.max_alloc:  # some drivers accept it and fail later, or never
            raise MemoryError(
                f"opencl:{st.index} ({st.cl_device.name.strip()}) cannot allocate {shape} "
                f"{dtype.name} ({nbytes} bytes): its largest single buffer is {st.max_alloc} "
                "bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE). Split the array, or use a device with "
                "larger buffers.")
        data = st.allocator(nbytes) if size else None
        return cls.wrap(st, data, shape, c_strides(shape, dtype.itemsize), 0, dtype)

    @classmethod
    def from_host(cls, st: ClDevice, host: np.ndarray) -> ClArray:
        host = np.asarray(host, order="C")
        out = cls.empty(st, host.shape, host.dtype)
        if host.size:
            cl.enqueue_copy(st.queue, out.qd_buffer, host, is_blocking=True)
        return out

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> ClArray:
        out = self.wrap(self.qd_state, self.base_data, shape, strides, offset, self.dtype)
        if self.qd_readonly:
            out.qd_readonly = True
        return out

    @property
    def qd_buffer(self) -> cl.Buffer:
        """The device memory (`base_data`) as pyopencl's stubs name kernel and copy operands.

        qdarray's arrays hold pooled buffers, which `enqueue_copy`, `enqueue_fill_buffer` and
        `Kernel.set_args` accept although the stubs list `Buffer` only; empty arrays hold None.
        """
        return cast("cl.Buffer", self.base_data)

    @property
    def buffer_nbytes(self) -> int:
        return int(self.qd_buffer.size)

    # -- host transfer -----------------------------------------------------------------------

    def _read_span(self, lo: int, hi: int) -> np.ndarray:
        raw = np.empty(hi - lo, self.dtype)
        cl.enqueue_copy(self.qd_state.queue, raw, self.qd_buffer,
                        src_offset=lo * self.dtype.itemsize, is_blocking=True)
        return raw

    def get(self, queue: Any = None, ary: Any = None, **kwargs: Any) -> np.ndarray:
        if ary is not None or kwargs:
            return super().get(queue, ary, **kwargs)
        return self.to_host()

    def __repr__(self) -> str:
        return f"ClArray({self.to_host()!r}, device={self.qd_state.name})"

    __str__ = __repr__

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DL_OPENCL, self.qd_state.index)

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise BufferError(
            f"Arrays on opencl:{self.qd_state.index} cannot be exported through DLPack (no "
            "consumer reads OpenCL memory). Use x.to_device('cpu') first."
        )
