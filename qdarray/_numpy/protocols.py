"""NumPy's protocols on Array: `__array_ufunc__` and `__array_function__`.

A NumPy function or ufunc given qdarray arrays runs as the namespace function that the table in
`_numpy_functions` maps it to, on the arrays' device, and returns qdarray arrays. Everything
else goes to `numpy_fallback`, the one place where NumPy code runs on qdarray memory: on the
CPU, NumPy's own function runs on the arrays' NumPy storage (no copy) and its array results
are wrapped back; on other devices it runs on host copies (the copy `np.asarray(x)` makes) and
its array results come back to the arrays' device.

Example::

    x = qd.linspace(0, 1, 5)
    np.sin(x)           # qd.sin(x): an Array
    np.median(x)        # not in the table: NumPy's median on x's storage, wrapped as an Array
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import Array
from .._autodiff import TAPES, noted, refuse_foreign
from .._data_type_functions import astype
from .._devices import CPU, Device
from ..buffer_view import BufferView
from .functions import FUNCTIONS, LIKE_FUNCTIONS, UFUNC_METHODS, UFUNCS
from .operands import NotInNamespace, device_of, dtype_of, operand

_HANDLED_TYPES = (Array, np.ndarray)


def call_numpy(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """NumPy's `func(*args, **kwargs)` with qdarray arguments: the table's namespace adapter,
    or `numpy_fallback` when the table has none or the adapter cannot take the arguments."""
    adapter = FUNCTIONS.get(func)
    reason = None
    if adapter is not None:
        try:
            return adapter(*args, **kwargs)
        except NotInNamespace as exc:
            reason = str(exc)
    return numpy_fallback(func, args, kwargs, _qualified_name(func), reason)


def array_function(x: Array, func: Callable[..., Any], types: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """`x.__array_function__`: NotImplemented when a type qdarray does not know takes part (so
    its own protocol can answer); a creation function given `like=x` creates on `x`'s device;
    the rest goes to `call_numpy`."""
    for kind in types:
        if not issubclass(kind, _HANDLED_TYPES):
            return NotImplemented
    create = LIKE_FUNCTIONS.get(func)
    if create is not None:  # NumPy passes like= on to no one: x is the like= array
        reason = None
        try:
            return create(x._device, *args, **kwargs)
        except NotInNamespace as exc:
            reason = str(exc)
        like = x._data if x._device is CPU else None  # on other devices: NumPy's own
        return numpy_fallback(lambda *a, **k: func(*a, like=like, **k), args, kwargs,
                              _qualified_name(func), reason, (x,))
    return call_numpy(func, args, kwargs)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """`Array.__array_ufunc__`: a ufunc call as its namespace function (with `out=` written
    through the namespace's assignment), `reduce` / `accumulate` as namespace reductions, the
    rest through `numpy_fallback`."""
    name = ufunc.__name__
    reason = None
    try:
        if method == "__call__":
            func = UFUNCS.get(name)
            if func is not None:
                return _call_ufunc(func, ufunc, inputs, kwargs)
        else:
            adapter = UFUNC_METHODS.get((name, method))
            if adapter is not None:
                return adapter(*inputs, **kwargs)
    except NotInNamespace as exc:
        reason = str(exc)
    call = ufunc if method == "__call__" else getattr(ufunc, method)
    label = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
    return numpy_fallback(call, inputs, kwargs, label, reason,
                          written=_ufunc_outputs(ufunc, method, inputs, kwargs))


def _call_ufunc(func: Callable[..., Any], ufunc: np.ufunc, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    name = ufunc.__name__
    out = kwargs.get("out")
    dtype = kwargs.get("dtype")
    if set(kwargs) - {"out", "dtype"} or out is not None and (
            len(out) != 1 or type(out[0]) is not Array):
        raise NotInNamespace(
            f"numpy.{name} with {', '.join(sorted(kwargs))}= has no namespace equivalent")
    device = device_of(inputs if out is None else (*inputs, out[0]))
    if device is None:
        raise NotInNamespace(f"numpy.{name} got no qdarray array")
    operands = [operand(a, device, name) for a in inputs]
    target = dtype_of(dtype)
    if target is not None:
        operands = _in_dtype(ufunc, operands, target)
    result = func(*operands)
    if target is not None and result.dtype != target:
        result = astype(result, target)
    if out is None:
        return result
    out[0][...] = result  # the namespace's assignment: same-kind casts and broadcasting only
    return out[0]


def _in_dtype(ufunc: np.ufunc, operands: list[Any], target: _dtypes.DType) -> list[Any]:
    """The operands of `ufunc(..., dtype=target)` cast as NumPy's type resolution casts them:
    the loop whose output is `target`, with inputs cast by the "same_kind" rule (NumPy's
    UFuncTypeError, a TypeError, when they cannot be)."""
    kinds = tuple(o.dtype._np if type(o) is Array else
                  type(o) if type(o) in (bool, int, float, complex) else np.asarray(o).dtype
                  for o in operands)
    loop = ufunc.resolve_dtypes((*kinds, *(None,) * ufunc.nout),
                                signature=(*(None,) * ufunc.nin, *(target._np,) * ufunc.nout),
                                casting="same_kind")
    return [astype(o, _dtypes.from_numpy_dtype(d)) if type(o) is Array and o.dtype != d else o
            for o, d in zip(operands, loop, strict=False)]


def numpy_fallback(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   name: str, reason: str | None = None, also: tuple[Array, ...] = (),
                   written: list[Any] | None = None) -> Any:
    """Run NumPy's `func` on the NumPy storage of the qdarray arrays among `args` and `kwargs`
    (lists and tuples included), without copies, and wrap its array results as Arrays.

    The single place where NumPy code runs on qdarray arrays outside the namespace. Results
    that view an argument share its write generation. The arguments NumPy writes count as
    written (their generation is bumped): `written` (a ufunc's outputs, from
    `_ufunc_outputs`), else those `_written_arguments` finds from the function's signature
    (`out=`, `overwrite_input=True`, the in-place functions `np.copyto`, `np.put`, ...). The
    other arguments are only read, as NumPy's semantics say, so a tape that kept one still
    holds it.

    Arrays on other devices (an argument, or an array in `also`, which `func` uses besides its
    arguments) take part as host copies (`_on_host_copies`), as `np.asarray(x)` gives them.

    Raises:
        AutodiffError: inside a `qd.ad.Tape`, an argument needs gradients (the tape cannot
            record what NumPy does); the message names the function.
    """
    if TAPES:  # a tape cannot see inside NumPy's code: refuse arrays that need gradients
        found: list[Array] = list(also)
        _unwrap((args, tuple(kwargs.values())), found, [])
        refuse_foreign(name, *found)
    device = _off_cpu(also, args, kwargs)
    if device is not None:
        return _on_host_copies(func, args, kwargs, device, written)
    arrays: list[Array] = list(also)
    passed: list[Any] = []
    native_args = _unwrap(args, arrays, passed)
    native_kwargs = {k: _unwrap(v, arrays, passed) for k, v in kwargs.items()}
    if written is None:
        written = _written_arguments(func, args, kwargs)
    result = func(*native_args, **native_kwargs)
    changed: list[Array] = []
    _unwrap(arrays if written is None else written, changed, [])
    _escaped(result, arrays, changed)
    for x in changed:
        x._buffer.generation += 1
    if TAPES and changed:
        noted(name, changed)
    return _wrap(result, arrays, passed)


def _off_cpu(also: tuple[Array, ...], args: Any, kwargs: dict[str, Any]) -> Device | None:
    """The device of the first qdarray array among the arguments that is not on the CPU."""
    arrays: list[Array] = list(also)
    _unwrap((args, tuple(kwargs.values())), arrays, [])
    return next((x._device for x in arrays if x._device is not CPU), None)


# NumPy functions about memory, which host copies cannot answer: qdarray answers from the
# arrays' buffers (two views of one buffer may share memory; an array shares it with itself).
_MEMORY_QUERIES = (np.may_share_memory, np.shares_memory)


def _on_host_copies(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                    device: Device, written: list[Any] | None) -> Any:
    """NumPy's `func` on host copies of arrays that live on `device` (not the CPU): the same
    host copy that `np.asarray(x)` makes (the host-export rule, docs/numpy.md). Array results
    come back as Arrays on `device` (copies: a view NumPy returns is a view of the host copy,
    so it does not stay a view of the argument); arguments NumPy writes (`out=`, `np.copyto`,
    ...) are written back to their device."""
    if func in _MEMORY_QUERIES and len(args) >= 2 and all(type(a) is Array for a in args[:2]):
        a, b = args[0], args[1]
        return a._buffer is b._buffer and (a.size > 0 and b.size > 0)
    copies: dict[int, tuple[Array, np.ndarray]] = {}

    def host(obj: Any) -> Any:
        kind = type(obj)
        if kind is BufferView:
            obj = obj._as_array()
            kind = Array
        if kind is Array:
            found = copies.get(id(obj))
            if found is None:
                data = obj._data if obj._device is CPU else np.array(obj._host())
                found = copies[id(obj)] = (obj, data)
            return found[1]
        if kind is list or kind is tuple:
            return kind(host(o) for o in obj)
        return obj

    native_args = host(args)
    native_kwargs = {k: host(v) for k, v in kwargs.items()}
    if written is None:
        written = _written_arguments(func, args, kwargs)
    result = func(*native_args, **native_kwargs)
    targets: list[Array] = []
    _unwrap([x for x, _ in copies.values()] if written is None else written, targets, [])
    for x in targets:
        data = copies[id(x)][1] if id(x) in copies else None
        if data is not None and x._device is not CPU:
            x[...] = Array._new(data, CPU).to_device(x._device)
        elif data is not None:
            x._buffer.generation += 1
    return _to_device(result, copies, device)


def _to_device(result: Any, copies: dict[int, tuple[Array, np.ndarray]], device: Device) -> Any:
    """NumPy's results from host copies as Arrays on `device` (an argument's host copy
    returned as it came is that argument)."""
    kind = type(result)
    if kind is np.ndarray:
        for x, data in copies.values():
            if result is data:
                return x
        if result.dtype not in _dtypes._BY_NUMPY:
            return result  # float16, strings, objects: NumPy's own result
        return Array._new(result, CPU).to_device(device)
    if isinstance(result, np.generic):
        if result.dtype not in _dtypes._BY_NUMPY:
            return result
        return Array._new(np.asarray(result), CPU).to_device(device)
    if kind is tuple or kind is list:
        return kind(_to_device(r, copies, device) for r in result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # a named tuple
        return kind(*(_to_device(r, copies, device) for r in result))
    return result


# NumPy's functions that write into an argument other than `out=`, by the parameter's name.
_IN_PLACE = {np.copyto: "dst", np.put: "a", np.place: "arr", np.putmask: "a",
             np.fill_diagonal: "a", np.put_along_axis: "arr"}
# Flags with which a function may overwrite an input, and the input they name.
_OVERWRITE = {"overwrite_input": "a", "overwrite_a": "a", "overwrite_b": "b"}


def _written_arguments(func: Callable[..., Any], args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> list[Any] | None:
    """The arguments NumPy's `func` writes: its `out=` (positional or keyword), the input an
    `overwrite_*=True` flag gives away, the target of an in-place function; None when the
    signature cannot tell (every argument then counts as written)."""
    import inspect

    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    given = bound.arguments
    out = [given[p] for p in ("out",) if given.get(p) is not None]
    for flag, name in _OVERWRITE.items():
        if given.get(flag) and name in given:
            out.append(given[name])
    target = _IN_PLACE.get(func)
    if target is not None and target in given:
        out.append(given[target])
    return out


def _ufunc_outputs(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> list[Any]:
    """What a ufunc call writes: `out=`, outputs given positionally, and for `ufunc.at` the
    array it updates in place."""
    out = kwargs.get("out")
    written = [] if out is None else [out]
    if method == "__call__":
        written.extend(inputs[ufunc.nin:])
    elif method == "at":
        written.append(inputs[0])
    elif method in ("reduce", "accumulate", "reduceat"):
        position = 4 if method == "reduceat" else 3  # (array, [indices,] axis, dtype, out)
        written.extend(inputs[position:position + 1])
    return written


def _escaped(result: Any, arrays: list[Array], changed: list[Array]) -> None:
    """Arguments whose memory a result NumPy returned as a plain ndarray views (a dtype
    qdarray has no Array for): written as far as qdarray can tell."""
    if type(result) in (tuple, list):
        for r in result:
            _escaped(r, arrays, changed)
        return
    if type(result) is not np.ndarray or result.dtype in _dtypes._BY_NUMPY:
        return
    for x in arrays:
        if not any(c is x for c in changed) and np.shares_memory(result, x._data):
            changed.append(x)


def _unwrap(obj: Any, arrays: list[Array], passed: list[Any]) -> Any:
    """`obj` with qdarray arrays replaced by their native storage (collected in `arrays`)."""
    kind = type(obj)
    if kind is Array:
        arrays.append(obj)
        return obj._data
    if kind is list or kind is tuple:
        return kind(_unwrap(o, arrays, passed) for o in obj)
    if kind is BufferView:
        window = obj._as_array()
        arrays.append(window)
        return window._data
    if isinstance(obj, np.ndarray):
        passed.append(obj)
    return obj


def _wrap(result: Any, arrays: list[Array], passed: list[Any]) -> Any:
    """NumPy's results as Arrays (in tuples, lists and named tuples too); an argument returned
    as it came (`out=`) is returned as the caller gave it."""
    kind = type(result)
    if kind is np.ndarray:
        for x in arrays:
            if result is x._data:
                return x
        for p in passed:
            if result is p:
                return result
        if result.dtype not in _dtypes._BY_NUMPY:
            return result  # float16, strings, objects: NumPy's own result
        source = _viewed(result, arrays)
        if source is None:
            return Array._new(result, CPU)
        # A view of an argument's memory: its buffer token, and the same view of its
        # gradient companion (the same byte offsets in the gradient's memory).
        return source._view(_region, result, source._data)
    if isinstance(result, np.generic):
        if result.dtype not in _dtypes._BY_NUMPY:
            return result
        return Array._new(np.asarray(result), CPU)
    if kind is tuple or kind is list:
        return kind(_wrap(r, arrays, passed) for r in result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # a named tuple (SVDResult)
        return kind(*(_wrap(r, arrays, passed) for r in result))
    return result


def _root(data: np.ndarray) -> Any:
    base = data
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _viewed(result: np.ndarray, arrays: list[Array]) -> Array | None:
    """The argument whose memory `result` views, if any."""
    if result.base is None:
        return None
    root = _root(result)
    for x in arrays:
        if _root(x._data) is root:
            return x
    return None


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _region(native: np.ndarray, view: np.ndarray, data: np.ndarray) -> np.ndarray | None:
    """`view` itself for the argument's memory `data`; the same region of a gradient's."""
    return view if native is data else _same_region(view, data, native)


def _same_region(view: np.ndarray, data: np.ndarray, grad: np.ndarray) -> np.ndarray | None:
    """The view of `grad`'s memory at the byte offsets where `view` lies in `data`'s memory
    (None when the two memories are laid out differently)."""
    root, groot = _root(data), _root(grad)
    if (root.shape != groot.shape or root.strides != groot.strides
            or root.dtype != groot.dtype or not groot.flags.c_contiguous):
        return None
    out = np.ndarray(view.shape, view.dtype, buffer=groot, offset=_address(view) - _address(root),
                     strides=view.strides)
    out.flags.writeable = view.flags.writeable
    return out


def _qualified_name(func: Callable[..., Any]) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{getattr(func, '__name__', repr(func))}"
