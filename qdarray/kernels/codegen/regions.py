"""Analyses of regions that code generators share: the values a parallel body reads from
outside (which become arguments of a per-thread function)."""

from __future__ import annotations

from typing import Any

from ..ir import Block, For, Instr, Op, Value, operands, walk


def free_values(body: Block, indices: list[Value]) -> tuple[list[Value], list[Any]]:
    """Values and locals a parallel body reads but does not define (passed as arguments)."""
    defined = {v.id for v in indices}
    used: dict[int, Value] = {}
    stored: set[int] = set()
    loaded: dict[int, Any] = {}
    for stmt in walk(body):
        if isinstance(stmt, Instr):
            if stmt.result is not None:
                defined.add(stmt.result.id)
            if stmt.op is Op.STORE_VAR:
                stored.add(stmt.attrs[0].id)
            elif stmt.op is Op.LOAD_VAR:
                loaded[stmt.attrs[0].id] = stmt.attrs[0]
        elif isinstance(stmt, For):
            defined.add(stmt.index.id)
        for v in operands(stmt):
            used[v.id] = v
    values = [v for k, v in sorted(used.items()) if k not in defined]
    locals_ = [var for k, var in sorted(loaded.items()) if k not in stored]
    return values, locals_
