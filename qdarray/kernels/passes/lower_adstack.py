"""lower_adstack: the adstack ops (ops/adstack.py) as plain memory ops and one branch, so that
code generators never spell them.

    ADSTACK_PUSH(heap, base, cap, overflow, depth, value) -> next
        next = depth + 1
        if depth < cap:   heap[base + depth] = value
        else:             ATOMIC_MAX(overflow, stack.id, next)    # attrs (stack,)
    ADSTACK_POP(depth) -> depth - 1
    ADSTACK_TOP(heap, base, cap, depth) -> heap[base + min(depth, cap) - 1]

The overflow branch's atomic carries the stack's `AdStack` in its attrs: it records a rare
failure, so code generators leave it as it is (no privatized or block-reduced accumulator,
codegen/block_sums.py) and name reverse mode when the device lacks 64-bit atomics. Where a
stack's slice lives (`base`: the per-thread indirection) is reverse mode's (ad/adstack.py);
the address within the slice is `base + depth` here, the one place a layout that interleaves
threads would change.
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
                heap, base, cap, depth = instr.args
                at = em.emit(Op.SUB, em.emit(Op.ADD, base, em.emit(Op.MIN, depth, cap)), one)
                em.emit_into(instr.result, Op.LOAD, heap, at)
            else:
                self.push(instr, one)
        return out

    def push(self, instr: Instr, one: Value) -> None:
        em = self.em
        heap, base, cap, overflow, depth, value = instr.args
        stack = instr.attrs[0]
        assert instr.result is not None
        em.emit_into(instr.result, Op.ADD, depth, one)
        fits = em.emit(Op.LT, depth, cap)
        with em.region() as write:
            em.emit(Op.STORE, heap, em.emit(Op.ADD, base, depth), value)
        with em.region() as record:
            em.emit(Op.ATOMIC_MAX, overflow, em.i64(stack.id), instr.result, attrs=(stack,))
        em.stmt(If(fits, block(write), block(record), instr.loc))


def lower_adstack(kernel: KernelIR) -> KernelIR:
    """Replace the adstack ops by memory ops (see the module docstring)."""
    if not any(i.op in _STACK_OPS for i in instrs(kernel.body)):
        return kernel
    return _Lower(kernel).run(kernel)
