"""`qd.jit`: whole functions of namespace calls and kernel launches, traced once per signature,
fused and replayed without running their Python.

Modules, one purpose each: `signature.py` (what a compiled program is specialised to),
`lookup.py` and `trace.py` (recording a run of the function), `program.py` (the program's
steps and their replay), `elementwise.py`, `fusion.py`, `fused_kernel.py` and `launch.py`
(chains of elementwise calls as one generated kernel: which calls, the plan, the kernel's
IR, running it), `function.py` (the per-signature cache). docs/jit.md describes what
traces, what fuses and what is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._errors import (
    DonatedArrayError,
    JitTraceError,
    TracerBoolConversionError,
    TracerConversionError,
)
from .function import JitFunction


def _ints(value: int | Sequence[int], what: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    out = tuple(value)
    if not all(isinstance(v, int) for v in out):
        raise TypeError(f"qd.jit: {what} takes an int or a sequence of ints; got {value!r}.")
    return out


class Jit:
    """`qd.jit` (see `__call__`); the errors it raises are attributes too
    (`qd.jit.TracerBoolConversionError`, ...)."""

    JitTraceError = JitTraceError
    TracerConversionError = TracerConversionError
    TracerBoolConversionError = TracerBoolConversionError
    DonatedArrayError = DonatedArrayError
    JitFunction = JitFunction

    def __call__(self, f: Callable[..., Any] | None = None, *,
                 static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (),
                 donate_argnums: int | Sequence[int] = ()) -> Any:
        """Compile `f` per signature: trace its namespace calls once, fuse and replay them.

        The first call with a new signature (the shapes, dtypes and devices of the array
        arguments, the structure of lists, tuples and dicts among the arguments, and the
        values of the static ones) runs `f` while recording every namespace call it makes;
        later calls with that signature run the recorded program, with chains of elementwise
        operations fused into one generated kernel on the CPU, without running `f`'s Python.

        Args:
            f: the function; left out, `qd.jit(...)` returns a decorator.
            static_argnums: positions of arguments whose values are part of the signature
                (they must be hashable); other non-array arguments are static too.
            static_argnames: the same, by name.
            donate_argnums: positions of array arguments the caller gives up: their memory
                may hold a result, and using them after the call raises DonatedArrayError.

        Returns:
            a callable `JitFunction` (its `traces` counts the traces so far).

        Raises:
            TracerBoolConversionError: `if x > 0:` and other Python control flow on a traced
                array (a TypeError). TracerConversionError: `float(x)`, `x.item()` and other
                conversions to Python values. JitTraceError: a call that cannot be replayed.

        Example::

            @qd.jit
            def step(x, v):
                return qd.tanh(x * 0.5 + v) * 2.0 - 1.0
        """
        nums = _ints(static_argnums, "static_argnums")
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(
            static_argnames)
        donate = _ints(donate_argnums, "donate_argnums")

        def wrap(fn: Callable[..., Any]) -> JitFunction:
            if not callable(fn):
                raise TypeError(f"qd.jit expects a function; got {type(fn).__name__}.")
            return JitFunction(fn, nums, names, donate)

        if f is None:
            return wrap
        return wrap(f)


jit = Jit()

__all__ = ["jit", "JitFunction", "JitTraceError", "TracerConversionError",
           "TracerBoolConversionError", "DonatedArrayError"]
