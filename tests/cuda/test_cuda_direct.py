"""Direct CUDA launches (backends/cuda/direct_launch.py) without a GPU: the contiguity that picks a
recorded overload, numba's parameter layout packed into 8-byte slots (read back through the
`kernelParams` pointers, as the driver reads them), and the overloads taken from numba.

The launches themselves run in tests/cuda/device on a GPU, where every kernel test after its
first call goes through this path."""

from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from numba.core import types as nt

from qdarray.backends.cuda.direct_launch import (
    DirectLaunch,
    compile_fast,
    contiguity,
    direct_launch,
    layout_key,
    parameter_format,
)


def _strided_cases() -> list[np.ndarray]:
    base = np.arange(4 * 5 * 6, dtype=np.float32)
    cases = [base, base[::2], base[::-1], base[:1], base[:0]]  # (0-d: passed as 1-d)
    cube = base.reshape(4, 5, 6)
    cases += [cube, cube[:, ::2], cube.T, cube[:, :1, :], cube[:, :, 2:3], cube[1:2, 1:2, 1:2],
              cube[:0], np.asfortranarray(cube), cube.transpose(1, 0, 2),
              np.broadcast_to(base[:6], (3, 6)), np.lib.stride_tricks.as_strided(
                  base, (1, 6), (0, 4)), np.lib.stride_tricks.as_strided(base, (3,), (0,))]
    return cases


@pytest.mark.parametrize("x", _strided_cases(), ids=lambda x: f"{x.shape}{x.strides}")
def test_contiguity_is_numpys(x):
    want = int(x.flags.c_contiguous) | 2 * int(x.flags.f_contiguous)
    assert contiguity(x.shape, x.strides, x.itemsize) == want


def test_layout_key_reads_only_the_array_positions():
    a, b = np.zeros((3, 4)), np.zeros((3, 4)).T
    assert layout_key([a, 5, b, np.float32(1)], [0, 2]) == (1, 2)


def test_parameter_format_is_numbas_abi():
    argtypes = (nt.Array(nt.float32, 2, "C"), nt.int8, nt.boolean, nt.float32, nt.uint64,
                nt.Array(nt.int64, 1, "A"), nt.float64, nt.int32)
    found = parameter_format(argtypes)
    assert found is not None
    fmt, slots = found
    assert slots == (5 + 4) + 1 + 1 + 1 + 1 + (5 + 2) + 1 + 1
    assert struct.calcsize(fmt) == 8 * slots
    assert parameter_format((nt.UniTuple(nt.int64, 2),)) is None
    assert parameter_format((nt.complex64,)) is None


def _read_slots(params: int, n: int) -> list[bytes]:
    """What cuLaunchKernel reads: n parameter addresses, 8 bytes at each."""
    pointers = (ctypes.c_void_p * n).from_address(params)
    return [ctypes.string_at(pointers[k], 8) for k in range(n)]


def test_direct_launch_packs_every_parameter_where_the_driver_reads_it():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    y = np.zeros(5, np.int64)
    argtypes = (nt.Array(nt.float32, 2, "A"), nt.int8, nt.boolean, nt.float32,
                nt.Array(nt.int64, 1, "C"), nt.uint64, nt.float64, nt.uint16)
    seen: list[Any] = []
    nslots = (5 + 2 * 2) + 3 + (5 + 2 * 1) + 3

    def launch(handle: int, blocks: int, threads: int, stream: int, params: int) -> None:
        seen.append((handle, blocks, threads, stream, _read_slots(params, nslots)))

    direct = DirectLaunch([11, 22, 33], argtypes, lambda a: a.ctypes.data, launch)
    args = [x, np.int8(-5), np.bool_(True), np.float32(1.5), y, np.uint64(1 << 63),
            np.float64(-2.25), np.uint16(65535)]
    direct(args, [(4, 256), (0, 256), (1, 1)], 77)
    assert [s[:4] for s in seen] == [(11, 4, 256, 77), (33, 1, 1, 77)]  # 0 blocks: skipped
    slots = seen[0][4]
    q = [struct.unpack("<q", s)[0] for s in slots]
    assert q[:9] == [0, 0, x.size, 4, x.ctypes.data, 3, 2, 16, 8]
    assert struct.unpack("<b", slots[9][:1])[0] == -5
    assert slots[10][:1] == b"\x01"
    assert struct.unpack("<f", slots[11][:4])[0] == 1.5
    assert q[12:19] == [0, 0, 5, 8, y.ctypes.data, 5, 8]
    assert struct.unpack("<Q", slots[19])[0] == 1 << 63
    assert struct.unpack("<d", slots[20])[0] == -2.25
    assert struct.unpack("<H", slots[21][:2])[0] == 65535
    with pytest.raises(ValueError, match="a 1-d array for a 2-d kernel parameter"):
        direct([y] + args[1:], [(1, 1)] * 3, 0)


class _Overload:
    def __init__(self, argtypes: tuple[Any, ...], handle: Any, **flags: Any) -> None:
        self.argument_types = argtypes
        self.extensions = flags.get("extensions", [])
        self.cooperative = flags.get("cooperative", False)
        self.debug = False
        cufunc = SimpleNamespace(handle=handle)
        self._codelibrary = SimpleNamespace(get_cufunc=lambda: cufunc)


class _Dispatcher:
    def __init__(self, overloads: dict[tuple[Any, ...], _Overload]) -> None:
        self.overloads = overloads

    def typeof_pyval(self, value: Any) -> Any:
        return nt.Array(nt.float32, 1, "C") if isinstance(value, np.ndarray) else nt.int64


class _Int:  # the cuda-python bindings' handles convert with int()
    def __int__(self) -> int:
        return 4242


@pytest.mark.parametrize("flag", [None, "extensions", "cooperative", "missing", "tuple"])
def test_overloads_come_from_numba_or_the_launch_stays_with_numba(flag):
    types = (nt.Array(nt.float32, 1, "C"), nt.int64)
    args = [np.zeros(3, np.float32), 7]
    flags = {"extensions": {"extensions": [object()]}, "cooperative": {"cooperative": True}}
    first = _Dispatcher({types: _Overload(types, ctypes.c_void_p(99))})
    second_types = (nt.UniTuple(nt.int64, 2), nt.int64) if flag == "tuple" else types
    second = _Dispatcher({} if flag == "missing" else {
        types: _Overload(second_types, _Int(), **flags.get(str(flag), {}))})
    found = direct_launch([first, second], args, lambda a: 0, lambda *a: None)
    if flag is None:
        assert found is not None and found.handles == [99, 4242]
    else:
        assert found is None


def test_every_combination_of_small_shapes_agrees_with_numpy():
    base = np.zeros(64, np.int16)
    for shape in itertools.product((0, 1, 2, 3), repeat=2):
        for steps in itertools.product((1, 2, -1), repeat=2):
            view = base.reshape(8, 8)[::steps[0], ::steps[1]][:shape[0], :shape[1]]
            want = int(view.flags.c_contiguous) | 2 * int(view.flags.f_contiguous)
            assert contiguity(view.shape, view.strides, view.itemsize) == want, view.strides


class _Dev:
    """A stand-in for a CuPy array over NumPy memory: the attributes a written-out launch
    reads."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self._c_contiguous = host.flags.c_contiguous
        self._f_contiguous = host.flags.f_contiguous
        self.data = SimpleNamespace(ptr=host.ctypes.data)
        self.shape, self.strides = host.shape, host.strides
        self.size, self.itemsize = host.size, host.itemsize


def test_a_written_out_launch_packs_and_launches_as_the_general_path():
    x = _Dev(np.zeros((3, 4), np.float32))
    y = _Dev(np.zeros(6, np.int64))
    carry = _Dev(np.zeros(1, np.float64))
    argtypes = (nt.Array(nt.float32, 2, "C"), nt.float32, nt.Array(nt.int64, 1, "C"),
                nt.int64, nt.Array(nt.float64, 1, "C"))
    nslots = (5 + 4) + 1 + (5 + 2) + 1 + (5 + 2)
    seen: list[Any] = []

    def launch_kernel(handle, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        assert (gy, gz, by, bz, shared, extra) == (1, 1, 1, 1, 0, 0)
        seen.append((handle, gx, bx, stream, _read_slots(params, nslots)))

    direct = DirectLaunch([11, 22, 33, 44], argtypes, lambda a: a.data.ptr, None)
    bumped: list[Any] = []
    device = [0]
    carries = {(0, 77): [carry]}
    # parameters x (id 1), a (2), y (3), n (4); one host step: v9 = 100 * n
    fast = compile_fast(
        pack=lambda args: list(args), bump=bumped.append,
        params=[(1, None, 1), (2, np.float32, 0), (3, None, 3), (4, np.int64, 0)],
        steps=[(9, lambda rtype, attrs, n: rtype(n * attrs[0]), np.int64, (100,), [4])],
        stages=[([(4, 9)], False), ([], False), ([(4, 9)], True), ([(4, 5)], False)],
        tpb=256, most=8, index=0, direct=direct, device_array=_Dev,
        current_device=lambda: device[0], current_stream=lambda: SimpleNamespace(ptr=77),
        launch_kernel=launch_kernel, carries=carries, ncarries=1, issuing=threading.Lock())
    args = (x, 1.5, y, 30)
    assert fast(args) is True
    # 2970 iterations: 12 blocks, capped at 8; serial: one thread; whole: 12 blocks; the
    # last stage's end (id 5) is computed on the device: the largest grid
    assert [s[:4] for s in seen] == [(11, 8, 256, 77), (22, 1, 1, 77), (33, 12, 256, 77),
                                     (44, 8, 256, 77)]
    assert bumped == [args]
    q = [struct.unpack("<q", s)[0] for s in seen[0][4]]
    assert q[:9] == [0, 0, 12, 4, x.data.ptr, 3, 4, 16, 4]
    assert struct.unpack("<f", seen[0][4][9][:4])[0] == 1.5
    assert q[10:17] == [0, 0, 6, 8, y.data.ptr, 6, 8]
    assert q[17] == 30
    assert q[18:25] == [0, 0, 1, 8, carry.data.ptr, 1, 8]
    assert fast((x, 1.5, y, 0)) is True  # no iterations: the parallel stages are skipped
    assert [s[:2] for s in seen[4:]] == [(22, 1), (44, 8)]
    seen.clear()
    bumped.clear()
    # what the general path must launch instead: nothing launched, nothing bumped
    strided = _Dev(np.zeros((3, 8), np.float32)[:, ::2])
    assert fast((strided, 1.5, y, 30)) is False                  # another layout
    assert fast((x.host, 1.5, y, 30)) is False                   # a host array
    device[0] = 1
    assert fast(args) is False                                   # another device current
    device[0] = 0
    carries.clear()
    assert fast(args) is False                                   # no carries on this stream
    assert seen == [] and bumped == []
