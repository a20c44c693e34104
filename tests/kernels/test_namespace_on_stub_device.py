"""The IR-built namespace on a stub device: host buffers, kernels run by the interpreter.

`backends/kernel_xp` knows no device kind: a device is a `KernelDevice` (allocation, host
copies, a kernel launcher) and an array class mixing in `StridedArray`. Here the device is
made of NumPy buffers and the IR interpreter, the way a new device would be made of its own
memory and renderer, and the namespace's results are compared with NumPy's. Arrays are tiny:
the interpreter runs each element in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qdarray as qd
from qdarray import Device
from qdarray.backends.kernel_xp import KernelNamespace
from qdarray.backends.kernel_xp.array import StridedArray
from qdarray.backends.kernel_xp.device import Window
from qdarray.kernels.interp import run, typed_arguments
from qdarray.kernels.types import ArrayType


def _strided(buffer: np.ndarray | None, dtype: Any, offset: int, shape: tuple[int, ...],
             strides: tuple[int, ...]) -> np.ndarray:
    """A NumPy view of `shape` / element `strides` starting at element `offset`."""
    if buffer is None or 0 in shape:
        return np.empty(shape, dtype)
    item = buffer.itemsize
    return np.lib.stride_tricks.as_strided(buffer[offset:], shape,
                                           tuple(s * item for s in strides))


class StubArray(StridedArray):
    def __init__(self, dev: StubDevice, buffer: np.ndarray | None, shape: tuple[int, ...],
                 strides: tuple[int, ...], offset: int, dtype: Any) -> None:
        self.qd_device = dev
        self.base_data = buffer
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = np.dtype(dtype)
        self.ndim = len(shape)
        self.size = int(np.prod(shape, dtype=np.int64))

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any:
        view = StubArray(self.qd_device, self.base_data, shape, strides, offset, self.dtype)
        view.qd_readonly = self.qd_readonly
        return view

    def to_host(self) -> np.ndarray:
        return np.array(_strided(self.base_data, self.dtype, self.elem_offset,
                                 self.shape, self.elem_strides()))


class StubDevice:
    index = 0
    name = "stub (NumPy buffers, IR interpreter)"
    gpu = False
    workers = 4
    device = Device("cpu")

    def __init__(self) -> None:
        self.launchers: dict[Any, Any] = {}
        self.launches = 0

    def has_fp64(self) -> bool:
        return True

    def empty(self, shape: tuple[int, ...], dtype: Any) -> StubArray:
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        buffer = np.zeros(n, dtype) if n else None
        strides = []
        step = dtype.itemsize
        for k in reversed(shape):
            strides.append(step)
            step *= max(k, 1)
        return StubArray(self, buffer, tuple(shape), tuple(reversed(strides)), 0, dtype)

    def from_host(self, host: np.ndarray) -> StubArray:
        out = self.empty(host.shape, host.dtype)
        if out.base_data is not None:
            out.base_data[...] = np.ascontiguousarray(host).reshape(-1)
        return out

    def copy_bytes(self, dst: StubArray, src: StubArray) -> None:
        dst.base_data[dst.elem_offset:dst.elem_offset + dst.size] = src.to_host().reshape(-1)

    def launcher(self, ir: Any) -> Any:
        def launch(args: Any) -> None:
            self.launches += 1
            native = []
            for p, a in zip(ir.params, args, strict=True):
                if isinstance(p.value.type, ArrayType):
                    assert isinstance(a, Window)
                    native.append(_strided(a.base_data, p.value.type.dtype._np, a.elem_offset,
                                           a.shape, a.strides))
                else:
                    native.append(a)
            run(ir, typed_arguments(ir, native))
        return launch


@pytest.fixture(scope="module")
def dev() -> StubDevice:
    return StubDevice()


@pytest.fixture(scope="module")
def xp(dev: StubDevice) -> KernelNamespace:
    return KernelNamespace(lambda device: dev)


def on(dev: StubDevice, x: Any) -> StubArray:
    return dev.from_host(np.asarray(x))


def same(got: Any, want: Any, rtol: float = 0.0) -> None:
    """Same dtype and values (bit for bit unless `rtol`: NumPy's complex `abs` is not its
    `hypot`, and differs from it by an ulp in about a third of cases)."""
    want = np.asarray(want)
    host = got.to_host()
    assert host.dtype == want.dtype, (host.dtype, want.dtype)
    if rtol:
        np.testing.assert_allclose(host, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(host, want)


X = np.array([[1.5, -2.0, 0.0, np.nan], [-0.0, 3.25, np.inf, -7.5]])
I = np.array([[3, -7, 0, 5], [-1, 2, 8, -3]], np.int16)
Z = np.array([1 + 2j, -3.5 + 0.25j, 0j, np.inf + 1j, 2 - 1j, 1e-300 + 1j])


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide",
                                  "remainder", "maximum", "minimum", "less", "equal",
                                  "copysign", "hypot", "atan2", "logaddexp", "nextafter"])
def test_binary_functions(dev, xp, name):
    a, b = X, X[:, ::-1]
    want = np.asarray(getattr(qd, name)(qd.asarray(a), qd.asarray(b)))  # the CPU namespace
    same(getattr(xp, name)(on(dev, a), on(dev, b)), want)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "bitwise_left_shift",
                                  "bitwise_right_shift", "bitwise_xor", "greater"])
def test_integer_functions(dev, xp, name):
    a, b = I, np.array([2, 0, -1, 9], np.int16)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    same(getattr(xp, name)(on(dev, a), on(dev, b)), want)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "equal",
                                  "not_equal"])
def test_complex_arithmetic_is_numpys(dev, xp, name):
    a, b = Z, Z[::-1].astype(np.complex64)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    same(getattr(xp, name)(on(dev, a), on(dev, b)), want)


@pytest.mark.parametrize("name", ["abs", "negative", "conj", "real", "imag", "square",
                                  "reciprocal", "isnan", "isinf", "isfinite", "round"])
def test_complex_unary(dev, xp, name):
    with np.errstate(all="ignore"):
        want = getattr(np, name)(Z)
    same(getattr(xp, name)(on(dev, Z)), want, rtol=1e-15 if name == "abs" else 0.0)


def test_weak_scalars_promote_as_in_numpy(dev, xp):
    a = on(dev, np.array([1, 2, 3], np.int8))
    same(xp.add(a, 5), np.array([6, 7, 8], np.int8))
    same(xp.multiply(a, 0.5), np.array([0.5, 1.0, 1.5]))
    same(xp.less(a, 1000), np.array([True, True, True]))  # compares by value


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "all", "any", "count_nonzero"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(dev, xp, op, axis):
    x = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 4.0]])
    want = getattr(np, op)(x, axis=axis)
    got = getattr(xp, op)(on(dev, x)[:, ::-1] if axis == 1 else on(dev, x), axis=axis)
    if axis == 1:
        want = getattr(np, op)(x[:, ::-1], axis=axis)
    np.testing.assert_allclose(got.to_host(), want)


def test_arg_reductions_and_scans(dev, xp):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0]])
    same(xp.argmax(on(dev, x), axis=1), np.argmax(x, axis=1))
    same(xp.argmin(on(dev, x[::-1].T), axis=0), np.argmin(x[::-1].T, axis=0))
    same(xp.cumulative_sum(on(dev, I), axis=1), np.cumsum(I, axis=1))
    z = on(dev, Z[:3])
    np.testing.assert_allclose(xp.cumulative_prod(z).to_host(), np.cumprod(Z[:3]))
    np.testing.assert_allclose(xp.sum(z).to_host(), np.sum(Z[:3]))


def test_sorting_and_searching(dev, xp):
    x = np.array([3.0, np.nan, -1.0, 3.0, 0.0])
    same(xp.sort(on(dev, x)), np.sort(x))
    same(xp.argsort(on(dev, x)), np.argsort(x, kind="stable"))
    s = np.array([1, 2, 2, 5])
    same(xp.searchsorted(on(dev, s), on(dev, np.array([2, 0, 6])), side="right"),
         np.searchsorted(s, [2, 0, 6], side="right"))


def test_indexing(dev, xp):
    x = np.arange(24.0).reshape(2, 3, 4)
    a = on(dev, x)
    k = on(dev, np.array([2, -1]))
    same(a[:, k], x[:, [2, -1]])
    same(a[on(dev, np.array([1, 0])), :, k], x[[1, 0], :, [2, -1]])
    same(a[on(dev, x > 10)], x[x > 10])
    same(xp.take_along_axis(a, on(dev, np.zeros((2, 3, 1), np.int64)), axis=2), x[..., :1])
    b = on(dev, np.zeros(6))
    b[on(dev, np.array([1, 4]))] = 2.5
    b[on(dev, np.array([False, True, False, False, False, True]))] = on(dev, np.array([7.0, 8.0]))
    same(b, [0, 7.0, 0, 0, 2.5, 8.0])
    same(xp.nonzero(on(dev, x > 20))[2], np.nonzero(x > 20)[2])


def test_overlapping_assignment_reads_first(dev, xp):
    x = on(dev, np.arange(6.0))
    x[:] = x[::-1]
    same(x, np.arange(6.0)[::-1])
    z = on(dev, np.arange(9.0).reshape(3, 3))
    z[...] = z.T
    same(z, np.arange(9.0).reshape(3, 3).T)


def test_creation_and_manipulation(dev, xp):
    same(xp.arange(2, 11, 3, dtype=np.int32, device=None), np.arange(2, 11, 3, dtype=np.int32))
    same(xp.eye(3, 4, k=1, dtype=np.complex64, device=None), np.eye(3, 4, k=1, dtype=np.complex64))
    np.testing.assert_allclose(xp.linspace(0, 1, 5, device=None).to_host(), np.linspace(0, 1, 5))
    same(xp.tril(on(dev, X)), np.tril(X))
    same(xp.roll(on(dev, I), 1, axis=1), np.roll(I, 1, axis=1))
    same(xp.repeat(on(dev, np.array([1, 2, 3])), on(dev, np.array([2, 0, 1]))), [1, 1, 3])
    same(xp.matmul(on(dev, X[:, :3].T), on(dev, I[:, :2].astype(np.float64))),
         X[:, :3].T @ I[:, :2].astype(np.float64))
    same(xp.astype(on(dev, Z), np.complex64), Z.astype(np.complex64))


def test_kernels_compile_once_per_signature(dev, xp):
    a = on(dev, np.arange(4.0))
    xp.add(a, a)
    compiled = len(dev.launchers)
    xp.add(on(dev, np.arange(7.0)), a[:1])
    xp.add(a[::2], a[1::2])
    assert len(dev.launchers) == compiled  # sizes and offsets are arguments, not signatures
