"""`VkArray`: an n-dimensional array in a Vulkan buffer, with NumPy's view semantics.

A VkArray is (allocation, device, dtype, shape, strides, offset); strides and offset are in
bytes, as in NumPy, and always multiples of the item size (kernels address
`buffer[offset / itemsize + sum(i_k * strides[k] / itemsize)]`). Basic indexing, transposes
and `swapaxes` give views of the same buffer; other indexing and assignments run on a host
copy of the span the array covers and write the span back, so writes through any view are
seen by every other view of the buffer.

Host access waits for the device's queued work first (backends/vulkan/_stream.py): reads see
every launch issued before them, and writes to mapped memory cannot race a kernel still
reading the old values.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._instance import DeviceState
from ._memory import Allocation, pool
from ._stream import stream

DL_VULKAN = 7  # kDLVulkan in dlpack.h


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def read_bytes(st: DeviceState, a: Allocation, offset: int, nbytes: int) -> np.ndarray:
    """A host copy of `nbytes` bytes at `offset` of `a`, after the work queued before."""
    s = stream(st)
    if a.host is not None:
        s.finish()
        return a.host[offset:offset + nbytes].copy()
    staging = pool(st).alloc(nbytes, staging=True)
    s.copy(a, offset, staging, 0, nbytes)
    s.finish()
    assert staging.host is not None
    return staging.host[:nbytes].copy()


def write_bytes(st: DeviceState, a: Allocation, offset: int, data: np.ndarray) -> None:
    """Write `data` (any dtype, C-contiguous) at byte `offset` of `a`, ordered after the work
    queued before."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    s = stream(st)
    if a.host is not None:
        s.finish()
        a.host[offset:offset + raw.size] = raw
        return
    staging = pool(st).alloc(raw.size, staging=True)
    assert staging.host is not None
    staging.host[:raw.size] = raw
    s.copy(staging, 0, a, offset, raw.size)


class VkArray:
    """An array on one Vulkan device (see the module docstring)."""

    __slots__ = ("alloc", "st", "dtype", "shape", "strides", "offset", "readonly",
                 "__weakref__")

    def __init__(self, st: DeviceState, alloc: Allocation | None, dtype: np.dtype,
                 shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0,
                 readonly: bool = False) -> None:
        self.st = st
        self.alloc = alloc
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(n) for n in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.readonly = readonly

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls, st: DeviceState, shape: tuple[int, ...], dtype: Any) -> VkArray:
        dtype = np.dtype(dtype)
        shape = tuple(operator.index(n) for n in shape)
        size = int(np.prod(shape, dtype=np.int64))
        # Rounded up to 8 bytes: atomics on 8- and 16-bit elements update whole 32-bit words.
        alloc = pool(st).alloc(-(-size * dtype.itemsize // 8) * 8) if size else None
        return cls(st, alloc, dtype, shape, c_strides(shape, dtype.itemsize))

    @classmethod
    def from_host(cls, st: DeviceState, host: np.ndarray) -> VkArray:
        host = np.asarray(host, order="C")  # ascontiguousarray would make 0-d 1-d
        out = cls.empty(st, host.shape, host.dtype)
        if out.alloc is not None:
            write_bytes(st, out.alloc, 0, host)
        return out

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> VkArray:
        return VkArray(self.st, self.alloc, self.dtype, shape, strides, offset, self.readonly)

    @property
    def base_data(self) -> Allocation | None:
        """The buffer (None when empty), under the name kernel arguments use for it."""
        return self.alloc

    # -- layout ------------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

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
        """[lo, hi) element range of the buffer this array touches; (0, 0) when empty."""
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

    def _span_host(self) -> tuple[np.ndarray, int]:
        """(host copy of the touched span as elements, its first element index)."""
        lo, hi = self.span()
        item = self.dtype.itemsize
        assert self.alloc is not None
        raw = read_bytes(self.st, self.alloc, lo * item, (hi - lo) * item)
        return raw.view(self.dtype), lo

    def to_host(self) -> np.ndarray:
        """A C-contiguous NumPy copy (waits for the device)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        raw, lo = self._span_host()
        view = np.lib.stride_tricks.as_strided(raw[self.elem_offset - lo:], shape=self.shape,
                                               strides=self.strides)
        return np.array(view, copy=True, order="C")

    def write_host(self, values: Any) -> None:
        """`self[...] = values` from host data (broadcast and cast as NumPy does)."""
        if self.readonly:
            raise ValueError("assignment destination is read-only (a broadcast view)")
        if self.size == 0:
            return
        value = np.asarray(values)
        if self.is_c_contiguous():
            with np.errstate(all="ignore"):
                host = np.empty(self.shape, self.dtype)
                host[...] = value
            assert self.alloc is not None
            write_bytes(self.st, self.alloc, self.offset, host)
            return
        raw, lo = self._span_host()
        raw = raw.copy()
        view = np.lib.stride_tricks.as_strided(raw[self.elem_offset - lo:], shape=self.shape,
                                               strides=self.strides)
        with np.errstate(all="ignore"):
            view[...] = value
        assert self.alloc is not None
        write_bytes(self.st, self.alloc, lo * self.dtype.itemsize, raw)

    def get(self) -> np.ndarray:
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

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        host = self.to_host()
        return host if dtype is None else host.astype(dtype)

    def __repr__(self) -> str:
        return f"VkArray({self.to_host()!r}, device={self.st.label})"

    __str__ = __repr__

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DL_VULKAN, self.st.index)

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise BufferError(
            f"Arrays on {self.st.label} cannot be exported through DLPack without a copy (no "
            "consumer reads Vulkan buffers). Use x.__dlpack__(dl_device=(1, 0)) or "
            "x.to_device('cpu') for a host copy.")

    # -- views -------------------------------------------------------------------------------

    @property
    def T(self) -> VkArray:  # noqa: N802
        return self.permute(tuple(range(self.ndim))[::-1])

    def permute(self, perm: tuple[int, ...]) -> VkArray:
        return self._view(tuple(self.shape[p] for p in perm),
                          tuple(self.strides[p] for p in perm), self.offset)

    def swapaxes(self, a: int, b: int) -> VkArray:
        perm = list(range(self.ndim))
        a, b = a % self.ndim, b % self.ndim
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(tuple(perm))

    def basic_view(self, key: tuple[Any, ...]) -> VkArray:
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
        tkey = key if isinstance(key, tuple) else (key,)
        if all(k is None or k is Ellipsis or type(k) is slice or _is_int(k) for k in tkey):
            return self.basic_view(tkey)
        host_key = _host_key(key)
        return VkArray.from_host(self.st, np.asarray(self.to_host()[host_key]))

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, VkArray):
            value = value.to_host()
        tkey = key if isinstance(key, tuple) else (key,)
        if all(k is None or k is Ellipsis or type(k) is slice or _is_int(k) for k in tkey):
            self.basic_view(tkey).write_host(value)
            return
        host = self.to_host()
        host[_host_key(key)] = value
        self.write_host(host)

    def reshape(self, *shape: Any) -> VkArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = _resolve_shape(tuple(operator.index(n) for n in shape), self.size)
        if self.is_c_contiguous():
            return self._view(new, c_strides(new, self.dtype.itemsize), self.offset)
        return VkArray.from_host(self.st, self.to_host().reshape(new))

    def copy(self) -> VkArray:
        return VkArray.from_host(self.st, self.to_host())

    def astype(self, dtype: Any) -> VkArray:
        with np.errstate(all="ignore"):
            return VkArray.from_host(self.st, self.to_host().astype(dtype))


def _resolve_shape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    """`shape` with its one -1 filled in; a ValueError as NumPy's when sizes disagree."""
    unknown = [i for i, n in enumerate(shape) if n == -1]
    known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise ValueError(f"cannot reshape to {shape}: one -1 at most, no other negative size")
    if unknown and known and size % known == 0:
        return shape[:unknown[0]] + (size // known,) + shape[unknown[0] + 1:]
    if unknown or known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def _is_int(k: Any) -> bool:
    if isinstance(k, (bool, np.bool_, VkArray, np.ndarray)):
        return False
    try:
        operator.index(k)
    except TypeError:
        return False
    return True


def _host_key(key: Any) -> Any:
    if isinstance(key, VkArray):
        return key.to_host()
    if isinstance(key, tuple):
        return tuple(_host_key(k) for k in key)
    return key
