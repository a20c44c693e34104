"""Which function a frame runs, and with which arguments: what the tracer records.

The tracer sees a namespace call as a frame of qdarray code entered from the traced
function. `arguments(frame)` reads the call's arguments from the frame as it starts, and
`function_of(frame, args)` finds the function object the frame runs, so that a replay can
call it again: a module-level function of the frame's module, a method, property or static
method of the class of its first argument, or, for functions made at run time (the closure
`qd.ad.grad(f)` returns), the one function object that holds the frame's code and closure.
Functions made by a factory share one code object (`qd.sin` and `qd.cos`, `Array.__add__`
and `Array.__mul__`): they are told apart by their closures' values.
"""

from __future__ import annotations

import gc
import inspect
import types
from typing import Any

_FOUND: dict[Any, list[tuple[tuple[Any, ...], Any]]] = {}


def arguments(frame: types.FrameType) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of the call `frame` starts (read at its 'call'
    event, before the function changes any local)."""
    code = frame.f_code
    local = frame.f_locals
    names = code.co_varnames
    n = code.co_argcount
    k = code.co_kwonlyargcount
    args = [local[names[i]] for i in range(n)]
    kwargs = {names[i]: local[names[i]] for i in range(n, n + k)}
    j = n + k
    if code.co_flags & inspect.CO_VARARGS:
        args.extend(local[names[j]])
        j += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local[names[j]])
    return args, kwargs


def _closure(frame: types.FrameType) -> tuple[Any, ...]:
    local = frame.f_locals
    return tuple(local.get(name) for name in frame.f_code.co_freevars)


def _matches(fn: Any, code: types.CodeType, cells: tuple[Any, ...]) -> bool:
    if getattr(fn, "__code__", None) is not code:
        return False
    closure = fn.__closure__ or ()
    return len(closure) == len(cells) and all(
        c.cell_contents is v for c, v in zip(closure, cells, strict=True))


def _members(cls: type) -> list[Any]:
    out: list[Any] = []
    for klass in cls.__mro__:
        for v in vars(klass).values():
            if isinstance(v, (staticmethod, classmethod)):
                out.append(v.__func__)
            elif isinstance(v, property):
                out += [v.fget, v.fset, v.fdel]
            else:
                out.append(v)
    return out


def function_of(frame: types.FrameType, args: list[Any]) -> Any:
    """The function object `frame` runs (None when none is found)."""
    code = frame.f_code
    cells = _closure(frame)
    for known_cells, fn in _FOUND.get(code, ()):
        if len(known_cells) == len(cells) and all(
                a is b for a, b in zip(known_cells, cells, strict=True)):
            return fn
    found = _search(frame, code, cells, args)
    if found is not None:  # module functions and methods live as long as their module
        _FOUND.setdefault(code, []).append((cells, found))
        return found
    # A function made at run time: the one function object holding this code and closure
    # (not kept: it may be one of many made and dropped).
    candidates = [r for r in gc.get_referrers(code)
                  if isinstance(r, types.FunctionType) and _matches(r, code, cells)]
    return candidates[0] if len(candidates) == 1 else None


def _search(frame: types.FrameType, code: types.CodeType, cells: tuple[Any, ...],
            args: list[Any]) -> Any:
    for v in frame.f_globals.values():
        if _matches(v, code, cells):
            return v
    if args:
        first = args[0]
        cls = first if isinstance(first, type) else type(first)
        for v in _members(cls):
            if _matches(v, code, cells):
                return v
    return None
