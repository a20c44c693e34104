"""The generated kernel of a fused elementwise chain: its IR, built once per `FusedSpec`, and
its launcher from the device's kernel target (the compiler user kernels go through: on the
CPU a numba module whose parallel loop runs in SIMD lanes over numba's thread pool, cached
on disk).

`out_k[i] = node_k(...)` for every index `i` of the outputs' shape: parameters are the
outputs, then the input arrays (of the same number of dimensions: broadcast inputs come as
stride-0 views), then one scalar per scalar operand. The body loads each input once per
element, computes the nodes in trace order, each from its operands converted to its compute
dtype with the library body of its function, converted to its result dtype (what the eager
call stores), and stores the outputs. Nodes not stored are never materialised.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import _dtypes
from .._dtypes import DType
from ..kernels.emit import Emitter, block
from ..kernels.ir import SEPARATE_ROUNDING, For, If, KernelIR, Op, Param, Value
from ..kernels.library import elementwise as bodies
from ..kernels.library import reductions
from ..kernels.types import ArrayType


@dataclass(frozen=True)
class Node:
    """One elementwise call: `name` on `operands`, each ("in", k) an input array, ("node", j)
    an earlier node, ("scalar", k) a scalar parameter; computed in `compute` (`where`: its
    condition in bool), stored as `out`."""

    name: str
    compute: DType
    out: DType
    operands: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class FusedSpec:
    """The signature of one fused kernel (module docstring). With `reduce` = (op, node) the
    kernel also reduces that node's values (op `sum`, `max` or `min`) into partials."""

    ndim: int
    inputs: tuple[DType, ...]
    scalars: tuple[DType, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]
    reduce: tuple[str, int] | None = None


class Builder:
    """The parameters of a fused kernel and the element computation."""

    def __init__(self, spec: FusedSpec, outputs: bool = True) -> None:
        self.spec = spec
        self.em = Emitter(0, 0)
        self.params: list[Param] = []
        self.outs = [self.param(f"out{k}", ArrayType(spec.nodes[j].out, spec.ndim))
                     for k, j in enumerate(spec.outputs)] if outputs else []
        self.loads: dict[int, Value] = {}
        self.ins = [self.param(f"x{k}", ArrayType(d, spec.ndim))
                    for k, d in enumerate(spec.inputs)]
        self.scalars = [self.param(f"s{k}", d) for k, d in enumerate(spec.scalars)]
        self.needed = _needed(spec)

    def param(self, name: str, t: Any) -> Value:
        v = self.em.value(t)
        self.params.append(Param(name, v))
        return v

    def move_to_end(self, values: list[Value]) -> None:
        """Put the parameters of `values` after the others (in their order)."""
        ids = {v.id for v in values}
        self.params = ([p for p in self.params if p.value.id not in ids]
                       + [p for p in self.params if p.value.id in ids])

    def element(self, idx: list[Value], store: bool = True) -> dict[int, Value]:
        """Compute the needed nodes at `idx` and (with `store`) store the outputs; returns
        the nodes (and keeps each input's load in `loads`)."""
        em, spec = self.em, self.spec
        loaded: dict[int, Value] = {}
        self.loads = loaded
        values: dict[int, Value] = {}
        for j, node in enumerate(spec.nodes):
            if j not in self.needed:
                continue
            args = []
            for p, (kind, k) in enumerate(node.operands):
                if kind == "in":
                    if k not in loaded:
                        loaded[k] = em.emit(Op.LOAD, self.ins[k], *idx)
                    v = loaded[k]
                elif kind == "node":
                    v = values[k]
                else:
                    v = self.scalars[k]
                select = node.name == "where" and p == 0  # the condition stays bool
                args.append(em.cast(v, _dtypes.bool if select else node.compute))
            if node.name == "where":
                result = em.emit(Op.SELECT, *args)
            else:
                result = bodies.body(node.name)(em, node.compute, args)
            values[j] = em.cast(result, node.out)
        if store:
            for out, j in zip(self.outs, spec.outputs, strict=True):
                em.emit(Op.STORE, out, *idx, values[j])
        return values

    def kernel(self, stmts: list[Any]) -> KernelIR:
        return KernelIR("qd_jit_fused", tuple(self.params), block(stmts),
                        meta=((SEPARATE_ROUNDING, True),))


@functools.cache
def fused_ir(spec: FusedSpec) -> KernelIR:
    """The IR of `spec` (module docstring): a parallel nest over the outputs' shape."""
    if spec.reduce is not None:
        return _reduce_ir(spec)
    k = Builder(spec)
    em = k.em
    with em.region() as top:
        ends = [em.emit(Op.SHAPE, k.outs[0], attrs=(d,)) for d in range(spec.ndim)]
        zero = em.i64(0)
        idx = [em.value(_dtypes.int64) for _ in ends]
        with em.region() as inner:
            k.element(idx)
        body = block(inner)
        for d in range(len(ends) - 1, -1, -1):
            body = block([For(idx[d], zero, ends[d], body, True)])
        top.extend(body.stmts)
    return k.kernel(top)


LANES = 32  # work-items that read consecutive elements (a lane group of the CPU target)


def _reduce_ir(spec: FusedSpec) -> KernelIR:
    """One dimension of n elements (the first input's), in blocks of `size` elements (the
    last parameter, a multiple of LANES): a parallel nest over (block b, lane l), work-item
    (b, l) reducing elements b * size + l, + LANES, + 2 LANES, ... of its block in order
    into part[b, l] (`part`, the parameter before `size`, has shape (blocks, LANES)). The
    lane is the nest's innermost index, so neighbouring lanes read neighbouring elements
    (SIMD lanes load them together), and each block streams through contiguous memory."""
    op, node = spec.reduce  # type: ignore[misc]
    k = Builder(spec)
    em = k.em
    acc_t = spec.nodes[node].out
    part = k.param("part", ArrayType(acc_t, 2))
    size = k.param("size", _dtypes.int64)
    combine = reductions.COMBINE[op]
    with em.region() as top:
        lanes = em.i64(LANES)
        n = em.emit(Op.SHAPE, k.ins[0], attrs=(0,))
        blocks = em.emit(Op.SHAPE, part, attrs=(0,))
        b = em.value(_dtypes.int64)
        lane = em.value(_dtypes.int64)
        t = em.value(_dtypes.int64)
        with em.region() as item:
            first = em.emit(Op.MUL, b, size)
            end = em.emit(Op.MIN, n, em.emit(Op.ADD, first, size))
            span = em.emit(Op.MAX, em.emit(Op.SUB, end, first), em.i64(0))
            count = em.emit(Op.FLOORDIV, em.emit(Op.ADD, span, em.i64(LANES - 1)), lanes)
            start = em.emit(Op.ADD, first, lane)
            acc = em.var("acc", acc_t)
            em.store_var(acc, em.const(reductions.identity(op, acc_t), acc_t))
            with em.region() as step:
                i = em.emit(Op.ADD, start, em.emit(Op.MUL, t, lanes))
                with em.region() as inside:
                    v = k.element([i])[node]
                    em.store_var(acc, combine(em, acc_t, em.load_var(acc), v))
                em.stmt(If(em.emit(Op.LT, i, end), block(inside), block([])))
            em.stmt(For(t, em.i64(0), count, block(step), False))
            em.emit(Op.STORE, part, b, lane, em.load_var(acc))
        inner = For(lane, em.i64(0), lanes, block(item), True)
        em.stmt(For(b, em.i64(0), blocks, block([inner]), True))
    return k.kernel(top)


def _needed(spec: FusedSpec) -> set[int]:
    needed = set(spec.outputs) | ({spec.reduce[1]} if spec.reduce else set())
    for j in range(len(spec.nodes) - 1, -1, -1):
        if j in needed:
            needed.update(k for kind, k in spec.nodes[j].operands if kind == "node")
    return needed


def _as_is(x: Any, out: list[Any]) -> None:
    out.append(x)


_LAUNCHERS: dict[tuple[Any, Any], Any] = {}


def launcher(spec: FusedSpec, device: Any) -> Any:
    """The compiled launcher of `spec` on `device` (`launcher(args)`, arguments as native
    arrays and NumPy scalars in parameter order), compiled once per process; the target
    keeps the module on disk."""
    return compiled(spec, lambda: fused_ir(spec), device)


def compiled(key: Any, build: Any, device: Any) -> Any:
    """The launcher of the kernel `build()` on `device`, compiled once per `key`."""
    found = _LAUNCHERS.get((key, device))
    if found is not None:
        return found
    from ..kernels.passes import pipeline

    target = device.backend.target
    kernel = pipeline(build(), debug=False, lower=target.lowers_views)
    made = target.launcher(kernel, [_as_is] * len(kernel.params), [], debug=False,
                           device=device)
    _LAUNCHERS[(key, device)] = made
    return made
