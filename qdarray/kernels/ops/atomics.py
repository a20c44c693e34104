"""Atomic read-modify-write of one global element; each returns the element's old value.

ATOMIC_ADD(mem, *indices, value) adds (integers wrap around). ATOMIC_MIN / ATOMIC_MAX store
`value` when it compares less / greater than the element, so a NaN value never replaces the
element and a NaN element is never replaced. Threads see each update exactly once, in some
order; `+=` and `-=` on a global element inside the parallel loop lower to ATOMIC_ADD.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import types as T
from ..ir import Op
from .memory import _check_indices, element
from .table import defop


def _atomic_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    _check_indices(types[0], types[1:-1], "ATOMIC")
    dtype = types[0].dtype
    if not T.is_numeric(dtype) or types[-1] is not dtype:
        raise TypeError(f"atomic update of {T.type_str(types[0])} with "
                        f"{T.type_str(types[-1])}")
    return dtype


def _atomic(update: Any) -> Any:
    def impl(rt: Any, attrs: Any, mem: Any, *rest: Any) -> Any:
        arr, where = element(mem, rest[:-1])
        old = arr[where]
        new = update(old, rest[-1])
        if new is not None:
            arr[where] = new
        return old

    return impl


def _add(old: Any, v: Any) -> Any:
    return np.add(old, v)


def _min(old: Any, v: Any) -> Any:
    return v if v < old else None


def _max(old: Any, v: Any) -> Any:
    return v if v > old else None


def _add_adj(b: Any, instr: Any, g: Any) -> None:
    last = len(instr.args) - 1
    b.accum(last, b.grad_at(b.indices(1, last)))


def _extremum_adj(b: Any, instr: Any, g: Any) -> None:
    """The element's gradient moves to a value equal to the element's final value (to one of
    them, where several threads tie), and the element's value from before keeps it only where
    no value equals the final one. The reverse runs this also for a value without a gradient
    (a constant that replaced the element takes the gradient, which then goes nowhere)."""
    last = len(instr.args) - 1
    idx = b.indices(1, last)
    won = b.op(Op.EQ, b.x(last), b.load(idx))
    b.accum(last, b.take_grad(idx, won))


defop(Op.ATOMIC_ADD, "atomics", None, _atomic_rule, _atomic(_add), pure=False, adjoint=_add_adj,
      doc="old = mem[i]; mem[i] = old + value")
defop(Op.ATOMIC_MIN, "atomics", None, _atomic_rule, _atomic(_min), pure=False,
      adjoint=_extremum_adj,
      doc="old = mem[i]; mem[i] = value if value < old")
defop(Op.ATOMIC_MAX, "atomics", None, _atomic_rule, _atomic(_max), pure=False,
      adjoint=_extremum_adj,
      doc="old = mem[i]; mem[i] = value if value > old")
