"""The namespace's half of reverse mode: recording operations on a `qd.ad.Tape`.

Inside a `qd.ad.Tape` every namespace operation whose inputs include an array that gradients
flow to is recorded with its vector-Jacobian product (VJP). Each operation's rule sits next to
its namespace function, registered here with `defvjp` (one table, `VJPS`, as `defop` is for
kernel ops); the tape (qdarray/ad/tape/tape.py) keeps the records and runs them last first. Outside
a tape a namespace function pays one check, whether `TAPES` is empty.

Gradients flow to two kinds of arrays ("tracked" arrays):

- arrays with a `.grad` companion (`requires_grad=True`, views of them, the outputs of kernels
  the tape gave one): their cotangents accumulate into the companion, in place, as kernels'
  reverses do. Views share their base's companion, so writes through any of them are exact;
- arrays a tape computed, which carry a `Node` (`x._node`): their cotangent lives on the node
  during the reverse and is dropped once consumed. A node gets a companion ("materialized")
  only when something needs one: a kernel launch or a view of the array.

A rule is one function per differentiable input, named by the input, taking the output's
cotangent `g` and, by parameter name, the values it needs: inputs by name, `out`, the
operation's parameters, and `shape` / `dtype` of the input it differentiates. The tape keeps
exactly what the rules of the inputs that need gradients ask for, so `x * w` with only `x`
tracked keeps `w` alone, and `x + w` keeps nothing. Rules compute with the namespace itself,
so they run on the arrays' device.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ._array import Array
from ._errors import AutodiffError

# Tapes recording in some thread, innermost last: kernel launches and namespace operations.
TAPES: list[Any] = []

_get_ident = threading.get_ident


class Node:
    """One recorded operation, and the array it computed (`x._node`).

    The record: the VJP `rule`, where each input's cotangent goes (`targets`: a gradient
    companion, a Node, or None for inputs without gradients), the values the rules asked for
    (`values`, as `plan` lists them: `Rule.plan`), the write generation of each kept array
    (`gens`, beside `values`: None for a value that is not an array, a tuple for a key holding
    index arrays), its position on the tape (`index`), and `out`: for
    a write into an array with a companion, that companion (its cotangent is read and
    replaced); None otherwise.

    The array it computed: its cotangent during the reverse (`cot`, or `companion` once one
    was made), its `shape` and `dtype`, and `gen`, the write generation of its memory when
    the node took over; a later write through another array of the same memory makes the node
    stale, and using it raises.
    """

    __slots__ = ("tape", "rule", "plan", "targets", "values", "gens", "index", "out", "cot",
                 "companion", "gen", "shape", "dtype", "alias", "up")

    def __init__(self, tape: Any, rule: Rule, plan: tuple[tuple[str, int, int], ...],
                 targets: Sequence[Any], values: Sequence[Any], gens: Sequence[Any], index: int,
                 out: Array | None, gen: int, shape: tuple[int, ...], dtype: Any) -> None:
        self.tape = tape
        self.rule = rule
        self.plan = plan
        self.targets = targets
        self.values = values
        self.gens = gens
        self.index = index
        self.out = out
        self.cot: Array | None = None
        self.companion: Array | None = None
        self.gen = gen
        self.shape = shape
        self.dtype = dtype
        # The result shares its input's memory (a broadcast, qd.real of a complex array, a
        # diagonal): it cannot have a companion of its own, nor be written through.
        self.alias = False
        # The node of the same array on an enclosing tape that records it too (nested tapes:
        # a gradient that is differentiated again), or None.
        self.up: Node | None = None

    @property
    def op(self) -> str:
        return self.rule.name

    def describe(self) -> str:
        return f"{self.rule.name} (operation {self.index} on the tape)"


class Scatter:
    """A rule's result that adds `values` into region `key` of the input's cotangent (with
    repeated indices accumulating), instead of a whole cotangent."""

    __slots__ = ("key", "values")

    def __init__(self, key: Any, values: Array) -> None:
        self.key = key
        self.values = values


class Rule:
    """The VJP of one namespace operation: a function per differentiable input, and the names
    of the values each needs."""

    __slots__ = ("name", "inputs", "fns", "needs", "sources", "zero", "variadic", "aliasing",
                 "plans")

    def __init__(self, name: str, fns: dict[str, Callable[..., Any]]) -> None:
        self.name = name
        self.inputs = tuple(fns)
        self.fns = tuple(fns.values())
        self.needs = tuple(tuple(list(inspect.signature(f).parameters)[1:]) for f in self.fns)
        self.zero = not fns
        # `each=`: one rule for any number of inputs (concat, stack), told its `index`.
        self.variadic = self.inputs == ("each",)
        # Where each needed value comes from, worked out once: (name, kind, position), kind
        # 0 an input, 1 the result, 2 a parameter, 3 what the tape supplies at the reverse.
        self.sources = tuple(tuple(self._source(n) for n in needs) for needs in self.needs)
        # Whether the result may view its input's memory (see Node.alias).
        self.aliasing = name in ALIASING
        self.plans: dict[int, tuple[tuple[str, int, int], ...]] = {}

    def plan(self, tracked: int) -> tuple[tuple[str, int, int], ...]:
        """The values to keep when the inputs whose bits are set in `tracked` need gradients:
        (name, kind, position) of each, in the order the reverse hands them to the rules."""
        plan = self.plans.get(tracked)
        if plan is None:
            plan = tuple(src for i in range(tracked.bit_length()) if tracked >> i & 1
                         for src in self.sources[0 if self.variadic else i] if src[1] != 3)
            self.plans[tracked] = plan
        return plan

    def _source(self, need: str) -> tuple[str, int, int]:
        if need in ("shape", "dtype", "index"):
            return need, 3, 0
        if need == "out":
            return need, 1, 0
        if need in self.inputs and not self.variadic:
            return need, 0, self.inputs.index(need)
        return need, 2, 0


VJPS: dict[str, Rule] = {}

# Operations whose result may share its input's memory without being a view that shares the
# input's gradient companion (a read-only broadcast or diagonal, the parts of a complex array,
# an import of the same memory).
ALIASING = frozenset({"broadcast_to", "real", "imag", "linalg.diagonal", "asarray", "view"})


def defvjp(name: str, **rules: Callable[..., Any]) -> None:
    """Register the vector-Jacobian product of namespace operation `name`.

    Args:
        name: the operation as its namespace function is named (`"sin"`, `"linalg.solve"`).
        **rules: one function per differentiable input, by the input's name, in the order the
            function records them: `rule(g, <needs>...)` returns the input's cotangent (an
            Array, reduced over broadcast axes and cast to the input's dtype by the tape),
            a `Scatter`, or None when no gradient reaches it. A single rule named `each`
            serves every input of an operation taking a sequence of arrays, and is told the
            input's position as `index`. No rules at all declares an
            operation whose derivative is zero everywhere (`floor`, `sign`): its result is
            a constant and nothing is recorded.

    Example::

        defvjp("multiply", x1=lambda g, x2: g * x2, x2=lambda g, x1: g * x1)
    """
    if name in VJPS:
        raise ValueError(f"The VJP of {name} is registered twice.")
    VJPS[name] = Rule(name, rules)


def current() -> Any:
    """The innermost tape recording in this thread, or None."""
    me = _get_ident()
    for tape in reversed(TAPES):
        if tape.thread == me:
            return tape
    return None


def record(name: str, out: Any, ins: tuple[Any, ...], params: dict[str, Any] | None = None
           ) -> Any:
    """Record `out = name(*ins, **params)` on this thread's tape when an input is tracked
    (call only when `TAPES` is not empty); returns `out`."""
    tape = TAPES[-1]
    if len(TAPES) > 1:
        # Every tape recording in this thread records it, outermost first: an enclosing tape
        # differentiates what an inner one computes, its reverse included (gradients of
        # gradients). An array's node is the innermost one, linked to the outer ones (`up`).
        me = _get_ident()
        for t in TAPES:
            if t.thread == me and t.recording:
                t.op(name, out, ins, params)
        return out
    if tape.thread != _get_ident():
        return out
    return tape.op(name, out, ins, params)


def write(name: str, x: Array, key: Any, value: Any, old: Any) -> None:
    """Record the in-place write `x[key] = value` (`old`: from `before_write`) on this
    thread's tape (call only when `TAPES` is not empty)."""
    tape = current()
    if tape is not None:
        if len(TAPES) > 1:
            tape.nested(name, (value,))
        tape.write(name, x, key, value, old)


def before_write(x: Array, name: str, key: Any = Ellipsis) -> Any:
    """Where `x`'s cotangent goes on this thread's tape before the write `name` (its
    companion or node; None when untracked), checking that the tape's record of it still
    holds (call only when `TAPES` is not empty)."""
    tape = current()
    if tape is None:
        return None
    if len(TAPES) > 1:
        tape.nested(name, (x,))
    return tape.before_write(x, name, key)


def inplace(name: str, x1: Array, x2: Any, category: str | None) -> Array | None:
    """`x1 op= x2` on this thread's tape when an operand is tracked (None otherwise: the caller
    writes in place as usual). Call only when `TAPES` is not empty."""
    tape = current()
    if tape is None:
        return None
    return tape.inplace(name, x1, x2, category)  # type: ignore[no-any-return]


def companion(x: Array) -> Array | None:
    """`x`'s gradient companion, made now (zeros) when `x` is an array this thread's tape
    computed and something (a view, a kernel) needs one; None for untracked arrays."""
    if x._grad is not None:
        return x._grad
    node = x._node
    if node is None or not TAPES:
        return None
    tape = current()
    if tape is None or not tape.recording:
        return None
    if node.tape is not tape:
        return None
    if len(TAPES) > 1:
        tape.nested("a view", (x,))  # an enclosing tape could not see the companion's writes
    tape._target(x, "a view")  # raises when the tape's record of x no longer holds
    made: Array = tape.materialize(x)
    return made


def alias_view(x: Array, out: Array, fn: Callable[[Any], Any]) -> Array:
    """`out`, the view `fn(<x's native array>)` of `x`, a result that shares its input's
    memory (a broadcast, qd.real of a complex array, a diagonal): it cannot share a gradient
    companion, so the view is recorded instead, as another such result (call only when
    `x._node` is an alias node)."""
    return record("view", out, (x,), {"fn": fn})  # type: ignore[no-any-return]


def views_recorded(x: Array) -> bool:
    """Whether a view of `x` (an array a tape computed, `x._node` set) is recorded as an
    operation (`alias_view`) rather than given a gradient companion: for results that share
    their input's memory, and while tapes are nested (a companion is written in place by the
    reverse, which an enclosing tape could not differentiate)."""
    return bool(x._node.alias or len(TAPES) > 1)


def no_vjp(name: str, *arrays: Any) -> None:
    """Raise the AutodiffError of an operation without a VJP when one of `arrays` is tracked
    by this thread's tape (call only when `TAPES` is not empty)."""
    tape = current()
    if tape is None or not tape.recording:
        return
    for x in arrays:
        if tape.tracked(x):
            raise AutodiffError(
                f"{name} has no gradient rule, and an input of it needs gradients inside "
                "this qd.ad.Tape, so the gradient would silently miss it. Use "
                "qd.ad.stop_gradient(x) on its input if no gradient should flow through it, "
                "or compute it outside the tape.")


def noted(name: str, arrays: Sequence[Array]) -> None:
    """`name` (a function outside the namespace) wrote `arrays`: this thread's tape names it
    when a reverse finds one of them changed (call only when `TAPES` is not empty)."""
    tape = current()
    if tape is not None and tape.recording:
        for x in arrays:
            tape.writers[x._buffer] = name


def refuse_foreign(name: str, *arrays: Any) -> None:
    """For functions that run outside the namespace (a NumPy function qdarray does not map):
    raise when one of `arrays` (or of the sequences among them) needs gradients inside this
    thread's tape, naming the function (call only when `TAPES` is not empty)."""
    flat: list[Any] = []
    for a in arrays:
        if isinstance(a, (list, tuple)):
            flat.extend(a)
        else:
            flat.append(a)
    tape = current()
    if tape is None or not tape.recording:
        return
    for x in flat:
        if tape.tracked(x):
            raise AutodiffError(
                f"{name} is not a qdarray operation, so a qd.ad.Tape cannot record it, and an "
                "argument needs gradients inside the tape. Use the qdarray function instead, "
                "qd.ad.stop_gradient(x) if no gradient should flow, or compute it outside "
                "the tape.")


def refuse_export(how: str, x: Array) -> None:
    """The one rule for host exports of values (`float(x)`, `x.item()`, `x.tolist()`,
    `np.asarray(x)`, ...): raise when `x` needs gradients inside this thread's recording tape,
    since Python or NumPy code on the exported values is invisible to the tape and the gradient
    through them would be cut silently. `how` spells the export as the user wrote it.

    Exports that carry no derivative are left alone: `bool(x)`, `int(x)` and `operator.index`
    (step functions of the value, whose derivative is 0 wherever it exists, like `qd.trunc`'s),
    and text (`repr`, `str`, `format`), so values print and branch as usual."""
    if not TAPES:
        return
    tape = current()
    if tape is None or not tape.recording or not tape.tracked(x):
        return
    raise AutodiffError(
        f"{how} copies the values of an array that needs gradients inside this qd.ad.Tape to "
        "the host, where the tape cannot follow them, so the gradient through them would be "
        "cut silently. Use qdarray operations on the array to keep the gradient, "
        "qd.ad.stop_gradient(x) to read the values as a constant (to log them, say), or read "
        "them after the tape.")
