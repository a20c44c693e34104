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

The wrapper sets NumPy's error-state context variable directly: `np.errstate(all="ignore")`
costs about 2 us per call, the context variable about 0.3 us.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

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


def quiet(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` run with NumPy's floating-point error handling set to "ignore"."""
    if _ERRSTATE is None:  # pragma: no cover - the public, slower spelling
        return np.errstate(all="ignore")(func)
    set_state = _ERRSTATE.set
    reset_state = _ERRSTATE.reset

    def call(*args: Any, **kwargs: Any) -> Any:
        token = set_state(_IGNORE)
        try:
            return func(*args, **kwargs)
        finally:
            reset_state(token)

    call.__name__ = getattr(func, "__name__", "call")
    call.__qualname__ = call.__name__
    call.__doc__ = getattr(func, "__doc__", None)
    call.__wrapped__ = func  # type: ignore[attr-defined]
    return call


class QuietNamespace:
    """The functions of `module` (and of its submodules, such as `linalg` and `fft`), each
    wrapped by `quiet`; every other attribute (dtypes, constants) as it is.

    Wrappers are made on first access and cached as instance attributes, so later lookups
    are plain attribute reads. `module` may be a module's name: it is imported at the first
    access (array-api-compat's NumPy namespace imports every NumPy submodule, about a tenth
    of a second that a process running only kernels does not need to spend).
    """

    def __init__(self, module: types.ModuleType | str) -> None:
        self._name = module if isinstance(module, str) else module.__name__
        self._loaded = None if isinstance(module, str) else module

    @property
    def _module(self) -> types.ModuleType:
        if self._loaded is None:
            self._loaded = importlib.import_module(self._name)
        return self._loaded

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy, pickle and the like probe for these
        value = getattr(self._module, name)
        wrapped: Any
        if isinstance(value, types.ModuleType):
            wrapped = QuietNamespace(value)
        elif callable(value) and not isinstance(value, type):
            wrapped = quiet(value)
        else:
            wrapped = value
        setattr(self, name, wrapped)
        return wrapped

    def __repr__(self) -> str:
        return f"QuietNamespace({self._name})"
