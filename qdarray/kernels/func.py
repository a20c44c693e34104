"""`@qd.func`: a helper that kernels call, inlined at each call site, and what it shares with
`@qd.kernel` (kernel.py): the wrapped Python function, its parsed source and annotations."""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any, cast

from .._dtypes import DType
from .._errors import KernelSyntaxError, KernelTypeError
from .options import check_float
from .pickling import reduce_function
from .source import FunctionSource, parse_function


def _annotations(fn: Any) -> dict[str, Any]:
    try:
        return inspect.get_annotations(fn, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - any failure of user annotation code
        raise KernelTypeError(
            f"The annotations of '{fn.__qualname__}' could not be evaluated: "
            f"{type(exc).__name__}: {exc}. Use qd.Array[dtype, ndim], qd.BufferView[dtype], "
            "dtypes such as qd.float32, or no annotation."
        ) from None


def _check_parameters(fn: Any, what: str) -> inspect.Signature:
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise KernelSyntaxError(
                f"{what} '{fn.__qualname__}' has *{p.name}; kernels and funcs take a fixed "
                "list of parameters. Use explicit parameters or a frozen dataclass."
            )
    return sig


def unknown_keyword(sig: inspect.Signature, kwargs: Any) -> str | None:
    """What is wrong, as sentences to follow "f() ", when a call passes a keyword that `sig`
    has no parameter for (Python's `bind` reports a missing parameter first, naming another
    one), else None."""
    names = list(sig.parameters)
    for key in kwargs:
        if key not in sig.parameters:
            close = difflib.get_close_matches(key, names, 1)
            guess = f" Did you mean '{close[0]}'?" if close else ""
            return (f"got an unexpected keyword argument '{key}'; its parameters are "
                    f"{', '.join(names)}.{guess}")
    return None


class Function:
    """A Python function compiled by qdarray: a kernel or a func. Its source is parsed and
    its annotations evaluated once, on first use."""

    __name__: str  # set by functools.update_wrapper

    def __init__(self, fn: Any, what: str, default_float: Any = None) -> None:
        functools.update_wrapper(cast(Any, self), fn)
        self.fn = fn
        # the type Python floats take in its body (options.py); None: the caller's or the
        # package-wide one
        self.default_float: DType | None = (
            None if default_float is None else check_float(default_float, f"@qd.{what}"))
        self._signature = _check_parameters(fn, what)
        self._src: FunctionSource | None = None
        self._annotations: dict[str, Any] | None = None
        self._pickle_payload: bytes | None = None  # pickled by value (pickling.py)

    def source(self) -> FunctionSource:
        if self._src is None:
            self._src = parse_function(self.fn)
        return self._src

    def annotations(self) -> dict[str, Any]:
        if self._annotations is None:
            self._annotations = _annotations(self.fn)
        return self._annotations

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by module and name, or by source (pickling.py); never compiled code."""
        return reduce_function(self)


class Func(Function):
    """A `@qd.func`: inlined into the kernels (and funcs) that call it."""

    def __init__(self, fn: Any, default_float: Any = None) -> None:
        super().__init__(fn, "func", default_float)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise KernelSyntaxError(
            f"func '{self.__name__}' can only be called from a @qd.kernel or another @qd.func. "
            "Use a @qd.kernel to run code over arrays."
        )

    def __repr__(self) -> str:
        return f"<qd.func {self.fn.__qualname__}>"


def func(fn: Any = None, *, default_float: Any = None) -> Any:
    """Mark a helper that kernels call; it is inlined at each call site.

    Args:
        fn: the helper; it may take scalars and arrays and return a value.
        default_float: the type Python floats take in the helper (qd.float32 or
            qd.float64); left out, that of the kernel or func calling it.

    Returns:
        A `Func` (`@qd.func(default_float=...)` returns the decorator that makes one).

    Example::

        @qd.func
        def clamp01(v):
            return qd.math.clip(v, 0.0, 1.0)
    """
    if fn is None:
        return lambda f: Func(f, default_float)
    return Func(fn, default_float)
