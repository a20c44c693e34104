"""Gradient checks for the reverse-mode tests: `Grad` runs forward and reverse on one backend
("interp": the IR interpreter, "cpu": numba) and compares gradients with central finite
differences of the forward kernel."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import qdarray as qd
from qdarray._array import Array


def host(x: Any) -> np.ndarray:
    """A NumPy copy of an Array (or of its gradient), on any device."""
    return np.array(x.to_device("cpu")._data, copy=True)


class Grad:
    """Forward / reverse launches on one backend, and gradient checks."""

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def forward(self, kern: Any, *args: Any) -> None:
        if self.backend == "interp":
            kern.interpret(*args)
        else:
            kern(*args)

    def reverse(self, kern: Any, *args: Any) -> None:
        if self.backend == "interp":
            kern.grad.interpret(*args)
        else:
            kern.grad(*args)

    def tape(self, kern: Any, loss: Any, *args: Any) -> None:
        with qd.ad.Tape(loss=loss):
            self.forward(kern, *args)

    def check(self, kern: Any, make: Callable[[], dict[str, Any]], wrt: tuple[str, ...],
              outs: tuple[str, ...], *, seed: int = 0, h: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-7) -> dict[str, np.ndarray]:
        """Compare the reverse with central differences of sum(w * outputs).

        `make()` returns the kernel's arguments by name, in order, as NumPy arrays or
        scalars; `wrt` names the float arrays to differentiate, `outs` the outputs (given a
        random gradient `w`). Returns the gradients."""
        rng = np.random.default_rng(seed)
        base = make()
        weights = {o: rng.normal(size=np.shape(base[o])) for o in outs}

        def launch(values: dict[str, Any], grads: bool) -> dict[str, Any]:
            args = {}
            for name, v in values.items():
                if isinstance(v, np.ndarray):
                    args[name] = qd.asarray(v.copy(), requires_grad=grads and (
                        name in wrt or name in outs))
                else:
                    args[name] = v
            self.forward(kern, *args.values())
            return args

        def loss(values: dict[str, Any]) -> float:
            args = launch(values, False)
            return float(sum(np.sum(weights[o] * host(args[o])) for o in outs))

        args = launch(base, True)
        for o in outs:
            args[o].grad[...] = qd.asarray(weights[o].astype(base[o].dtype))
        self.reverse(kern, *args.values())
        got = {name: host(args[name].grad) for name in wrt}
        for name in wrt:
            x = base[name]
            numeric = np.zeros(x.shape)
            for k in np.ndindex(x.shape):
                up, down = dict(base), dict(base)
                up[name] = x.copy()
                down[name] = x.copy()
                up[name][k] += h
                down[name][k] -= h
                numeric[k] = (loss(up) - loss(down)) / (2 * h)
            np.testing.assert_allclose(got[name], numeric, rtol=rtol, atol=atol,
                                       err_msg=f"gradient of {name}")
        return got


class DeviceGrad(Grad):
    """`Grad` with every launch on `device` (a CUDA or OpenCL device): array arguments (and
    their gradients) are copied to the device before a launch and back after it, so tests
    written for CPU arrays check the device's gradients against the same finite differences
    and closed forms."""

    def __init__(self, backend: str, device: str) -> None:
        super().__init__(backend)
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
