"""The CUDA backend's `xp`: array-api-compat's CuPy namespace (NumPy's under the simulator),
each function run on the right GPU and without floating-point warnings.

The namespace modules call `xp.<name>(...)` with native arrays and, for creation functions,
`device=<qdarray Device>`. CuPy places new arrays on its *current* device and runs kernels
there, so this wrapper turns the `device=` argument into that device's context (and passes
CuPy no device). On a machine with several GPUs, a call without `device=` runs under the
device of its first CuPy array argument, so that an operation on `cuda:1` arrays runs on
`cuda:1` whatever the current device is; with one GPU (or the simulator) that lookup is
skipped. Functions run under `quiet` (backends/quiet.py), as on the CPU.

`pow` checks integer exponents first: CuPy computes an integer to a negative integer power
(as 0, or +-1 for bases +-1) where NumPy, and so the CPU device, raises a ValueError; the
namespace raises the same error on every device.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._devices import Device
from .. import special_cases
from ..quiet import quiet


def _first_index(args: tuple[Any, ...], array_type: Any) -> int | None:
    for a in args:
        if isinstance(a, array_type):
            return int(a.device.id)
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], array_type):
            return int(a[0].device.id)
    return None


def _int_operand(x: Any, array_type: Any) -> bool:
    if isinstance(x, array_type):
        return bool(x.dtype.kind in "iu")
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def checked_pow(func: Callable[..., Any], array_type: Any) -> Callable[..., Any]:
    """`func` (the namespace's `pow`) raising NumPy's errors for integer bases and negative
    integer exponents: ValueError for a negative element of a signed exponent array (one
    reduction on the device, for integer operands only) or a negative Python int with a
    signed base, OverflowError for a negative Python int with an unsigned base (it does not
    convert to that dtype)."""

    def pow(x1: Any, x2: Any, /, **kwargs: Any) -> Any:  # noqa: A001 - the standard's name
        if _int_operand(x1, array_type) and _int_operand(x2, array_type):
            if isinstance(x2, array_type):
                negative = x2.dtype.kind == "i" and x2.size > 0 and bool((x2 < 0).any())
            else:
                negative = x2 < 0
                if negative and isinstance(x1, array_type) and x1.dtype.kind == "u":
                    raise OverflowError(f"Python integer {x2} out of bounds for {x1.dtype}")
            if negative:
                raise ValueError("Integers to negative integer powers are not allowed. "
                                 "Try a floating-point base (x.astype(float64)) instead.")
        return func(x1, x2, **kwargs)

    return pow


class CudaNamespace:
    """The functions of `module` (and of its submodules) with the device handling above.

    Args:
        module: array-api-compat's `cupy` (or `numpy`, under the simulator).
        cupy: the cupy module, or None under the simulator (where `device=` is dropped).
        several: whether the machine has more than one GPU.
        check: `check(device)` raises for a device that does not exist.
        main: whether `module` is the main namespace (not `linalg` or `fft`).
    """

    def __init__(self, module: types.ModuleType, cupy: Any, several: bool,
                 check: Callable[[Device], None], main: bool = True) -> None:
        self._module = module
        self._cupy = cupy
        self._several = several
        self._check = check
        # The standard's values where NumPy's and CuPy's differ (special_cases.py); only the
        # main namespace has them, not its submodules (linalg, fft).
        self._special: dict[str, Callable[..., Any]] = {}
        if main:
            self._special = special_cases.functions(
                np if cupy is None else cupy, check_first=cupy is None)

    def _wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        run = quiet(func)
        cp = self._cupy
        check = self._check
        if cp is None:  # the simulator: one device, NumPy arrays
            def simulated(*args: Any, **kwargs: Any) -> Any:
                dev = kwargs.get("device")
                if isinstance(dev, Device):
                    check(dev)
                    del kwargs["device"]
                return run(*args, **kwargs)
            return simulated
        current = cp.cuda.runtime.getDevice
        several = self._several
        ndarray = cp.ndarray

        def call(*args: Any, **kwargs: Any) -> Any:
            dev = kwargs.get("device")
            if isinstance(dev, Device):
                check(dev)
                kwargs["device"] = None
                index: int | None = dev.index
            elif several:
                index = _first_index(args, ndarray)
            else:
                index = None
            if index is None or index == current():
                return run(*args, **kwargs)
            with cp.cuda.Device(index):
                return run(*args, **kwargs)

        call.__name__ = getattr(func, "__name__", "call")
        call.__doc__ = getattr(func, "__doc__", None)
        return call

    def __getattr__(self, name: str) -> Any:
        value = self._special.get(name)
        if value is None:
            value = getattr(self._module, name)
        wrapped: Any
        if isinstance(value, types.ModuleType):
            wrapped = CudaNamespace(value, self._cupy, self._several, self._check, main=False)
        elif callable(value) and not isinstance(value, type):
            wrapped = self._wrap(value)
            if name == "pow":
                native = self._cupy.ndarray if self._cupy is not None else np.ndarray
                wrapped = checked_pow(wrapped, native)
        else:
            wrapped = value
        setattr(self, name, wrapped)
        return wrapped

    def __repr__(self) -> str:
        return f"CudaNamespace({self._module.__name__})"
