"""What the parts of the reverse transform that emit whole constructs (transform/checkpoint.py,
transform/replay.py) use of the generator (`Sweep`, which `transform.Gen` is), and `Env`: the
reverse sweep's values of forward Values for one emitted region. This module imports neither the
generator nor those parts, so each imports it and none imports another back."""

from __future__ import annotations

from typing import Any, Protocol

from ...kernels.emit import Emitter
from ...kernels.ir import Instr, Op, Value, Var
from .adstack import StackInfo, Stacks
from .structure import Node, Region, Seg, Structure


class Sweep(Protocol):
    """The generator of one reverse kernel as its construct emitters see it."""

    em: Emitter
    st: Structure
    stacks: Stacks
    loops: list[Node]
    trips: dict[int, Value]
    subst: dict[int, Value]
    captured: dict[int, dict[int, Value]]
    assigned: set[int]
    entry_vars: dict[int, set[int]]
    cond_copies: dict[int, Var]
    checkpointed: dict[int, Any]
    stride: Value | None
    suppress: bool

    def capture(self, node: Node) -> None: ...

    def copy_var(self, name: str, dtype: Any) -> Var: ...

    def entry_copy(self, seg: Seg, var: Var) -> Var: ...

    def fwd_block(self, reg: Region) -> None: ...

    def fwd_node(self, node: Node, start: Any = None) -> None: ...

    def rev_block(self, reg: Region, env: Env) -> None: ...

    def var_stack(self, top: Node, var: Var) -> StackInfo: ...

    def captured_value(self, top: Node | None, var: Var) -> Value: ...

    def check_recompute(self, instr: Instr) -> None: ...

    def clone(self, instr: Instr, env: Env) -> Value: ...


class Env:
    """Reverse-sweep values of forward Values, for one emitted region (and its parents)."""

    def __init__(self, gen: Sweep, parent: Env | None, top_node: Node | None,
                 mapping: dict[int, Value] | None = None) -> None:
        self.gen = gen
        self.parent = parent
        self.top_node = top_node
        self.map: dict[int, Value] = dict(mapping or {})

    def lookup(self, vid: int) -> Value | None:
        env: Env | None = self
        while env is not None:
            v = env.map.get(vid)
            if v is not None:
                return v
            env = env.parent
        return None

    def get(self, v: Value) -> Value:
        found = self.lookup(v.id)
        if found is not None:
            return found
        gen = self.gen
        if gen.st.is_top_value(v):
            return gen.subst.get(v.id, v)
        instr = gen.st.instr_of.get(v.id)
        if instr is None:
            raise AssertionError(f"{v} is not available in the reverse sweep")
        if instr.op is Op.LOAD_VAR:
            out = gen.captured_value(self.top_node, instr.attrs[0])
        else:
            gen.check_recompute(instr)
            out = gen.clone(instr, self)
        self.map[v.id] = out
        return out
