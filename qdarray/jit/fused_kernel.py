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
from ..kernels.ir import For, KernelIR, Op, Param, Value
from ..kernels.library import elementwise as bodies
from ..kernels.types import ArrayType


@dataclass(frozen=True)
class Node:
    """One elementwise call: `name` on `operands`, each ("in", k) an input array, ("node", j)
    an earlier node, ("scalar", k) a scalar parameter; computed in `compute`, stored as
    `out`."""

    name: str
    compute: DType
    out: DType
    operands: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class FusedSpec:
    """The signature of one fused kernel (module docstring)."""

    ndim: int
    inputs: tuple[DType, ...]
    scalars: tuple[DType, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]


@functools.cache
def fused_ir(spec: FusedSpec) -> KernelIR:
    """The IR of `spec` (module docstring)."""
    em = Emitter(0, 0)
    params: list[Param] = []

    def param(name: str, t: Any) -> Value:
        v = em.value(t)
        params.append(Param(name, v))
        return v

    outs = [param(f"out{k}", ArrayType(spec.nodes[j].out, spec.ndim))
            for k, j in enumerate(spec.outputs)]
    ins = [param(f"x{k}", ArrayType(d, spec.ndim)) for k, d in enumerate(spec.inputs)]
    scalars = [param(f"s{k}", d) for k, d in enumerate(spec.scalars)]
    needed = _needed(spec)
    with em.region() as top:
        ends = [em.emit(Op.SHAPE, outs[0], attrs=(d,)) for d in range(spec.ndim)]
        zero = em.i64(0)
        idx = [em.value(_dtypes.int64) for _ in ends]
        with em.region() as inner:
            loaded: dict[int, Value] = {}
            values: dict[int, Value] = {}
            for j, node in enumerate(spec.nodes):
                if j not in needed:
                    continue
                args = []
                for kind, k in node.operands:
                    if kind == "in":
                        if k not in loaded:
                            loaded[k] = em.emit(Op.LOAD, ins[k], *idx)
                        v = loaded[k]
                    elif kind == "node":
                        v = values[k]
                    else:
                        v = scalars[k]
                    args.append(em.cast(v, node.compute))
                result = bodies.body(node.name)(em, node.compute, args)
                values[j] = em.cast(result, node.out)
            for out, j in zip(outs, spec.outputs, strict=True):
                em.emit(Op.STORE, out, *idx, values[j])
        body = block(inner)
        for d in range(len(ends) - 1, -1, -1):
            body = block([For(idx[d], zero, ends[d], body, True)])
        top.extend(body.stmts)
    return KernelIR("qd_jit_fused", tuple(params), block(top))


def _needed(spec: FusedSpec) -> set[int]:
    needed = set(spec.outputs)
    for j in range(len(spec.nodes) - 1, -1, -1):
        if j in needed:
            needed.update(k for kind, k in spec.nodes[j].operands if kind == "node")
    return needed


def _as_is(x: Any, out: list[Any]) -> None:
    out.append(x)


_LAUNCHERS: dict[tuple[FusedSpec, Any], Any] = {}


def launcher(spec: FusedSpec, device: Any) -> Any:
    """The compiled launcher of `spec` on `device` (`launcher(args)`, arguments as native
    arrays and NumPy scalars in parameter order), compiled once per process; the target
    keeps the module on disk."""
    key = (spec, device)
    found = _LAUNCHERS.get(key)
    if found is not None:
        return found
    from ..kernels.passes import pipeline

    target = device.backend.target
    kernel = pipeline(fused_ir(spec), debug=False, lower=target.lowers_views)
    made = target.launcher(kernel, [_as_is] * len(kernel.params), [], debug=False,
                           device=device)
    _LAUNCHERS[key] = made
    return made
