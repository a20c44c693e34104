"""Name bindings with definite assignment, and the per-function compile context.

A name is available only where Python would have assigned it on every path: a name assigned
in one branch of an `if` only, or first assigned inside a loop body, is dropped afterwards,
and using it is a compile error (instead of a value that may be garbage at run time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from ..ir import Frame, Var
from ..source import FunctionSource
from .values import VarRef

MISSING = object()


class Scope:
    """The names bound at one point of a function, and why dropped names are gone."""

    __slots__ = ("names", "dropped", "terminated")

    def __init__(self, names: dict[str, Any] | None = None,
                 dropped: dict[str, str] | None = None) -> None:
        self.names: dict[str, Any] = dict(names or {})
        self.dropped: dict[str, str] = dict(dropped or {})
        self.terminated = False  # control cannot reach past this point (break, return, ...)

    def copy(self) -> Scope:
        return Scope(self.names, self.dropped)

    def bind(self, name: str, value: Any) -> None:
        self.names[name] = value
        self.dropped.pop(name, None)

    def drop(self, name: str, reason: str) -> None:
        self.names.pop(name, None)
        self.dropped[name] = reason


def merge(a: Scope, b: Scope, line: int) -> Scope:
    """The scope after two paths join (the branches of an `if`)."""
    if a.terminated and not b.terminated:
        return b
    if b.terminated and not a.terminated:
        return a
    out = Scope(dropped={**a.dropped, **b.dropped})
    for name, value in a.names.items():
        if b.names.get(name, MISSING) is value:
            out.names[name] = value
            out.dropped.pop(name, None)
        else:
            out.dropped[name] = f"it is assigned on only some paths through the if at line {line}"
    for name in b.names:
        if name not in out.names:
            out.dropped[name] = f"it is assigned on only some paths through the if at line {line}"
    out.terminated = a.terminated and b.terminated
    return out


def after_loop(before: Scope, body: Scope, line: int, loop_vars: tuple[str, ...]) -> Scope:
    """The scope after a loop: what was bound before it, minus names first bound in the body."""
    out = before.copy()
    for name, value in body.names.items():
        if before.names.get(name, MISSING) is not value and name not in loop_vars:
            out.drop(name, f"it is first assigned inside the loop at line {line}, which may "
                           "run zero times")
    for name in loop_vars:
        out.drop(name, f"it is the variable of the loop at line {line}; its value after the "
                       "loop is not kept")
    return out


@dataclass
class Loop:
    """A loop being built: "parallel", "serial", "static" or "ndrange" (nested serial)."""

    kind: str
    line: int
    names: tuple[str, ...]


@dataclass
class ReturnState:
    """How a func with non-tail returns reports them: a result local and a `returned` flag."""

    flag: Var
    result: VarRef | None = None
    has_value: bool | None = None


@dataclass
class FuncCtx:
    """The function (kernel or inlined func) currently being built."""

    src: FunctionSource
    scope: Scope
    stack: tuple[Frame, ...]
    is_kernel: bool
    params: frozenset[str] = frozenset()
    vars: dict[str, VarRef] = field(default_factory=dict)
    loops: list[Loop] = field(default_factory=list)
    ret: ReturnState | None = None
    default_float: DType = _dtypes.float64  # the type of Python floats here (options.py)

    @property
    def name(self) -> str:
        return self.src.name

    def is_mutable(self, name: str, vector: bool = False) -> bool:
        """Assigned more than once (a parameter counts its binding at entry): a local Var.
        For a `vector`, an assignment of a component (`v[k] = s`) counts too."""
        count = self.src.assign_counts[name] + (name in self.params)
        if vector:
            count += self.src.component_counts[name]
        return name in self.vars or count > 1
