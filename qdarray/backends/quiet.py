"""A backend namespace whose functions raise no floating-point warnings.

NumPy reports IEEE 754 floating-point exceptions (division by zero, invalid operation,
overflow, underflow) as `RuntimeWarning`s, per call, unless a `np.errstate` is active. The Array
API standard gives the results of these cases (inf, NaN, signed zeros) and no warnings, and the
other backends (CuPy, generated kernels) raise none, so on the CPU qdarray runs every backend
function with NumPy's floating-point error handling set to "ignore": `x / 0.0` is `inf` on every
device, silently. Array API clients rely on this: scikit-learn, for instance, wraps such
computations in `np.errstate` only when the namespace is NumPy itself.

Warnings that are not floating-point exceptions are kept (NumPy's "Mean of empty slice", for
instance, which CuPy raises too). The user's own `np.errstate` settings outside qdarray calls
are untouched.

The wrapper runs the function in a context where NumPy's error-state context variable says
"ignore" (see `_CONTEXT`): `np.errstate(all="ignore")` costs about 2 us per call, setting the
context variable about 0.15 us, entering the prepared context about 0.03 us.
"""

from __future__ import annotations

import contextvars
import importlib
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar as _ERRSTATE,
    )
except ImportError:  # pragma: no cover - NumPy moved its private error state
    _ERRSTATE = None

if _ERRSTATE is not None:
    with np.errstate(all="ignore"):
        _IGNORE = _ERRSTATE.get()


# The fast path: a context of our own in which the error state is "ignore", entered with
# `Context.run` (switching the current context costs a few tens of nanoseconds, where setting
# and resetting the variable allocates). A context can be entered by one thread at a time and
# not re-entered, so it serves the thread that imported qdarray and calls not already inside
# it; other threads and nested calls set the variable. Where warning filters are themselves
# context-local (Python 3.14's context_aware_warnings), code run in a foreign context would
# not see the caller's `warnings.catch_warnings`, so there the variable is always set.
_OWNER = threading.get_ident()
_CONTEXT: contextvars.Context | None = None
if _ERRSTATE is not None and not getattr(sys.flags, "context_aware_warnings", False):
    _CONTEXT = contextvars.Context()
    _CONTEXT.run(_ERRSTATE.set, _IGNORE)


_NONE: Any = object()  # an argument not given


def _positional(x1: Any, x2: Any, rest: tuple[Any, ...]) -> tuple[Any, ...]:
    if x1 is _NONE:
        return ()
    if x2 is _NONE:
        return (x1,)
    return (x1, x2, *rest)


def quiet(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` run with NumPy's floating-point error handling set to "ignore"."""
    if _ERRSTATE is None:  # pragma: no cover - the public, slower spelling
        return np.errstate(all="ignore")(func)
    set_state = _ERRSTATE.set
    reset_state = _ERRSTATE.reset
    if _CONTEXT is None:  # pragma: no cover - Python 3.14 with context-aware warnings
        def call(*args: Any, **kwargs: Any) -> Any:
            token = set_state(_IGNORE)
            try:
                return func(*args, **kwargs)
            finally:
                reset_state(token)
    else:
        run = _CONTEXT.run
        get_state = _ERRSTATE.get
        get_ident = threading.get_ident
        owner = _OWNER

        # Positional-only leading parameters: the common calls (one or two arrays, no
        # keywords) are plain calls, without the tuple and dict of `*args, **kwargs`.
        def call(x1: Any = _NONE, x2: Any = _NONE, /, *rest: Any, **kwargs: Any) -> Any:
            if get_ident() == owner and get_state() is not _IGNORE:
                if not rest:
                    if x2 is not _NONE:
                        return run(func, x1, x2, **kwargs) if kwargs else run(func, x1, x2)
                    if x1 is not _NONE:
                        return run(func, x1, **kwargs) if kwargs else run(func, x1)
                return run(func, *_positional(x1, x2, rest), **kwargs)
            token = set_state(_IGNORE)
            try:
                return func(*_positional(x1, x2, rest), **kwargs)
            finally:
                reset_state(token)

    call.__name__ = getattr(func, "__name__", "call")
    call.__qualname__ = call.__name__
    call.__doc__ = getattr(func, "__doc__", None)
    call.__wrapped__ = func  # type: ignore[attr-defined]
    return call


class QuietNamespace:
    """The functions of `module` (and of its submodules `linalg` and `fft`), each wrapped by
    `quiet`; every other attribute (dtypes, constants) as it is.

    `module` may be a module's name: it is imported at the first attribute read
    (array-api-compat's NumPy namespace imports every NumPy submodule, about a tenth of a
    second that a process running only kernels does not need to spend). Until then the
    namespace is an `_UnloadedNamespace`; loading wraps every public attribute at once and
    makes it a plain QuietNamespace, whose class has no `__getattr__`, so lookups are plain
    instance attribute reads (a class-level `__getattr__` slows every lookup down).
    Attributes set on the namespace replace the module's, before or after loading.
    """

    # The submodules of a namespace that belong to the standard (its extensions); NumPy's
    # others (random, ma, testing, ...) are not part of it.
    SUBMODULES = ("linalg", "fft")
    _name: str

    def __new__(cls, module: types.ModuleType | str) -> QuietNamespace:
        return object.__new__(_UnloadedNamespace if isinstance(module, str) else cls)

    def __init__(self, module: types.ModuleType | str) -> None:
        self._name = module if isinstance(module, str) else module.__name__
        if not isinstance(module, str):
            self._load(module)

    def _load(self, module: types.ModuleType) -> None:
        for name in dir(module):
            if name.startswith("_") or name in self.__dict__:
                continue
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):
                if name in self.SUBMODULES:
                    setattr(self, name, QuietNamespace(value))
            elif callable(value) and not isinstance(value, type):
                setattr(self, name, quiet(value))
            else:
                setattr(self, name, value)
        self.__class__ = QuietNamespace

    if TYPE_CHECKING:  # for the type checker only: at run time the attributes are set above
        def __getattr__(self, name: str) -> Any: ...

    def __repr__(self) -> str:
        return f"QuietNamespace({self._name})"


class _UnloadedNamespace(QuietNamespace):
    """A QuietNamespace before its module is imported: the first attribute read loads it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy, pickle and the like probe for these
        self._load(importlib.import_module(self._name))
        return getattr(self, name)
