"""The reverse of a fused kernel's result, as one generated kernel, and its tape record.

Inside a recording `qd.ad.Tape` a fused run (fusion.py) still runs its forward kernels, and
records each result it stores as one tape operation, `jit.fused`, over the kernel's inputs.
Its VJP is a generated kernel: for every element it recomputes the result's nodes from the
inputs, then walks the instructions backwards applying each op's own adjoint rule
(`kernels/ops`, through `ad.adjoint.AdjointBuilder`, as kernels' reverses do) from the
result's cotangent, and stores the cotangent of every floating-point input at that element.
The tape then sums a broadcast input's cotangent over its broadcast axes (`fit`). One launch
gives every input's cotangent; the rule keeps them for the inputs the tape asks for next.

A run whose ops have no adjoint rule on a path from an input (or a nested tape: a gradient
that is differentiated again) is recorded call by call instead, as eager code would be.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import Array
from .._autodiff import defvjp
from .._devices import CPU
from ..ad.transform.adjoint import AdjMap, AdjointBuilder
from ..kernels.emit import block
from ..kernels.ir import For, Instr, KernelIR, Op, Value
from ..kernels.ops import OPS
from ..kernels.types import ArrayType
from . import fused_kernel
from .fused_kernel import Builder, FusedSpec


class NoAdjoint(Exception):
    """An op on an active path has no adjoint rule."""


@dataclass(frozen=True)
class ReverseSpec:
    """The reverse of output `output` (its position in `spec.outputs`) of `spec`, giving the
    cotangents of the array inputs `arrays` and of the scalar parameters `scalars` (0-d
    array inputs)."""

    spec: FusedSpec
    output: int
    arrays: tuple[int, ...]
    scalars: tuple[int, ...]


class _Activity:
    def __init__(self, active: set[int]) -> None:
        self.active = active

    def value(self, vid: int) -> bool:
        return vid in self.active


class _Gen:
    """What adjoint rules of arithmetic reach through their builder: the emitter and which
    values carry a gradient."""

    def __init__(self, em: Any, active: set[int]) -> None:
        self.em = em
        self.act = _Activity(active)


class _Same:
    @staticmethod
    def get(v: Value) -> Value:
        return v  # the primal values are in scope: the forward is recomputed just before


@functools.cache
def reverse_ir(rs: ReverseSpec) -> KernelIR:
    """Params: the cotangent `g` of the output, one cotangent array per input in `arrays`
    then per scalar in `scalars`, then the forward kernel's inputs and scalars."""
    spec = rs.spec
    node = spec.outputs[rs.output]
    nd = spec.ndim
    k = Builder(FusedSpec(nd, spec.inputs, spec.scalars, spec.nodes, (node,)), outputs=False)
    em = k.em
    g_param = k.param("g", ArrayType(spec.nodes[node].out, nd))
    d_arrays = [k.param(f"d_x{j}", ArrayType(spec.inputs[j], nd)) for j in rs.arrays]
    d_scalars = [k.param(f"d_s{j}", ArrayType(spec.scalars[j], nd)) for j in rs.scalars]
    k.move_to_end(k.ins + k.scalars)
    with em.region() as top:
        ends = [em.emit(Op.SHAPE, g_param, attrs=(d,)) for d in range(nd)]
        zero = em.i64(0)
        idx = [em.value(_dtypes.int64) for _ in ends]
        with em.region() as inner:
            values = k.element(idx, store=False)
            loads = k.loads
            forward = [s for s in inner if isinstance(s, Instr)]
            active = _active(forward, loads, k.scalars)
            adj = AdjMap(em)
            result = values[node]
            g = em.cast(em.emit(Op.LOAD, g_param, *idx), result.type)
            adj.add(result, g)
            gen = _Gen(em, active)
            for instr in reversed(forward):
                if instr.result is None or instr.op is Op.LOAD:
                    continue
                g_v = adj.pop(instr.result.id)
                if g_v is None:
                    continue
                rule = OPS[instr.op].adjoint
                if rule is None:
                    raise NoAdjoint(instr.op.name)
                rule(AdjointBuilder(gen, instr, _Same, adj), instr, g_v)
            for out, j in zip(d_arrays, rs.arrays, strict=True):
                _store(em, out, idx, adj.pop(loads[j].id) if j in loads else None,
                       spec.inputs[j])
            for out, j in zip(d_scalars, rs.scalars, strict=True):
                _store(em, out, idx, adj.pop(k.scalars[j].id), spec.scalars[j])
        body = block(inner)
        for d in range(nd - 1, -1, -1):
            body = block([For(idx[d], zero, ends[d], body, True)])
        top.extend(body.stmts)
    return k.kernel(top)


def _store(em: Any, out: Value, idx: list[Value], g: Value | None, dtype: Any) -> None:
    em.emit(Op.STORE, out, *idx, em.const(0, dtype) if g is None else em.cast(g, dtype))


def _active(forward: list[Instr], loads: dict[int, Value], scalars: list[Value]) -> set[int]:
    """Floating-point values computed from the inputs (a constant's adjoint goes nowhere)."""
    active = {v.id for v in list(loads.values()) + scalars
              if getattr(v.type, "kind", "") == "f"}
    for instr in forward:
        r = instr.result
        if r is not None and getattr(r.type, "kind", "") == "f" and any(
                a.id in active for a in instr.args):
            active.add(r.id)
    return active


def differentiable(rs: ReverseSpec) -> bool:
    """Whether every op on a path from an input to the output has an adjoint rule."""
    try:
        reverse_ir(rs)
    except NoAdjoint:
        return False
    return True


class ReversePlan:
    """The VJP of one stored result of a fused kernel (module docstring): `cotangent(g,
    inputs, index)` is input `index`'s cotangent, full-shaped (the tape fits it)."""

    __slots__ = ("flat", "strided", "shape", "scalars", "reads", "last")

    def __init__(self, flat: ReverseSpec, strided: ReverseSpec, shape: tuple[int, ...],
                 scalars: list[Any], reads: list[tuple[int, Any]]) -> None:
        self.flat = flat
        self.strided = strided
        self.shape = shape
        self.scalars = scalars  # the forward kernel's scalar values (None: a 0-d input's)
        self.reads = reads  # (scalar, input position) of the 0-d inputs
        self.last: tuple[Any, list[Any]] = (None, [])

    def cotangent(self, g: Array, inputs: tuple[Array, ...], index: int) -> Array | None:
        if self.last[0] is not g:
            self.last = (g, self._all(g, inputs))
        return self.last[1][index]  # type: ignore[no-any-return]

    def _all(self, g: Array, inputs: tuple[Array, ...]) -> list[Any]:
        shape = self.shape
        n_arrays = len(inputs) - len(self.reads)
        datas = [x._data for x in inputs[:n_arrays]]
        flat = all(d.shape == shape and d.flags.c_contiguous for d in datas)
        rs = self.flat if flat else self.strided
        spec = rs.spec
        gd = np.ascontiguousarray(g._data)
        d_arrays = [np.empty(shape, spec.inputs[j]._np) for j in rs.arrays]  # all written
        d_scalars = [np.empty(shape, spec.scalars[j]._np) for j in rs.scalars]
        scalars = list(self.scalars)
        for (i, _), x in zip(self.reads, inputs[n_arrays:], strict=True):
            scalars[i] = x._data[()]
        if flat:
            args = [gd.reshape(-1)] + [d.reshape(-1) for d in d_arrays + d_scalars] + [
                d.reshape(-1) for d in datas]
        else:
            args = [gd] + d_arrays + d_scalars + [np.broadcast_to(d, shape) for d in datas]
        if gd.size:
            fused_kernel.compiled(("reverse", rs), lambda: reverse_ir(rs), CPU)(
                args + scalars)
        out: list[Any] = [None] * len(inputs)
        for j, d in zip(rs.arrays, d_arrays, strict=True):
            out[j] = Array._new(d, CPU)
        for (i, _), pos in zip(self.reads, range(n_arrays, len(inputs)), strict=True):
            if i in rs.scalars:
                out[pos] = Array._new(d_scalars[rs.scalars.index(i)], CPU)
        return out


def _rule(g: Array, index: int, plan: ReversePlan, inputs: tuple[Array, ...]) -> Any:
    return plan.cotangent(g, inputs, index)


defvjp("jit.fused", each=_rule)
