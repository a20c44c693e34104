"""`KernelBuiltBackend`: what the backends of kernel-built devices (OpenCL, Vulkan) share.

Their arrays are `StridedArray`s and their namespace is `KernelNamespace`, so storage,
conversion, transfers, windows, interchange and reverse mode's region copies are the same
code over either; a subclass supplies the device facts (`devices`, `description`, `state`,
`supports_dtype` and the message of `_dtype_refusal`), allocation (`empty`,
`available_bytes`), `synchronize` and its own capabilities (`device_capabilities`), and names
its kind (`label`) and what DLPack importers should do instead (`dlpack_hint`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import base
from . import copy as copy_ops


class KernelBuiltBackend:
    """The shared half of a kernel-built device's backend (module docstring)."""

    kind: str
    label: str  # the kind as people write it: "OpenCL", "Vulkan"
    dlpack_hint: str  # what to do instead of importing the kind's memory through DLPack
    native_type: type[Any]

    def state(self, device: Any) -> Any:
        raise NotImplementedError

    def supports_dtype(self, np_dtype: np.dtype, device: Any) -> bool:
        raise NotImplementedError

    def _dtype_refusal(self, dtype: np.dtype, device: Any) -> str:
        """Why `device` cannot hold `dtype`, and what to use instead."""
        raise NotImplementedError

    def _check_dtype(self, dtype: np.dtype, device: Any) -> None:
        if not self.supports_dtype(dtype, device):
            raise TypeError(self._dtype_refusal(dtype, device))

    def placement(self, device: Any) -> dict[str, Any]:
        return {"device": device}

    def normalize(self, result: Any) -> Any:
        if isinstance(result, self.native_type):
            return result
        raise TypeError(f"the {self.label} namespace function returned "
                        f"{type(result).__name__}")

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Any) -> Any:
        st = self.state(device)
        if isinstance(obj, self.native_type):
            if obj.qd_state is not st:
                return self.asarray(obj.to_host(), np_dtype, True, device)
            if np_dtype is not None and np.dtype(np_dtype) != obj.dtype:
                # As on the CPU (np.asarray), a dtype change converts; the namespace decides
                # beforehand whether the caller's copy=False allows it.
                self._check_dtype(np.dtype(np_dtype), device)
                return copy_ops.astype(obj, np.dtype(np_dtype))
            return copy_ops.contiguous(obj, force=True) if copy else obj
        if copy is False:
            raise ValueError(
                f"asarray(copy=False) cannot place host data on {device} without a copy; "
                "use copy=None or copy=True.")
        with np.errstate(over="ignore"):
            host = np.asarray(obj, dtype=np_dtype)
        if host.dtype == np.float16:
            host = host.astype(np.float32)
        self._check_dtype(host.dtype, device)
        return self.native_type.from_host(st, host)

    def index_add(self, native: Any, key: tuple[Any, ...], values: Any) -> None:
        # On the host (a scatter-add with repeated indices, for reverse mode's gathers), as
        # the namespace's other writes through index arrays.
        kind = self.native_type
        host = native.to_host()
        hkey = tuple(k.to_host() if isinstance(k, kind) else k for k in key)
        np.add.at(host, hkey, values.to_host() if isinstance(values, kind) else values)
        copy_ops.write_host(native, host)

    def to_host(self, native: Any) -> np.ndarray:
        return native.to_host()  # type: ignore[no-any-return]

    def byte_layout(self, native: Any) -> tuple[int, tuple[int, ...]]:
        return int(native.offset), tuple(native.strides)

    def window_root(self, native: Any) -> tuple[Any, int]:
        """The whole buffer as a 1-D array, and `native`'s element offset in it."""
        root: tuple[Any, int] = native.root()
        return root

    def save_region(self, native: Any, slices: tuple[slice, ...], device: Any) -> Any:
        return base.save_region(self, native, slices, device)

    def restore_region(self, native: Any, slices: tuple[slice, ...], saved: Any) -> None:
        base.restore_region(native, slices, saved)

    def copy_between(self, native: Any, device: Any) -> Any:
        return self.asarray(native.to_host(), None, True, device)

    def from_dlpack(self, obj: Any) -> Any:
        """A qdarray array on a device of this kind (its memory, no copy); no other
        producer's memory of the kind can be read."""
        native = getattr(obj, "_data", None)
        if isinstance(native, self.native_type):
            return native
        raise BufferError(f"qdarray cannot import another library's {self.label} memory "
                          f"through DLPack. {self.dlpack_hint}")

    def capabilities(self, device: Any) -> dict[str, Any]:
        """What the device offers (docs/opencl.md, docs/vulkan.md): what every kernel-built
        device has, then the kind's own facts (`device_capabilities`)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64,
                **self.device_capabilities(device)}

    def device_capabilities(self, device: Any) -> dict[str, Any]:
        """The kind's own capabilities: device name, float64, atomics, host functions."""
        raise NotImplementedError

    def cuda_array_interface(self, native: Any) -> None:
        return None
