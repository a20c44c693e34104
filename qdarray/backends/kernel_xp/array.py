"""`StridedArray`: NumPy's view semantics for a backend's native device arrays.

A native array is (buffer, dtype, shape, strides and offset in bytes, device). Basic indexing
gives views of any strides (negative ones included), `x.T` and `x.swapaxes` are views, 0-d
arrays convert with `int()` / `float()`, `x[key] = value` broadcasts and casts (array keys go
through `indexing`). A backend's array class mixes this in and supplies `_view`,
`_read_span` (a host copy of a range of its buffer) and the attributes listed on the class.
Every array has strides and an offset that are multiples of its item size, which the kernels
rely on (they address elements).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .copy import astype, contiguous
from .device import KernelDevice, Window
from .indexing import getitem, setitem
from .manipulation import reshape


class StridedArray:
    """The view logic shared by the native arrays of IR-kernel backends (module docstring).

    A subclass provides `shape`, `strides` and `offset` (bytes), `dtype` (a NumPy dtype),
    `size`, `ndim`, `base_data` (the buffer; None when empty), `buffer_nbytes` (its size),
    `qd_state` (the backend's state of its device), `qd_device` (its `KernelDevice`),
    `_view(shape, strides, offset)` and `_read_span(lo, hi)`.
    """

    qd_readonly = False
    qd_device: KernelDevice
    shape: Any
    strides: Any
    offset: Any
    dtype: Any
    size: Any
    ndim: Any
    base_data: Any

    @property
    def buffer_nbytes(self) -> int:
        """The size of the buffer in bytes."""
        raise NotImplementedError

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any:
        raise NotImplementedError

    def _read_span(self, lo: int, hi: int) -> np.ndarray:
        """A host copy of elements [lo, hi) of the buffer (1-D, this array's dtype), after
        the work queued on the device before."""
        raise NotImplementedError

    def to_host(self) -> np.ndarray:
        """A C-contiguous NumPy copy (waits for the device)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        lo, hi = self.span()
        raw = self._read_span(lo, hi)
        view = np.lib.stride_tricks.as_strided(raw[self.elem_offset - lo:], shape=self.shape,
                                               strides=self.strides)
        return np.array(view, copy=True, order="C")

    def root(self) -> tuple[Any, int]:
        """The whole buffer as a 1-D array of this dtype, and this array's element offset in
        it (a `BufferView`'s base)."""
        item = self.dtype.itemsize
        if self.base_data is None:
            return self, 0
        return self._view((self.buffer_nbytes // item,), (item,), 0), self.elem_offset

    # -- layout ------------------------------------------------------------------------------

    @property
    def elem_offset(self) -> int:
        return int(self.offset) // int(self.dtype.itemsize)

    def elem_strides(self) -> tuple[int, ...]:
        item = self.dtype.itemsize
        return tuple(s // item for s in self.strides)

    def window(self) -> Window:
        """This array as a kernel argument."""
        return Window(self.base_data, self.elem_offset, tuple(self.shape), self.elem_strides())

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

    # -- scalars -----------------------------------------------------------------------------

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

    # -- views -------------------------------------------------------------------------------

    @property
    def T(self) -> Any:  # noqa: N802
        return self.permute(tuple(range(self.ndim))[::-1])

    def permute(self, perm: tuple[int, ...]) -> Any:
        return self._view(tuple(self.shape[p] for p in perm),
                          tuple(self.strides[p] for p in perm), self.offset)

    def transpose(self, *axes: Any) -> Any:
        if not axes or axes == (None,):
            return self.T
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.permute(tuple(int(a) % self.ndim for a in axes))

    def swapaxes(self, a: int, b: int) -> Any:
        perm = list(range(self.ndim))
        a, b = a % self.ndim, b % self.ndim
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(tuple(perm))

    def basic_view(self, key: tuple[Any, ...]) -> Any:
        """The view NumPy's basic indexing (ints, slices, None, ...) selects."""
        n_axes = sum(1 for k in key if k is not None and k is not Ellipsis)
        if n_axes > self.ndim:
            raise IndexError(f"too many indices for array: array is {self.ndim}-dimensional, "
                             f"but {n_axes} were indexed")
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
        return getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        setitem(self, key, value)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, tuple(shape))

    def copy(self, queue: Any = None) -> Any:
        return contiguous(self, force=True)

    def astype(self, dtype: Any, queue: Any = None) -> Any:
        return astype(self, np.dtype(dtype))
