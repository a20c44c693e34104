"""lower_views: a view parameter `v` becomes (base `v`, `v@offset`, `v@size`).

`LOAD(v, i)` becomes `LOAD(base, offset + i)` (likewise stores and atomics), and `SHAPE(v, 0)`
becomes the size parameter, so code generators only ever see arrays.
"""

from __future__ import annotations

from ... import _dtypes
from ..ir import Instr, KernelIR, Op, Param, Stmt, Value, max_ids
from ..types import ArrayType, ViewType
from .rewrite import Rewriter

_ACCESSES = frozenset({Op.LOAD, Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})


class _Lower(Rewriter):
    def __init__(self, kernel: KernelIR) -> None:
        super().__init__()
        self.next_id = max_ids(kernel)[0] + 1
        self.views: dict[int, tuple[Value, Value, Value]] = {}
        params: list[Param] = []
        for p in kernel.params:
            if isinstance(p.value.type, ViewType):
                base = self.new(ArrayType(p.value.type.dtype, 1))
                offset = self.new(_dtypes.int64)
                size = self.new(_dtypes.int64)
                self.views[p.value.id] = (base, offset, size)
                params += [Param(p.name, base), Param(f"{p.name}@offset", offset),
                           Param(f"{p.name}@size", size)]
            else:
                params.append(p)
        self.params = tuple(params)

    def new(self, t: object) -> Value:
        v = Value(self.next_id, t)  # type: ignore[arg-type]
        self.next_id += 1
        return v

    def instr(self, instr: Instr) -> list[Stmt]:
        instr = self.args(instr)
        if not instr.args or instr.args[0].id not in self.views:
            return [instr]
        base, offset, size = self.views[instr.args[0].id]
        if instr.op is Op.SHAPE:
            self.subst[instr.result.id] = size  # type: ignore[union-attr]
            return []
        assert instr.op in _ACCESSES, instr.op
        out: list[Stmt] = []
        index = instr.args[1]
        if index.type is not _dtypes.int64:
            wide = self.new(_dtypes.int64)
            out.append(Instr(Op.CAST, wide, (index,), (_dtypes.int64,), instr.loc))
            index = wide
        flat = self.new(_dtypes.int64)
        out.append(Instr(Op.ADD, flat, (offset, index), (), instr.loc))
        out.append(Instr(instr.op, instr.result, (base, flat) + instr.args[2:], instr.attrs,
                         instr.loc))
        return out


def lower_views(kernel: KernelIR) -> KernelIR:
    """Replace view parameters by (base array, offset, size)."""
    if not any(isinstance(p.value.type, ViewType) for p in kernel.params):
        return kernel
    lower = _Lower(kernel)
    body = lower.block(kernel.body)
    return KernelIR(kernel.name, lower.params, body, kernel.loc, kernel.meta)
