"""Launching: per-signature compile, argument packing, error decoding.

`prepare(kernel, args, target)` runs once per (signature, debug mode, target): it classifies
the arguments, checks that all arrays live on one device (whose backend's kernel target
compiles and launches the kernel, `target.py`), builds and transforms the IR and hands it to
the target, which returns a launcher. A launcher is a callable `launcher(args)` doing only
per-call work: pack arguments (no copies), run, bump the write generation of the arrays the
kernel writes, and turn a debug-mode error record into `KernelIndexError`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._array import Array
from .._devices import CPU, Device
from .._dtypes import DType
from .._errors import DeviceMismatchError, KernelOverflowError, KernelTypeError
from ..buffer_view import BufferView
from . import entries
from . import types as T
from .args import ArgSpec, classify
from .cache import count
from .env import Recorder
from .ir import KernelIR
from .records import launcher_of, record_of
from .target import KernelTarget, Launcher, target_of


def _spec_for(kernel: Any, name: str, ann: Any, arg: Any) -> tuple[ArgSpec, list[Device]]:
    what = f"{kernel.__name__}() argument '{name}'"
    if (isinstance(ann, T.ViewAnnotation) or ann is BufferView) and type(arg) is Array:
        arg = BufferView(arg)  # a 1-D contiguous array is a zero-copy view (else it raises)
    spec, device = classify(arg, what)
    devices = [device] if device is not None else []
    if spec.kind == "struct":
        devices = _struct_devices(arg)
    if ann is None:
        return spec, devices
    return _check_annotation(what, ann, spec, arg), devices


def _struct_devices(x: Any) -> list[Device]:
    out: list[Device] = []
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        if type(v) is Array:
            out.append(v._device)
        elif type(v) is BufferView:
            out.append(v._base._device)
        elif type(v) is np.ndarray:
            out.append(CPU)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            out += _struct_devices(v)
    return out


def _check_annotation(what: str, ann: Any, spec: ArgSpec, arg: Any) -> ArgSpec:
    ok: bool
    if isinstance(ann, (T.ArrayAnnotation, T.ViewAnnotation)):
        ok = ann.accepts(spec.type) if spec.kind in ("array", "view") else False
        if ok and isinstance(ann, T.ArrayAnnotation) and ann.elem:
            spec = dataclasses.replace(spec, elem=ann.elem, elem_name=ann.elem_name)
            check_elem_shape(spec, what, arg)
            return spec
        if ok:
            return spec
        if isinstance(ann, T.ArrayAnnotation) and ann.elem:
            raise KernelTypeError(f"{what}: expected {ann!r} ({elem_layout(ann)}), got "
                                  f"{spec.describe()}{shape_note(arg)}. Pass an array of that "
                                  "dtype and number of axes.")
        hint = "Use x.astype(dtype) or pass an array of the expected dtype and ndim."
        if isinstance(ann, T.ViewAnnotation):
            hint = "Use qd.BufferView(x) of a 1-D contiguous array of that dtype."
        raise KernelTypeError(f"{what}: expected {ann!r}, got {spec.describe()}. {hint}")
    if ann in (Array,):
        if spec.kind == "array":
            return spec
    elif ann is BufferView:
        if spec.kind == "view":
            return spec
    elif isinstance(ann, DType) or ann in (bool, int, float):
        dtype = T.WEAK_DEFAULT[ann] if ann in (bool, int, float) else ann
        if spec.kind == "scalar":
            src = spec.type
            if spec.weak:
                ok = T.weak_kind(src) is not float or dtype.kind == "f"
                ok = ok and (dtype.kind != "b" or src.kind == "b")
            else:
                ok = T.can_cast(src, dtype, "same_kind")
            if ok:
                return ArgSpec("scalar", dtype, weak=ann in (bool, int, float))
        name = ann.__name__ if isinstance(ann, type) else f"qd.{ann.name}"
        raise KernelTypeError(f"{what}: expected {name}, got {spec.describe()} {arg!r}. "
                              f"Use a value that converts to {name} without changing kind.")
    elif isinstance(ann, type) and dataclasses.is_dataclass(ann):
        if spec.kind == "struct" and spec.cls is ann:
            return spec
        raise KernelTypeError(f"{what}: expected a {ann.__name__}, got {spec.describe()}. "
                              f"Use a {ann.__name__}(...) instance.")
    else:
        raise KernelTypeError(
            f"{what} is annotated {ann!r}, which kernels do not understand. Use qd.Array[dtype, "
            "ndim], qd.BufferView[dtype], a dtype such as qd.float32, int, float, bool or a "
            "frozen dataclass, or no annotation.")
    raise KernelTypeError(f"{what}: expected {getattr(ann, '__name__', ann)}, got "
                          f"{spec.describe()}. Pass a matching argument.")


def elem_layout(ann: Any) -> str:
    """`float32 of shape (N, 2)`: the array layout a vector-element annotation means."""
    outer = "..." if ann.ndim is None else ", ".join("NMKL"[k] for k in range(ann.ndim))
    dims = ", ".join([outer] * bool(outer) + [str(n) for n in ann.elem])
    name = ann.dtype.name if ann.dtype is not None else "any dtype"
    return f"{name} of shape ({dims})"


def shape_note(arg: Any) -> str:
    shape = getattr(arg, "shape", None)
    return "" if shape is None else f" of shape {tuple(shape)}"


def check_elem_shape(spec: ArgSpec, what: str, x: Any) -> None:
    """An array of vectors or matrices has trailing axes of the element's shape."""
    k = len(spec.elem)
    shape = tuple(x.shape)
    if shape[len(shape) - k:] != spec.elem:
        want = ", ".join(["..."] + [str(n) for n in spec.elem])
        raise ValueError(
            f"{what} is an array of {spec.elem_name}, so its last {k} ax"
            f"{'is' if k == 1 else 'es'} must be {spec.elem} (shape ({want})); got an array "
            f"of shape {shape}. Pass an array whose trailing axes hold the "
            f"{'vector' if k == 1 else 'matrix'} components.")


def check_devices(kernel: Any, names: Sequence[str], devices: Sequence[list[Device]]) -> Device:
    """The one device of all array arguments (CPU when there are none)."""
    first: tuple[str, Device] | None = None
    for name, devs in zip(names, devices, strict=True):
        for d in devs:
            if first is None:
                first = (name, d)
            elif d is not first[1]:
                raise DeviceMismatchError(
                    f"{kernel.__name__}() got arrays on two devices: '{first[0]}' on "
                    f"{first[1]} and '{name}' on {d}. A kernel runs on one device; move "
                    f"arrays with x.to_device('{first[1]}') first.")
    return CPU if first is None else first[1]


# -- packing --------------------------------------------------------------------------------


# The smallest magnitude that rounds to an infinity in float32 (2**128 - 2**103: halfway
# between the largest float32 and 2**128, which ties to even, away from the largest).
_FLOAT32_OVERFLOW = float(2**128 - 2**103)


def _scalar_packer(spec: ArgSpec, what: str) -> Callable[[Any, list[Any]], None]:
    make = spec.type._np.type
    if spec.weak and spec.type.kind in "iu":
        def pack_int(x: Any, out: list[Any]) -> None:
            if not -(1 << 63) <= x < (1 << 63):
                raise KernelOverflowError(f"{what}: {x} does not fit in int64. Use a smaller "
                                          "value or split the computation.")
            out.append(x)
        return pack_int
    if spec.weak:
        return lambda x, out: out.append(x)
    if spec.type.kind in "iu":
        # NumPy converts a NumPy integer to a narrower one by wrapping (np.int8(np.int64(300))
        # is 44); a kernel parameter takes only values its type holds, as np.int8(300) does.
        info = np.iinfo(spec.type._np)
        lo, hi = int(info.min), int(info.max)

        def pack_typed_int(x: Any, out: list[Any]) -> None:
            v = int(x)
            if not lo <= v <= hi:
                raise KernelOverflowError(
                    f"{what}: {x!r} does not fit in {spec.type.name} (range [{lo}, {hi}]). "
                    f"Pass a value in range, or declare the parameter with a wider type.")
            out.append(make(v))
        return pack_typed_int

    if spec.type.kind == "f" and spec.type.itemsize == 4:
        def pack_float32(x: Any, out: list[Any]) -> None:
            # np.float32(1e39) is inf: a finite value at or past the halfway point between
            # float32's largest value and 2**128 would round to an infinity.
            try:
                v = float(x)
                finite_too_large = _FLOAT32_OVERFLOW <= abs(v) < math.inf
            except OverflowError:  # an int beyond float64's range
                finite_too_large = True
            if finite_too_large:
                raise KernelOverflowError(
                    f"{what}: {x!r} does not fit in float32 (largest magnitude "
                    f"{np.finfo(np.float32).max!s}); it would become an infinity. Pass a value "
                    "in range, or declare the parameter qd.float64.")
            out.append(make(v))
        return pack_float32

    def pack_typed(x: Any, out: list[Any]) -> None:
        try:
            out.append(make(x))
        except OverflowError:
            raise KernelTypeError(f"{what}: {x!r} does not fit in {spec.type.name}.") from None
    return pack_typed


def _view_packer(interp: bool, exact: bool) -> Callable[[Any, list[Any]], None]:
    """Views pack as (base, offset, size), or one ViewValue for the interpreter.

    A contiguous 1-D Array slice (`data[:16]`) passed for a view is, unless `exact`, packed
    as its own NumPy memory with offset 0: the same elements, without finding the root array
    (about 2 us per call). `exact` (debug mode, where messages give the offset in the root)
    packs `BufferView(x)`. Offsets and sizes are read on every call, never cached."""
    # The op definitions load with the interpreter: a process that launches only cached
    # kernels does not import them (a part of its start-up).
    from .ops.memory import ViewValue

    def pack_view(x: Any, out: list[Any]) -> None:
        if type(x) is not BufferView:
            d = x._data if type(x) is Array else None
            if (not exact and type(d) is np.ndarray and d.ndim == 1
                    and (d.shape[0] <= 1 or d.strides[0] == d.itemsize)):
                if interp:
                    out.append(ViewValue(d, 0, d.shape[0]))
                else:
                    out += (d, 0, d.shape[0])
                return
            x = BufferView(x)
        if interp:
            out.append(ViewValue(x._base._data, x._offset, x._size))
        else:
            out += (x._base._data, x._offset, x._size)
    return pack_view


def _memory_packer(spec: ArgSpec, interp: bool, exact: bool, what: str
                   ) -> Callable[[Any, list[Any]], None]:
    if spec.kind == "array" and spec.elem:
        plain = _memory_packer(dataclasses.replace(spec, elem=()), interp, exact, what)

        def pack_elem_array(x: Any, out: list[Any]) -> None:
            check_elem_shape(spec, what, x)
            plain(x, out)
        pack_elem_array.elem = spec.elem  # type: ignore[attr-defined]  # (compile_pack inlines it)
        return pack_elem_array
    if spec.kind == "array":
        def pack_array(x: Any, out: list[Any]) -> None:
            t = type(x)
            if t is Array:
                out.append(x._data)
            elif t is np.ndarray:
                out.append(x)
            else:
                out.append(x if _device_native(x) else np.from_dlpack(x))
        pack_array.plain = True  # type: ignore[attr-defined]  # (compile_pack inlines it)
        return pack_array
    return _view_packer(interp, exact)


def _device_native(x: Any) -> bool:
    """Whether `x` is a device backend's native array outside host memory (reverse mode
    passes its heaps, layout and flags so): it goes to the launcher as it is."""
    where = getattr(x, "__dlpack_device__", None)
    return where is not None and where()[0] != 1  # 1: DLPack's kDLCPU


def packer(spec: ArgSpec, what: str, interp: bool, exact: bool = False
           ) -> Callable[[Any, list[Any]], None]:
    """A function appending the native values of one argument to a list (`exact`: views of
    Array slices carry their offset in the root array, for debug-mode messages)."""
    if spec.kind == "scalar":
        return _scalar_packer(spec, what)
    if spec.kind in ("array", "view"):
        return _memory_packer(spec, interp, exact, what)
    fields = [(f, packer(s, f"{what}.{f}", interp, exact)) for f, s in spec.fields]

    def pack_struct(x: Any, out: list[Any]) -> None:
        for name, p in fields:
            p(getattr(x, name), out)
    pack_struct.fields = fields  # type: ignore[attr-defined]  # (compile_pack flattens it)
    return pack_struct


def compile_pack(packers: Sequence[Callable[[Any, list[Any]], None]]
                 ) -> Callable[[Sequence[Any]], list[Any]]:
    """`Launcher.pack` for one signature as straight-line code: dataclass arguments walked
    field by field in the text, an Array for an array parameter packed in place (its element
    shape tested there for an array of vectors or matrices), every other argument by its own
    packer (what `Launcher.pack` does by a loop of calls)."""
    lines = ["def pack(args):", "    out = []"]
    names: dict[str, Any] = {"Array": Array}

    def walk(p: Any, expr: str) -> None:
        fields = getattr(p, "fields", None)
        if fields is not None:
            var = f"s{len(names)}"
            names[var] = None
            lines.append(f"    {var} = {expr}")
            for name, q in fields:
                walk(q, f"{var}.{name}")
            return
        fn = f"p{len(names)}"
        names[fn] = p
        elem = getattr(p, "elem", None)
        if elem is not None:  # an Array whose trailing axes must be the element's
            var = f"x{len(names)}"
            lines.append(f"    {var} = {expr}")
            lines.append(f"    if type({var}) is Array and {var}._data.shape[-{len(elem)}:] == "
                         f"{elem!r}: out.append({var}._data)")
            lines.append(f"    else: {fn}({var}, out)")
        elif getattr(p, "plain", False):
            var = f"x{len(names)}"
            lines.append(f"    {var} = {expr}")
            lines.append(f"    if type({var}) is Array: out.append({var}._data)")
            lines.append(f"    else: {fn}({var}, out)")
        else:
            lines.append(f"    {fn}({expr}, out)")

    for k, p in enumerate(packers):
        walk(p, f"args[{k}]")
    lines.append("    return out")
    namespace = {k: v for k, v in names.items() if v is not None}
    exec(compile("\n".join(lines) + "\n", "<qdarray packer>", "exec"), namespace)  # noqa: S102
    return namespace["pack"]  # type: ignore[no-any-return]


def written_paths(names: Sequence[str], written: Sequence[str]
                  ) -> list[tuple[int, tuple[str, ...]]]:
    """(argument index, field path) of each written array parameter."""
    out = []
    for w in written:
        head, *path = w.split(".")
        if head in names:
            out.append((names.index(head), tuple(path)))
    return out


def _leaf(args: Sequence[Any], index: int, path: tuple[str, ...]) -> Any:
    x = args[index]
    for name in path:
        x = getattr(x, name)
    return x


def check_writeable(kernel: Any, args: Sequence[Any],
                    paths: Sequence[tuple[int, tuple[str, ...]]]) -> None:
    """A kernel that writes an argument needs writeable memory there."""
    for index, path in paths:
        x = _leaf(args, index, path)
        data = x._data if type(x) is Array else x._base._data if type(x) is BufferView else x
        # NumPy and pyopencl arrays have flags.writeable; CuPy's flags have none (always writeable).
        if not getattr(getattr(data, "flags", None), "writeable", True):
            name = ".".join((kernel.param_names[index],) + path)
            raise KernelTypeError(
                f"{kernel.__name__}() writes argument '{name}', but its memory is read-only. "
                "Use a writeable array (np.array(x) or qd.asarray(x, copy=True) copies it).")


# -- launchers ------------------------------------------------------------------------------


def signature(kernel: Any, args: Sequence[Any]) -> tuple[list[tuple[str, ArgSpec]], Device]:
    """The (name, spec) of each argument, checked against the annotations, and the device."""
    names = kernel.param_names
    annotations = kernel.annotations()
    specs = []
    devices = []
    for name, arg in zip(names, args, strict=True):
        spec, devs = _spec_for(kernel, name, annotations.get(name), arg)
        specs.append((name, spec))
        devices.append(devs)
    return specs, check_devices(kernel, names, devices)


def build_ir(kernel: Any, specs: list[tuple[str, ArgSpec]], *, debug: bool, lower: bool,
             recorder: Recorder | None = None) -> tuple[KernelIR, tuple[str, ...], Any]:
    """The kernel's IR for these argument specs after the compile pipeline, the names of
    the parameters it writes, and what it reads and writes of each (regions.derive; the
    tape's regions) (`recorder` notes what the frontend read from Python)."""
    # The frontend and the passes load with the first compile: a process whose kernels all
    # come from the disk cache (entries.py) imports neither, a part of its start-up.
    from .frontend import build
    from .passes import pipeline
    from .regions import derive

    ir = build(kernel.source(), specs, recorder, default_float=kernel.resolved_float())
    written = dict(ir.meta).get("written", ())
    return pipeline(ir, debug=debug, lower=lower), written, derive(ir)


def _from_entry(kernel: Any, args: Sequence[Any], specs: list[tuple[str, ArgSpec]], key: str,
                target: KernelTarget, debug: bool, device: Device) -> Launcher | None:
    """The launcher of the kernel entry stored under `key` (entries.py), or None."""
    entry = entries.load(kernel, key)
    if entry is None:
        return None
    bumps = written_paths(kernel.param_names, entry.written)
    check_writeable(kernel, args, bumps)
    packers = [packer(s, f"{kernel.__name__}() argument '{n}'", not target.lowers_views,
                      exact=debug) for n, s in specs]
    launcher = launcher_of(entry.record, packers, bumps, target, debug, device)
    if launcher is not None:
        launcher.pack = compile_pack(packers)
        launcher.deps = launcher.watched = entry.deps
        launcher.access = entry.access
        count("entries_loaded")
    return launcher


def prepare(kernel: Any, args: Sequence[Any], target: KernelTarget | None, debug: bool
            ) -> Launcher:
    """Compile `kernel` for the signature of `args` and return its launcher (target None:
    the kernel target of the arrays' device); from its entry in the disk cache when there is
    one (no IR is built then)."""
    specs, device = signature(kernel, args)
    if target is None:
        target = target_of(device)
    key = None
    if target.caches_modules:
        key = entries.entry_key(kernel, specs, target.name, debug, "forward")
        if key is not None:
            stored = _from_entry(kernel, args, specs, key, target, debug, device)
            if stored is not None:
                return stored
    recorder = Recorder(kernel.source())
    ir, written, access = build_ir(kernel, specs, debug=debug, lower=target.lowers_views,
                                   recorder=recorder)
    bumps = written_paths(kernel.param_names, written)
    check_writeable(kernel, args, bumps)
    packers = [packer(s, f"{kernel.__name__}() argument '{n}'", not target.lowers_views,
                      exact=debug) for n, s in specs]
    launcher = target.launcher(ir, packers, bumps, debug=debug, device=device)
    launcher.pack = compile_pack(packers)
    launcher.deps = recorder.result()
    launcher.watched = recorder.watched()
    launcher.access = access
    if key is not None and launcher.deps is not None:
        record = record_of(launcher)
        if record is not None:
            entries.store(key, record, written, access, launcher.deps)
    return launcher


def compile_ir(ir: KernelIR, specs: Sequence[ArgSpec], names: Sequence[str],
               target: KernelTarget, debug: bool, bumps: list[Any], device: Any) -> Launcher:
    """A launcher for IR that qdarray builds itself (reverse, counting and reducer kernels)
    on `target`, for arrays on `device`: the compile pipeline, then the target. `bumps` are
    the (argument index, field path) of the arrays it writes."""
    from .passes import pipeline

    ir = pipeline(ir, debug=debug, lower=target.lowers_views)
    packers = [packer(s, f"{ir.name}() argument '{n}'", not target.lowers_views, exact=debug)
               for n, s in zip(names, specs, strict=True)]
    launcher = target.launcher(ir, packers, bumps, debug=debug, device=device)
    launcher.pack = compile_pack(packers)
    return launcher


def _internal_spec(t: Any) -> ArgSpec:
    if isinstance(t, T.ArrayType):
        return ArgSpec("array", t)
    if isinstance(t, T.ViewType):
        return ArgSpec("view", t)
    return ArgSpec("scalar", t)


# Launchers of internal kernels by (key, target, device): identical kernels of different users
# share one compile (and the disk cache shares them between processes).
_INTERNAL: dict[tuple[str, str, str], Launcher] = {}


def internal_launcher(key: str, build: Callable[[], KernelIR], target: KernelTarget,
                      device: Any) -> Launcher:
    """The launcher of an internal kernel (reverse mode's reducers, capacity maps and packing
    kernels) on `target` for arrays on `device`, compiled once per `key` (the kernel's text,
    or a name that fixes it), target and device; `build()` gives its IR on first use. Its
    parameters take what their types say: arrays, views, scalars of their dtype."""
    at = (key, target.name, str(device))
    launcher = _INTERNAL.get(at)
    if launcher is None:
        ir = build()
        specs = [_internal_spec(p.value.type) for p in ir.params]
        launcher = _INTERNAL[at] = compile_ir(ir, specs, [p.name for p in ir.params], target,
                                              False, [], device)
    return launcher
