"""bounds_checks (debug mode): a CHECK_INDEX before every global load, store and atomic.

Each check gets a site id; `attrs = (site, parameter name, "array" | "view")` and the
access's source location identify it when it fails.
"""

from __future__ import annotations

from ... import _dtypes
from ..ir import Instr, KernelIR, Op, Stmt, Value, max_ids
from ..types import ViewType
from .resolve_views import first_free_site
from .rewrite import Rewriter

_ACCESSES = frozenset({Op.LOAD, Op.STORE, Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})


class _Checks(Rewriter):
    def __init__(self, kernel: KernelIR) -> None:
        super().__init__()
        self.names = {p.value.id: p.name for p in kernel.params}
        self.next_id = max_ids(kernel)[0] + 1
        self.sites = first_free_site(kernel)  # after the checks resolve_views made

    def new(self, t: object) -> Value:
        v = Value(self.next_id, t)  # type: ignore[arg-type]
        self.next_id += 1
        return v

    def instr(self, instr: Instr) -> list[Stmt]:
        if instr.op not in _ACCESSES:
            return [instr]
        mem = instr.args[0]
        nidx = len(instr.args) - (1 if instr.op is Op.LOAD else 2)
        indices = instr.args[1:1 + nidx]
        out: list[Stmt] = []
        pairs: list[Value] = []
        for axis, index in enumerate(indices):
            extent = self.new(_dtypes.int64)
            out.append(Instr(Op.SHAPE, extent, (mem,), (axis,), instr.loc))
            pairs += [index, extent]
        kind = "view" if isinstance(mem.type, ViewType) else "array"
        name = self.names.get(mem.id, f"%{mem.id}")
        out.append(Instr(Op.CHECK_INDEX, None, tuple(pairs), (self.sites, name, kind),
                         instr.loc))
        self.sites += 1
        out.append(instr)
        return out


def bounds_checks(kernel: KernelIR) -> KernelIR:
    """Insert an index check before every memory access."""
    return _Checks(kernel).run(kernel)
