"""The signature of a call of a `qd.jit` function: what a compiled program is specialised to.

Arguments are flattened as a pytree: lists, tuples, named tuples and dicts are structure;
arrays (and BufferViews) are the leaves the program takes as inputs, keyed by shape, dtype
and device (and by which leaves are one object); every other value is static, keyed by its
type and value, so it must be hashable. Arguments named by `static_argnums` /
`static_argnames` are static whatever they are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .._array import Array
from ..buffer_view import BufferView


def _hashable(value: Any, what: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"qd.jit: {what} is static, so it must be hashable (its value is part of the "
            f"compiled program's signature); got {type(value).__name__} {value!r:.80}. Use a "
            "tuple instead of a list, or pass arrays as non-static arguments.") from None
    return (type(value), value)


def flatten(x: Any, leaves: list[Any], what: str) -> Any:
    """The structure of `x` (hashable), appending its array leaves to `leaves`."""
    t = type(x)
    if t is Array:
        leaves.append(x)
        # NumPy dtypes hash in C; devices are interned (one object per device, never freed)
        d = x._data
        return ("A", d.shape, d.dtype, id(x._device))
    if t is BufferView:
        leaves.append(x)
        return ("V", x._offset, x._size, x._base._data.shape, x._base._dtype, x._base._device)
    if t is list or t is tuple or (isinstance(x, tuple) and hasattr(x, "_fields")):
        return (t, tuple(flatten(v, leaves, f"{what}[{i}]") for i, v in enumerate(x)))
    if t is dict:
        return (dict, tuple(x), tuple(flatten(v, leaves, f"{what}[{k!r}]")
                                      for k, v in x.items()))
    return _hashable(x, what)


def aliasing(leaves: Sequence[Any]) -> tuple[int, ...] | None:
    """For each leaf, the index of the first leaf that is the same object (None when the
    leaves are distinct objects)."""
    if len({id(v) for v in leaves}) == len(leaves):
        return None
    first: dict[int, int] = {}
    return tuple(first.setdefault(id(v), i) for i, v in enumerate(leaves))


class Binder:
    """Splits a call's arguments into static values and the dynamic pytree."""

    def __init__(self, fn: Callable[..., Any], static_argnums: Sequence[int],
                 static_argnames: Sequence[str]) -> None:
        try:
            sig: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        self.sig = sig
        nums = set(static_argnums)
        names = set(static_argnames)
        if sig is not None:
            params = list(sig.parameters)
            for i in list(nums):
                if 0 <= i < len(params):
                    names.add(params[i])
            for name in list(names):
                if name in params:
                    nums.add(params.index(name))
        self.nums = frozenset(nums)
        self.names = frozenset(names)
        self.simple = not self.nums and not self.names

    def key(self, args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> tuple[Any, list[Any]]:
        """(signature key, array leaves) of a call."""
        leaves: list[Any] = []
        if self.simple and not kwargs:
            parts = []
            for i, a in enumerate(args):
                if type(a) is Array:  # the common case inline, as flatten keys it
                    leaves.append(a)
                    d = a._data
                    parts.append(("A", d.shape, d.dtype, id(a._device)))
                else:
                    parts.append(flatten(a, leaves, f"argument {i}"))
            return (tuple(parts), aliasing(leaves)), leaves
        if self.sig is not None:
            try:
                bound = self.sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"qd.jit: {e}") from None
            args, kwargs = bound.args, bound.kwargs
        dyn = []
        for i, a in enumerate(args):
            what = f"argument {i}"
            if self.sig is not None and i < len(self.sig.parameters):
                what = f"argument '{list(self.sig.parameters)[i]}' (position {i})"
            if i in self.nums:
                dyn.append(("static", _hashable(a, what)))
            else:
                dyn.append(flatten(a, leaves, what))
        kw = []
        for name in sorted(kwargs):
            what = f"argument '{name}'"
            if name in self.names:
                kw.append((name, ("static", _hashable(kwargs[name], what))))
            else:
                kw.append((name, flatten(kwargs[name], leaves, what)))
        return (tuple(dyn), tuple(kw), aliasing(leaves)), leaves
