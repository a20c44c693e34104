"""lower_adstack: the adstack ops (ops/adstack.py) as plain memory ops and branches, so that
code generators never spell them.

    ADSTACK_PUSH(heap, table, row, lim, pos, tail, end, run, base, width, overflow, depth,
                 value) -> next
        next = depth + 1
        if depth < run:     heap[base + depth * width] = value
        elif depth < lim:   heap[table[row + depth] + pos] = value
        else:               a = tail + depth
                            if a < end: heap[a] = value  else: ATOMIC_MAX(overflow, stack.id, next)
    ADSTACK_POP(depth) -> depth - 1
    ADSTACK_TOP(heap, table, row, lim, pos, tail, end, run, base, width, depth) -> the entry at
        depth - 1,
        read through a local set in each branch (heap[0] where the entry is not valid; the
        tail's first entry where `lim` is the constant 0)
    ADSTACK_OWN(table, row, lim, pos) -> a binary search over the depths of the row:
        lo, hi = 0, lim; while lo < hi: mid = (lo + hi) // 2
                                        if pos < table[row+mid+1] - table[row+mid]: lo = mid+1
                                        else: hi = mid

The run branch reads nothing and checks nothing: the group's threads are all there at those
depths, so their positions step by `width` (on GPUs, with threads sorted by their loops'
lengths, nearly every push and pop takes it). The table branch reads one table element and
checks nothing: every depth below a thread's `lim` holds an entry of it (ops/adstack.py); the
tail branch reads none (a thread whose
group's row is empty, `lim` 0, as on CPUs, only ever takes it; where `lim` is the constant 0,
as in the scratch layout, the tail branch is all there is, and its entries are `pos` apart,
`tail + depth * pos`, unless `pos` is the constant 0: the scratch layout's lanes keep one
depth's entries side by side, ad/transform/adstack.py `scratch_slice`) and checks the capacity. The
overflow branch's atomic carries the stack's `AdStack` in its attrs: it records a rare
failure, so code generators leave it as it is (no privatized or block-reduced accumulator,
codegen/block_sums.py) and name reverse mode when the device lacks 64-bit atomics. Where a
thread's entries are (table, row, lim, pos, tail, end) is reverse mode's (ad/transform/adstack.py).

Narrow positions (`narrowed(kernel)`, for a launch whose heap positions, depths below the
capacities and table indices all fit 31 bits: the launcher checks that and runs this variant,
else the one above): the table parameter is an int32 array (the int64 table's memory viewed
as int32, whose even elements are the values' low halves), every load of it reads element 2i,
and the entry arithmetic of the ops is in uint32, so a push or pop costs one 32-bit add per
position and no 64-bit carry or compare. Depths are uint32 locals (a depth Var that holds
anything else is truncated where the ops use it): the first push past a thread's capacity (a
position equal to `end`) records the overflow, so a depth large enough to wrap can only
follow a recorded overflow, and every position it gives is still in the heap (table branch:
an entry of the thread; tail branch: checked against `end`).
"""

from __future__ import annotations

from typing import Any

from ... import _dtypes
from ..emit import Emitter, block
from ..ir import If, Instr, KernelIR, Op, Param, Stmt, Value, Var, While, instrs, operands, walk
from ..types import ArrayType
from .rewrite import Rewriter

_STACK_OPS = frozenset({Op.ADSTACK_PUSH, Op.ADSTACK_POP, Op.ADSTACK_TOP, Op.ADSTACK_OWN})
NARROW = "adstack_narrow"  # KernelIR.meta key: lower with 32-bit positions (`narrowed`)


def narrowed(kernel: KernelIR) -> KernelIR:
    """`kernel` marked for the narrow lowering (module docstring): its table parameter then
    takes the int32 view of the int64 table."""
    return KernelIR(kernel.name, kernel.params, kernel.body, kernel.loc,
                    tuple(m for m in kernel.meta if m[0] != NARROW) + ((NARROW, True),))


def table_param(kernel: KernelIR) -> int | None:
    """The position of the parameter the adstack ops of `kernel` take as their table (None:
    no adstack ops, or a table that is not a parameter)."""
    tables = {(i.args[0] if i.op is Op.ADSTACK_OWN else i.args[1]).id
              for i in instrs(kernel.body) if i.op in _STACK_OPS and i.op is not Op.ADSTACK_POP}
    if len(tables) != 1:
        return None
    (tid,) = tables
    return next((k for k, p in enumerate(kernel.params) if p.value.id == tid), None)


def _depth_vars(kernel: KernelIR) -> set[int]:
    """The ids of the Vars that hold nothing but adstack depths: each load of one feeds only
    the depth operands of stack ops, each store of one stores a constant or a push's or pop's
    result, and those results are only stored to it (the narrow lowering keeps them in
    uint32)."""
    defs: dict[int, Instr] = {}
    uses: dict[int, list[tuple[Any, int]]] = {}
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr) and stmt.result is not None:
            defs[stmt.result.id] = stmt
        for k, v in enumerate(operands(stmt)):
            uses.setdefault(v.id, []).append((stmt, k))
    depth_at = {Op.ADSTACK_PUSH: 11, Op.ADSTACK_POP: 0, Op.ADSTACK_TOP: 10}
    found: set[int] = set()
    for i in defs.values():
        if i.op in depth_at:
            d = defs.get(i.args[depth_at[i.op]].id)
            if d is not None and d.op is Op.LOAD_VAR:
                found.add(d.attrs[0].id)
    bad: set[int] = set()
    for stmt in walk(kernel.body):
        if not isinstance(stmt, Instr) or stmt.op not in (Op.LOAD_VAR, Op.STORE_VAR):
            continue
        var = stmt.attrs[0].id
        if var not in found:
            continue
        if stmt.op is Op.LOAD_VAR:
            assert stmt.result is not None
            ok = all(isinstance(u, Instr) and depth_at.get(u.op) == k
                     for u, k in uses.get(stmt.result.id, []))
        else:
            src = defs.get(stmt.args[0].id)
            ok = src is not None and (src.op is Op.CONST or (
                src.op in (Op.ADSTACK_PUSH, Op.ADSTACK_POP) and all(
                    isinstance(u, Instr) and u.op is Op.STORE_VAR and u.attrs[0].id == var
                    for u, _ in uses.get(stmt.args[0].id, []))))
        if not ok:
            bad.add(var)
    return found - bad


class _Lower(Rewriter):
    def __init__(self, kernel: KernelIR, narrow: bool) -> None:
        super().__init__()
        self.em = Emitter.after(kernel)
        self.zeros = {i.result.id for i in instrs(kernel.body)
                      if i.op is Op.CONST and i.result is not None and i.attrs[0] == 0}
        self.table: Value | None = None  # narrow: the int64 table parameter, and its view
        self.table32: Value | None = None
        self.depths: dict[int, Var] = {}  # narrow: uint32 Vars of the depth Vars, by id
        if narrow:
            k = table_param(kernel)
            if k is not None:
                self.table = kernel.params[k].value
                self.table32 = self.em.value(ArrayType(_dtypes.int32, 1))
                ids = _depth_vars(kernel)
                for stmt in instrs(kernel.body):
                    if stmt.op in (Op.LOAD_VAR, Op.STORE_VAR):
                        var = stmt.attrs[0]
                        if var.id in ids and var.id not in self.depths:
                            self.depths[var.id] = self.em.var(var.name, _dtypes.uint32)

    def u32(self, v: Value) -> Value:
        return self.em.cast(v, _dtypes.uint32)

    def one(self, like: Value) -> Value:
        return self.em.const(1, like.type)

    def load_table(self, at: Value) -> Value:
        """Narrow: the table element at uint32 `at` (the low half of the int64), as uint32."""
        assert self.table32 is not None
        em = self.em
        return self.u32(em.emit(Op.LOAD, self.table32, em.emit(Op.ADD, at, at)))

    def instr(self, instr: Instr) -> list[Stmt]:
        instr = self.args(instr)
        if self.table32 is not None:
            out = self.narrow(instr)
            if out is not None:
                return out
        if instr.op not in _STACK_OPS:
            return [instr]
        em = self.em
        assert instr.result is not None
        with em.region() as out, em.at(instr.loc):
            if instr.op is Op.ADSTACK_POP:
                d = instr.args[0]
                self.define(instr.result, Op.SUB, d, self.one(d))
            elif instr.op is Op.ADSTACK_TOP:
                self.top(instr)
            elif instr.op is Op.ADSTACK_OWN:
                self.own(instr)
            else:
                self.push(instr)
        return out

    def define(self, result: Value, op: Op, *args: Value) -> Value:
        """`result` = op(args), or a new Value substituted for it where its type differs
        (a uint32 depth of the narrow lowering)."""
        new = self.em.emit(op, *args)
        if new.type == result.type:
            self.em.out.pop()
            self.em.emit_into(result, op, *args)
            return result
        self.subst[result.id] = new
        return new  # type: ignore[no-any-return]

    def narrow(self, instr: Instr) -> list[Stmt] | None:
        """The narrow lowering's own rewrites: loads of the int64 table (the thread's
        prelude) read its low halves; loads and stores of depth Vars are uint32. None: the
        instruction is not one of them."""
        em = self.em
        assert self.table is not None and self.table32 is not None
        with em.region() as out, em.at(instr.loc):
            if instr.op is Op.LOAD and instr.args[0].id == self.table.id:
                assert instr.result is not None
                at = em.emit(Op.ADD, instr.args[1], instr.args[1])
                em.emit_into(instr.result, Op.CAST, em.emit(Op.LOAD, self.table32, at),
                             attrs=(instr.result.type,))
            elif instr.op is Op.LOAD_VAR and instr.attrs[0].id in self.depths:
                assert instr.result is not None
                self.subst[instr.result.id] = em.load_var(self.depths[instr.attrs[0].id])
            elif instr.op is Op.STORE_VAR and instr.attrs[0].id in self.depths:
                v = instr.args[0]
                em.store_var(self.depths[instr.attrs[0].id], self.u32(v))
            else:
                return None
        return out

    def branches(self, instr: Instr, depth: Value, access: Any) -> None:
        """`access(a, valid)` in the table branch and in the tail branch of the entry at
        `depth` (a Value); `valid` is None where the entry is valid whatever the depth."""
        em = self.em
        table, row, lim, pos, tail, end, run, base, width = instr.args[1:10]
        no_row, pos_zero = lim.id in self.zeros, pos.id in self.zeros
        if self.table32 is not None:
            depth, row, lim, pos, tail, end, run, base, width = (
                self.u32(v) for v in (depth, row, lim, pos, tail, end, run, base, width))
        if no_row:  # no row: every depth in the tail, `pos` apart (0: 1)
            # (the check and the offset computed apart from the thread's position `tail`,
            # so that lanes at one depth share them: numba/lanes.py)
            step = depth if pos_zero else em.emit(Op.MUL, depth, pos)
            valid = em.emit(Op.LT, step, em.emit(Op.SUB, end, tail))
            access(em.emit(Op.ADD, tail, step), valid, (tail, step))
            return
        with em.region() as in_table:
            at = em.emit(Op.ADD, row, depth)
            e = em.emit(Op.LOAD, table, at) if self.table32 is None else self.load_table(at)
            access(em.emit(Op.ADD, e, pos), None)
        with em.region() as in_tail:
            a = em.emit(Op.ADD, tail, depth)
            access(a, em.emit(Op.LT, a, end))
        with em.region() as past_run:
            em.stmt(If(em.emit(Op.LT, depth, lim), block(in_table), block(in_tail), instr.loc))
        with em.region() as in_run:
            access(em.emit(Op.ADD, base, em.emit(Op.MUL, depth, width)), None)
        em.stmt(If(em.emit(Op.LT, depth, run), block(in_run), block(past_run), instr.loc))

    def push(self, instr: Instr) -> None:
        em = self.em
        heap, depth, value = instr.args[0], instr.args[11], instr.args[12]
        overflow = instr.args[10]
        stack = instr.attrs[0]
        assert instr.result is not None
        result = self.define(instr.result, Op.ADD, depth, self.one(depth))

        def write(a: Value, valid: Value | None, parts: object = None) -> None:
            if valid is None:
                em.emit(Op.STORE, heap, a, value)
                return
            with em.region() as store:
                em.emit(Op.STORE, heap, a, value)
            with em.region() as record:
                em.emit(Op.ATOMIC_MAX, overflow, em.i64(stack.id),
                        em.cast(result, _dtypes.int64), attrs=(stack,))
            em.stmt(If(valid, block(store), block(record), instr.loc))

        self.branches(instr, depth, write)

    def top(self, instr: Instr) -> None:
        em = self.em
        heap = instr.args[0]
        assert instr.result is not None
        out = em.var("top", instr.attrs[0].dtype)

        def read(a: Value, valid: Value | None,
                 parts: tuple[Value, Value] | None = None) -> None:
            if valid is None:
                safe = a
            elif parts is None:
                safe = em.emit(Op.SELECT, valid, a, em.const(0, a.type))
            else:  # the tail's first entry
                safe = em.emit(Op.ADD, parts[0], em.emit(Op.SELECT, valid, parts[1],
                                                         em.const(0, parts[1].type)))
            em.store_var(out, em.emit(Op.LOAD, heap, safe))

        d = instr.args[10]
        self.branches(instr, em.emit(Op.SUB, d, self.one(d)), read)
        em.emit_into(instr.result, Op.LOAD_VAR, attrs=(out,))

    def own(self, instr: Instr) -> None:
        em = self.em
        table, row, lim, pos = instr.args
        narrow = self.table32 is not None
        if narrow:
            row, lim, pos = (self.u32(v) for v in (row, lim, pos))
        it = row.type
        one = em.const(1, it)
        lo_v, hi_v = em.var("own_lo", it), em.var("own_hi", it)
        em.store_var(lo_v, em.const(0, it))
        em.store_var(hi_v, lim)
        with em.region() as test:
            searching = em.emit(Op.LT, em.load_var(lo_v), em.load_var(hi_v))
        with em.region() as step:
            mid = em.emit(Op.FLOORDIV, em.emit(Op.ADD, em.load_var(lo_v), em.load_var(hi_v)),
                          em.const(2, it))
            at = em.emit(Op.ADD, row, mid)
            nxt = em.emit(Op.ADD, at, one)
            count = (em.emit(Op.SUB, self.load_table(nxt), self.load_table(at)) if narrow else
                     em.emit(Op.SUB, em.emit(Op.LOAD, table, nxt), em.emit(Op.LOAD, table, at)))
            with em.region() as deeper:
                em.store_var(lo_v, em.emit(Op.ADD, mid, one))
            with em.region() as shallower:
                em.store_var(hi_v, mid)
            em.stmt(If(em.emit(Op.LT, pos, count), block(deeper), block(shallower), instr.loc))
        em.stmt(While(block(test), searching, block(step), instr.loc))
        assert instr.result is not None
        if narrow:
            em.emit_into(instr.result, Op.CAST, em.load_var(lo_v), attrs=(instr.result.type,))
        else:
            em.emit_into(instr.result, Op.LOAD_VAR, attrs=(lo_v,))


def lower_adstack(kernel: KernelIR) -> KernelIR:
    """Replace the adstack ops by memory ops (see the module docstring); narrow positions
    where `kernel` is `narrowed`."""
    if not any(i.op in _STACK_OPS for i in instrs(kernel.body)):
        return kernel
    low = _Lower(kernel, bool(dict(kernel.meta).get(NARROW)))
    out = low.run(kernel)
    if low.table is None or low.table32 is None:
        return out
    params = tuple(Param(p.name, low.table32) if p.value.id == low.table.id else p
                   for p in kernel.params)
    return KernelIR(out.name, params, out.body, out.loc, out.meta)
