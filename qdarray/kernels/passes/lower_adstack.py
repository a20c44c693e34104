"""lower_adstack: the adstack ops (ops/adstack.py) as plain memory ops and branches, so that
code generators never spell them.

    ADSTACK_PUSH(heap, table, row, lim, pos, tail, end, overflow, depth, value) -> next
        next = depth + 1
        if depth < lim:   a = table[row + depth] + pos;  e = table[row + depth + 1]
                          if a < e: heap[a] = value  else: ATOMIC_MAX(overflow, stack.id, next)
        else:             a = tail + depth
                          if a < end: heap[a] = value  else: ATOMIC_MAX(...)
    ADSTACK_POP(depth) -> depth - 1
    ADSTACK_TOP(heap, table, row, lim, pos, tail, end, depth) -> the entry at depth - 1,
        read through a local set in each branch (heap[0] where the entry is not valid)

The table branch reads two table elements; the tail branch none (a thread whose group's row
is empty, `lim` 0, as on CPUs, only ever takes it). The overflow branch's atomic carries the
stack's `AdStack` in its attrs: it records a rare failure, so code generators leave it as it
is (no privatized or block-reduced accumulator, codegen/block_sums.py) and name reverse mode
when the device lacks 64-bit atomics. Where a thread's entries are (table, row, lim, pos,
tail, end) is reverse mode's (ad/adstack.py).
"""

from __future__ import annotations

from ..emit import Emitter, block
from ..ir import If, Instr, KernelIR, Op, Stmt, Value, instrs
from .rewrite import Rewriter

_STACK_OPS = frozenset({Op.ADSTACK_PUSH, Op.ADSTACK_POP, Op.ADSTACK_TOP})


class _Lower(Rewriter):
    def __init__(self, kernel: KernelIR) -> None:
        super().__init__()
        self.em = Emitter.after(kernel)

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
            else:
                self.push(instr, one)
        return out

    def branches(self, instr: Instr, depth: Value, access: object) -> None:
        """`access(a, valid)` in the table branch and in the tail branch of the entry at
        `depth` (a Value)."""
        em = self.em
        table, row, lim, pos, tail, end = instr.args[1:7]
        with em.region() as in_table:
            at = em.emit(Op.ADD, row, depth)
            a = em.emit(Op.ADD, em.emit(Op.LOAD, table, at), pos)
            e = em.emit(Op.LOAD, table, em.emit(Op.ADD, at, em.i64(1)))
            access(a, em.emit(Op.LT, a, e))  # type: ignore[operator]
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

        def write(a: Value, valid: Value) -> None:
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

        def read(a: Value, valid: Value) -> None:
            safe = em.emit(Op.SELECT, valid, a, em.i64(0))
            em.store_var(out, em.emit(Op.LOAD, heap, safe))

        self.branches(instr, em.emit(Op.SUB, instr.args[7], one), read)
        em.emit_into(instr.result, Op.LOAD_VAR, attrs=(out,))


def lower_adstack(kernel: KernelIR) -> KernelIR:
    """Replace the adstack ops by memory ops (see the module docstring)."""
    if not any(i.op in _STACK_OPS for i in instrs(kernel.body)):
        return kernel
    return _Lower(kernel).run(kernel)
