"""`VkArray`: an n-dimensional array in a Vulkan buffer, and `VulkanDevice`, the device as the
IR-built namespace uses it.

A VkArray is (allocation, device, dtype, shape, strides, offset); strides and offset are in
bytes, as in NumPy, and always multiples of the item size (kernels address
`buffer[offset / itemsize + sum(i_k * strides[k] / itemsize)]`). NumPy's view and indexing
semantics are `kernel_xp.StridedArray`'s: basic indexing, transposes and `swapaxes` give views
of the same buffer, indexing with arrays and assignments run as kernels on the device.

Host access waits for the device's queued work first (backends/vulkan/_stream.py): reads see
every launch issued before them, and writes to mapped memory cannot race a kernel still
reading the old values.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..._devices import Device
from ...kernels.ir import KernelIR
from ..kernel_xp.array import StridedArray
from ..kernel_xp.device import Launcher, target_launcher
from ..kernel_xp.layout import c_strides
from ._instance import DeviceState
from ._memory import Allocation, pool
from ._stream import stream

DL_VULKAN = 7  # kDLVulkan in dlpack.h


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


class VkArray(StridedArray):
    """An array on one Vulkan device (see the module docstring)."""

    __slots__ = ("alloc", "st", "dtype", "shape", "strides", "offset", "qd_readonly",
                 "_contiguous", "_launch", "_flags")

    def __init__(self, st: DeviceState, alloc: Allocation | None, dtype: np.dtype,
                 shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0,
                 readonly: bool = False) -> None:
        self.st = st
        self.alloc = alloc
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(n) for n in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.qd_readonly = readonly
        # Computed on first use (the layout above never changes): whether it is C-contiguous,
        # and what a kernel launch reads of it (`launch_layout`).
        self._contiguous: bool | None = None
        self._launch: tuple[Any, ...] | None = None
        self._flags: _Flags | None = None

    @property
    def qd_device(self) -> VulkanDevice:  # type: ignore[override]
        return device_of(self.st)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls, st: DeviceState, shape: tuple[int, ...], dtype: Any) -> VkArray:
        dtype = np.dtype(dtype)
        shape = tuple(operator.index(n) for n in shape)
        size = math.prod(shape)
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
        return VkArray(self.st, self.alloc, self.dtype, shape, strides, offset,
                       self.qd_readonly)

    @property
    def base_data(self) -> Allocation | None:
        """The buffer (None when empty), under the name kernel arguments use for it."""
        return self.alloc

    @property
    def buffer_nbytes(self) -> int:
        return self.alloc.size if self.alloc is not None else 0

    @property
    def qd_state(self) -> DeviceState:
        return self.st

    # -- layout ------------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # Python ints: exact, and cheap on every launch

    @property
    def nbytes(self) -> int:
        return self.size * int(self.dtype.itemsize)

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)

    # -- host transfer -----------------------------------------------------------------------

    def _read_span(self, lo: int, hi: int) -> np.ndarray:
        item = self.dtype.itemsize
        assert self.alloc is not None
        return read_bytes(self.st, self.alloc, lo * item, (hi - lo) * item).view(self.dtype)

    def write_host(self, values: Any) -> None:
        """`self[...] = values` from host data (broadcast and cast as NumPy does)."""
        if self.qd_readonly:
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
        lo, hi = self.span()
        raw = self._read_span(lo, hi)
        view = np.lib.stride_tricks.as_strided(raw[self.elem_offset - lo:], shape=self.shape,
                                               strides=self.strides)
        with np.errstate(all="ignore"):
            view[...] = value
        assert self.alloc is not None
        write_bytes(self.st, self.alloc, lo * self.dtype.itemsize, raw)

    def get(self) -> np.ndarray:
        return self.to_host()

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

    def is_c_contiguous(self) -> bool:
        found = self._contiguous
        if found is None:
            found = self._contiguous = super().is_c_contiguous()
        return found

    def launch_layout(self) -> tuple[Any, ...]:
        """(allocation, (offset, *shape, *strides) in elements, allocation bytes, whether
        the last dimension's stride is one element or it has at most one) as a kernel
        launch packs them, computed once (backends/vulkan/target.py)."""
        found = self._launch
        if found is None:
            alloc = self.alloc
            strides = self.elem_strides()
            found = self._launch = (alloc, (self.elem_offset, *self.shape, *strides),
                                    alloc.size if alloc is not None else 0, unit_last(self))
        return found

    @property
    def flags(self) -> Any:
        """NumPy's `writeable` (False for broadcast views) and `c_contiguous` (made again
        when `qd_readonly` changed since: the namespace sets it on fresh broadcast views)."""
        found = self._flags
        if found is None or found.writeable == bool(self.qd_readonly):
            found = self._flags = _Flags(not self.qd_readonly, self.is_c_contiguous())
        return found


def unit_last(x: Any) -> bool:
    """Whether array `x` (with `shape` and `elem_strides()`) has a last dimension whose
    stride is one element, or which has at most one element (its index is then 0)."""
    return bool(x.shape) and (x.shape[-1] <= 1 or x.elem_strides()[-1] == 1)


class _Flags:
    __slots__ = ("writeable", "c_contiguous")

    def __init__(self, writeable: bool, c_contiguous: bool) -> None:
        self.writeable = writeable
        self.c_contiguous = c_contiguous


class VulkanDevice:
    """One Vulkan device as the IR-built namespace uses it (`kernel_xp.device.KernelDevice`):
    its namespace kernels compile through the Vulkan kernel target, as user kernels do."""

    def __init__(self, st: DeviceState) -> None:
        self.st = st
        self.index = st.index
        self.launchers: dict[Hashable, Launcher] = {}

    @property
    def device(self) -> Device:
        return Device(f"vulkan:{self.index}")

    @property
    def gpu(self) -> bool:
        return self.st.type in (1, 2, 3)  # integrated, discrete, virtual

    @property
    def workers(self) -> int:
        # Vulkan reports no count of compute units: a discrete GPU is taken to keep about
        # 2^18 invocations busy, an integrated one 2^15, a CPU implementation 64 per core.
        if self.st.type == 2:
            return 1 << 18
        if self.gpu:
            return 1 << 15
        return 64 * (os.cpu_count() or 1)

    def has_fp64(self) -> bool:
        return bool(self.st.features["float64"])

    def empty(self, shape: tuple[int, ...], dtype: Any) -> VkArray:
        return VkArray.empty(self.st, shape, dtype)

    def from_host(self, host: np.ndarray) -> VkArray:
        return VkArray.from_host(self.st, host)

    def copy_bytes(self, dst: Any, src: Any) -> None:
        nbytes = src.size * src.dtype.itemsize
        if nbytes:
            stream(self.st).copy(src.alloc, src.offset, dst.alloc, dst.offset, nbytes)

    def launcher(self, ir: KernelIR) -> Launcher:
        """Compile a namespace kernel through the Vulkan kernel target."""
        return target_launcher(self, ir)


def device_of(st: DeviceState) -> VulkanDevice:
    """The `VulkanDevice` of `st` (one per device)."""
    found: VulkanDevice | None = st.extra.get("kernel_device")
    if found is None:
        found = st.extra["kernel_device"] = VulkanDevice(st)
    return found
