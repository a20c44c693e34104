"""The inspection API: `qd.__array_namespace_info__()`.

Example::

    info = qd.__array_namespace_info__()
    info.capabilities()["boolean indexing"]        # True
    info.default_dtypes(device="cpu")["indexing"]   # qdarray.int64
    info.devices()                                  # (Device('cpu'), ...present devices)
"""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._devices import KNOWN_KINDS, Device, as_device, get_default_device
from ._dtypes import DType
from .backends import discovery

# Kind names accepted by `dtypes(kind=...)`, the vocabulary of the standard's `isdtype`.
_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")


class Info:
    """What this namespace supports, per device. Obtain it with
    `qd.__array_namespace_info__()`."""

    __module__ = "qdarray"

    def capabilities(self) -> dict[str, Any]:
        """The standard's capability flags of the default device's backend:
        "boolean indexing", "data-dependent shapes" and "max dimensions"."""
        device = get_default_device()
        caps = dict(device.backend.capabilities(device))
        caps.setdefault("boolean indexing", True)
        caps.setdefault("data-dependent shapes", True)
        caps.setdefault("max dimensions", 64)
        return caps

    def default_device(self) -> Device:
        """The device arrays are created on when none is given: the CPU unless
        `qd.set_default_device`, `with qd.default_device(...)` or the
        `QDARRAY_DEFAULT_DEVICE` environment variable chose another (see docs/devices.md)."""
        return get_default_device()

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        """Default dtypes on `device`: "real floating", "complex floating", "integral" and
        "indexing". Devices without float64 default to float32 and complex64."""
        target = as_device(device)
        wide = target.backend.supports_dtype(_dtypes.float64._np, target)
        return {
            "real floating": _dtypes.float64 if wide else _dtypes.float32,
            "complex floating": _dtypes.complex128 if wide else _dtypes.complex64,
            "integral": _dtypes.int64,
            "indexing": _dtypes.int64,
        }

    def dtypes(self, *, device: Any = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, DType]:
        """The dtypes `device` supports, by name, limited to `kind` (an `isdtype` kind name
        or a tuple of them) when given.

        Raises:
            ValueError: for an unknown kind name.
        """
        target = as_device(device)
        kinds = (kind,) if isinstance(kind, str) else kind
        allowed: tuple[DType, ...] = _dtypes.ALL_DTYPES
        if kinds is not None:
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(
                        f"Unknown dtype kind {k!r}; use one of {', '.join(map(repr, _KINDS))}."
                    )
            allowed = tuple(d for d in _dtypes.ALL_DTYPES
                            if any(d in _dtypes.DTYPE_CATEGORIES[k] for k in kinds))
        backend = target.backend
        return {d.name: d for d in allowed if backend.supports_dtype(d._np, target)}

    def devices(self) -> tuple[Device, ...]:
        """The devices present, as a tuple (a list before the standard's 2025.12 revision):
        always the CPU, then those of every backend that loads. Listed per kind without
        opening a device, from a listing cached across processes where the drivers have not
        changed (backends/discovery.py): well under a second in a fresh process."""
        found: list[Device] = []
        for kind in KNOWN_KINDS:  # the CPU first
            found.extend(discovery.devices(kind))
        return tuple(found)


def __array_namespace_info__() -> Info:
    """The inspection namespace of the standard (capabilities, devices and dtypes)."""
    return Info()
