"""Launch-time sizing of one reverse kernel: max-reducer rounds, the counting pass, the cache.

`Sizer.size(flat, args)` returns each live stack's capacity and each task's thread count:

- from the symbolic expressions when every stack has one: each closed `MaxOverRange` is a
  max-reducer dispatch (`qdarray.ad.sizing.max_reducer`), inner ones first (rounds), and the results
  are substituted as constants before the rest is evaluated on the host;
- else (or when a read would leave its array) by the counting pass: the reverse kernel's
  forward sweep with every push replaced by a counter (`reverse.counting_kernel`), each
  thread folding its depths into one of `SLOTS` slots per stack with an atomic max, followed
  by the same max-reducer over the slots.

The sizing cache: every value is stored with a key of what it depends on, the identity and
write generation of each array whose elements it reads (`Buffer.generation`, bumped by every
write: host `__setitem__`, in-place operators, kernel writes, zero-copy exports, through any
view), the shapes of arrays whose shapes it uses and the scalar arguments. A launch whose
key is unchanged costs one comparison; otherwise each `MaxOverRange` (one cache entry per
kernel signature, stack expression node) is dispatched again only if its own key changed.
Arrays passed as NumPy arrays rather than qdarray Arrays have no generation: their launches
are always sized afresh.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _dtypes
from ..._array import Array
from ...buffer_view import BufferView
from ...kernels.ir import Instr, KernelIR, Op, Param, operands, walk
from ...kernels.target import KernelTarget
from ...kernels.types import ArrayType, ViewType
from .bounds import COUNT_SLOTS as SLOTS
from .bounds import (
    Arg,
    Bin,
    Const,
    Expr,
    LoopVar,
    MaxOverRange,
    Read,
    Shape,
    apply,
    dependencies,
    is_closed,
)
from .max_reducer import Chain, Reducer, Unsized, chain_of, shape_of

# Test-only: when set to an int, every stack gets this capacity (to provoke overflows).
_TEST_CAPACITY_OVERRIDE: int | None = None

# Counters, and figures of the last reverse launch (its heaps' and tables' bytes, the
# checkpoint stride of its dynamic loops: 0 when every iteration is kept; the bits of its
# tape positions, ad/launch.py `ReverseLauncher.runner`; its threads' reordering,
# ad/transform/reorder.py).
STATS: dict[str, Any] = {
    "max_reducer_dispatches": 0, "counting_passes": 0, "cache_hits": 0, "fresh_sizings": 0,
    "adstack_bytes": 0, "adstack_index_bytes": 0, "checkpoint_stride": 0,
    "adstack_position_bits": 0, "reorderings": 0, "reordered_tasks": 0,
    "group_efficiency": 0, "group_efficiency_reordered": 0}

_READ, _SHAPE, _SCALAR = 0, 1, 2


class Deps:
    """What a value depends on, as positions in the flattened argument list."""

    def __init__(self, items: list[tuple[int, int]]) -> None:
        self.items = sorted(set(items))

    @classmethod
    def of(cls, exprs: Sequence[Expr], position: dict[str, int]) -> Deps:
        items = []
        for e in exprs:
            reads, shapes, scalars = dependencies(e)
            items += [(_READ, position[n]) for n in reads]
            items += [(_SHAPE, position[n]) for n in shapes - reads]
            items += [(_SCALAR, position[n]) for n in scalars]
        return cls(items)

    def key(self, flat: Sequence[Any]) -> tuple[Any, ...] | None:
        """A key equal between two launches only if nothing the value depends on changed
        (None: an argument without a write generation, never cached)."""
        out: list[Any] = []
        for kind, pos in self.items:
            a = flat[pos]
            if kind == _READ:
                t = type(a)
                if t is Array:
                    buf = a._buffer
                    out += (id(a._data), id(buf), buf.generation)
                elif t is BufferView:
                    base = a._base
                    buf = base._buffer
                    out += (id(base._data), id(buf), buf.generation, a._offset, a._size)
                else:
                    return None
            elif kind == _SHAPE:
                out.append(shape_of(a))
            else:
                out.append(a)
        return tuple(out)

    def refs(self, flat: Sequence[Any]) -> list[Any]:
        """Weak references to the objects whose ids the key holds (alive: the ids are
        theirs, not a later object's at a reused address)."""
        out: list[Any] = []
        for kind, pos in self.items:
            if kind == _READ:
                a = flat[pos]
                arr = a._base if type(a) is BufferView else a
                out += (weakref.ref(arr._data), weakref.ref(arr._buffer))
        return out


class Entry:
    """The values last computed, each with the deps and key it was computed for, the most
    recent first: a program that alternates between inputs (two datasets, or an eager
    program beside its `qd.jit` twin) keeps each input's value."""

    SIZE = 4
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[Deps, tuple[Any, ...], list[Any], Any]] = []

    def get(self, key: tuple[Any, ...] | None) -> Any:
        """The value stored under `key` (None: none, or one of its arrays is gone)."""
        if key is None:
            return None
        for i, item in enumerate(self.items):
            if item[1] == key:
                return self._hit(i)
        return None

    def find(self, flat: Sequence[Any]) -> Any:
        """The value whose key the arguments `flat` have under its own deps (None: none)."""
        keys: dict[int, Any] = {}  # one key per deps object
        for i, (deps, key, _, _) in enumerate(self.items):
            got = keys.get(id(deps), keys)
            if got is keys:
                got = keys[id(deps)] = deps.key(flat)
            if got is not None and got == key:
                return self._hit(i)
        return None

    def _hit(self, i: int) -> Any:
        items = self.items
        deps, key, refs, value = items[i]
        for r in refs:
            if r() is None:  # an array it was computed from is gone (and its id may return)
                del items[i]
                return None
        if i:
            items.insert(0, items.pop(i))
        return value

    def put(self, key: tuple[Any, ...] | None, deps: Deps, flat: Sequence[Any],
            value: Any) -> None:
        if key is None:  # an argument without a write generation: never cached
            return
        kept = [item for item in self.items if item[1] != key][: self.SIZE - 1]
        self.items = [(deps, key, deps.refs(flat), value), *kept]


class Node:
    """A closed MaxOverRange of the expressions: its reducer and its cache entry."""

    def __init__(self, chain: Chain, reducer: Reducer, deps: Deps) -> None:
        self.chain = chain
        self.reducer = reducer
        self.deps = deps
        self.entry = Entry()


def _param_type(p: Param) -> Any:
    return p.value.type


class Sizer:
    """Sizes the stacks of one reverse launcher (see the module docstring).

    Args:
        exprs: each live stack's capacity expression (None: not expressible).
        threads: each task's thread count expression.
        params: the forward kernel's parameters (the flattened arguments, in order).
        counting: the counting kernel's IR (its reads are the counting pass's dependencies),
            or those dependencies (`counting_deps`).
        count: runs the counting kernel on the launch's arguments; returns the counts array.
        stack_ids: the id of each live stack (its slots in the counts array).
        target: the kernel target the reducers compile for.
        device: the arrays' device (None: host arrays).
        fits: whether stacks of these (capacities, thread counts) could be allocated; a
            symbolic result that does not fit (a bound far above what the loops run, such as
            `range(max_iter)` with an early `break`) is replaced by the counting pass's exact
            one.
    """

    def __init__(self, exprs: list[Expr | None], threads: list[Expr | None],
                 params: Sequence[Param], counting: KernelIR | Sequence[tuple[int, int]],
                 count: Callable[[Sequence[Any]], np.ndarray], stack_ids: list[int],
                 n_stacks: int, target: KernelTarget, device: Any = None,
                 fits: Callable[[list[int], list[int]], bool] | None = None) -> None:
        self.params = list(params)
        self.position = {p.name: k for k, p in enumerate(self.params)}
        self.types = {p.name: _param_type(p) for p in self.params}
        self.target = target
        self.device = device
        self.count_fn = count
        self.fits = fits
        self.stack_ids = stack_ids
        self.n_stacks = n_stacks
        self.symbolic = all(e is not None for e in exprs) and all(
            t is not None for t in threads)
        self.exprs: list[Expr] = [e for e in exprs if e is not None]
        self.threads: list[Expr] = [t for t in threads if t is not None]
        self.n_threads = len(threads)
        self.nodes: dict[MaxOverRange, Node] = {}
        if self.symbolic:
            for e in self.exprs + self.threads:
                self._plan(e)
        self.deps = Deps.of(self.exprs + self.threads, self.position)
        if isinstance(counting, KernelIR):
            counting = counting_deps(self.params, counting)
        self.count_deps = Deps(list(counting))
        self.entry = Entry()
        self._slot_reducer: Reducer | None = None
        # whether the sizing in `entry` came from the counting pass (else the expressions)
        self.counted = not self.symbolic

    # -- planning (once per launcher) -------------------------------------------------------

    def _plan(self, e: Expr) -> None:
        """A Node for every closed MaxOverRange of `e`."""
        if isinstance(e, MaxOverRange) and is_closed(e):
            if e not in self.nodes:
                chain = chain_of(e)
                reducer = Reducer(chain, self.types, self.target, self.device)
                self.nodes[e] = Node(chain, reducer, Deps.of([e], self.position))
                for inner in chain.inner:
                    self._plan(inner)
                for _, b, n in chain.axes:
                    self._plan(b)
                    self._plan(n)
        elif isinstance(e, Bin):
            self._plan(e.a)
            self._plan(e.b)

    # -- launch -----------------------------------------------------------------------------

    def size(self, flat: Sequence[Any], args: Sequence[Any]
             ) -> tuple[list[int], list[int]]:
        """(capacity per live stack, thread count per task) for one launch; `flat` holds
        the flattened arguments, `args` the kernel's own (for the counting kernel)."""
        cached = self.entry.find(flat)
        if cached is not None:
            STATS["cache_hits"] += 1
            return _override(cached)
        STATS["fresh_sizings"] += 1
        result = None
        deps = self.count_deps
        if self.symbolic:
            try:
                result = self._symbolic(flat)
                deps = self.deps
            except Unsized:
                result = None
            if result is not None and self.fits is not None and not self.fits(*result):
                result = None  # the bound is far above what fits: count exactly
                deps = self.count_deps
        self.counted = result is None
        if result is None:
            result = self._counted(args)
        self.entry.put(deps.key(flat), deps, flat, result)
        return _override(result)

    def evaluator(self, flat: Sequence[Any]) -> _HostEval:
        """An evaluator of closed expressions for one launch's flattened arguments
        (MaxOverRanges planned here are dispatched, or taken from the sizing cache)."""
        return _HostEval(self, {p.name: flat[k] for k, p in enumerate(self.params)}, flat)

    def _symbolic(self, flat: Sequence[Any]) -> tuple[list[int], list[int]]:
        ev = self.evaluator(flat)
        caps = [max(ev.eval(e), 0) for e in self.exprs]
        threads = [max(ev.eval(t), 0) for t in self.threads]
        return caps, threads

    def reduce(self, e: MaxOverRange, ev: _HostEval) -> int:
        """The value of a closed MaxOverRange: from the cache, or one reducer dispatch
        after its inner ones (earlier rounds)."""
        node = self.nodes[e]
        key = node.deps.key(ev.flat)
        got = node.entry.get(key)
        if got is not None:
            return got  # type: ignore[no-any-return]
        slots = [ev.eval(inner) for inner in node.chain.inner]
        begins, extents = [], []
        for _, b, n in node.chain.axes:
            lo, hi = ev.eval(b), ev.eval(n)
            begins.append(lo)
            extents.append(max(hi - lo, 0))
        if 0 in extents:
            value = 0
        else:
            STATS["max_reducer_dispatches"] += 1
            value = node.reducer.run(ev.values, slots, begins, extents)
        node.entry.put(key, node.deps, ev.flat, value)
        return value

    def _counted(self, args: Sequence[Any]) -> tuple[list[int], list[int]]:
        """The counting pass, then the max over each stack's slots."""
        STATS["counting_passes"] += 1
        counts = self.count_fn(args)
        caps = [self.slot_max(counts, sid) for sid in self.stack_ids]
        base = self.n_stacks * SLOTS
        threads = [int(counts[base + t]) for t in range(self.n_threads)]
        return caps, threads

    def slot_max(self, counts: np.ndarray, sid: int) -> int:
        if self._slot_reducer is None:
            self._slot_reducer = slot_reducer(self.target, self.device)
        STATS["max_reducer_dispatches"] += 1
        return self._slot_reducer.run({"counts": counts}, [], [sid * SLOTS], [SLOTS])


def counting_deps(params: Sequence[Param], counting: KernelIR) -> list[tuple[int, int]]:
    """(kind, position among `params`) of the arguments the counting kernel reads, once dead
    code is gone: a launch is counted again only when one of them changed."""
    by_id = {p.value.id: k for k, p in enumerate(params)}
    items: list[tuple[int, int]] = []
    for s in walk(counting.body):
        used = operands(s)
        if isinstance(s, Instr) and s.op is Op.SHAPE and s.args[0].id in by_id:
            items.append((_SHAPE, by_id[s.args[0].id]))
            used = ()
        for v in used:
            if v.id in by_id:
                memory = isinstance(v.type, (ArrayType, ViewType))
                items.append((_READ if memory else _SCALAR, by_id[v.id]))
    reads = {p for kind, p in items if kind == _READ}
    return sorted({(k, p) for k, p in items if not (k == _SHAPE and p in reads)})


def _override(result: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
    if _TEST_CAPACITY_OVERRIDE is None:
        return result
    return [_TEST_CAPACITY_OVERRIDE] * len(result[0]), result[1]


def slot_reducer(target: KernelTarget, device: Any = None) -> Reducer:
    """The max-reducer of `counts[i]` over one stack's slots."""
    i = LoopVar(-1, "i")
    chain = chain_of(MaxOverRange(i, Const(0), Const(SLOTS), Read("counts", (i,))))
    return Reducer(chain, {"counts": ArrayType(_dtypes.int64, 1)}, target, device)


class _HostEval:
    """Evaluates closed expressions on the host, dispatching reducers for MaxOverRanges."""

    def __init__(self, sizer: Sizer, values: dict[str, Any], flat: Sequence[Any]) -> None:
        self.sizer = sizer
        self.values = values
        self.flat = flat

    def eval(self, e: Expr) -> int:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Arg):
            return int(self.values[e.name])
        if isinstance(e, Shape):
            return int(shape_of(self.values[e.name])[e.axis])
        if isinstance(e, Read):
            return self.read(e)
        if isinstance(e, Bin):
            return apply(e.op, self.eval(e.a), self.eval(e.b))
        if isinstance(e, MaxOverRange):
            return self.sizer.reduce(e, self)
        raise AssertionError(f"{e} is not closed")

    def read(self, e: Read) -> int:
        """One element at constant indices (outside the array: Unsized)."""
        a = self.values[e.name]
        idx = [self.eval(i) for i in e.index]
        shape = shape_of(a)
        if any(not 0 <= i < n for i, n in zip(idx, shape, strict=True)):
            raise Unsized(e.name)
        t = type(a)
        # One element, read where the array lives (on a device: one small copy, not the
        # whole array).
        if t is BufferView:
            return int(a._base._data[a._offset + idx[0]])
        data = a._data if t is Array else np.asarray(a)
        return int(data[tuple(idx)])
