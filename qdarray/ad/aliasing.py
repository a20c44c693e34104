"""Arguments of a reverse that view the memory of an argument with a gradient but carry none.

A view of an array with a gradient carries the same view of its gradient (`Array._view`), so
`kernel.grad(w, w[::2])` accumulates both parameters' derivatives into `w.grad`. A second,
separate wrapper of the same memory (`qd.asarray(memory)` beside
`qd.asarray(memory, requires_grad=True)`) has no gradient: the reverse would drop every
derivative through it, so `w.grad` would be wrong, silently. `check_wrappers` refuses that
with an `AutodiffError` before the reverse runs (`kernel.grad` and `qd.ad.Tape` alike).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._array import Array
from .._errors import AutodiffError
from ..buffer_view import BufferView


def _arrays(names: Sequence[str], args: Sequence[Any]) -> list[tuple[str, Any, bool]]:
    """(name, Array viewed, has a gradient) of every Array or BufferView argument,
    dataclass fields included."""
    out: list[tuple[str, Any, bool]] = []
    for name, a in zip(names, args, strict=False):
        t = type(a)
        if t is Array:
            out.append((name, a, a._grad is not None))
        elif t is BufferView:
            out.append((name, a._base, a._grad_base is not None))
        elif dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = dataclasses.fields(a)
            out += _arrays([f"{name}.{f.name}" for f in fields],
                           [getattr(a, f.name) for f in fields])
    return out


def _overlap(a: Array, b: Array) -> bool:
    if type(a._data) is np.ndarray and type(b._data) is np.ndarray:
        return bool(np.shares_memory(a._data, b._data))
    return True  # one memory token on a device: one allocation


def check_wrappers(kernel: Any, args: Sequence[Any], leaves: Any = None) -> None:
    """Raise AutodiffError where a float argument without a gradient shares memory with an
    argument that has one (module docstring). `leaves`: the launch's (name, array) pairs
    when the caller has them (`kernels.args.array_leaves`)."""
    if leaves is None:
        arrays = _arrays(kernel.param_names, args)
    else:
        arrays = [(n, a._base, a._grad_base is not None) if type(a) is BufferView else
                  (n, a, a._grad is not None) for n, a in leaves if type(a) is not np.ndarray]
    with_grad = [(n, a) for n, a, g in arrays if g and a._shared is not None]
    if not with_grad:
        return
    for name, a, g in arrays:
        if g or a._shared is None or a._dtype.kind not in "fc":
            continue
        for other, b in with_grad:
            if a._shared is b._shared and _overlap(a, b):
                _refuse(kernel, name, other)


def _refuse(kernel: Any, name: str, other: str) -> None:
    raise AutodiffError(
        f"The reverse of kernel '{kernel.__name__}': argument '{name}' views the memory of "
        f"argument '{other}', which has a gradient, but has no gradient itself (a separate "
        f"wrapper of the same memory): the reverse would leave out every derivative through "
        f"'{name}'. Pass '{other}' itself, or a view of it (views carry its gradient), for "
        f"'{name}'.")


def wrapper_pairs(leaves: Sequence[tuple[str, Any]], mask: Sequence[bool]
                  ) -> tuple[list[int], list[int]] | None:
    """The positions among a launch's `leaves` (`mask`: which have a gradient) that
    `check_wrappers` compares: (float or complex Arrays and BufferViews without a gradient,
    those with one); None when there is no such pair. Fixed by the signature and the mask,
    so a caller that keys its reverse launchers by both asks once and checks with
    `check_pairs`."""
    without, having = [], []
    for k, ((_, a), has) in enumerate(zip(leaves, mask, strict=True)):
        t = type(a)
        if t is np.ndarray:
            continue
        if has:
            having.append(k)
        elif (a._base if t is BufferView else a)._dtype.kind in "fc":
            without.append(k)
    return (without, having) if without and having else None


def check_pairs(kernel: Any, leaves: Sequence[tuple[str, Any]],
                pairs: tuple[list[int], list[int]]) -> None:
    """`check_wrappers` over the positions `wrapper_pairs` found."""
    without, having = pairs
    for i in without:
        name, a = leaves[i]
        if type(a) is BufferView:
            a = a._base
        shared = a._shared
        if shared is None:
            continue
        for j in having:
            other, b = leaves[j]
            if type(b) is BufferView:
                b = b._base
            if b._shared is shared and _overlap(a, b):
                _refuse(kernel, name, other)
