"""Direct launches of compiled numba.cuda kernels: qdarray packs the kernel parameters itself
and launches through the CUDA driver (`cuLaunchKernel`, reached through CuPy), instead of
numba's dispatcher.

numba's dispatcher does, on every call, what a kernel signature fixes once: it types each
argument, finds the overload, wraps each CUDA Array Interface argument in a numba device array
and builds ctypes objects for every field. For a small launch that is most of the launch's
cost. `CudaLauncher` (cuda/target.py) therefore launches a signature's first call for each
combination of array layouts through numba (which compiles the stages), then takes from numba
each stage's compiled overload: its CUDA function handle and its argument types. Later calls
with the same layouts pack the parameters into one buffer and launch each stage directly.

Parameters are numba's kernel ABI (`numba.cuda.dispatcher._Kernel._prepare_args`): an array is
`meminfo, parent` (null pointers), `nitems, itemsize`, the data pointer, then `shape` and
`strides` (in bytes), one 64-bit parameter each; a scalar is its C type (booleans one byte).
Each parameter sits in its own 8-byte slot of one buffer, and the launch passes the slots'
addresses (`kernelParams`); CUDA copies the values at the launch, so the buffer can be reused
at once.

`compile_fast` writes, for one kernel signature, array layouts and device, the whole launch
as straight-line code (`CudaLauncher.fast`): the test that the arguments still have those
layouts, the host values and grids, the packing and the launches, without a loop over the
arguments or a call per parameter.

Layouts: numba types an array 'C', 'F' or 'A' from its strides, and a 'C' or 'F' overload
computes addresses from the shape alone. An array reuses a recorded overload only when it has
the same contiguity (C, F, both or neither, by NumPy's rule) as the array that chose it, and
numba chooses 'C' ('F') only for C- (F-) contiguous arrays, so every reused overload addresses
its arrays correctly.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence
from typing import Any

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


def compile_fast(*, pack: Any, bump: Any, params: Sequence[tuple[int, Any, int]],
                 steps: Sequence[tuple[int, Any, Any, Any, list[int]]],
                 stages: Sequence[tuple[list[tuple[int, int]], bool]], tpb: int, most: int,
                 index: int, direct: DirectLaunch, device_array: type, current_device: Any,
                 current_stream: Any, launch_kernel: Any, carries: dict[Any, list[Any]],
                 ncarries: int, issuing: Any) -> Any:
    """`fast(args)`: one launch of a kernel signature on device `index`, written out as
    straight-line code; False (nothing launched) when the arguments do not fit what it was
    written for, and the launcher's general path runs instead.

    Args:
        pack, bump: the signature's argument packer and write-generation bump.
        params: per kernel parameter (value id, scalar type or None for an array, the
            array's contiguity as `contiguity` gives it); no 0-d array (which launches as
            1-d, on the general path).
        steps: the plan's host instructions (stages.Plan.steps).
        stages: per stage, the (begin, end) value ids of its parallel loops (none: a serial
            stage) and whether it launches one thread per iteration.
        tpb, most: threads per block, and the largest grid of a strided stage.
        direct: the stages' `DirectLaunch` for these layouts (its handles and buffer).
        device_array: the device arrays' type (CuPy's ndarray), whose `_c_contiguous` and
            `_f_contiguous` flags follow NumPy's rule as `contiguity` does.
        current_device, current_stream: CuPy's `runtime.getDevice` and
            `get_current_stream`; launch_kernel: the driver's cuLaunchKernel (CuPy's).
        carries: the launcher's carry arrays by (device, stream); ncarries: how many.
        issuing: the launcher's lock around a launch's stages.
    """
    names: dict[str, Any] = {
        "pack": pack, "bump": bump, "ndarray": device_array, "getDevice": current_device,
        "stream_of": current_stream, "launchKernel": launch_kernel, "carries": carries,
        "issuing": issuing, "pack_into": direct.format.pack_into, "BUF": direct.buffer,
        "PARAMS": direct.params}
    lines = ["def fast(args):", "    native = pack(args)"]
    parts: list[str] = []  # the expressions packed, in numba's parameter order
    for k, (vid, make, layout) in enumerate(params):
        v = f"v{vid}"
        if make is None:
            lines.append(f"    {v} = native[{k}]")
            lines.append(f"    if type({v}) is not ndarray or ({v}._c_contiguous | "
                         f"{v}._f_contiguous << 1) != {layout}: return False")
            parts += ["0, 0", f"{v}.size", f"{v}.itemsize", f"{v}.data.ptr"]
            parts += [f"*{v}.shape", f"*{v}.strides"]
        else:
            names[f"make{k}"] = make
            lines.append(f"    {v} = make{k}(native[{k}])")
            parts.append(v)
    for k, (rid, impl, rtype, attrs, arg_ids) in enumerate(steps):
        names[f"impl{k}"], names[f"rt{k}"], names[f"at{k}"] = impl, rtype, attrs
        operands = "".join(f", v{a}" for a in arg_ids)
        lines.append(f"    v{rid} = impl{k}(rt{k}, at{k}{operands})")
    known = {vid for vid, *_ in params} | {rid for rid, *_ in steps}
    grids = []
    for k, (bounds, whole) in enumerate(stages):
        if not bounds:
            grids.append("1")
            continue
        if not all(b in known and e in known for b, e in bounds):
            grids.append(str(most))  # bounds a serial stage computes on the device
            continue
        total = " * ".join(f"max(int(v{e}) - int(v{b}), 0)" for b, e in bounds)
        blocks = f"-(-({total}) // {tpb})"
        lines.append(f"    g{k} = {blocks if whole else f'min({blocks}, {most})'}")
        grids.append(f"g{k}")
    lines += [f"    if getDevice() != {index}: return False",
              "    stream = stream_of().ptr"]
    if ncarries:
        lines += [f"    found = carries.get(({index}, stream))",
                  "    if found is None: return False"]
        for c in range(ncarries):
            lines.append(f"    c{c} = found[{c}]")
            parts += ["0, 0", f"c{c}.size", f"c{c}.itemsize", f"c{c}.data.ptr",
                      f"*c{c}.shape", f"*c{c}.strides"]
    lines += ["    with issuing:", f"        pack_into(BUF, 0, {', '.join(parts)})",
              "        try:"]
    for handle, grid in zip(direct.handles, grids, strict=True):
        threads = 1 if grid == "1" else tpb  # a serial stage: one thread
        call = f"launchKernel({handle}, {grid}, 1, 1, {threads}, 1, 1, 0, stream, PARAMS, 0)"
        # a grid computed at the launch may be 0 blocks: that stage is skipped
        lines.append(f"            if {grid}: {call}" if grid.startswith("g") else
                     f"            {call}")
    lines += ["        finally:", "            bump(args)", "    return True"]
    exec(compile("\n".join(lines) + "\n", "<qdarray cuda launch>", "exec"), names)  # noqa: S102
    return names["fast"]
