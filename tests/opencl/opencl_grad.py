"""`OpenCLGrad`: the reverse-mode tests' `Grad` (tests/ad/gradcheck.py) with every launch on
an OpenCL device. Array arguments (and their gradients) are copied to the device before a
launch and copied back after it, so tests written for CPU arrays check the device's gradients
against the same finite differences and closed forms."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from shared_kernel_tests import load

import qdarray as qd
from qdarray._array import Array

Grad = load("gradcheck", "ad").Grad


class OpenCLGrad(Grad):
    """Forward, reverse and taped launches on `device` (see the module docstring)."""

    def __init__(self, device: str) -> None:
        super().__init__("opencl")
        self.device = device

    def _move(self, x: Any, moved: dict[int, tuple[Any, Any]]) -> Any:
        if type(x) is Array and x.device != qd.Device(self.device):
            if id(x) not in moved:
                dev = qd.asarray(x, device=self.device, copy=True)
                if x.grad is not None:
                    dev._grad = x.grad.to_device(self.device)
                moved[id(x)] = (x, dev)
            return moved[id(x)][1]
        if type(x) is np.ndarray:
            return self._move(qd.asarray(x), moved)
        if type(x) is qd.BufferView:
            base = self._move(x._base, moved)
            return qd.BufferView(base, offset=x._offset, size=x._size)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return dataclasses.replace(x, **{f.name: self._move(getattr(x, f.name), moved)
                                             for f in dataclasses.fields(x)})
        return x

    @staticmethod
    def _back(moved: dict[int, tuple[Any, Any]]) -> None:
        for orig, dev in moved.values():
            orig[...] = dev.to_device("cpu")
            if orig.grad is not None:
                orig.grad[...] = dev.grad.to_device("cpu")

    def forward(self, kern: Any, *args: Any) -> None:
        moved: dict[int, tuple[Any, Any]] = {}
        kern(*[self._move(a, moved) for a in args])
        self._back(moved)

    def reverse(self, kern: Any, *args: Any) -> None:
        moved: dict[int, tuple[Any, Any]] = {}
        try:
            kern.grad(*[self._move(a, moved) for a in args])
        finally:
            self._back(moved)

    def tape(self, kern: Any, loss: Any, *args: Any) -> None:
        moved: dict[int, tuple[Any, Any]] = {}
        dargs = [self._move(a, moved) for a in args]
        with qd.ad.Tape(loss=self._move(loss, moved)):
            kern(*dargs)
        self._back(moved)
