"""scalarize: vector and matrix values become their scalar components.

The frontend builds vector values with VEC_PACK, reads components with VEC_ELEM and keeps
vector locals in Vars of a `VectorType` (`ops/vector.py`). This pass, the first of every
compile (and of the forward kernel reverse mode transforms), maps every vector Value to the
tuple of its component Values and splits every vector Var into one scalar Var per
component: VEC_PACK and VEC_ELEM disappear, a STORE_VAR of a vector becomes one STORE_VAR
per component and a LOAD_VAR one LOAD_VAR per component. A component stored back unchanged
(`v[k] = s` stores the whole vector: the other components are the values just loaded) is
not stored again, so reverse mode keeps only the component that changed. Afterwards the
kernel holds only scalar code, so later passes, the code generators, the interpreter and
reverse mode need nothing for vectors.
"""

from __future__ import annotations

from ..emit import max_ids
from ..ir import Block, Instr, KernelIR, Op, Stmt, Value, Var, instrs
from ..vector_types import VectorType
from .rewrite import Rewriter


class _Scalarize(Rewriter):
    def __init__(self, kernel: KernelIR) -> None:
        super().__init__()
        vmax, varmax = max_ids(kernel)
        self.next_value = vmax + 1
        self.next_var = varmax + 1
        self.parts: dict[int, tuple[Value, ...]] = {}
        self.vars: dict[int, tuple[Var, ...]] = {}
        # component Var id -> the Value it holds, known since the last LOAD_VAR or STORE_VAR
        # of it in the current straight-line stretch (cleared at every region boundary)
        self.holds: dict[int, int] = {}

    def block(self, block: Block) -> Block:
        self.holds.clear()
        out = super().block(block)
        self.holds.clear()
        return out

    def stmt(self, stmt: Stmt) -> list[Stmt]:
        if not isinstance(stmt, Instr):
            self.holds.clear()
        return super().stmt(stmt)

    def split(self, var: Var) -> tuple[Var, ...]:
        out = self.vars.get(var.id)
        if out is None:
            vt = var.dtype
            assert isinstance(vt, VectorType)
            out = tuple(Var(self.next_var + k, f"{var.name}_{k}", vt.dtype)
                        for k in range(vt.size))
            self.next_var += vt.size
            self.vars[var.id] = out
        return out

    def instr(self, instr: Instr) -> list[Stmt]:
        instr = self.args(instr)
        if instr.op is Op.VEC_PACK:
            assert instr.result is not None
            self.parts[instr.result.id] = instr.args
            return []
        if instr.op is Op.VEC_ELEM:
            assert instr.result is not None
            self.subst[instr.result.id] = self.parts[instr.args[0].id][instr.attrs[0]]
            return []
        if instr.op is Op.STORE_VAR and isinstance(instr.attrs[0].dtype, VectorType):
            stores: list[Stmt] = []
            for p, v in zip(self.parts[instr.args[0].id], self.split(instr.attrs[0]),
                            strict=True):
                if self.holds.get(v.id) != p.id:
                    stores.append(Instr(Op.STORE_VAR, None, (p,), (v,) + instr.attrs[1:],
                                        instr.loc))
                    self.holds[v.id] = p.id
            return stores
        if instr.op is Op.LOAD_VAR and isinstance(instr.attrs[0].dtype, VectorType):
            assert instr.result is not None
            out: list[Stmt] = []
            values = []
            for v in self.split(instr.attrs[0]):
                value = Value(self.next_value, v.dtype)
                self.next_value += 1
                values.append(value)
                out.append(Instr(Op.LOAD_VAR, value, (), (v,) + instr.attrs[1:], instr.loc))
                self.holds[v.id] = value.id
            self.parts[instr.result.id] = tuple(values)
            return out
        assert not any(isinstance(a.type, VectorType) for a in instr.args), instr
        return [instr]


def scalarize(kernel: KernelIR) -> KernelIR:
    """Replace vector values and vector locals by their scalar components."""
    if not any(i.op in (Op.VEC_PACK, Op.LOAD_VAR) and isinstance(
            i.result.type if i.result is not None else None, VectorType)
            for i in instrs(kernel.body)):
        return kernel
    return _Scalarize(kernel).run(kernel)
