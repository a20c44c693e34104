"""Conversion from foreign arrays (NumPy, DLPack producers) and DLPack export."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array import Array, Buffer
from ._autodiff import TAPES
from ._devices import CPU, Device, as_device
from ._errors import NotDLPackError
from ._memory import share, token_for
from .backends import dlpack_device, dlpack_kind

DL_CPU = dlpack_device(CPU)[0]  # the host's DLPack device type code (dlpack.h)


def as_array(obj: Any) -> Array | None:
    """`obj` when it is an Array, a BufferView's window as an Array (with its gradient),
    else None."""
    if type(obj) is Array:
        return obj
    view_array = getattr(obj, "_as_array", None)
    return view_array() if view_array is not None else None


def as_native(obj: Any) -> tuple[Any, Device | None, Buffer | None]:
    """(native array, device, buffer token) for array-like objects; (None, None, None) for
    Python scalars and sequences, which the target backend converts itself."""
    if type(obj) is Array:
        return obj._data, obj._device, obj._buffer
    view_array = getattr(obj, "_as_array", None)
    if view_array is not None:  # BufferView and similar windows
        arr = view_array()
        return arr._data, arr._device, arr._buffer
    if type(obj) is np.ndarray:
        return obj, CPU, None
    if isinstance(obj, np.generic):
        return np.asarray(obj), CPU, None
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        return _import_dlpack(obj)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj), CPU, None
    return None, None, None


def _import_dlpack(obj: Any) -> tuple[Any, Device, None]:
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type == DL_CPU:
        return np.from_dlpack(obj), CPU, None
    kind = dlpack_kind(dev_type)
    if kind is None:
        raise BufferError(f"DLPack device type {dev_type} is not supported by qdarray.")
    device = Device(f"{kind}:{dev_id}")
    return device.backend.from_dlpack(obj), device, None


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """Import an array from any DLPack producer, zero-copy where possible.

    Args:
        x: an object with `__dlpack__` and `__dlpack_device__` (NumPy, CuPy, PyTorch, JAX, ...).
        device: the device for the result; the producer's device when None.
        copy: True always copies, False never copies (BufferError if it must), None as needed.
    """
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise NotDLPackError(
            f"from_dlpack expects an object with __dlpack__ and __dlpack_device__; "
            f"got {type(x).__name__}. Use qd.asarray for sequences and scalars."
        )
    target = None if device is None else as_device(device)
    if type(x) is Array and target is None:
        # The standard: on x's device. A simulated CUDA array's DLPack device is the host's,
        # which would otherwise put a copy on the CPU.
        target = x._device
    if type(x) is Array and target is x._device and copy is not True:
        # The same memory: keep the buffer token, so writes through either count for both,
        # and the gradient companion.
        return x._view(_same)
    if TAPES and type(x) is Array:
        # A copy (to another device, or copy=True), recorded as qd.asarray's. Not through
        # x.__dlpack__: that refuses arrays that need gradients (its consumers are invisible
        # to the tape), and its zero-copy export counts as a write to x.
        if copy is False:
            raise BufferError(f"from_dlpack(copy=False) cannot move data from {x._device} to "
                              f"{target}; use copy=None or copy=True.")
        from ._creation_functions import asarray

        return asarray(x, device=target, copy=True)
    return _from_dlpack(x, target, copy)


def _same(data: Any) -> Any:
    return data


def _from_dlpack(x: Any, target: Device | None, copy: bool | None) -> Array:
    dev_type, dev_id = x.__dlpack_device__()
    if copy is False and target is not None and (dev_type, dev_id) != dlpack_device(target):
        raise BufferError(
            f"from_dlpack(copy=False) cannot move data from DLPack device "
            f"{(dev_type, dev_id)} to {target}; use copy=None or copy=True."
        )
    if dev_type == DL_CPU and (target is None or target is CPU):
        kwargs: dict[str, Any] = {} if copy is None else {"copy": copy}
        data = np.from_dlpack(x, **kwargs)
        if not data.flags.writeable and copy is not False:
            return Array._new(data.copy(), CPU)
        # Host memory another Array may wrap too: one write-generation token for all.
        return Array._new(data, CPU, None if copy else token_for(data))
    data, src, _ = _import_dlpack(x)
    result = Array._new(data, src)
    if target is not None and target is not src:
        if copy is False:
            raise BufferError(
                f"from_dlpack(copy=False) cannot move data from {src} to {target}."
            )
        result = result.to_device(target)
    elif copy:
        native = src.backend.asarray(result._data, None, True, src)
        result = Array._new(native, src)
    return result


def dlpack_export(x: Array, *, stream: Any, max_version: tuple[int, int] | None,
                  dl_device: tuple[int, int] | None, copy: bool | None) -> Any:
    """`x.__dlpack__(...)`: export through the native array's own DLPack support."""
    kwargs: dict[str, Any] = {}
    if stream is not None:
        kwargs["stream"] = stream
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        if dl_device != x.__dlpack_device__():
            if tuple(dl_device) == (DL_CPU, 0) and copy is not False:
                # np.ascontiguousarray would make a 0-d array 1-d: np.array keeps the shape
                return np.array(x._host(), order="C").__dlpack__(
                    max_version=max_version, copy=True)
            raise BufferError(
                f"Cannot export an array on {x.device} to DLPack device {dl_device}."
            )
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    if copy is not True:
        # A zero-copy export can be written through by the consumer, or imported again.
        x._buffer.generation += 1
        share(x._data, x._buffer)
    return x._data.__dlpack__(**kwargs)
