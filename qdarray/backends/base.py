"""The interface every device backend implements.

One backend serves both the array namespace and user kernels on its kind of device:

- `xp` is a namespace of the standard's functions over the backend's native arrays
  (NumPy through array-api-compat on the CPU, CuPy on CUDA, generated kernels on OpenCL);
  the namespace modules call `x.device.backend.xp.<name>` and wrap the result.
- storage: `asarray`, `empty`, `placement` (the keywords of `xp`'s creation functions),
  transfers to the host (`to_host`) and between devices of the kind (`copy_between`),
  `synchronize`; interchange: `from_dlpack`, `cuda_array_interface`
  (the DLPack device code of each kind: `backends/__init__.py`);
- memory figures: `available_bytes` (the adstack memory guard);
- reverse mode's copies of what a write overwrites: `save_region` / `restore_region`;
- capabilities: `supports_dtype`, `capabilities`;
- kernels: `target` is the device kind's kernel target (`qdarray/kernels/target.py`), which
  compiles and launches kernels for it; None for a kind that has none yet.

Devices are `qdarray.Device` values; the methods take them as `device` (typed Any here, so
that this interface sits above the Device type without importing it back).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..kernels.target import KernelTarget


class Backend(Protocol):
    """What the namespace, the kernel compiler and reverse mode need from a device kind."""

    @property
    def kind(self) -> str:
        """The device kind ("cpu", "cuda", ...)."""
        ...

    @property
    def xp(self) -> Any:
        """The standard's functions over native arrays (see the module docstring)."""
        ...

    @property
    def native_type(self) -> type:
        """The type of the backend's native arrays."""
        ...

    @property
    def target(self) -> KernelTarget | None:
        """The device kind's kernel target (None: kernels do not run on it yet)."""
        ...

    def devices(self) -> list[Any]:
        """The devices of this kind present on the machine, in a stable order."""
        ...

    def description(self, device: Any) -> str:
        """What `device` is, for people: its platform or driver and its name (discovery.py
        keeps it with the device listing)."""
        ...

    def supports_dtype(self, np_dtype: np.dtype, device: Any) -> bool:
        """Whether arrays of this dtype can live on `device` (float64 is optional on GPUs)."""
        ...

    def normalize(self, result: Any) -> Any:
        """Turn what an `xp` function returned into a native array (0-d scalars included)."""
        ...

    def placement(self, device: Any) -> dict[str, Any]:
        """The keywords `xp`'s creation functions take to make an array on `device`
        (`{"device": device}`; none on the CPU, whose namespace has one device)."""
        ...

    def index_add(self, native: Any, key: tuple[Any, ...], values: Any) -> None:
        """`native[key] += values` where repeated indices of the (advanced) key accumulate,
        as NumPy's `np.add.at` (the reverse of gathers: `take`, array-indexed reads)."""
        ...

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Any) -> Any:
        """A native array on `device` from a native array, host data or nested sequences.

        `copy` False on a native array of this kind means "no copy needed": a dtype change
        converts all the same (the namespace refuses the caller's copy=False beforehand);
        host data with copy False raises a ValueError."""
        ...

    def empty(self, shape: tuple[int, ...], np_dtype: Any, device: Any) -> Any:
        """Uninitialized memory on `device` (adstack heaps); a MemoryError when the device
        cannot allocate it."""
        ...

    def to_host(self, native: Any) -> np.ndarray:
        """A NumPy array with the same values (zero-copy on the CPU)."""
        ...

    def copy_between(self, native: Any, device: Any) -> Any:
        """A copy of a native array of this kind on `device`, another device of the kind."""
        ...

    def available_bytes(self, device: Any) -> int | None:
        """About how many bytes `device` can allocate now (None: it does not say)."""
        ...

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Any) -> Any:
        """A copy of `native[slices]` (a tape's snapshot of what a write overwrites), in a
        form only `restore_region` reads."""
        ...

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        """Put a `save_region` copy back into `native[slices]`."""
        ...

    def from_dlpack(self, obj: Any) -> Any:
        """A native array viewing a DLPack producer's memory on a device of this kind."""
        ...

    def cuda_array_interface(self, native: Any) -> dict[str, Any] | None:
        """The CUDA Array Interface of a native array (None: the kind's arrays have none)."""
        ...

    def byte_layout(self, native: Any) -> tuple[int, tuple[int, ...]]:
        """Where `native`'s first element lies in its memory and its strides, in bytes; the
        first figure is comparable between arrays over the same memory (the tape compares
        the regions kernels read and write through different views with it)."""
        ...

    def window_root(self, native: Any) -> tuple[Any, int]:
        """For a 1-D contiguous native array: the outermost 1-D contiguous array of the same
        dtype it is a slice of, and its element offset there (BufferView's base and offset)."""
        ...

    def synchronize(self, device: Any) -> None:
        """Wait for all work queued on `device`."""
        ...

    def capabilities(self, device: Any) -> dict[str, Any]:
        """The standard's capability flags, plus qdarray's own (``"max dimensions"``, ...)."""
        ...


def save_region(backend: Any, native: Any, slices: tuple[slice, ...], device: Any) -> Any:
    """`Backend.save_region` through the backend's own slicing and `asarray`."""
    return backend.asarray(native[slices], None, True, device)


def restore_region(native: Any, slices: tuple[slice, ...], saved: Any) -> None:
    """`Backend.restore_region` through the native array's slice assignment."""
    native[slices] = saved


def contiguous_span(shape: tuple[int, ...], itemsize: int, slices: tuple[slice, ...]
                    ) -> tuple[int, int] | None:
    """For a C-contiguous array of `shape`: (byte offset, byte count) of the elements
    `slices` (unit-step slices with set bounds, one per axis) select when they form one
    run of memory (one row range followed by whole axes), else None (or when empty)."""
    extents = [s.stop - s.start for s in slices]
    if any(e <= 0 for e in extents):
        return None
    k = len(shape)
    while k > 0 and extents[k - 1] == shape[k - 1]:
        k -= 1
    if any(e != 1 for e in extents[:max(k - 1, 0)]):
        return None
    offset, stride = 0, itemsize
    for n, s in zip(reversed(shape), reversed(slices), strict=True):
        offset += s.start * stride
        stride *= n
    count = itemsize
    for e in extents:
        count *= e
    return offset, count
