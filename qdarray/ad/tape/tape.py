"""`qd.ad.Tape`: record a block's kernel launches and namespace operations, then run their
reverses.

Inside `with qd.ad.Tape() as tape:` every kernel launch runs as usual and is recorded, and so
is every namespace operation on arrays that gradients flow to (with its VJP rule; see
qdarray/_autodiff.py). `tape.backward(loss)` seeds the loss's cotangent with 1 and runs the
reverse of each record, last first: a kernel launch's reverse kernel, which accumulates into
the `.grad` companions of its arguments, or an operation's VJP rules, which accumulate into
its inputs' cotangents. `Tape(loss=y)` runs the reverse when the block ends.

What the reverse needs must still hold when it runs. The tape knows the region of each
array a launch reads and writes (kernels/regions.py) and the arrays an operation's rules keep;
a later write it records (a launch, `x[key] = value`) that overwrites part of them first
copies that part, and an in-place launch (`x[i] = f(x[i])`) copies what it overwrites of what
it read (tape/snapshots.py). The reverse runs last first and puts each copy back as it passes the
write, undoing the write's generation too, so every check below sees the memory as its record
saw it; when the reverses are done the arrays hold their final values again.

Before a launch's reverse the tape checks that the arrays the launch read are unchanged (by
write generation; a NumPy array passed directly, which counts no writes, by a copy kept when
the launch ran): a write the tape did not see (outside it, or through an export such as
np.asarray) to a changed integer array, a loop bound, raises `AdStackSizingError`, to a float
input `AutodiffError`. Before an operation's VJP it checks that the arrays its rules kept are
unchanged, naming the operation and, when the tape saw it, the write.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _dispatch, _dtypes
from ..._array import Array
from ..._autodiff import TAPES, VJPS, Node, current
from ..._creation_functions import asarray, ones_like, zeros_like
from ..._errors import AdStackSizingError, AutodiffError
from ..._indexing import setitem
from ...buffer_view import BufferView
from ...kernels.args import array_leaves
from . import gc_pause
from .kernel_records import Launch as _Launch
from .kernel_records import make_recorder, record_general
from .namespace_records import backprop, nbytes, saved_arrays, writer_text
from .nesting import check_nested
from .snapshots import (
    Needs,
    Snapshot,
    check_unseen_writes,
    final_state,
    key_box,
    region,
    restore,
    rewind,
    take_within_limit,
    zero_recorded_grads,
)

_LIVE: weakref.WeakSet[Tape] = weakref.WeakSet()
_get_ident = threading.get_ident
_INEXACT = frozenset(_dtypes.FLOATING_DTYPES)  # results that can carry a gradient
_NOTHING: tuple[Any, ...] = ()  # the values of an operation whose rules need none
COUNTS = {"tape_operations": 0, "tape_kernel_launches": 0, "tape_snapshot_bytes": 0}


@dataclasses.dataclass
class _Write:
    """A namespace write `x[key] = value` on the tape: the copy of what it overwrote that a
    recorded reverse needs, and the generations it moved x's memory between."""

    snaps: list[Snapshot]
    buffer: Any
    before: int
    after: int | None = None


def _arrays(names: Sequence[str], args: Sequence[Any], numpy: bool = False
            ) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, a in zip(names, args, strict=True):
        if type(a) in (Array, BufferView) or (numpy and type(a) is np.ndarray):
            out.append((name, a))
        elif dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = dataclasses.fields(a)
            out += _arrays([f"{name}.{f.name}" for f in fields], [getattr(a, f.name)
                                                                   for f in fields], numpy)
    return out


def _token(a: Any) -> tuple[Any, Any]:
    arr = a._base if type(a) is BufferView else a
    return arr._buffer, arr._dtype


def _has_grad(a: Any) -> bool:
    return (a._grad_base if type(a) is BufferView else a._grad) is not None


class Tape:
    """Records kernel launches and namespace operations; runs their reverses.

    Args:
        loss: optional. A one-element array computed in the block (a kernel output created
            with `requires_grad=True`): its cotangent is set to 1 and the reverses run when
            the block ends. Without it, call `tape.backward(loss)` after the block.
        validation: check every recorded kernel launch for overwrites of elements it read
            (slow: runs each launch through the interpreter first; see `qdarray.ad.tape.validate`).
        zero_grads: set the gradient of every array the tape recorded to zero before the
            reverses accumulate into it (as `ti.ad.Tape` does); by default gradients add to
            what they hold.

    Example::

        x = qd.asarray([0.5, 1.0, 2.0], requires_grad=True)
        with qd.ad.Tape() as tape:
            loss = qd.sum(qd.sin(x) * x)
        tape.backward(loss)
        print(x.grad)                 # cos(x) * x + sin(x)
    """

    def __init__(self, loss: Any = None, *, validation: bool = False,
                 zero_grads: bool = False) -> None:
        if loss is not None:
            if type(loss) is not Array:
                raise TypeError(
                    f"Tape(loss=...) needs a qdarray Array; got {type(loss).__name__}.")
            if loss.grad is None:
                raise AutodiffError(
                    f"The loss (an array of shape {loss.shape}, dtype {loss.dtype}) has no "
                    "gradient, so the tape has nothing to start from. Use requires_grad=True "
                    "when creating it, e.g. qd.zeros(1, dtype=qd.float32, requires_grad=True),"
                    " or compute the loss inside the block and call tape.backward(loss).")
            if loss.size != 1:
                raise ValueError(
                    f"Tape(loss=...) needs a loss with one element; got shape {loss.shape}. "
                    "Use a kernel that reduces it to one element first (e.g. out[0] += v).")
        self.loss = loss
        self.validation = validation
        self.zero_grads = zero_grads
        self.needs = Needs()  # the regions recorded reverses need
        self.indexed = 0  # records up to here have their needs in `needs`
        self.snapshot_bytes = 0
        self.pending: _Write | None = None
        self.records: list[Any] = []
        self.done = False
        self.recording = False
        self.thread = threading.get_ident()
        # memory -> the last write the tape saw (its words, or the kernel: writer_text)
        self.writers: dict[Any, Any] = {}
        # Memory whose gradient went to one Array over it (a kernel's output given a
        # companion, an untracked array a recorded write made tracked): the others over it
        # (views taken before) cannot follow, and raise when used. Memory -> why.
        self.orphans: dict[Any, str] = {}
        self.companions: list[Array] = []  # companions the tape made
        # The memory of the gradients this tape owns (those it made, the stand-ins of
        # qd.ad.grad's arguments): a tape nested in it must not compute from them.
        self.owned: set[Any] = set()
        self.enclosing: list[Tape] = []
        self._counts = (0, 0)
        self._ran: list[tuple[Any, Any]] = []
        _LIVE.add(self)

    @property
    def launches(self) -> list[_Launch]:
        """The kernel launches recorded so far, in order (after the reverses: their kernels
        and targets)."""
        if self.done and not self.records:
            return [_Launch(k, (), t, []) for k, t in self._ran]
        return [r for r in self.records if type(r) is _Launch]

    def __enter__(self) -> Tape:
        # Tapes this one is nested in: gradients they own are not this tape's targets.
        self.enclosing = [t for t in TAPES if t.thread == self.thread and t.recording]
        TAPES.append(self)
        self.recording = not self.done
        gc_pause.enter()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        TAPES.remove(self)
        self.recording = False
        try:
            if exc_type is None and self.loss is not None and not self.done:
                self.backward(self.loss)
        finally:
            gc_pause.leave()

    # -- recording -----------------------------------------------------------------------------

    def tracked(self, x: Any) -> bool:
        """Whether gradients flow to `x` on this tape."""
        if type(x) is BufferView:
            return x._grad_base is not None
        if type(x) is not Array:
            return False
        if x._grad is not None:
            return not (self.enclosing and self._foreign(x._grad))
        return self._node_of(x) is not None or bool(self.orphans and x._buffer in self.orphans)

    def _node_of(self, x: Array) -> Node | None:
        """`x`'s node on this tape (an inner tape's node links to it), or None."""
        node: Node | None = x._node
        while node is not None and node.tape is not self:
            node = node.up
        return node

    def _foreign(self, grad: Array) -> bool:
        """Whether gradient companion `grad` belongs to a tape this one is nested in."""
        return any(grad._buffer in t.owned for t in self.enclosing)

    def owns(self, x: Any) -> bool:
        """Whether `x` is an array this tape computed, or has a gradient this tape made."""
        if type(x) is BufferView:
            return x._grad_base is not None and x._grad_base._buffer in self.owned
        if type(x) is not Array:
            return False
        return self._node_of(x) is not None or (
            x._grad is not None and x._grad._buffer in self.owned)

    def nested(self, what: str, arrays: Sequence[Any]) -> None:
        """Raise when `what`, recorded on this tape, computes from an array an enclosing tape
        of this thread differentiates: the enclosing gradient would miss the path through
        this tape's reverse (reverse mode over reverse mode, which is not supported)."""
        check_nested(what, arrays, self)

    def _target(self, x: Array, op: str) -> Any:
        """Where `x`'s cotangent goes (its companion or node), None when untracked."""
        g = x._grad
        if g is not None:
            return None if self.enclosing and self._foreign(g) else g
        node = self._node_of(x)
        if node is None:
            if self.orphans and x._buffer in self.orphans:
                raise AutodiffError(f"An input of {op} shares memory with "
                                    f"{self.orphans[x._buffer]}")
            return None
        if node.gen != x._buffer.generation:
            by = writer_text(self.writers.get(x._buffer))
            raise AutodiffError(
                f"An input of {op} is the result of {node.op}, whose memory was written "
                f"afterwards{f' by {by}' if by else ''} through another array (a view, "
                "np.asarray or DLPack export, or a kernel), so the tape's record of it no "
                "longer holds. Use qd.asarray(x, copy=True) before the write, or write "
                "before computing from it.")
        return node

    def op(self, name: str, out: Any, ins: tuple[Any, ...], params: dict[str, Any] | None
           ) -> Any:
        """Record a namespace operation `out = name(*ins, **params)` when an input is
        tracked (see qdarray/_autodiff.py). On the path of every operation inside a tape:
        the common cases are spelled out rather than calling `_target`."""
        if not self.recording:
            return out
        targets: list[Any] | None = None
        tracked = 0
        i = 0
        for x in ins:
            if type(x) is Array:
                t = x._grad
                if t is not None:
                    if self.enclosing and self._foreign(t):
                        t = None
                else:
                    node = x._node
                    if node is not None and node.tape is self and (
                            node.gen == x._buffer.generation and node.companion is None):
                        t = node
                    elif node is not None or self.orphans:
                        t = self._target(x, name)  # stale, materialized, or orphaned
                if t is not None:
                    if targets is None:
                        targets = [None] * len(ins)
                    targets[i] = t
                    tracked |= 1 << i
            i += 1
        if targets is None or type(out) is not Array or out._dtype not in _INEXACT:
            return out
        rule = VJPS.get(name)
        if rule is None:
            raise AutodiffError(
                f"{name} has no gradient rule, and an input of it needs gradients inside this "
                "qd.ad.Tape. Use qd.ad.stop_gradient(x) on its input if no gradient should "
                "flow through it, or compute it outside the tape.")
        if rule.zero:
            return out
        # `_keep`, spelled out (a call with its arguments costs about 0.1 us here).
        plan = rule.plans.get(tracked)
        if plan is None:
            plan = rule.plan(tracked)
        values: Any = _NOTHING if not plan else []
        gens: Any = _NOTHING if not plan else []
        for need, kind, pos in plan:
            v = ins[pos] if kind == 0 else out if kind == 1 else params[need]  # type: ignore[index]
            values.append(v)
            if type(v) is Array:
                shared = v._shared  # no token yet: generation 0, the one it gets
                gens.append(0 if shared is None else shared.generation)
            else:
                gens.append(_key_generations(v) if type(v) is tuple else None)
        records = self.records
        shared = out._shared
        node = Node(self, rule, plan, targets, values, gens, len(records), None,
                    0 if shared is None else shared.generation, out._data.shape, out._dtype)
        records.append(node)
        COUNTS["tape_operations"] += 1
        if rule.aliasing:
            for x in ins:
                if type(x) is Array and x._buffer is out._buffer:
                    node.alias = True
        if out._node is not None:
            node.up = out._node  # recorded on an enclosing tape too
        out._node = node
        return out

    def _keep(self, rule: Any, tracked: int, targets: list[Any], ins: tuple[Any, ...],
              out: Any, params: dict[str, Any] | None, written: Array | None, gen: int,
              shape: tuple[int, ...], dtype: Any) -> Node:
        """The Node of one operation: what its rules need, and the arrays to check."""
        plan = rule.plans.get(tracked) or rule.plan(tracked)
        values: list[Any] = []
        gens: list[Any] = []
        for need, kind, pos in plan:  # a loop: cheaper than comprehensions here
            v = ins[pos] if kind == 0 else out if kind == 1 else params[need]  # type: ignore[index]
            values.append(v)
            if type(v) is Array:
                shared = v._shared  # no token yet: generation 0, the one it gets
                gens.append(0 if shared is None else shared.generation)
            else:
                gens.append(_key_generations(v) if type(v) is tuple else None)
        records = self.records
        node = Node(self, rule, plan, targets, values, gens, len(records), written, gen, shape,
                    dtype)
        records.append(node)
        COUNTS["tape_operations"] += 1
        return node

    def before_write(self, x: Array, name: str, key: Any = Ellipsis) -> Any:
        """Where `x`'s cotangent goes before the write `name` of `x[key]`; raises, before
        anything is written, when the write cannot be recorded. Copies what the write will
        overwrite of what a recorded reverse needs."""
        if not self.recording:
            return None
        target = self._target(x, name)
        if type(target) is Node and target.alias:
            raise _alias_error(target, "written through")
        self.index_needs()
        snaps = []
        w = region(x, key_box(x._data.shape, key))
        if w is not None:
            b = self.needs.overwritten(w)
            if b is not None:
                snaps.append(self._take(w.array, b, True, name))
                self.needs.discharge(w)
        self.pending = _Write(snaps, x._buffer, x._buffer.generation)
        self.records.append(self.pending)
        return target

    def write(self, name: str, x: Array, key: Any, value: Any, old: Any) -> None:
        """Record `x[key] = value`, `old` being where x's cotangent went before the write
        (`before_write`, taken before it)."""
        if not self.recording:
            return
        if self.pending is not None and self.pending.buffer is x._buffer:
            self.pending.after = x._buffer.generation
        self.pending = None
        self.writers[x._buffer] = name
        old_target = old
        if type(old) is Node and old.companion is not None:
            old_target = old.companion
        value_target = self._target(value, name) if type(value) is Array else None
        if old_target is None and value_target is None:
            return
        if old_target is None:
            # An untracked array becomes tracked: Arrays over its memory taken before (views
            # of it, or the array it views) know nothing of the write.
            self.orphans.setdefault(x._buffer, (
                f"an array the write {name} gave values with gradients inside this tape, but "
                "the gradient went to the array written, not to this other Array over its "
                "memory (a view taken before the write, or the array the written view was "
                "taken from), so the gradient would silently miss the write. Take views "
                "after the write, or create the array with requires_grad=True before writing "
                "so that every view of it shares its gradient."))
        rule = VJPS["setitem"]
        ins = (x, value)
        tracked = (old_target is not None) | (value_target is not None) << 1
        what = (x._buffer.generation, x._data.shape, x._dtype)
        if type(old_target) is Array:  # a companion: the write replaces its contents
            self._keep(rule, tracked, [old_target, value_target], ins, x, {"key": key},
                       old_target, *what)
            return
        x._node = self._keep(rule, tracked, [old_target, value_target], ins, x, {"key": key},
                             None, *what)

    def inplace(self, name: str, x1: Array, x2: Any, category: str | None) -> Array | None:
        """`x1 op= x2` when an operand is tracked: computed out of place (recorded), then
        written into x1 (recorded as a write); None when neither operand is tracked."""
        if not self.recording:
            return None
        if not (self.tracked(x1) or self.tracked(x2)):
            self.index_needs()
            if x1._buffer not in self.needs.by_memory:
                return None
            # A recorded reverse needs x1: written as a recorded write, which copies what
            # it overwrites of that first.
            result = _dispatch.binary(name, x1, x2, category)
            _dispatch.check_inplace_result(name, x1, result)
            setitem(x1, Ellipsis, result)
            return x1
        rule = VJPS.get(name)
        operand = x1
        if rule is not None and not rule.zero and (
                (self.tracked(x2) and "x1" in rule.needs[1])
                or (self.tracked(x1) and "x1" in rule.needs[0])):
            operand = asarray(x1, copy=True)  # the write below would change what is kept
        result = _dispatch.binary(name, operand, x2, category)
        _dispatch.check_inplace_result(name, x1, result)
        setitem(x1, Ellipsis, result)
        return x1

    def materialize(self, x: Array) -> Array:
        """Give `x` (computed on this tape) a zero gradient companion."""
        if x._node.alias:
            raise _alias_error(x._node, "given to a kernel or viewed")
        comp = zeros_like(x)
        x._grad = comp
        x._node.companion = comp
        self.companions.append(comp)
        self.owned.add(comp._buffer)
        return comp

    def record(self, kernel: Any, args: tuple[Any, ...], target: Any,
               launcher: Any) -> None:
        """Run one kernel launch (checking it first in validation mode) and remember it, on
        the innermost tape of the launching thread (tapes of other threads do not see it)."""
        tape = self if self.thread == _get_ident() else current()
        if tape is None or not tape.recording:
            launcher(args)
            return
        rec = launcher.recorder
        if rec and not tape.validation and len(TAPES) == 1:
            rec(tape, args, target, launcher)
            COUNTS["tape_kernel_launches"] += 1
        else:
            tape.keep(kernel, args, target, launcher)

    def keep(self, kernel: Any, args: tuple[Any, ...], target: Any,
             launcher: Any) -> None:
        """Record a launch and run it: through the function written for its signature
        (ad/tape/kernel_records.py), or the general path."""
        rec = launcher.recorder
        if rec is None:
            if launcher.leaves is None:
                launcher.leaves = array_leaves(kernel.param_names, args)
            rec = launcher.recorder = make_recorder(kernel, args, launcher) or False
        if rec and not self.validation and len(TAPES) == 1:
            rec(self, args, target, launcher)
            COUNTS["tape_kernel_launches"] += 1
        else:
            record_general(self, kernel, args, target, launcher)
            COUNTS["tape_kernel_launches"] += 1

    def _take(self, array: Array, b: Any, before: bool, by: str) -> Snapshot:
        snap = take_within_limit(array, b, before, by, snapshot_bytes())
        self.snapshot_bytes += snap.nbytes
        COUNTS["tape_snapshot_bytes"] += snap.nbytes
        return snap

    def index_needs(self) -> None:
        """Add the arrays kept by the operations recorded since the last call to the
        regions recorded reverses need."""
        records = self.records
        for i in range(self.indexed, len(records)):
            rec = records[i]
            if type(rec) is Node:
                for value in rec.values:
                    for a in saved_arrays(value):
                        self.needs.add_array(a)
        self.indexed = len(records)

    def _give_companion(self, kernel: Any, name: str, a: Any) -> None:
        """A kernel output computed from arrays with gradients gets a companion, so what
        follows it on the tape is differentiated too."""
        if type(a) is BufferView:
            base = a._base
            base._grad = zeros_like(base)
            a._grad_base = base._grad
            comp = base._grad
        else:
            a._grad = zeros_like(a)
            comp = a._grad
        self.companions.append(comp)
        self.owned.add(comp._buffer)
        self.orphans[_token(a)[0]] = (
            f"argument '{name}' of kernel '{kernel.__name__}', which the kernel computed from "
            "arrays with gradients inside this tape, but the gradient companion went to the "
            "array passed to the kernel. Use that array itself, or create it with "
            "requires_grad=True before the kernel.")

    # -- the reverse ---------------------------------------------------------------------------

    def backward(self, loss: Any, grad: Any = None) -> None:
        """Seed `loss`'s cotangent and run the recorded reverses, last first.

        Args:
            loss: an array computed in the block (or a kernel output with a gradient); one
                element unless `grad` is given.
            grad: the cotangent to start from (an array of `loss`'s shape); 1 by default.

        Raises:
            AutodiffError: when the loss does not depend on any array with a gradient, or an
                array a reverse needs was written after it was recorded.
            RuntimeError: when this tape's reverses already ran.
        """
        if self.done:
            raise RuntimeError("This tape's reverses have already run. Use a new Tape.")
        if type(loss) is not Array:
            raise TypeError(f"backward needs a qdarray Array; got {type(loss).__name__}.")
        target: Any = loss._grad
        if target is None:
            target = self._node_of(loss)
        if target is None:
            raise AutodiffError(
                f"The loss (an array of shape {loss.shape}, dtype {loss.dtype}) does not depend"
                " on any array with a gradient inside this tape, so there is nothing to "
                "differentiate. Use requires_grad=True when creating the inputs, e.g. "
                "qd.asarray(x, requires_grad=True).")
        if grad is None:
            if loss.size != 1:
                raise ValueError(
                    f"backward needs a loss with one element, or grad= of its shape; got a "
                    f"loss of shape {loss.shape}. Reduce it first (qd.sum(y)).")
            seed = ones_like(loss)
        else:
            seed = grad if type(grad) is Array else asarray(grad, device=loss.device)
            if seed.shape != loss.shape:
                raise ValueError(
                    f"backward's grad has shape {seed.shape}; the loss has shape {loss.shape}.")
        self.done = True
        self.recording = False
        pause = _Paused()
        TAPES.append(pause)
        gc_pause.enter()
        try:
            finals, generations = final_state(self.records)
        except BaseException:
            TAPES.remove(pause)
            gc_pause.leave()
            raise
        try:
            if self.zero_grads:
                zero_recorded_grads(self.records)
            node: Any = target
            if type(node) is Node and node.companion is None:
                node.cot = seed
            else:
                comp: Any = node.companion if type(node) is Node else node
                comp._data[...] = seed._data
                comp._buffer.generation += 1
            self._run()
        finally:
            try:
                # The reverses rewound the arrays the tape copied: give them their final
                # values.
                for snap in finals:
                    snap.restore()
                for buf, generation in generations:
                    buf.generation = generation
                TAPES.remove(pause)
                self._release()
            finally:
                gc_pause.leave()

    def _release(self) -> None:
        """Drop what the reverses needed; keep which kernels ran (`launches`) and counts."""
        records = self.records
        # (kernel, target) of each launch: a pair per launch, where a launch record per
        # launch cost a microsecond of every reverse's time
        self._ran = [(r[0], r[2]) for r in records if type(r) is _Launch]
        self._counts = (sum(1 for r in records if type(r) is Node), len(self._ran))
        self.records = []
        self.writers = {}
        self.orphans = {}
        self.companions = []
        self.owned = set()
        self.needs = Needs()
        self.pending = None

    def grad(self) -> None:
        """Seed the loss given to the constructor with 1 and run the recorded reverses."""
        self.backward(self.loss)

    def _run(self) -> None:
        from ..launch import grad_of, launch_reverse

        for rec in reversed(self.records):
            t = type(rec)
            if t is Node:
                backprop(rec, self.writers)
                continue
            if t is _Write:
                rewind(rec.snaps, [(rec.buffer, rec.before, rec.after)])
                continue
            if rec.chain:
                check_unseen_writes(rec.kernel.__name__, rec.chain)
            if rec.snaps:
                restore(rec.snaps, True)
            leaves = rec.launcher.leaves if rec.launcher is not None else None
            arrays = leaves(rec.args) if leaves is not None else _arrays(
                rec.kernel.param_names, rec.args)
            mask = tuple([(a._grad if type(a) is Array else grad_of(a)) is not None
                          for _, a in arrays])
            if True in mask:
                # (none: no gradient in or out, e.g. a kernel filling an index array)
                if rec.inputs:
                    self.check_inputs(rec)
                launch_reverse(rec.kernel, rec.args, rec.target, check=False,
                               constants=rec.constants, leaves=arrays,
                               forward=rec.launcher, mask=mask)
            rewind(rec.snaps, rec.chain, False)

    @staticmethod
    def check_inputs(launch: _Launch) -> None:
        for name, buf, generation, dtype in launch.inputs:
            if type(buf) is np.ndarray:
                if np.array_equal(buf, generation, equal_nan=dtype.kind == "f"):
                    continue
            elif buf.generation == generation:
                continue
            what = (f"'{name}', an argument kernel '{launch.kernel.__name__}' only reads, was "
                    "written after the launch was recorded by a write the tape did not see (an "
                    "export such as np.asarray or DLPack, or a kernel or operation outside the "
                    "tape)")
            fix = ("Write it inside the tape with qdarray operations or kernels (the tape "
                   "keeps what they overwrite for the reverse), or write to a copy.")
            if dtype.kind in "iu":
                raise AdStackSizingError(
                    f"{what}. It may bound loops, so the reverse would size and run them with "
                    f"the new values. {fix}")
            raise AutodiffError(f"{what}, so its reverse would use the new values. {fix}")

    # -- memory --------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """What this tape holds: `operations` (namespace operations recorded),
        `kernel_launches`, `bytes_held` (the arrays its records keep for the reverse, the
        gradient companions it made, each counted once, and its snapshots) and
        `snapshot_bytes` (the copies it made of what later writes overwrote of what
        recorded reverses need; after the reverses: what it had made)."""
        if self.done:
            return {"operations": self._counts[0], "kernel_launches": self._counts[1],
                    "bytes_held": 0, "snapshot_bytes": self.snapshot_bytes}
        seen: dict[int, int] = {}
        ops = launches = 0
        for rec in self.records:
            if type(rec) is Node:
                ops += 1
                for value in rec.values:
                    for a in saved_arrays(value):
                        seen[id(a._data)] = nbytes(a)
            elif type(rec) is _Write:
                continue
            else:
                launches += 1
                for _, a in _arrays(rec.kernel.param_names, rec.args):
                    arr = a._base if type(a) is BufferView else a
                    seen[id(arr._data)] = nbytes(arr)
        for comp in self.companions:
            seen[id(comp._data)] = nbytes(comp)
        return {"operations": ops, "kernel_launches": launches,
                "bytes_held": sum(seen.values()) + self.snapshot_bytes,
                "snapshot_bytes": self.snapshot_bytes}


def _key_generations(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The write generations of the index arrays in a key (None where there is none)."""
    gens = tuple(k._buffer.generation if type(k) is Array else None for k in key)
    return gens if any(g is not None for g in gens) else None


def _alias_error(node: Node, what: str) -> AutodiffError:
    return AutodiffError(
        f"The result of {node.describe()} shares its memory with that operation's input, so "
        f"inside a qd.ad.Tape it cannot be {what} (its gradient must go back through "
        f"{node.op}). Use a copy: qd.asarray(x, copy=True).")


class _Paused:
    """Pushed on `TAPES` while a reverse runs: the rules' own operations and kernel launches
    are not recorded."""

    recording = False

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def op(self, name: str, out: Any, ins: tuple[Any, ...], params: Any) -> Any:
        return out

    def before_write(self, x: Array, name: str, key: Any = Ellipsis) -> None:
        return None

    def write(self, name: str, x: Array, key: Any, value: Any, old: Any) -> None:
        return None

    def inplace(self, name: str, x1: Array, x2: Any, category: str | None) -> None:
        return None

    def tracked(self, x: Any) -> bool:
        return False

    def owns(self, x: Any) -> bool:
        return False

    def nested(self, what: str, arrays: Sequence[Any]) -> None:
        return None

    def record(self, kernel: Any, args: tuple[Any, ...], target: str | None,
               launcher: Any) -> None:
        # The launcher reaches the last entry of `TAPES`, which may be another thread's
        # pause: a launch of a thread whose own tape records goes on that tape.
        tape = None if self.thread == threading.get_ident() else current()
        if tape is None or not tape.recording:
            launcher(args)
        else:
            tape.keep(kernel, args, target, launcher)


def bytes_held() -> int:
    """Bytes held by the records of every tape not yet run."""
    return sum(t.stats()["bytes_held"] for t in list(_LIVE) if not t.done)


def snapshot_bytes() -> int:
    """Bytes of the snapshots held by every tape not yet run."""
    return sum(t.snapshot_bytes for t in list(_LIVE) if not t.done)
