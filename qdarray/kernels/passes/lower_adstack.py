"""lower_adstack: the adstack ops (ops/adstack.py) as plain memory ops and branches, so that
code generators never spell them.

    ADSTACK_PUSH(heap, table, row, lim, pos, tail, end, overflow, depth, value) -> next
        next = depth + 1
        if depth < lim:   heap[table[row + depth] + pos] = value
        else:             a = tail + depth
                          if a < end: heap[a] = value  else: ATOMIC_MAX(overflow, stack.id, next)
    ADSTACK_POP(depth) -> depth - 1
    ADSTACK_TOP(heap, table, row, lim, pos, tail, end, depth) -> the entry at depth - 1,
        read through a local set in each branch (heap[0] where the entry is not valid; the
        tail's first entry where `lim` is the constant 0)
    ADSTACK_OWN(table, row, lim, pos) -> a binary search over the depths of the row:
        lo, hi = 0, lim; while lo < hi: mid = (lo + hi) // 2
                                        if pos < table[row+mid+1] - table[row+mid]: lo = mid+1
                                        else: hi = mid

The table branch reads one table element and checks nothing: every depth below a thread's
`lim` holds an entry of it (ops/adstack.py); the tail branch reads none (a thread whose
group's row is empty, `lim` 0, as on CPUs, only ever takes it; where `lim` is the constant 0,
as in the scratch layout, the tail branch is all there is, and its entries are `pos` apart,
`tail + depth * pos`, unless `pos` is the constant 0: the scratch layout's lanes keep one
depth's entries side by side, ad/adstack.py `scratch_slice`) and checks the capacity. The
overflow branch's atomic carries the stack's `AdStack` in its attrs: it records a rare
failure, so code generators leave it as it is (no privatized or block-reduced accumulator,
codegen/block_sums.py) and name reverse mode when the device lacks 64-bit atomics. Where a
thread's entries are (table, row, lim, pos, tail, end) is reverse mode's (ad/adstack.py).
"""

from __future__ import annotations

from ..emit import Emitter, block
from ..ir import If, Instr, KernelIR, Op, Stmt, Value, While, instrs
from .rewrite import Rewriter

_STACK_OPS = frozenset({Op.ADSTACK_PUSH, Op.ADSTACK_POP, Op.ADSTACK_TOP, Op.ADSTACK_OWN})


class _Lower(Rewriter):
    def __init__(self, kernel: KernelIR) -> None:
        super().__init__()
        self.em = Emitter.after(kernel)
        self.zeros = {i.result.id for i in instrs(kernel.body)
                      if i.op is Op.CONST and i.result is not None and i.attrs[0] == 0}

    def instr(self, instr: Instr) -> list[Stmt]:
        if instr.op not in _STACK_OPS:
            return [instr]
        em = self.em
        assert instr.result is not None
        with em.region() as out, em.at(instr.loc):
            one = em.i64(1)
            if instr.op is Op.ADSTACK_POP:
                em.emit_into(instr.result, Op.SUB, instr.args[0], one)
            elif instr.op is Op.ADSTACK_TOP:
                self.top(instr, one)
            elif instr.op is Op.ADSTACK_OWN:
                self.own(instr, one)
            else:
                self.push(instr, one)
        return out

    def branches(self, instr: Instr, depth: Value, access: object) -> None:
        """`access(a, valid)` in the table branch and in the tail branch of the entry at
        `depth` (a Value); `valid` is None where the entry is valid whatever the depth."""
        em = self.em
        table, row, lim, pos, tail, end = instr.args[1:7]
        if lim.id in self.zeros:  # no row: every depth in the tail, `pos` apart (0: 1)
            # (the check and the offset computed apart from the thread's position `tail`,
            # so that lanes at one depth share them: numba_lanes.py)
            step = depth if pos.id in self.zeros else em.emit(Op.MUL, depth, pos)
            valid = em.emit(Op.LT, step, em.emit(Op.SUB, end, tail))
            access(em.emit(Op.ADD, tail, step), valid, (tail, step))  # type: ignore[operator]
            return
        with em.region() as in_table:
            at = em.emit(Op.ADD, row, depth)
            access(em.emit(Op.ADD, em.emit(Op.LOAD, table, at), pos), None)  # type: ignore[operator]
        with em.region() as in_tail:
            a = em.emit(Op.ADD, tail, depth)
            access(a, em.emit(Op.LT, a, end))  # type: ignore[operator]
        em.stmt(If(em.emit(Op.LT, depth, lim), block(in_table), block(in_tail), instr.loc))

    def push(self, instr: Instr, one: Value) -> None:
        em = self.em
        heap, depth, value = instr.args[0], instr.args[8], instr.args[9]
        overflow = instr.args[7]
        stack = instr.attrs[0]
        assert instr.result is not None
        em.emit_into(instr.result, Op.ADD, depth, one)
        result = instr.result

        def write(a: Value, valid: Value | None, parts: object = None) -> None:
            if valid is None:
                em.emit(Op.STORE, heap, a, value)
                return
            with em.region() as store:
                em.emit(Op.STORE, heap, a, value)
            with em.region() as record:
                em.emit(Op.ATOMIC_MAX, overflow, em.i64(stack.id), result, attrs=(stack,))
            em.stmt(If(valid, block(store), block(record), instr.loc))

        self.branches(instr, depth, write)

    def top(self, instr: Instr, one: Value) -> None:
        em = self.em
        heap = instr.args[0]
        assert instr.result is not None
        out = em.var("top", instr.attrs[0].dtype)

        def read(a: Value, valid: Value | None,
                 parts: tuple[Value, Value] | None = None) -> None:
            if valid is None:
                safe = a
            elif parts is None:
                safe = em.emit(Op.SELECT, valid, a, em.i64(0))
            else:  # the tail's first entry
                safe = em.emit(Op.ADD, parts[0], em.emit(Op.SELECT, valid, parts[1], em.i64(0)))
            em.store_var(out, em.emit(Op.LOAD, heap, safe))

        self.branches(instr, em.emit(Op.SUB, instr.args[7], one), read)
        em.emit_into(instr.result, Op.LOAD_VAR, attrs=(out,))


    def own(self, instr: Instr, one: Value) -> None:
        em = self.em
        table, row, lim, pos = instr.args
        i64 = instr.args[1].type
        lo_v, hi_v = em.var("own_lo", i64), em.var("own_hi", i64)
        em.store_var(lo_v, em.i64(0))
        em.store_var(hi_v, lim)
        with em.region() as test:
            searching = em.emit(Op.LT, em.load_var(lo_v), em.load_var(hi_v))
        with em.region() as step:
            mid = em.emit(Op.FLOORDIV, em.emit(Op.ADD, em.load_var(lo_v), em.load_var(hi_v)),
                          em.i64(2))
            at = em.emit(Op.ADD, row, mid)
            count = em.emit(Op.SUB, em.emit(Op.LOAD, table, em.emit(Op.ADD, at, one)),
                            em.emit(Op.LOAD, table, at))
            with em.region() as deeper:
                em.store_var(lo_v, em.emit(Op.ADD, mid, one))
            with em.region() as shallower:
                em.store_var(hi_v, mid)
            em.stmt(If(em.emit(Op.LT, pos, count), block(deeper), block(shallower), instr.loc))
        em.stmt(While(block(test), searching, block(step), instr.loc))
        assert instr.result is not None
        em.emit_into(instr.result, Op.LOAD_VAR, attrs=(lo_v,))


def lower_adstack(kernel: KernelIR) -> KernelIR:
    """Replace the adstack ops by memory ops (see the module docstring)."""
    if not any(i.op in _STACK_OPS for i in instrs(kernel.body)):
        return kernel
    return _Lower(kernel).run(kernel)
