"""The traced program of a `qd.jit` function: slots, argument templates, steps, replay.

A program is a list of steps over numbered slots. Slot values are the arrays (and other
objects the namespace made, such as a `qd.ad.Tape`) that the function's inputs and its
namespace calls produce; every other value a call received is a constant of the trace.
A `Call` step calls one namespace function (or Array method, or kernel) with its arguments
rebuilt from a template (`Slot` references, constants, and lists, tuples, dicts and
dataclass instances of them)
and binds what it returns; a fused step (fusion.py) computes several elementwise calls in
one generated kernel. Steps are device-neutral: a call runs on whatever device its arrays
are on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._array import Array
from .._errors import JitTraceError


@dataclass(frozen=True, slots=True)
class Slot:
    """A reference to slot `index` in an argument template."""

    index: int


@dataclass(frozen=True, slots=True)
class Seq:
    """A list or tuple (`kind`) of templates; `make` rebuilds named tuples."""

    kind: type
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Mapping:
    """A dict of templates."""

    keys: tuple[Any, ...]
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Struct:
    """A dataclass instance with templates for some of its fields: rebuilt from `obj` with
    those fields replaced (`dataclasses.replace`)."""

    obj: Any
    names: tuple[str, ...]
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Const:
    """A value of the trace passed as it is (a Python scalar, a dtype, an array from outside
    the function, ...)."""

    value: Any


def build(template: Any, env: list[Any]) -> Any:
    """The value `template` stands for, with slots read from `env`."""
    t = type(template)
    if t is Slot:
        return env[template.index]
    if t is Const:
        return template.value
    if t is Seq:
        items = [build(x, env) for x in template.items]
        kind = template.kind
        if kind is list:
            return items
        if kind is tuple:
            return tuple(items)
        return kind(*items)  # a named tuple
    if t is Struct:
        return dataclasses.replace(template.obj, **dict(zip(
            template.names, (build(x, env) for x in template.items), strict=True)))
    return dict(zip(template.keys, (build(x, env) for x in template.items), strict=True))


def slots_in(template: Any) -> list[int]:
    """The slots `template` reads, in order."""
    t = type(template)
    if t is Slot:
        return [template.index]
    if t is Seq or t is Mapping or t is Struct:
        return [s for x in template.items for s in slots_in(x)]
    return []


@dataclass(frozen=True, slots=True)
class Where:
    """Where a step came from in the traced function: file, line and the source line."""

    file: str
    line: int
    func: str
    text: str

    def describe(self) -> str:
        return f'  File "{self.file}", line {self.line}, in {self.func}:\n    {self.text}'


class Call:
    """`out = fn(*args, **kwargs)`, then for a result that is a (nested) list or tuple of
    arrays each array bound to its slot: `items` holds (path of indices, slot). `shapes`:
    the (shape, dtype) of the array result, or of each item, at the trace, checked at every
    replay (a shape that depends on values cannot be replayed)."""

    __slots__ = ("fn", "args", "kwargs", "out", "items", "shapes", "where", "construct",
                 "reads")

    def __init__(self, fn: Callable[..., Any], args: Seq, kwargs: Mapping, out: int | None,
                 items: tuple[tuple[tuple[int, ...], int], ...], shapes: tuple[Any, ...],
                 where: Where, construct: bool = False) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.out = out
        self.items = items
        self.shapes = shapes
        self.where = where
        self.construct = construct  # `fn` is a class: out = fn(*args) (an `__init__` call)
        self.reads = tuple(slots_in(args) + slots_in(kwargs))

    @property
    def name(self) -> str:
        return getattr(self.fn, "__qualname__", getattr(self.fn, "__name__", repr(self.fn)))

    def run(self, env: list[Any]) -> None:
        args = build(self.args, env)
        kwargs = build(self.kwargs, env) if self.kwargs.keys else {}
        result = self.fn(*args, **kwargs)
        if self.out is not None:
            env[self.out] = result
        if self.items:
            values = [_at(result, path) for path, _ in self.items]
            for (_, slot), v in zip(self.items, values, strict=True):
                env[slot] = v
        else:
            values = [result]
        if self.shapes:
            self.check(values)

    def check(self, values: list[Any]) -> None:
        for value, expected in zip(values, self.shapes, strict=True):
            if expected is None or type(value) is not Array:
                continue
            if (value.shape, value._dtype) != expected:
                raise JitTraceError(
                    f"{self.name} gave shape {value.shape} and dtype {value._dtype} in this call "
                    f"of a qd.jit function, but shape {expected[0]} and dtype {expected[1]} "
                    f"when it was traced: its result depends on the values of the arrays, "
                    f"which the compiled program cannot follow.\n{self.where.describe()}\n"
                    "Use a fixed-size formulation (qd.where with a mask instead of x[mask]), or "
                    "call this part outside qd.jit.")


def _at(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


Leaves = list[tuple[tuple[int, ...], Any]]


def array_leaves(result: Any, path: tuple[int, ...] = ()) -> Leaves | None:
    """The (path, array) of every leaf of a (nested) list or tuple of arrays, or None when
    some leaf is not an array."""
    out: Leaves = []
    for i, v in enumerate(result):
        if type(v) is Array:
            out.append(((*path, i), v))
        elif isinstance(v, (list, tuple)) and v:
            inner = array_leaves(v, (*path, i))
            if inner is None:
                return None
            out += inner
        else:
            return None
    return out


def shape_of(v: Any) -> Any:
    """The (shape, dtype) of an array (None for other values)."""
    return (v.shape, v._dtype) if type(v) is Array else None
