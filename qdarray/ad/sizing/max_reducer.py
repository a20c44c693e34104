"""The max-reducer: a `MaxOverRange` of a size expression as a parallel max-reduction kernel.

A closed `MaxOverRange` (no free loop variable) and the `MaxOverRange`s directly inside its
body whose ranges do not depend on it form one *chain* of axes; the reducer takes the
maximum of the innermost body over the cross product of the axes. It is IR, built here and
compiled by the kernel compiler like any kernel, so it runs on the device of the arrays and
every code generator gets it for free:

    parallel for c in range(nchunks):            # one chunk of the flattened axes each
        m = INT64_MIN
        for r in rows of chunk c:                 # all axes but the last, decoded once
            for t in the part of row r in chunk c:
                m = max(m, body(axes at (r, t)))
        partial[c] = m

and the maximum of the small `partial` array is taken on the device (one number comes back
to the host). That layout (contiguous chunks,
vectorizable inner loops) suits CPUs; on other devices each of many work-items instead reads
elements c, c + nchunks, c + 2 nchunks, ... so that neighbours read neighbours (`strided`).

The kernel target's `ReductionLayout` chooses among these. Where it says `single_pass` (devices
with fast atomics) the reduction is a single pass (`single`): each work-item folds its strided
elements into a register, and an atomic max of that into one element, which the code
generator reduces within each block first (one atomic per block, codegen/block_sums.py), so
nothing but the input is read and one number is written. The element is a uint64 holding
`m ^ 2**63` (the order of int64, with 0 below every value), so a zeroed element is the
identity. A reducer owns two such elements and alternates between them: each dispatch
accumulates into one and zeroes the other (which the previous dispatch used and the host has
read), so a dispatch allocates nothing and issues one launch and one 8-byte read. Its grid is
the layout's `work_items`, which the device's backend chooses.

The body reads arrays at loop-variable indices (any integer dtype, as int64); a
`MaxOverRange` inside the body whose range depends on the axes becomes a sequential loop
there, and closed ones inside it are computed first (earlier rounds) and passed in as
parameters `@slot<k>`, so a reducer compiles once per kernel signature, not once per value.

Reads are checked: an index that is an axis variable plus a constant is checked on the host
for the whole axis before the launch; any other index is checked in the kernel, which sets
the extra last element of `partial` (which starts at INT64_MIN) to INT64_MAX instead of
reading outside the array, so a maximum of INT64_MAX means "not evaluated" (a genuine
INT64_MAX bound is then sized by the counting pass, which is exact as well). Arithmetic in
the body is checked the same way: a `+ - *` whose exact result would leave int64 marks the
element "not evaluated" instead of wrapping around (a bound of 2**63 - 1 would
otherwise give a capacity of 1 + (2**63 - 1) = -2**63, then 0). Any such failure means the
expression cannot be evaluated safely (a guard in the kernel keeps the real loop from
reading there), and the launcher sizes the stacks by the counting pass instead.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import _dtypes
from ..._array import Array
from ...buffer_view import BufferView
from ...kernels.emit import KernelBuilder, block
from ...kernels.ir import For, If, KernelIR, Op, Value, format_kernel
from ...kernels.launch import internal_launcher
from ...kernels.target import KernelTarget, ReductionLayout
from ...kernels.types import ArrayType
from ..device_buffers import DeviceBuffers
from .bounds import (
    BIN_OPS,
    Arg,
    Bin,
    Const,
    Expr,
    LoopVar,
    MaxOverRange,
    Read,
    Shape,
    Slot,
    is_closed,
)

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
SIGN = 1 << 63  # single pass: the element holds m ^ SIGN (as uint64)
UNROLL = 4  # positions per iteration of a strided reduction


class Unsized(Exception):
    """The expression cannot be evaluated safely here: size by the counting pass."""


def shape_of(arg: Any) -> tuple[int, ...]:
    """The shape of an array argument (a view's is its size)."""
    t = type(arg)
    if t is Array:
        return arg._data.shape  # type: ignore[no-any-return]
    if t is BufferView:
        return (arg._size,)
    return tuple(np.shape(arg))


@dataclass
class Chain:
    """A closed MaxOverRange with the nested ones fused into it (see the module docstring)."""

    axes: list[tuple[LoopVar, Expr, Expr]]   # (variable, begin, end), outermost first
    body: Expr                                # closed inner MaxOverRanges replaced by Slots
    inner: list[MaxOverRange]                 # the Slots' expressions, by slot index
    names: list[str] = field(default_factory=list)        # the arguments the body uses
    host_checks: list[tuple[str, int, int, int]] = field(default_factory=list)
    # (array, dimension, axis, offset): the index along `dimension` is axis + offset
    checked: set[Read] = field(default_factory=set)       # reads the host checks


def chain_of(e: MaxOverRange) -> Chain:
    """Fuse `e` with the MaxOverRanges nested directly in it whose ranges are closed, and
    replace the closed MaxOverRanges of the remaining body by slots."""
    axes = [(e.var, e.begin, e.end)]
    body = e.body
    while isinstance(body, MaxOverRange) and is_closed(body.begin) and is_closed(body.end):
        axes.append((body.var, body.begin, body.end))
        body = body.body
    return chain_over(axes, body)


def chain_over(axes: Sequence[tuple[LoopVar, Expr, Expr]], body: Expr) -> Chain:
    """The chain of `body` over exactly `axes` (closed MaxOverRanges of the body replaced by
    slots): `chain_of`'s result, or a per-thread capacity over a task's loops (the values
    `ad/sizing/thread_caps.py` computes at each thread rather than their maximum)."""
    chain = Chain(list(axes), body, [])
    chain.body = _slots(body, chain)
    axis_of = {v.id: k for k, (v, _, _) in enumerate(chain.axes)}
    names: dict[str, None] = {}
    _collect(chain.body, axis_of, chain, names)
    chain.names = sorted(names)
    return chain


def _slots(e: Expr, chain: Chain) -> Expr:
    if isinstance(e, MaxOverRange):
        if is_closed(e):
            if e not in chain.inner:
                chain.inner.append(e)
            return Slot(chain.inner.index(e))
        return MaxOverRange(e.var, _slots(e.begin, chain), _slots(e.end, chain),
                            _slots(e.body, chain))
    if isinstance(e, Bin):
        return Bin(e.op, _slots(e.a, chain), _slots(e.b, chain))
    return e


def _affine(e: Expr, axis_of: dict[int, int]) -> tuple[int, int] | None:
    """(axis, offset) when `e` is an axis variable plus a constant."""
    if isinstance(e, LoopVar) and e.id in axis_of:
        return axis_of[e.id], 0
    if isinstance(e, Bin) and e.op in ("+", "-"):
        if isinstance(e.b, Const) and isinstance(e.a, LoopVar) and e.a.id in axis_of:
            return axis_of[e.a.id], e.b.value if e.op == "+" else -e.b.value
        if e.op == "+" and isinstance(e.a, Const) and isinstance(e.b, LoopVar) and \
                e.b.id in axis_of:
            return axis_of[e.b.id], e.a.value
    return None


def _collect(e: Expr, axis_of: dict[int, int], chain: Chain, names: dict[str, None]) -> None:
    if isinstance(e, (Arg, Shape)):
        names[e.name] = None
    elif isinstance(e, Read):
        names[e.name] = None
        for i in e.index:
            _collect(i, axis_of, chain, names)
        found = [_affine(i, axis_of) for i in e.index]
        if found and all(f is not None for f in found):
            chain.checked.add(e)
            for d, f in enumerate(found):
                assert f is not None
                chain.host_checks.append((e.name, d, f[0], f[1]))
    elif isinstance(e, Bin):
        _collect(e.a, axis_of, chain, names)
        _collect(e.b, axis_of, chain, names)
    elif isinstance(e, MaxOverRange):
        for part in (e.begin, e.end, e.body):
            _collect(part, axis_of, chain, names)


# -- the kernel ----------------------------------------------------------------------------


class _Builder(KernelBuilder):
    """Emits the reducer kernel of one chain (module docstring)."""

    def __init__(self, chain: Chain, types: dict[str, Any], strided: bool,
                 single: bool = False) -> None:
        super().__init__()
        self.chain = chain
        self.strided = strided or single
        self.single = single
        i64 = self.i64
        self.args: dict[str, Value] = {}
        for k, name in enumerate(chain.names):
            self.args[name] = self.param(f"arg{k}", types[name])
        self.slots = [self.param(f"@slot{k}", i64) for k in range(len(chain.inner))]
        self.begins = [self.param(f"@begin{k}", i64) for k in range(len(chain.axes))]
        self.extents = [self.param(f"@extent{k}", i64) for k in range(len(chain.axes))]
        self.chunk, self.nchunks, self.total = (self.param(n, i64)
                                                for n in ("@chunk", "@nchunks", "@total"))
        if single:  # the result element and the one to zero (module docstring)
            u64 = ArrayType(_dtypes.uint64, 1)
            self.partial, self.other = self.param("@out", u64), self.param("@other", u64)
        else:
            self.partial = self.param("@partial", ArrayType(i64, 1))  # nchunks + 1 elements
        self.env: dict[int, Value] = {}
        self.unsized: Any = None  # single pass: a local set to INT64_MAX by a read outside

    def kernel(self) -> KernelIR:
        em = self.em
        c = em.value(self.i64)
        with em.region() as par:
            m = em.var("m", self.i64)
            em.store_var(m, self.c(INT64_MIN))
            if self.single:
                self.unsized = em.var("unsized", self.i64)
                em.store_var(self.unsized, self.c(INT64_MIN))
            lo = self.op(Op.MUL, c, self.chunk)
            hi = self.op(Op.MIN, self.op(Op.ADD, lo, self.chunk), self.total)
            if self.strided:
                self.strided_loop(m, c)
            elif len(self.chain.axes) == 1:
                self.inner_loop(m, lo, hi, None)
            else:
                self.rows(m, lo, hi)
            if self.single:
                self.fold(c, m)
            else:
                em.emit(Op.STORE, self.partial, c, em.load_var(m))
        with em.region() as body:
            em.stmt(For(c, self.c(0), self.nchunks, block(par), True))
        return KernelIR("adstack_max", tuple(self.params), block(body))

    def fold(self, c: Value, m: Any) -> None:
        """Single pass: zero the other element (work-item 0), then atomic max of
        max(m, unsized) ^ SIGN into the result element."""
        em, u64 = self.em, _dtypes.uint64
        with em.region() as first:
            em.emit(Op.STORE, self.other, self.c(0), em.const(0, u64))
        em.stmt(If(self.op(Op.EQ, c, self.c(0)), block(first), block([])))
        top = self.op(Op.MAX, em.load_var(m), em.load_var(self.unsized))
        key = self.op(Op.BIT_XOR, em.cast(top, u64), em.const(SIGN, u64))
        em.emit(Op.ATOMIC_MAX, self.partial, self.c(0), key)

    def inner_loop(self, m: Any, lo: Value, hi: Value, offset: Value | None) -> None:
        """m = max(m, body) for the last axis at positions [lo, hi) (plus `offset`)."""
        em = self.em
        last = len(self.chain.axes) - 1
        t = em.value(self.i64)
        with em.region() as inner:
            self.env[self.chain.axes[last][0].id] = self.op(Op.ADD, self.begins[last], t)
            em.store_var(m, self.op(Op.MAX, em.load_var(m), self.expr(self.chain.body)))
        em.stmt(For(t, lo, hi, block(inner), False))

    def strided_loop(self, m: Any, c: Value) -> None:
        """m = max(m, body) at positions c, c + nchunks, ... < total; UNROLL positions per
        iteration, so that each work-item has that many reads in flight (one at a time
        leaves a GPU's memory waiting on latency). Several axes are decoded once, at c, then
        advanced by the decoded stride with carries (no division per element)."""
        em = self.em
        step = self.nchunks
        count = self.op(Op.FLOORDIV, self.op(Op.ADD, self.op(Op.SUB, self.total, c),
                                              self.op(Op.SUB, step, self.c(1))), step)
        groups = self.op(Op.FLOORDIV, count, self.c(UNROLL))
        odometer = self.odometer(c) if len(self.chain.axes) > 1 else None
        k = em.value(self.i64)
        with em.region() as body:
            first = self.op(Op.ADD, c, self.op(Op.MUL, self.op(Op.MUL, k, self.c(UNROLL)), step))
            vals = []
            for u in range(UNROLL):
                if odometer is None:  # u * step is loop-invariant: one add per position
                    q = self.op(Op.ADD, first, self.op(Op.MUL, self.c(u), step))
                    vals.append(self.at_flat(q))
                else:
                    vals.append(self.at_odometer(odometer))
            while len(vals) > 1:
                vals = [self.op(Op.MAX, vals[u], vals[u + 1]) for u in range(0, len(vals), 2)]
            em.store_var(m, self.op(Op.MAX, em.load_var(m), vals[0]))
        em.stmt(For(k, self.c(0), groups, block(body), False))
        k = em.value(self.i64)
        with em.region() as rest:
            if odometer is None:
                val = self.at_flat(self.op(Op.ADD, c, self.op(Op.MUL, k, step)))
            else:
                val = self.at_odometer(odometer)
            em.store_var(m, self.op(Op.MAX, em.load_var(m), val))
        em.stmt(For(k, self.op(Op.MUL, groups, self.c(UNROLL)), count, block(rest), False))

    def decode(self, q: Value) -> list[Value]:
        """The index along each axis (from 0) of flattened position `q`."""
        return self.em.unravel(q, self.extents)

    def odometer(self, c: Value) -> tuple[list[Any], list[Value]]:
        """Per-axis index locals set to position c, and the per-axis step."""
        em = self.em
        idx = []
        for j, v in enumerate(self.decode(c)):
            var = em.var(f"axis{j}", self.i64)
            em.store_var(var, v)
            idx.append(var)
        return idx, self.decode(self.nchunks)

    def at_odometer(self, odometer: tuple[list[Any], list[Value]]) -> Value:
        """The body at the odometer's position, then the odometer advanced by one step."""
        em = self.em
        idx, inc = odometer
        for j in range(len(idx)):
            self.env[self.chain.axes[j][0].id] = self.op(Op.ADD, self.begins[j],
                                                        em.load_var(idx[j]))
        val = self.expr(self.chain.body)
        carry = self.c(0)
        for j in range(len(idx) - 1, 0, -1):  # each index and step are below the extent
            v = self.op(Op.ADD, self.op(Op.ADD, em.load_var(idx[j]), inc[j]), carry)
            over = self.op(Op.GE, v, self.extents[j])
            carry = em.emit(Op.SELECT, over, self.c(1), self.c(0))
            em.store_var(idx[j], self.op(Op.SUB, v, em.emit(Op.SELECT, over, self.extents[j],
                                                            self.c(0))))
        em.store_var(idx[0], self.op(Op.ADD, self.op(Op.ADD, em.load_var(idx[0]), inc[0]),
                                     carry))
        return val

    def at_flat(self, q: Value) -> Value:
        """The body at flattened position `q` of a single axis."""
        self.env[self.chain.axes[0][0].id] = self.op(Op.ADD, self.begins[0], q)
        return self.expr(self.chain.body)

    def rows(self, m: Any, lo: Value, hi: Value) -> None:
        """Rows of the last axis that meet [lo, hi), the other axes decoded once per row."""
        em = self.em
        k = len(self.chain.axes)
        length = self.extents[k - 1]
        r0 = self.op(Op.FLOORDIV, lo, length)
        r1 = self.op(Op.FLOORDIV, self.op(Op.ADD, hi, self.op(Op.SUB, length, self.c(1))),
                     length)
        r = em.value(self.i64)
        with em.region() as rows:
            start = self.op(Op.MUL, r, length)
            s = self.op(Op.SUB, self.op(Op.MAX, lo, start), start)
            e = self.op(Op.SUB, self.op(Op.MIN, hi, self.op(Op.ADD, start, length)), start)
            for j, q in enumerate(em.unravel(r, self.extents[:k - 1])):
                self.env[self.chain.axes[j][0].id] = self.op(Op.ADD, self.begins[j], q)
            self.inner_loop(m, s, e, None)
        em.stmt(For(r, r0, r1, block(rows), False))

    # -- the body -------------------------------------------------------------------------

    def expr(self, e: Expr) -> Value:
        em, i64 = self.em, self.i64
        if isinstance(e, Const):
            return self.c(e.value)
        if isinstance(e, Arg):
            return em.cast(self.args[e.name], i64)
        if isinstance(e, Shape):
            return em.cast(em.emit(Op.SHAPE, self.args[e.name], attrs=(e.axis,)), i64)
        if isinstance(e, Slot):
            return self.slots[e.index]
        if isinstance(e, LoopVar):
            return self.env[e.id]
        if isinstance(e, Read):
            return self.read(e)
        if isinstance(e, Bin):
            a, b = self.expr(e.a), self.expr(e.b)
            if e.op in ("+", "-", "*"):
                return self.checked(e.op, a, b)
            return self.op(BIN_OPS[e.op], a, b)
        assert isinstance(e, MaxOverRange)
        return self.dependent(e)

    def checked(self, op: str, a: Value, b: Value) -> Value:
        """`a op b` without overflow: where the exact result could leave int64 (operands
        of + and - against limits that cannot overflow themselves, |a| * |b| against
        INT64_MAX // |a|), the element is marked unsized (sized by the counting pass) and
        the operands are taken as 0, so the int64 arithmetic never wraps (a capacity of
        1 + (2**63 - 1) is not -2**63) and no code generator meets signed overflow. -2**63
        itself counts as outside (its magnitude has no int64)."""
        em, c = self.em, self.c
        top, zero = c(INT64_MAX), c(0)
        if op == "*":
            low = c(-INT64_MAX)
            bad = self.op(Op.BIT_OR, self.op(Op.LT, a, low), self.op(Op.LT, b, low))
            safe_a = em.emit(Op.SELECT, bad, c(1), a)
            safe_b = em.emit(Op.SELECT, bad, c(1), b)
            mag_a = em.emit(Op.SELECT, self.op(Op.LT, safe_a, zero), self.op(Op.NEG, safe_a),
                            safe_a)
            mag_b = em.emit(Op.SELECT, self.op(Op.LT, safe_b, zero), self.op(Op.NEG, safe_b),
                            safe_b)
            limit = self.op(Op.FLOORDIV, top, self.op(Op.MAX, mag_a, c(1)))
            bad = self.op(Op.BIT_OR, bad, self.op(Op.GT, mag_b, limit))
        else:
            # a + b fits when -MAX - min(b, 0) <= a <= MAX - max(b, 0); a - b when
            # -MAX + max(b, 0) <= a <= MAX + min(b, 0) (no limit overflows itself)
            pos, neg = self.op(Op.MAX, b, zero), self.op(Op.MIN, b, zero)
            if op == "+":
                lo = self.op(Op.SUB, c(-INT64_MAX), neg)
                hi = self.op(Op.SUB, top, pos)
            else:
                lo = self.op(Op.ADD, c(-INT64_MAX), pos)
                hi = self.op(Op.ADD, top, neg)
            bad = self.op(Op.BIT_OR, self.op(Op.LT, a, lo), self.op(Op.GT, a, hi))
        self.mark_unsized(bad)
        a = em.emit(Op.SELECT, bad, zero, a)
        b = em.emit(Op.SELECT, bad, zero, b)
        return self.op(BIN_OPS[op], a, b)

    def mark_unsized(self, cond: Value) -> None:
        """Where `cond` holds, the body cannot be evaluated: the reduction's result becomes
        INT64_MAX ("not evaluated", module docstring)."""
        em = self.em
        with em.region() as then:
            if self.single:
                em.store_var(self.unsized, self.c(INT64_MAX))
            else:
                em.emit(Op.STORE, self.partial, self.nchunks, self.c(INT64_MAX))
        em.stmt(If(cond, block(then), block([])))

    def read(self, e: Read) -> Value:
        em, i64 = self.em, self.i64
        mem = self.args[e.name]
        idx = [self.expr(i) for i in e.index]
        if e in self.chain.checked:
            return em.cast(em.emit(Op.LOAD, mem, *idx), i64)
        ok = None
        for d, i in enumerate(idx):
            n = em.emit(Op.SHAPE, mem, attrs=(d,))
            inside = self.op(Op.BIT_AND, self.op(Op.GE, i, self.c(0)), self.op(Op.LT, i, n))
            ok = inside if ok is None else self.op(Op.BIT_AND, ok, inside)
        out = em.var("elem", i64)
        em.store_var(out, self.c(0))
        if ok is None:  # a 0-d array
            em.store_var(out, em.cast(em.emit(Op.LOAD, mem), i64))
            return em.load_var(out)
        with em.region() as then:
            em.store_var(out, em.cast(em.emit(Op.LOAD, mem, *idx), i64))
        with em.region() as other:
            if self.single:
                em.store_var(self.unsized, self.c(INT64_MAX))
            else:
                em.emit(Op.STORE, self.partial, self.nchunks, self.c(INT64_MAX))
        em.stmt(If(ok, block(then), block(other)))
        return em.load_var(out)

    def dependent(self, e: MaxOverRange) -> Value:
        """A MaxOverRange whose range depends on the axes: a loop in each element."""
        em, i64 = self.em, self.i64
        begin, end = self.expr(e.begin), self.expr(e.end)
        acc = em.var("inner", i64)
        em.store_var(acc, self.c(INT64_MIN))
        j = em.value(i64)
        with em.region() as body:
            self.env[e.var.id] = j
            em.store_var(acc, self.op(Op.MAX, em.load_var(acc), self.expr(e.body)))
        em.stmt(For(j, begin, end, block(body), False))
        return em.emit(Op.SELECT, self.op(Op.GT, end, begin),  # type: ignore[no-any-return]
                       em.load_var(acc), self.c(0))


class Reducer:
    """The max-reduction kernel of one chain, compiled on first use for `target` and arrays
    on `device` (None: host arrays); laid out as the target's `ReductionLayout` says, unless
    `strided` forces contiguous chunks (False) or strided work-items (True) in one pass of
    partial maxima."""

    def __init__(self, chain: Chain, types: dict[str, Any], target: KernelTarget,
                 device: Any = None, strided: bool | None = None) -> None:
        layout = target.reduction
        self.chain = chain
        self.layout = layout
        self.single = strided is None and layout.one_pass(device)
        self.strided = layout.strided if strided is None else strided
        self.ir = _Builder(chain, types, self.strided, self.single).kernel()
        self.target = target
        self.device = device
        self.buffers = DeviceBuffers(target.buffer_device(device))
        self.launcher: Any = None
        self.lock = threading.Lock()
        self.pairs: Any = None  # single pass: ((result, other), (other, result)) elements
        self.turn = 0
        self.partial: Any = None  # in device memory: (nchunks, buffer of nchunks + 1)

    def compiled(self) -> Any:
        if self.launcher is None:
            ir = self.ir
            self.launcher = internal_launcher(format_kernel(ir), lambda: ir, self.target,
                                              self.device)
        return self.launcher

    def check(self, values: dict[str, Any], begins: list[int], extents: list[int]) -> None:
        """Raise Unsized when an axis-indexed read would leave its array."""
        check_axes(self.chain, values, begins, extents)

    def run(self, values: dict[str, Any], slots: list[int], begins: list[int],
            extents: list[int]) -> int:
        """The maximum of the body over the axes (all extents > 0)."""
        self.check(values, begins, extents)
        total = 1
        for n in extents:
            total *= n
        most = STRIDED_ITEMS
        if self.strided and self.layout.work_items is not None:
            most = min(most, self.layout.work_items(self.device))
        chunk, nchunks = split(total, self.layout, self.strided, extents[-1], most)
        args = [values[n] for n in self.chain.names] + slots + begins + extents
        if self.single:
            top = self.single_pass(args + [chunk, nchunks, total])
        elif self.buffers.on_host:  # NumPy all the way
            partial = np.full(nchunks + 1, INT64_MIN, np.int64)
            self.compiled()(args + [chunk, nchunks, total, partial])
            top = int(partial.max())
        else:
            top = self.on_device(args + [chunk, nchunks, total], nchunks)
        if top == INT64_MAX:
            raise Unsized("a read outside its array")
        return top

    def on_device(self, args: list[Any], nchunks: int) -> int:
        """Partial maxima in device memory, reduced there (one number comes back). The
        buffer is kept: every dispatch writes each chunk's element, and the last element
        (a read outside an array) stays INT64_MIN until a dispatch sets it."""
        buffers = self.buffers
        with self.lock:
            if self.partial is None or self.partial[0] != nchunks:
                self.partial = (nchunks, buffers.upload(np.full(nchunks + 1, INT64_MIN,
                                                                np.int64)))
            partial = self.partial[1]
            try:
                self.compiled()(args + [buffers.as_argument(partial)])
                top = buffers.max(partial)
            except BaseException:
                self.partial = None
                raise
            if top == INT64_MAX:
                self.partial = None  # its last element is set: start afresh next time
        return top

    def single_pass(self, args: list[Any]) -> int:
        """One launch and one 8-byte read (module docstring)."""
        buffers = self.buffers
        with self.lock:  # the two elements alternate: one dispatch at a time
            if self.pairs is None:
                both = buffers.upload(np.zeros(2, np.uint64))
                self.pairs = ((both[0:1], both[1:2]), (both[1:2], both[0:1]))
                self.turn = 0
            out, other = self.pairs[self.turn]
            try:
                self.compiled()(args + [out, other])
                key = int(buffers.to_host(out)[0])
            except BaseException:
                self.pairs = None  # a launch that did not finish: start from zeros again
                raise
            self.turn ^= 1
        return key - SIGN


def check_axes(chain: Chain, values: dict[str, Any], begins: list[int], extents: list[int]
               ) -> None:
    """Raise Unsized when a read of `chain` indexed by an axis (plus a constant) would leave
    its array for some position of the axes."""
    for name, dim, axis, offset in chain.host_checks:
        n = shape_of(values[name])[dim]
        lo = begins[axis] + offset
        if lo < 0 or lo + extents[axis] > n:
            raise Unsized(name)


# Most work-items of a strided reduction: enough to keep a GPU's memory busy, few enough that
# writing their partial maxima costs little next to reading the input.
STRIDED_ITEMS = 1 << 20


def split(total: int, layout: ReductionLayout, strided: bool = False, row: int = 1,
          most: int | None = None) -> tuple[int, int]:
    """(chunk length, number of chunks) for `total` elements: one chunk below the layout's
    `serial_below` (the launcher's parallel threshold), else at least that many chunks (so
    the launch runs in parallel); strided: up to `most` (STRIDED_ITEMS) work-items, a
    multiple of the last axis' extent `row` when that fits (each work-item then stays in one
    column: its last index never carries)."""
    if strided:
        items = min(total, STRIDED_ITEMS if most is None else most)
        if row < items:
            items -= items % row
        return -(-total // items), items
    if total < layout.serial_below:
        return total, 1
    chunk = total // layout.serial_below
    return chunk, -(-total // chunk)
