"""`ClArray`: a pyopencl array with NumPy's view and indexing semantics.

qdarray's namespace treats native arrays as NumPy treats its own: basic indexing gives views
of any strides (negative ones included), `x[key] = value` broadcasts and casts, `x.T` and
`x.swapaxes` are views, and 0-d results convert with `int()` / `float()`. pyopencl's array
covers contiguous data only, so `ClArray` subclasses it (it *is* a `pyopencl.array.Array`,
usable with pyopencl's own functions where those accept its layout) and adds the rest.

Strides and offsets are in bytes, as in NumPy and pyopencl; every array qdarray makes has
strides and offset that are multiples of the item size, which the generated kernels rely on
(they address `base[offset / itemsize + sum(i_k * strides[k] / itemsize)]`).
"""

from __future__ import annotations

import operator
from typing import Any, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.compyte.array import ArrayFlags

from ._runtime import DeviceState

DL_OPENCL = 4


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class Flags(ArrayFlags):
    """pyopencl's layout flags plus NumPy's `writeable` (False for broadcast views)."""

    def __init__(self, ary: ClArray) -> None:
        super().__init__(ary)
        self.writeable = not ary.qd_readonly


class ClArray(cla.Array):
    """A pyopencl array on one qdarray OpenCL device (see the module docstring)."""

    qd_state: DeviceState
    qd_readonly = False

    @property
    def flags(self) -> Flags:
        return Flags(self)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def wrap(cls, st: DeviceState, data: Any, shape: tuple[int, ...], strides: tuple[int, ...],
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
    def empty(cls, st: DeviceState, shape: tuple[int, ...], dtype: Any) -> ClArray:
        dtype = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        size = 1
        for n in shape:
            size *= n
        # Rounded up to 8 bytes: atomics on 8- and 16-bit elements update whole 32-bit words.
        data = st.allocator(-(-size * dtype.itemsize // 8) * 8) if size else None
        return cls.wrap(st, data, shape, c_strides(shape, dtype.itemsize), 0, dtype)

    @classmethod
    def from_host(cls, st: DeviceState, host: np.ndarray) -> ClArray:
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

    # -- layout ------------------------------------------------------------------------------

    @property
    def elem_offset(self) -> int:
        return self.offset // self.dtype.itemsize

    def elem_strides(self) -> tuple[int, ...]:
        item = self.dtype.itemsize
        return tuple(s // item for s in self.strides)

    def is_c_contiguous(self) -> bool:
        if self.size <= 1:
            return True
        expected = self.dtype.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def span(self) -> tuple[int, int]:
        """[lo, hi) element range of the base buffer this array touches (relative to the
        buffer start); (0, 0) when empty."""
        if self.size == 0:
            return 0, 0
        lo = hi = self.elem_offset
        for n, s in zip(self.shape, self.elem_strides(), strict=True):
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + 1

    # -- host transfer -----------------------------------------------------------------------

    def to_host(self) -> np.ndarray:
        """A C-contiguous NumPy copy (blocking)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        item = self.dtype.itemsize
        lo, hi = self.span()
        raw = np.empty(hi - lo, self.dtype)
        cl.enqueue_copy(self.qd_state.queue, raw, self.qd_buffer, src_offset=lo * item,
                        is_blocking=True)
        view = np.lib.stride_tricks.as_strided(
            raw[self.elem_offset - lo:], shape=self.shape, strides=self.strides)
        return np.array(view, copy=True, order="C")

    def get(self, queue: Any = None, ary: Any = None, **kwargs: Any) -> np.ndarray:
        if ary is not None or kwargs:
            return super().get(queue, ary, **kwargs)
        return self.to_host()

    def item(self) -> Any:
        if self.size != 1:
            raise ValueError(f"item() needs an array of one element; got shape {self.shape}.")
        return self.to_host().reshape(()).item()

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        return operator.index(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

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

    # -- views -------------------------------------------------------------------------------

    @property
    def T(self) -> ClArray:  # noqa: N802
        return self.permute(tuple(range(self.ndim))[::-1])

    def permute(self, perm: tuple[int, ...]) -> ClArray:
        return self._view(tuple(self.shape[p] for p in perm),
                          tuple(self.strides[p] for p in perm), self.offset)

    def transpose(self, *axes: Any) -> ClArray:
        if not axes or axes == (None,):
            return self.T
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.permute(tuple(int(a) % self.ndim for a in axes))

    def swapaxes(self, a: int, b: int) -> ClArray:
        perm = list(range(self.ndim))
        a, b = a % self.ndim, b % self.ndim
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(tuple(perm))

    def basic_view(self, key: tuple[Any, ...]) -> ClArray:
        """The view NumPy's basic indexing (ints, slices, None, ...) selects."""
        n_axes = sum(1 for k in key if k is not None and k is not Ellipsis)
        if Ellipsis in key:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - n_axes) + key[i + 1:]
        else:
            key = key + (slice(None),) * (self.ndim - n_axes)
        shape: list[int] = []
        strides: list[int] = []
        offset = self.offset
        axis = 0
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            n, s = self.shape[axis], self.strides[axis]
            axis += 1
            if type(k) is slice:
                start, stop, step = k.indices(n)
                count = len(range(start, stop, step))
                if count:
                    offset += start * s
                shape.append(count)
                strides.append(s * step)
            else:
                i = operator.index(k)
                if i < 0:
                    i += n
                if not 0 <= i < n:
                    raise IndexError(f"index {k} is out of bounds for axis {axis - 1} with "
                                     f"size {n}")
                offset += i * s
        return self._view(tuple(shape), tuple(strides), offset)

    def __getitem__(self, key: Any) -> Any:
        from ._indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        from ._indexing import setitem

        setitem(self, key, value)

    def reshape(self, *shape: Any, order: str = "C") -> ClArray:
        from ._manipulation import reshape

        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, tuple(shape))

    def copy(self, queue: Any = None) -> ClArray:
        from ._copy import contiguous

        return contiguous(self, force=True)

    def astype(self, dtype: Any, queue: Any = None) -> ClArray:
        from ._copy import astype

        return astype(self, np.dtype(dtype))
