"""Tracing a `qd.jit` function: run it once on its arguments and record every namespace call.

The function runs eagerly on the real arguments (its result is the first call's result)
while a profile hook (`sys.setprofile`, this thread only) watches the frames it enters. A
call from the function's own code into qdarray code (a namespace function, an operator or
method of an Array, a kernel launch, a `qd.ad` function) is one step of the program: the
function object, its arguments as a template (arrays by identity: the function's inputs
and the results of earlier steps are slots, anything else a constant), and what it returned.
What qdarray does inside such a call is not looked at: the replay calls the same function.

What cannot be replayed is refused, with the line of the function that did it:

- a traced array turned into a Python value: `bool(x)` (an `if`, `while`, `and`, `assert`),
  `int(x)`, `float(x)`, an index or a `range` bound, `x.item()`, `x.tolist()`, a host
  export (`np.asarray(x)`, DLPack), or any other namespace call that returns a plain
  Python value computed from a traced array (`TracerConversionError`);
- a call whose function object cannot be found again, or an argument holding traced arrays
  inside an object other than a list, tuple, dict or dataclass instance (`JitTraceError`).

Results that depend only on shapes, dtypes and devices (`x.shape`, `len(x)`, `x.dtype`,
`x.ndim`, `x.size`, `x.device`) are static: the signature fixes them. Arrays the function
reads from outside (globals, closures) are constants read at each call, not copied.
"""

from __future__ import annotations

import dis
import linecache
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from .. import _memory
from .._array import Array
from .._errors import JitTraceError, TracerBoolConversionError, TracerConversionError
from ..buffer_view import BufferView
from .lookup import arguments, function_of
from .program import (
    Call,
    Const,
    Mapping,
    Seq,
    Slot,
    Struct,
    Where,
    array_leaves,
    shape_of,
)

# The package's folder as its code objects spell their files (`co_filename` is the path the
# module was imported by, "x/../qdarray/..." when a sys.path entry has ".." in it), and
# normalised: a call is qdarray's when its file starts with either.
QD_ROOTS = tuple(dict.fromkeys(
    os.path.dirname(os.path.dirname(p)) + os.sep for p in (__file__, os.path.abspath(__file__))))
_ACTIVE = threading.local()


def tracing() -> bool:
    """Whether this thread is tracing a `qd.jit` function now."""
    return getattr(_ACTIVE, "tracer", None) is not None


def _code(fn: Any) -> Any:
    if isinstance(fn, property):
        fn = fn.fget
    return fn.__code__


# Calls that turn an array into a Python value: what each is, and the exception class.
_EXPORTS: dict[Any, tuple[str, type[TracerConversionError]]] = {
    _code(Array.__bool__): ("bool(x) (an `if`, `while`, `and`/`or`/`not` or `assert` on it)",
                            TracerBoolConversionError),
    _code(Array.__int__): ("int(x)", TracerConversionError),
    _code(Array.__index__): ("its use as an index or a range bound (x.__index__)",
                             TracerConversionError),
    _code(Array.__float__): ("float(x)", TracerConversionError),
    _code(Array.__complex__): ("complex(x)", TracerConversionError),
    _code(Array.item): ("x.item()", TracerConversionError),
    _code(Array.tolist): ("x.tolist()", TracerConversionError),
    _code(Array.tobytes): ("x.tobytes()", TracerConversionError),
    _code(Array.__array__): ("np.asarray(x) (x.__array__)", TracerConversionError),
    _code(Array.__dlpack__): ("x.__dlpack__()", TracerConversionError),
    _code(Array.__iter__): ("iteration over it (x.__iter__)", TracerConversionError),
}
# Calls whose plain Python results depend only on what the signature fixes (or are text,
# which the trace's run prints once).
_STATIC = frozenset(_code(f) for f in (
    Array.shape, Array.ndim, Array.size, Array.dtype, Array.device, Array.__len__,
    Array.__repr__, Array.__str__, Array.__format__, Array.__array_namespace__,
    Array.__dlpack_device__, Array.requires_grad, BufferView.__len__, BufferView.size,
    BufferView.shape, BufferView.dtype))
_EXPORT_HINT = {
    TracerBoolConversionError: (
        "Use qd.where(cond, a, b) to choose values, make the argument static "
        "(static_argnums / static_argnames) if the branch depends on an input's value, or write "
        "a @qd.kernel for data-dependent control flow."),
    TracerConversionError: (
        "Use qdarray operations on the array instead, make the argument static "
        "(static_argnums / static_argnames) if Python needs its value, or write a @qd.kernel "
        "for loops whose bounds are data."),
}


# The instructions a frame that returned (rather than raised) last ran: `return x`, and from
# Python 3.12 on `return None` / `return <constant>` as RETURN_CONST (the instrumented forms
# in case an interpreter reports those).
RETURNS = frozenset(dis.opmap[name] for name in (
    "RETURN_VALUE", "RETURN_CONST", "INSTRUMENTED_RETURN_VALUE", "INSTRUMENTED_RETURN_CONST")
    if name in dis.opmap)
_BESIDE = object()  # the entry of code that runs beside the function (a finalizer)
_NOT_CALLS = frozenset({_memory._forget.__code__})


def where_of(frame: types.FrameType | None) -> Where:
    if frame is None:
        return Where("<unknown>", 0, "<unknown>", "")
    code = frame.f_code
    text = linecache.getline(code.co_filename, frame.f_lineno).strip()
    return Where(code.co_filename, frame.f_lineno, code.co_name, text)


class Tracer:
    """Records the namespace calls of one run of `f` (module docstring)."""

    def __init__(self, f: Callable[..., Any]) -> None:
        self.f = f
        self.slots: dict[int, int] = {}
        self.objects: list[Any] = []  # every slot's object, alive so that ids stay unique
        self.steps: list[Call] = []
        self.entry: tuple[Any, ...] | None = None

    # -- slots and templates ----------------------------------------------------------------

    def add(self, obj: Any) -> int:
        i = len(self.objects)
        self.objects.append(obj)
        self.slots[id(obj)] = i
        return i

    def slot_of(self, obj: Any) -> int | None:
        i = self.slots.get(id(obj))
        if i is not None and self.objects[i] is obj:
            return i
        return None

    def template(self, x: Any, where: Where | None = None) -> Any:
        i = self.slot_of(x)
        if i is not None:
            return Slot(i)
        t = type(x)
        if t is list or t is tuple or (isinstance(x, tuple) and hasattr(x, "_fields")):
            items = tuple(self.template(v, where) for v in x)
            if all(type(v) is Const for v in items):
                return Const(x)
            return Seq(t, items)
        if t is dict:
            items = tuple(self.template(v, where) for v in x.values())
            if all(type(v) is Const for v in items):
                return Const(x)
            return Mapping(tuple(x), items)
        fields = getattr(x, "__dataclass_fields__", None)
        if fields is not None and not isinstance(x, type):
            names: list[str] = []
            values: list[Any] = []
            for name, spec in fields.items():
                item = self.template(getattr(x, name, None), where)
                if type(item) is Const:
                    continue
                if not spec.init:
                    raise JitTraceError(
                        f"An argument of type {t.__name__} holds an array traced by qd.jit "
                        f"in its field '{name}', which its constructor does not take, so the "
                        "compiled program cannot rebuild it."
                        + (f"\n{where.describe()}\n" if where else " ")
                        + "Use arrays directly as arguments, or a field the constructor "
                        "takes.")
                names.append(name)
                values.append(item)
            if names:
                return Struct(x, tuple(names), tuple(values))
        return Const(x)

    # -- the profile hook ---------------------------------------------------------------------

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run `f(*args, **kwargs)` while recording; returns its result."""
        if tracing():
            raise JitTraceError("qd.jit cannot trace a function while tracing another.")
        _ACTIVE.tracer = self
        previous = sys.getprofile()
        sys.setprofile(self._profile)
        try:
            return self.f(*args, **kwargs)
        finally:
            sys.setprofile(previous)
            _ACTIVE.tracer = None
            self.entry = None

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        entry = self.entry
        if entry is not None:
            if event == "return" and frame is entry[0]:
                if entry[1] is _BESIDE:
                    self.entry = None
                else:
                    self._finish(arg)
            return
        if event == "call" and frame.f_code.co_filename.startswith(QD_ROOTS):
            if frame.f_code in _NOT_CALLS or frame.f_code.co_name == "__del__":
                # a finalizer or weak-reference callback run by the garbage collector: not
                # a call of the function's, and nothing it does is recorded
                self.entry = (frame, _BESIDE)
                return
            self._start(frame)

    def _start(self, frame: types.FrameType) -> None:
        code = frame.f_code
        where = where_of(frame.f_back)
        args, kwargs = arguments(frame)
        export = _EXPORTS.get(code)
        if export is not None and args and self.slot_of(args[0]) is not None:
            how, error = export
            raise error(
                f"{how} of an array traced by qd.jit: its values are not known when the "
                "function is compiled, so a compiled call could not follow them.\n"
                f"{where.describe()}\n{_EXPORT_HINT[error]}")
        fn = function_of(frame, args)
        construct = (code.co_name == "__init__" and bool(args)
                     and self.slot_of(args[0]) is None)
        if construct:
            fn = type(args[0])
            new, args = args[0], args[1:]
        else:
            new = None
        if fn is None:
            raise JitTraceError(
                f"qd.jit cannot trace the call of {code.co_qualname} (qdarray code): it "
                "cannot find that function again to replay it.\n"
                f"{where.describe()}\nTry calling it outside the qd.jit function, or "
                "report it as a missing case of qd.jit.")
        targs = self.template(args, where)
        targs = targs if type(targs) is Seq else Seq(tuple, tuple(Const(a) for a in args))
        tkw = self.template(kwargs, where)
        tkw = tkw if type(tkw) is Mapping else Mapping(tuple(kwargs), tuple(
            Const(v) for v in kwargs.values()))
        traced = any(type(t) is not Const for t in targs.items + tkw.items)
        self.entry = (frame, fn, targs, tkw, traced, new, where)

    def _finish(self, result: Any) -> None:
        frame, fn, targs, tkw, traced, new, where = self.entry  # type: ignore[misc]
        self.entry = None
        if new is not None:  # an object constructed by the function: replayed as `cls(...)`
            self.steps.append(Call(fn, targs, tkw, self.add(new), (), (), where, True))
            return
        if type(result) is Array or type(result) is BufferView:
            out = self.slot_of(result)
            out = self.add(result) if out is None else out
            self.steps.append(Call(fn, targs, tkw, out, (), (shape_of(result),), where))
            return
        if result is None:
            if frame.f_code.co_code[frame.f_lasti] not in RETURNS:
                return  # the call raised (and `f` went on): nothing to replay
            self.steps.append(Call(fn, targs, tkw, None, (), (), where))
            return
        known = self.slot_of(result)
        if known is not None:
            self.steps.append(Call(fn, targs, tkw, known, (), (), where))
            return
        leaves = array_leaves(result) if isinstance(result, (list, tuple)) and result \
            else None
        if leaves:
            out = self.add(result)
            items = tuple((path, self.add(v) if self.slot_of(v) is None else self.slot_of(v))
                          for path, v in leaves)
            self.steps.append(Call(fn, targs, tkw, out, items,  # type: ignore[arg-type]
                                   tuple(shape_of(v) for _, v in leaves), where))
            return
        if not traced or frame.f_code in _STATIC:
            return  # a constant of the trace
        if type(result).__module__.startswith("qdarray"):  # a Tape, a view object, ...
            self.steps.append(Call(fn, targs, tkw, self.add(result), (), (), where))
            return
        name = getattr(fn, "__qualname__", frame.f_code.co_name)
        raise TracerConversionError(
            f"{name} returned a Python value ({type(result).__name__}) computed from an "
            "array traced by qd.jit: its value is not known when the function is compiled, "
            f"so a compiled call could not follow it.\n{where.describe()}\n"
            + _EXPORT_HINT[TracerConversionError])
