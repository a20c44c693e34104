"""Planning a traced program: runs of elementwise calls become generated kernels.

A maximal run of consecutive fusable calls (elementwise.py) on CPU arrays becomes one
`Fused` step. Consecutive, because the calls between two elementwise calls (an in-place
update, a kernel launch, an indexed write) may write memory that a fused kernel would read
later than the eager calls did; within a run nothing writes, so reading every input at the
run's end reads what each call read. A node's result is materialised only where something
after the run reads it (a later step, or the function's result); every other temporary
lives in registers. The materialised results are grouped by shape, one kernel per shape,
each recomputing the nodes it needs (the same operations in the same dtypes, so the same
values).

At run time a kernel takes its inputs flat (one loop over the elements) when every input
has the output's shape and is C-contiguous, and as broadcast strided views otherwise.
A donated input (`donate_argnums`) that only this run reads, and that has the shape and
dtype of one of its results, gives that result its memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _autodiff
from .._array import Array
from .._devices import CPU
from .._dtypes import DType
from . import fused_kernel
from .elementwise import FUSABLE, scalar, typing
from .fused_kernel import FusedSpec, Node
from .program import Call, Const, Slot, build, slots_in

MIN_RUN = 2  # a single elementwise call stays the namespace's own


def _node_of(step: Call, objects: list[Any]) -> tuple[str, DType, list[Any], list[Any]] | None:
    """(name, compute dtype, operand templates, operand values) of a fusable call."""
    try:
        entry = FUSABLE.get(step.fn)
    except TypeError:  # an unhashable callable
        return None
    if entry is None or step.kwargs.items or step.out is None or step.items:
        return None
    name, reflected = entry
    templates = list(step.args.items)
    values = [objects[t.index] if type(t) is Slot else t.value for t in templates]
    if reflected:
        templates.reverse()
        values.reverse()
    unary = name in _UNARY
    if len(values) != (1 if unary else 2):
        return None
    out = objects[step.out]
    if type(out) is not Array or out._device is not CPU or any(v is out for v in values):
        return None
    if any(type(v) is Array and v._device is not CPU for v in values):
        return None
    compute = typing(name, values, out._dtype)
    if compute is None:
        return None
    return name, compute, templates, values


def _unary_names() -> frozenset[str]:
    from ..kernels.library import elementwise as bodies

    return bodies.UNARY


_UNARY = _unary_names()


class FusedKernel:
    """One generated kernel of a run: its outputs' slots and shape, its inputs (templates of
    arrays), scalar values, and the flat and strided specs."""

    __slots__ = ("shape", "outs", "dtypes", "inputs", "scalars", "flat", "strided",
                 "donor")

    def __init__(self, shape: tuple[int, ...], outs: list[int], dtypes: list[Any],
                 inputs: list[Any], scalars: list[Any], flat: FusedSpec, strided: FusedSpec
                 ) -> None:
        self.shape = shape
        self.outs = outs
        self.dtypes = dtypes
        self.inputs = inputs
        self.scalars = scalars
        self.flat = flat
        self.strided = strided
        self.donor: tuple[int, int] | None = None  # (output, input) sharing memory

    def run(self, env: list[Any]) -> None:
        shape = self.shape
        datas = [build(t, env)._data for t in self.inputs]
        flat = all(d.shape == shape and d.flags.c_contiguous for d in datas)
        outs = [np.empty(shape, d) for d in self.dtypes] if self.donor is None else \
            self._outputs(datas)
        if flat:
            args = [o.reshape(-1) for o in outs] + [d.reshape(-1) for d in datas]
            spec = self.flat
        else:
            args = outs + [np.broadcast_to(d, shape) for d in datas]
            spec = self.strided
        if outs[0].size:
            fused_kernel.launcher(spec, CPU)(args + self.scalars)
        for slot, o in zip(self.outs, outs, strict=True):
            env[slot] = Array._new(o, CPU)

    def _outputs(self, datas: list[Any]) -> list[Any]:
        k, j = self.donor  # type: ignore[misc]
        d = datas[j]
        own = d.base is None and d.flags.c_contiguous and d.flags.writeable
        return [d if i == k and own else np.empty(self.shape, t)
                for i, t in enumerate(self.dtypes)]


class Fused:
    """A run of elementwise calls computed by generated kernels (module docstring); `calls`
    are the calls it replaces (what a tape records instead)."""

    __slots__ = ("kernels", "calls")

    def __init__(self, kernels: list[FusedKernel], calls: list[Call]) -> None:
        self.kernels = kernels
        self.calls = calls

    @property
    def name(self) -> str:
        return "fused(" + ", ".join(c.name for c in self.calls) + ")"

    def run(self, env: list[Any]) -> None:
        if _autodiff.TAPES:  # a tape records the calls themselves, with their VJPs
            for call in self.calls:
                call.run(env)
            return
        for k in self.kernels:
            k.run(env)


def plan(steps: list[Call], output: Any, donated: list[int], objects: list[Any]
         ) -> list[Any]:
    """The program's steps with runs of fusable calls fused (module docstring)."""
    nodes = [_node_of(s, objects) for s in steps]
    out: list[Any] = []
    i = 0
    while i < len(steps):
        j = i
        while j < len(steps) and nodes[j] is not None:
            j += 1
        if j - i >= MIN_RUN:
            later = {s for step in steps[j:] for s in step.reads} | set(slots_in(output))
            earlier = {s for step in steps[:i] for s in step.reads}
            donors = [d for d in donated if d not in later and d not in earlier]
            out.append(_fuse(steps[i:j], nodes[i:j], later, donors, objects))
            i = j
        else:
            out.append(steps[i])
            i += 1
    return out


def _fuse(calls: list[Call], nodes: list[Any], later: set[int], donors: list[int],
          objects: list[Any]) -> Fused:
    produced = {c.out: k for k, c in enumerate(calls)}
    kept = [k for k, c in enumerate(calls) if c.out in later]
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for k in kept:
        by_shape.setdefault(objects[calls[k].out].shape, []).append(k)
    kernels = [_kernel(calls, nodes, produced, outs, objects, donors if len(by_shape) == 1
                       else []) for outs in by_shape.values()]
    return Fused(kernels, calls)


def _kernel(calls: list[Call], nodes: list[Any], produced: dict[Any, int], outs: list[int],
            objects: list[Any], donors: list[int]) -> FusedKernel:
    needed = set(outs)
    for k in range(len(calls) - 1, -1, -1):
        if k in needed:
            needed.update(produced[t.index] for t in nodes[k][2]
                          if type(t) is Slot and t.index in produced)
    inputs: list[Any] = []
    input_keys: dict[Any, int] = {}
    scalars: list[Any] = []
    scalar_types: list[DType] = []
    spec_nodes: list[Node] = []
    index: dict[int, int] = {}
    for k in sorted(needed):
        name, compute, templates, values = nodes[k]
        operands = []
        for t, v in zip(templates, values, strict=True):
            if type(t) is Slot and t.index in produced:
                operands.append(("node", index[produced[t.index]]))
            elif type(v) is Array:
                key = ("slot", t.index) if type(t) is Slot else ("const", id(v))
                if key not in input_keys:
                    input_keys[key] = len(inputs)
                    inputs.append(t if type(t) is Slot else Const(v))
                operands.append(("in", input_keys[key]))
            else:
                operands.append(("scalar", len(scalars)))
                scalars.append(scalar(v, compute))
                scalar_types.append(compute)
        index[k] = len(spec_nodes)
        out_dtype = objects[calls[k].out]._dtype
        spec_nodes.append(Node(name, compute, out_dtype, tuple(operands)))
    shape = objects[calls[outs[0]].out].shape
    in_dtypes = tuple(_input(objects, t)._dtype for t in inputs)
    outputs = tuple(index[k] for k in outs)
    flat = FusedSpec(1, in_dtypes, tuple(scalar_types), tuple(spec_nodes), outputs)
    strided = FusedSpec(max(len(shape), 1), in_dtypes, tuple(scalar_types),
                        tuple(spec_nodes), outputs)
    if not shape:
        strided = flat
    dtypes = [objects[calls[k].out]._dtype._np for k in outs]
    kernel = FusedKernel(shape, [calls[k].out for k in outs], dtypes, inputs, scalars, flat,
                         strided)
    for d in donors:
        x = objects[d]
        j = input_keys.get(("slot", d))
        if j is None or x.shape != shape:
            continue
        for k, dt in enumerate(dtypes):
            if dt == x._dtype._np:
                kernel.donor = (k, j)
                break
        if kernel.donor is not None:
            break
    return kernel


def _input(objects: list[Any], t: Any) -> Array:
    return objects[t.index] if type(t) is Slot else t.value  # type: ignore[no-any-return]
