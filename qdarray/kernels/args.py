"""Kernel arguments: what each one is (its spec), its signature key, and how it is packed.

Every argument is classified once per signature into an `ArgSpec` (array, view, scalar or
dataclass of these); the launcher's fast path only computes `signature_key(arg)` per call:
(type, dtype, ndim, device) for arrays, the type for scalars. Keys never contain `id()` of an
argument, so a transient view freed and re-made at the same address is classified afresh.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array import Array
from .._devices import CPU, Device
from .._dtypes import DType
from .._errors import KernelTypeError
from ..buffer_view import BufferView
from . import types as T


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """What one kernel argument is: "array", "view", "scalar" or "struct" (a dataclass).

    `elem`: for an array annotated with a vector or matrix element type
    (`qd.Array[qd.vec2, 1]`), the element shape, which its trailing axes have (checked at
    every launch); `elem_name` spells the element type."""

    kind: str
    type: Any = None
    weak: bool = False
    cls: type | None = None
    fields: tuple[tuple[str, ArgSpec], ...] = ()
    elem: tuple[int, ...] = ()
    elem_name: str = ""

    def describe(self) -> str:
        if self.kind == "struct":
            return str(getattr(self.cls, "__name__", "dataclass"))
        text = T.type_str(self.type)
        return f"Python {T.weak_kind(self.type).__name__}" if self.weak else text


# -- signature keys (the fast path) ---------------------------------------------------------


# Read-only memory is part of the key: a kernel that writes it is rejected when it compiles.
def _array_key(a: Array) -> Any:
    data = a._data
    writeable = getattr(getattr(data, "flags", None), "writeable", True)
    return (Array, a._dtype, data.ndim, a._device, writeable)


def _ndarray_key(a: np.ndarray) -> Any:
    return (np.ndarray, a.dtype, a.ndim, a.flags.writeable)



def _view_key(v: BufferView) -> Any:
    base = v._base
    return (BufferView, base._dtype, base._device)


def _type_key(x: Any) -> Any:
    return type(x)


KEY_FUNCS: dict[type, Any] = {
    Array: _array_key, np.ndarray: _ndarray_key, BufferView: _view_key,
    int: _type_key, float: _type_key, bool: _type_key,
}
for _t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float32, np.float64):
    KEY_FUNCS[_t] = _type_key


def signature_key(x: Any) -> Any:
    """The part of the compile-cache key that `x` contributes (no `id()`, no values)."""
    f = KEY_FUNCS.get(type(x))
    if f is not None:
        return f(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        f = KEY_FUNCS[type(x)] = _dataclass_key(type(x))
        return f(x)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        arr = _from_dlpack(x, "argument")
        return (type(x), arr.dtype, arr.ndim)
    return (type(x), "unsupported")


def _dataclass_key(cls: type) -> Any:
    """The signature key of a dataclass's instances, (cls, each field's key), as one
    generated function: the kernels' fast path then finds it in `KEY_FUNCS` at every launch
    instead of walking the fields."""
    parts = "".join(f"_key(x.{f.name}), " for f in dataclasses.fields(cls))
    namespace: dict[str, Any] = {"_key": signature_key, "cls": cls}
    exec(f"def key(x):\n    return (cls, {parts})\n", namespace)  # noqa: S102 - our text
    return namespace["key"]


def _from_dlpack(x: Any, what: str) -> np.ndarray:
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as exc:
        raise KernelTypeError(
            f"{what}: cannot view {type(x).__name__} through DLPack on the CPU ({exc}). "
            "Use qd.asarray(x) to copy it into a qdarray Array."
        ) from None


# -- classification (once per signature) ----------------------------------------------------


def _kernel_dtype(dtype: Any, what: str) -> DType:
    from .._dtypes import from_numpy_dtype

    dt = dtype if isinstance(dtype, DType) else from_numpy_dtype(dtype)
    if dt not in T.KERNEL_DTYPES:
        raise KernelTypeError(
            f"{what} has dtype {dt.name}, which kernels do not support. "
            "Use bool, an integer dtype, float32 or float64 (complex: two real arrays)."
        )
    return dt


@functools.lru_cache(maxsize=256)
def _field_hints(cls: type) -> dict[str, Any]:
    """The declared types of a dataclass's fields ({} when they do not resolve)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation naming something not importable here
        return {}


def _check_field(hint: Any, spec: ArgSpec, value: Any, what: str) -> None:
    """A scalar field holding a value of another kind than the type it declares (`n: int`
    holding 2.5) would be taken by its value's kind: refuse it, as a parameter is."""
    if spec.kind != "scalar":
        return
    declared = hint.kind if isinstance(hint, DType) else _PY_KINDS.get(hint)
    if declared is None:
        return
    got = spec.type.kind
    if (declared in "iu" and got not in "iub") or (declared == "b" and got != "b") or (
            declared == "f" and got == "c"):
        name = hint.__name__ if isinstance(hint, type) else f"qd.{hint.name}"
        raise KernelTypeError(
            f"{what} is declared {name} but holds {value!r}. Pass a value of the declared "
            f"kind (e.g. {name}(...)), or change the field's type.")


_PY_KINDS: dict[Any, str] = {int: "i", bool: "b", float: "f"}


def _field_elem(hint: Any, spec: ArgSpec, what: str) -> ArgSpec:
    """An array field declared an array of vectors or matrices (`x: qd.Array[qd.vec2, 2]`)
    is one, as a parameter so annotated is; its trailing shape is checked at every launch
    (launch.py's packer), its dtype and rank here."""
    if not (isinstance(hint, T.ArrayAnnotation) and hint.elem) or spec.kind != "array":
        return spec
    if not hint.accepts(spec.type):
        raise KernelTypeError(
            f"{what}: expected {hint!r} (an array of {getattr(hint.dtype, 'name', 'any dtype')}"
            f" whose last axes are {hint.elem}), got {spec.describe()}. Pass an array of that "
            "layout, or change the field's type.")
    return dataclasses.replace(spec, elem=hint.elem, elem_name=hint.elem_name)


def classify(x: Any, what: str) -> tuple[ArgSpec, Device | None]:
    """The spec of one argument and the device it lives on (None for scalars)."""
    t = type(x)
    if t is Array:
        return ArgSpec("array", T.ArrayType(_kernel_dtype(x._dtype, what), x.ndim)), x._device
    if t is BufferView:
        base = x._base
        return ArgSpec("view", T.ViewType(_kernel_dtype(base._dtype, what))), base._device
    if t is np.ndarray:
        if not x.dtype.isnative:
            raise KernelTypeError(f"{what} is a NumPy array in non-native byte order. "
                                  "Use x.astype(x.dtype.newbyteorder('=')) first.")
        return ArgSpec("array", T.ArrayType(_kernel_dtype(x.dtype, what), x.ndim)), CPU
    if t in (bool, int, float):
        return ArgSpec("scalar", T.WEAK_DEFAULT[t], weak=True), None
    dtype = T.scalar_dtype_of(x)
    if dtype is not None:
        return ArgSpec("scalar", dtype), None
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        params = getattr(t, "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise KernelTypeError(
                f"{what} is a {t.__name__} dataclass that is not frozen. "
                f"Use @dataclass(frozen=True) for kernel arguments.")
        fields = []
        device = None
        hints = _field_hints(x.__class__)
        for f in dataclasses.fields(x):
            value = getattr(x, f.name)
            spec, dev = classify(value, f"{what} field '{f.name}'")
            _check_field(hints.get(f.name), spec, value, f"{what} field '{f.name}'")
            spec = _field_elem(hints.get(f.name), spec, f"{what} field '{f.name}'")
            fields.append((f.name, spec))
            device = device or dev
        return ArgSpec("struct", cls=t, fields=tuple(fields)), device
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        arr = _from_dlpack(x, what)
        return ArgSpec("array", T.ArrayType(_kernel_dtype(arr.dtype, what), arr.ndim)), CPU
    raise KernelTypeError(
        f"{what} has type {t.__name__}, which kernels do not take. Use a qd.Array, a "
        "qd.BufferView, a NumPy or DLPack array, a Python or NumPy scalar, or a frozen "
        "dataclass of these."
    )


def devices_of(x: Any) -> list[Device]:
    """Every device an argument's arrays live on (dataclass fields included)."""
    t = type(x)
    if t is Array:
        return [x._device]
    if t is BufferView:
        return [x._base._device]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out: list[Device] = []
        for f in dataclasses.fields(x):
            out += devices_of(getattr(x, f.name))
        return out
    return []


def array_leaves(names: Any, args: Any) -> Any:
    """A function of a launch's arguments, shaped as `args` are (one signature), giving
    (name, leaf) for each Array, BufferView or NumPy array among them, dataclass fields
    included ("state.x"): the walk over the arguments done once, as straight-line code."""
    items: list[str] = []

    def walk(name: str, x: Any, expr: str) -> None:
        if type(x) in (Array, BufferView, np.ndarray):
            items.append(f"({name!r}, {expr})")
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                walk(f"{name}.{f.name}", getattr(x, f.name), f"{expr}.{f.name}")

    for k, (name, x) in enumerate(zip(names, args, strict=True)):
        walk(name, x, f"args[{k}]")
    namespace: dict[str, Any] = {}
    exec(f"def leaves(args):\n    return [{', '.join(items)}]\n",  # noqa: S102 - our text
         namespace)
    return namespace["leaves"]


# -- the test of one signature (the fastest path) ---------------------------------------------


def compile_fits(key: tuple[Any, ...], written: Any) -> Any:
    """`fits(args)`: whether arguments have signature key `key` (one entry per argument,
    as `signature_key` gives them) as far as the launcher compiled for `key` depends on it,
    as straight-line identity tests instead of building and hashing a key. `written`: the
    (argument index, field path) of the arrays the kernel writes, whose memory must still be
    writeable (the key's last item); an array only read may be read-only or not, the same
    compiled code reads both. Any part the tests below do not spell compares whole keys."""
    lines = ["def fits(args):"]
    names: dict[str, Any] = {"Array": Array, "BufferView": BufferView, "ndarray": np.ndarray,
                             "_key": signature_key}
    writes = {(index, path) for index, path in written}

    def const(value: Any) -> str:
        name = f"k{len(names)}"
        names[name] = value
        return name

    def test(part: Any, expr: str, at: tuple[int, tuple[str, ...]]) -> None:
        var = f"a{len(lines)}"
        lines.append(f"    {var} = {expr}")
        fail = "return False"
        if isinstance(part, tuple) and part and part[0] is Array:
            _, dtype, ndim, device, writeable = part
            lines.append(f"    if type({var}) is not Array or {var}._dtype is not "
                         f"{const(dtype)} or {var}._device is not {const(device)} or "
                         f"{var}._data.ndim != {ndim}: {fail}")
            if at in writes:
                lines.append(f"    if getattr(getattr({var}._data, 'flags', None), "
                             f"'writeable', True) is not {bool(writeable)}: {fail}")
        elif isinstance(part, tuple) and part and part[0] is BufferView:
            _, dtype, device = part
            lines.append(f"    if type({var}) is not BufferView or {var}._base._dtype is not "
                         f"{const(dtype)} or {var}._base._device is not {const(device)}: "
                         f"{fail}")
        elif isinstance(part, type):  # a scalar: its type
            lines.append(f"    if type({var}) is not {const(part)}: {fail}")
        elif (isinstance(part, tuple) and part and isinstance(part[0], type)
              and dataclasses.is_dataclass(part[0])):
            cls = part[0]
            lines.append(f"    if type({var}) is not {const(cls)}: {fail}")
            for f, sub in zip(dataclasses.fields(cls), part[1:], strict=True):
                test(sub, f"{var}.{f.name}", (at[0], at[1] + (f.name,)))
        else:  # NumPy and DLPack arrays: the whole key
            lines.append(f"    if _key({var}) != {const(part)}: {fail}")

    for k, part in enumerate(key):
        test(part, f"args[{k}]", (k, ()))
    lines.append("    return True")
    exec(compile("\n".join(lines) + "\n", "<qdarray signature test>", "exec"), names)  # noqa: S102
    return names["fits"]
