"""Direct launches of compiled numba.cuda kernels: qdarray packs the kernel parameters itself
and launches through the CUDA driver (`cuLaunchKernel`, reached through CuPy), instead of
numba's dispatcher.

numba's dispatcher does, on every call, what a kernel signature fixes once: it types each
argument, finds the overload, wraps each CUDA Array Interface argument in a numba device array
and builds ctypes objects for every field. For a small launch that is most of the launch's
cost. `CudaLauncher` (cuda_kernels.py) therefore launches a signature's first call for each
combination of array layouts through numba (which compiles the stages), then takes from numba
each stage's compiled overload: its CUDA function handle and its argument types. Later calls
with the same layouts pack the parameters into one buffer and launch each stage directly.

Parameters are numba's kernel ABI (`numba.cuda.dispatcher._Kernel._prepare_args`): an array is
`meminfo, parent` (null pointers), `nitems, itemsize`, the data pointer, then `shape` and
`strides` (in bytes), one 64-bit parameter each; a scalar is its C type (booleans one byte).
Each parameter sits in its own 8-byte slot of one buffer, and the launch passes the slots'
addresses (`kernelParams`); CUDA copies the values at the launch, so the buffer can be reused
at once.

Layouts: numba types an array 'C', 'F' or 'A' from its strides, and a 'C' or 'F' overload
computes addresses from the shape alone. An array reuses a recorded overload only when it has
the same contiguity (C, F, both or neither, by NumPy's rule) as the array that chose it, and
numba chooses 'C' ('F') only for C- (F-) contiguous arrays, so every reused overload addresses
its arrays correctly.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

# struct codes of numba's scalar kernel parameters, each padded to an 8-byte slot
_SCALAR = {"int8": "b7x", "uint8": "B7x", "int16": "h6x", "uint16": "H6x", "int32": "i4x",
           "uint32": "I4x", "int64": "q", "uint64": "Q", "float32": "f4x", "float64": "d",
           "bool": "?7x"}


def contiguity(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    """1 for C-contiguous, 2 for F-contiguous, 3 for both, 0 for neither (NumPy's rule:
    dimensions of extent 1 are ignored, and an array without elements is both)."""
    if len(shape) == 1:
        return 3 if shape[0] <= 1 or strides[0] == itemsize else 0
    if 0 in shape:
        return 3
    out = 0
    for bit, dims in ((1, range(len(shape) - 1, -1, -1)), (2, range(len(shape)))):
        expected = itemsize
        ok = True
        for d in dims:
            if shape[d] != 1:
                if strides[d] != expected:
                    ok = False
                    break
                expected *= shape[d]
        if ok:
            out |= bit
    return out


def layout_key(kargs: Sequence[Any], arrays: Sequence[int]) -> tuple[int, ...]:
    """The contiguity of each array argument (positions `arrays` of `kargs`)."""
    return tuple([contiguity(kargs[k].shape, kargs[k].strides, kargs[k].itemsize)
                  for k in arrays])


def parameter_format(argtypes: Sequence[Any]) -> tuple[str, int] | None:
    """The struct format of numba's parameters for `argtypes` and their number of 8-byte
    slots (None: a type the direct path does not pack, which stays with numba's
    dispatcher)."""
    from numba.core import types

    parts = ["<"]
    slots = 0
    for t in argtypes:
        if isinstance(t, types.Array):
            parts.append("qqqqQ" + "q" * (2 * t.ndim))
            slots += 5 + 2 * t.ndim
            continue
        if t == types.boolean:
            code = _SCALAR["bool"]
        elif isinstance(t, (types.Integer, types.Float)) and str(t) in _SCALAR:
            code = _SCALAR[str(t)]
        else:
            return None
        parts.append(code)
        slots += 1
    return "".join(parts), slots


def _handle(overload: Any) -> int:
    """The CUfunction (or CUkernel) handle of a compiled numba kernel on the current device."""
    h = overload._codelibrary.get_cufunc().handle
    value = getattr(h, "value", None)  # ctypes binding: a c_void_p
    return int(value) if value is not None else int(h)


class DirectLaunch:
    """The stages of one kernel signature for one combination of array layouts, launched
    with packed parameters (module docstring).

    Args:
        handles: each stage's CUDA function handle, in launch order.
        argtypes: numba's types of the kernel arguments (the same for every stage).
        ptr: `ptr(array)`, the address of an array's first element.
        launch: `launch(handle, blocks, threads, stream, params)` (CuPy's cuLaunchKernel).
    """

    def __init__(self, handles: list[int], argtypes: Sequence[Any], ptr: Any,
                 launch: Any) -> None:
        from numba.core import types

        found = parameter_format(argtypes)
        if found is None:
            raise TypeError(f"argument types {argtypes} are not packed directly")
        fmt, nslots = found
        self.handles = handles
        self.format = struct.Struct(fmt)
        assert self.format.size == 8 * nslots
        self.ptr = ptr
        self.launch_kernel = launch
        self.is_array = [isinstance(t, types.Array) for t in argtypes]
        self.ndims = [t.ndim if isinstance(t, types.Array) else 0 for t in argtypes]
        self.buffer = ctypes.create_string_buffer(8 * nslots)
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * nslots)(*[base + 8 * k for k in range(nslots)])
        self.params = ctypes.addressof(self.pointers)
        self.lock = threading.Lock()

    def values(self, kargs: Sequence[Any]) -> list[Any]:
        """The parameter values of one launch, in numba's order."""
        out: list[Any] = []
        for is_array, ndim, x in zip(self.is_array, self.ndims, kargs, strict=True):
            if is_array:
                if x.ndim != ndim:
                    raise ValueError(f"a {x.ndim}-d array for a {ndim}-d kernel parameter")
                out += (0, 0, x.size, x.itemsize, self.ptr(x))
                out += x.shape
                out += x.strides
            else:
                out.append(x)
        return out

    def __call__(self, kargs: Sequence[Any], grids: Sequence[tuple[int, int]],
                 stream: int) -> None:
        """Launch every stage with its (blocks, threads); a stage with 0 blocks is skipped."""
        vals = self.values(kargs)
        with self.lock:  # the buffer is shared; CUDA copies it at each launch
            self.format.pack_into(self.buffer, 0, *vals)
            self.relaunch(grids, stream)

    def relaunch(self, grids: Sequence[tuple[int, int]], stream: int) -> None:
        """Launch every stage again with the parameters packed last (the caller holds the
        lock, or knows that nothing packed other parameters since)."""
        for handle, (blocks, threads) in zip(self.handles, grids, strict=True):
            if blocks:
                self.launch_kernel(handle, blocks, threads, stream, self.params)


def launch_key(native: Sequence[Any], is_array: Sequence[bool], device_array: Any
               ) -> tuple[Any, ...] | None:
    """What a launch's parameters pack from, to tell whether a launch packs exactly as the
    last one did: each device array's address, shape and strides, each scalar's value (a
    zero float with its sign: -0.0 and 0.0 pack differently). None where a launch cannot be
    repeated without packing: an argument that is not a `device_array` (a host array copied
    for the launch, another library's array converted at each launch)."""
    key: list[Any] = []
    for array, x in zip(is_array, native, strict=True):
        if array:
            if type(x) is not device_array:
                return None
            key.append((x.data.ptr, x.shape, x.strides))
        elif isinstance(x, (float, complex, np.inexact)):
            key.append((type(x), x, *(math.copysign(1.0, part) for part in
                                      (complex(x).real, complex(x).imag))))
        else:
            key.append(x)
    return tuple(key)


def direct_launch(stages: Sequence[Any], numba_args: Sequence[Any], ptr: Any,
                  launch: Any) -> DirectLaunch | None:
    """A `DirectLaunch` of `stages` (numba dispatchers that have just run on `numba_args`),
    or None when an overload or an argument type is one the direct path does not handle."""
    handles = []
    argtypes: tuple[Any, ...] | None = None
    for knl in stages:
        types = tuple(knl.typeof_pyval(a) for a in numba_args)
        overload = knl.overloads.get(types)
        if overload is None or getattr(overload, "extensions", None) or \
                getattr(overload, "cooperative", False) or getattr(overload, "debug", False):
            return None
        found = tuple(overload.argument_types)
        if argtypes is not None and found != argtypes:
            return None
        argtypes = found
        handles.append(_handle(overload))
    if argtypes is None or parameter_format(argtypes) is None:
        return None
    return DirectLaunch(handles, argtypes, ptr, launch)
