"""What the IR-built namespace needs from a device: allocation, a kernel target, a few facts.

A backend whose device can run kernels of the kernel compiler implements `KernelDevice` for
each device (OpenCL: `opencl/_runtime.DeviceState`) and stores arrays that implement
`array.StridedArray`. The namespace builds each operation's IR with `kernels.library`,
compiles it once per signature through `KernelDevice.launcher` and launches it with
`launch(device, key, build, args)`: array arguments are `Window`s (buffer, element offset,
shape and element strides: any view, no copy), scalar arguments Python or NumPy scalars.
`target_launcher` compiles through the backend's kernel target (`backend.target`, the one
user kernels use), for targets whose launchers take such arguments as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple, Protocol, cast

import numpy as np

from ..._devices import Device
from ...kernels.ir import KernelIR
from ...kernels.passes import pipeline

Launcher = Callable[[Sequence[Any]], None]


class Window(NamedTuple):
    """An array argument of a namespace kernel: `base_data` (the device buffer, or None when
    empty), the element offset of index 0 in it, the shape and the strides in elements."""

    base_data: Any
    elem_offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def elem_strides(self) -> tuple[int, ...]:
        return self.strides


class KernelDevice(Protocol):
    """One device as the IR-built namespace uses it."""

    index: int
    launchers: dict[Hashable, Launcher]

    @property
    def device(self) -> Device:
        """The qdarray Device."""
        ...

    @property
    def gpu(self) -> bool:
        """Whether the device is a GPU (launch shapes: coalescing, unrolling)."""
        ...

    @property
    def workers(self) -> int:
        """About how many work-items keep the device busy (reduction and scan splits)."""
        ...

    def has_fp64(self) -> bool:
        """Whether float64 (and complex128) exist on the device."""
        ...

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A new C-contiguous native array (uninitialized)."""
        ...

    def from_host(self, host: np.ndarray) -> Any:
        """A new native array holding a copy of `host`."""
        ...

    def copy_bytes(self, dst: Any, src: Any) -> None:
        """Copy C-contiguous `src` into C-contiguous `dst` of the same size and dtype."""
        ...

    def launcher(self, ir: KernelIR) -> Launcher:
        """Compile a namespace kernel for this device (through its backend's kernel target)."""
        ...


def _as_is(x: Any, out: list[Any]) -> None:
    out.append(x)


def target_launcher(dev: KernelDevice, ir: KernelIR) -> Launcher:
    """`ir` compiled by the kernel target of `dev`'s backend (the compile pipeline, then the
    target's launcher), its arguments passed as they are (no packing, no write generations:
    the namespace bumps those of the arrays it writes)."""
    target = dev.device.backend.target
    assert target is not None, f"{dev.device} has no kernel target"
    kernel = pipeline(ir, debug=False, lower=target.lowers_views)
    built = target.launcher(kernel, [_as_is] * len(kernel.params), [], debug=False,
                            device=dev.device)
    return cast(Launcher, built)  # a target's launchers add __call__(args) to the base


def launch(dev: KernelDevice, key: Hashable, build: Callable[[], KernelIR],
           args: Sequence[Any]) -> None:
    """Run the namespace kernel `build()` (compiled once per `key` and device) on `args`."""
    fn = dev.launchers.get(key)
    if fn is None:
        fn = dev.launcher(build())
        dev.launchers[key] = fn
    fn(args)
