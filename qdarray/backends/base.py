"""The interface every device backend implements.

One backend serves both the array namespace and user kernels on its kind of device:

- `xp` is a namespace of the standard's functions over the backend's native arrays
  (NumPy through array-api-compat on the CPU, CuPy on CUDA, generated kernels on OpenCL);
  the namespace modules call `x.device.backend.xp.<name>` and wrap the result.
- storage: `asarray`, `empty`, host transfers, `synchronize`;
- capabilities: `supports_dtype`, `capabilities`;
- kernels: `target` is the device kind's kernel target (`qdarray/kernels/target.py`), which
  compiles and launches kernels for it; None for a kind that has none yet.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._devices import Device
from ..kernels.target import KernelTarget


class Backend(Protocol):
    """What the namespace and the kernel launcher need from a device kind."""

    kind: str
    xp: Any
    native_type: type

    @property
    def target(self) -> KernelTarget | None:
        """The device kind's kernel target (None: kernels do not run on it yet)."""
        ...

    def devices(self) -> list[Device]:
        """The devices of this kind present on the machine, in a stable order."""
        ...

    def supports_dtype(self, np_dtype: np.dtype, device: Device) -> bool:
        """Whether arrays of this dtype can live on `device` (float64 is optional on GPUs)."""
        ...

    def normalize(self, result: Any) -> Any:
        """Turn what an `xp` function returned into a native array (0-d scalars included)."""
        ...

    def asarray(self, obj: Any, np_dtype: np.dtype | None, copy: bool | None,
                device: Device) -> Any:
        """A native array on `device` from a native array, host data or nested sequences."""
        ...

    def to_host(self, native: Any) -> np.ndarray:
        """A NumPy array with the same values (zero-copy on the CPU)."""
        ...

    def window_root(self, native: Any) -> tuple[Any, int]:
        """For a 1-D contiguous native array: the outermost 1-D contiguous array of the same
        dtype it is a slice of, and its element offset there (BufferView's base and offset)."""
        ...

    def synchronize(self, device: Device) -> None:
        """Wait for all work queued on `device`."""
        ...

    def capabilities(self, device: Device) -> dict[str, Any]:
        """The standard's capability flags, plus qdarray's own (``"max dimensions"``, ...)."""
        ...
