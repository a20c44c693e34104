"""lower_exits: `break` and `continue` become flags, so every loop body is a structured region.

Reverse mode replays a loop body backwards, so it must know which parts of an iteration ran.
After this pass:

- `continue` sets the loop's `skip` flag, and the statements after anything that may have set
  it run under `if not skip`; `skip` is cleared when an iteration starts;
- `break` sets `skip` and the loop's `brk` flag; the loop body ends with the *exit test*
  `if brk: break` (the only Break left in the IR), so the loop stops after the same number of
  iterations as before: a loop with an exit test carries its real trip count;
- a `while` whose condition needs more than pure expressions (stores, branches: `and`/`or`
  with side effects, inlined funcs) becomes `while True:` with the condition at the top of
  the body and `if not cond: break`, then lowered as above.

The result computes exactly what the input computes (the interpreter checks this in tests).
"""

from __future__ import annotations

from ... import _dtypes
from ...kernels.emit import Emitter, block
from ...kernels.ir import Block, Break, Continue, For, If, Instr, KernelIR, Op, Stmt, Var, While

_SIMPLE_COND_OPS = frozenset({Op.STORE_VAR, Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN,
                              Op.ATOMIC_MAX, Op.CHECK_INDEX})


def is_exit_test(stmt: Stmt) -> bool:
    """`if flag: break`, the statement lower_exits ends a loop body with."""
    return (isinstance(stmt, If) and len(stmt.then_body.stmts) == 1
            and isinstance(stmt.then_body.stmts[0], Break) and not stmt.else_body.stmts)


def has_exit_test(body: Block) -> bool:
    return bool(body.stmts) and is_exit_test(body.stmts[-1])


def _exits(stmts: tuple[Stmt, ...]) -> tuple[bool, bool]:
    """(has break, has continue) targeting the loop whose body is `stmts`."""
    brk = cont = False
    for s in stmts:
        if isinstance(s, Break):
            brk = True
        elif isinstance(s, Continue):
            cont = True
        elif isinstance(s, If):
            for b in (s.then_body, s.else_body):
                b1, c1 = _exits(b.stmts)
                brk, cont = brk or b1, cont or c1
    return brk, cont


def _simple_cond(cond_body: Block) -> bool:
    return all(isinstance(s, Instr) and s.op not in _SIMPLE_COND_OPS for s in cond_body.stmts)


class _Lower:
    def __init__(self, em: Emitter) -> None:
        self.em = em

    def block(self, b: Block) -> Block:
        out: list[Stmt] = []
        for s in b.stmts:
            out += self.stmt(s)
        return block(out)

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, If):
            return [If(s.cond, self.block(s.then_body), self.block(s.else_body), s.loc)]
        if isinstance(s, (For, While)):
            return self.loop(s)
        if isinstance(s, (Break, Continue)):
            raise AssertionError(f"{s.op.name} outside the loop being lowered")
        return [s]

    def canonical_while(self, s: While) -> While:
        """`while True:` with the condition computed at the top of the body."""
        em = self.em
        with em.at(s.loc), em.region() as cond:
            true = em.const(True, _dtypes.bool)
        with em.at(s.loc), em.region() as test:
            stop = em.emit(Op.NOT, s.cond)
        exit_if = If(stop, block([Break(s.loc)]), block([]), s.loc)
        body = list(s.cond_body.stmts) + test + [exit_if] + list(s.body.stmts)
        return While(block(cond), true, block(body), s.loc)

    def loop(self, s: For | While) -> list[Stmt]:
        if isinstance(s, While) and not _simple_cond(s.cond_body):
            s = self.canonical_while(s)
        has_break, has_continue = _exits(s.body.stmts)
        if not (has_break or has_continue):
            return [self.rebuild(s, self.block(s.body))]
        em = self.em
        pre: list[Stmt] = []
        with em.at(s.loc):
            skip = em.var("skip", _dtypes.bool)
            brk = em.var("brk", _dtypes.bool) if has_break else None
            if brk is not None:
                with em.region() as pre:
                    em.store_var(brk, em.const(False, _dtypes.bool))
            with em.region() as start:
                em.store_var(skip, em.const(False, _dtypes.bool))
            body, _ = self.body(s.body.stmts, skip, brk)
            end: list[Stmt] = []
            if brk is not None:
                with em.region() as end:
                    flag = em.load_var(brk)
                end.append(If(flag, block([Break(s.loc)]), block([]), s.loc))
        return pre + [self.rebuild(s, block(start + body + end))]

    @staticmethod
    def rebuild(s: For | While, body: Block) -> For | While:
        if isinstance(s, For):
            return For(s.index, s.begin, s.end, body, s.parallel, s.loc)
        return While(s.cond_body, s.cond, body, s.loc)

    def body(self, stmts: tuple[Stmt, ...], skip: Var, brk: Var | None
             ) -> tuple[list[Stmt], bool]:
        """Lower the exits of one loop in `stmts`; returns (statements, may have exited)."""
        em = self.em
        out: list[Stmt] = []
        for k, s in enumerate(stmts):
            if isinstance(s, (Break, Continue)):
                with em.at(s.loc), em.region() as flags:
                    true = em.const(True, _dtypes.bool)
                    if isinstance(s, Break):
                        assert brk is not None
                        em.store_var(brk, true)
                    em.store_var(skip, true)
                return out + flags, True  # anything after is unreachable
            if isinstance(s, If):
                then, t_exits = self.body(s.then_body.stmts, skip, brk)
                other, e_exits = self.body(s.else_body.stmts, skip, brk)
                out.append(If(s.cond, block(then), block(other), s.loc))
                if t_exits or e_exits:
                    rest, _ = self.body(stmts[k + 1:], skip, brk)
                    if rest:
                        with em.at(s.loc), em.region() as guard:
                            go = em.emit(Op.NOT, em.load_var(skip))
                        out += guard + [If(go, block(rest), block([]), s.loc)]
                    return out, True
                continue
            out += self.stmt(s)
        return out, False


def lower_exits(kernel: KernelIR, em: Emitter) -> KernelIR:
    """The kernel without Break/Continue statements other than loop exit tests."""
    return kernel.replace_body(_Lower(em).block(kernel.body))
