"""Planning a traced program: runs of elementwise calls become generated kernels.

A maximal run of fusable calls (elementwise.py) on one device's arrays (the CPU, OpenCL,
Vulkan, CUDA) becomes one `Fused` step (off the CPU without 0-d array operands: the
kernel takes those as scalar parameters, which would be read back from the device).
Calls between two elementwise calls that write no memory (namespace functions, `x[key]`,
`x @ y`: `pure`) and do not read the run's results move before the run; any other call (an
in-place update, a kernel launch, an indexed write) ends it, since it may write memory that
a fused kernel would read later than the eager calls did. Within a run nothing writes, so
reading every input at the run's end reads what each call read. A node's result is
materialised only where something after the run reads it (a later step, or the function's
result); every other temporary lives in registers. The materialised results are grouped by
shape, one kernel per shape, each recomputing the nodes it needs (the same operations in
the same dtypes, so the same values).

How the kernels run (flat or strided inputs, their results' memory) is launch.py's. A
donated input (`donate_argnums`) that only this run reads, and that has the shape and dtype
of one of its results, gives that result its memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _autodiff
from .._array import Array
from .._devices import CPU
from .._dtypes import DType
from ..backends.kernel_xp.layout import c_strides
from .elementwise import ARITY, FUSABLE, LIBM, scalar, typing
from .fused_kernel import FusedSpec, Node
from .launch import FusedKernel, ReduceKernel
from .program import Call, Const, Slot, slots_in
from .reverse import ReversePlan, ReverseSpec, differentiable

MIN_RUN = 2  # a single elementwise call stays the namespace's own
# Whether functions computed by scalar libm calls in generated CPU code fuse on the CPU
# (elementwise.LIBM; off: NumPy's SIMD loops are faster; tests turn it on to check their fused
# semantics). Other devices fuse them: there the eager functions are kernels of the same IR
# (OpenCL, Vulkan) or CuPy's calls into the same CUDA maths library (docs/jit.md).
FUSE_LIBM = False
# Whether a sum, mean, max or min over every element of a run's result joins the run's kernel
# (ReduceKernel). Off: on this CPU `qd.sum((a * x + b) * x - a)` at N = 1e7 float32 takes
# 12.6-19.8 ms fused and 13.4-17.8 ms as the fused chain followed by NumPy's sum (NumPy's
# own: 29-42 ms), and the second keeps NumPy's sum bit for bit; tests turn it on.
FUSE_REDUCTIONS = False


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
    if len(values) != ARITY[name]:
        return None
    out = objects[step.out]
    if type(out) is not Array or any(v is out for v in values):
        return None
    device = out._device
    if any(type(v) is Array and v._device is not device for v in values):
        return None
    if name in LIBM and device is CPU and not FUSE_LIBM:
        return None
    if device is not CPU and any(type(v) is Array and v.shape == () for v in values):
        return None  # a 0-d input is a scalar parameter: reading it would wait for the device
    compute = typing(name, values, out._dtype)
    if compute is None:
        return None
    return name, compute, templates, values


class Fused:
    """A run of elementwise calls computed by generated kernels (module docstring); `calls`
    are the calls it replaces (what a tape records where the run's reverse cannot be
    fused)."""

    __slots__ = ("kernels", "calls", "reduce")

    def __init__(self, kernels: list[FusedKernel], calls: list[Call],
                 reduce: ReduceKernel | None = None) -> None:
        self.kernels = kernels
        self.calls = calls
        self.reduce = reduce  # the kernel that also reduces (the last call is the reduction)

    @property
    def name(self) -> str:
        return "fused(" + ", ".join(c.name for c in self.calls) + ")"

    def run(self, env: list[Any]) -> None:
        if _autodiff.TAPES and self.reduce is None and all(
                k.reverse is not None for k in self.kernels) and _one_tape():
            for k in self.kernels:
                k.run(env)
                k.record(env)
            return
        if _autodiff.TAPES or (self.reduce is not None and not self.reduce.ready(env)):
            # a tape records the calls themselves, with their VJPs (nested tapes, ops
            # without adjoint rules, a joined reduction); a reduction over strided inputs
            # runs as the namespace's own
            for call in self.calls:
                call.run(env)
            return
        for k in self.kernels:
            k.run(env)


def _one_tape() -> bool:
    """Whether exactly one tape records, this thread's: a fused run's reverse is not
    differentiated again (an enclosing tape gets the calls one by one)."""
    tapes = _autodiff.TAPES
    return len(tapes) == 1 and tapes[0].recording and _autodiff.current() is tapes[0]


def plan(steps: list[Call], output: Any, donated: list[int], objects: list[Any]
         ) -> list[Any]:
    """The program's steps with runs of fusable calls fused (module docstring)."""
    nodes = [_node_of(s, objects) for s in steps]
    order: list[Any] = []  # Calls, and lists of the indices of one run
    run: list[int] = []
    produced: set[int] = set()
    device = None  # the run's (one device per run)
    for k, step in enumerate(steps):
        if nodes[k] is not None:
            here = objects[step.out]._device  # type: ignore[index]  # (fusable: it has one)
            if run and here is not device:
                order.append(run)
                run, produced = [], set()
            run.append(k)
            produced.add(step.out)  # type: ignore[arg-type]
            device = here
        elif run and pure(step) and not produced.intersection(step.reads):
            order.append(step)  # moved before the open run: neither writes, nor reads it
        else:
            if run:
                order.append(run)
            run, produced = [], set()
            order.append(step)
    if run:
        order.append(run)
    out: list[Any] = []
    taken = -1
    for i, item in enumerate(order):
        if i == taken:
            continue
        if type(item) is not list:
            out.append(item)
            continue
        nxt = order[i + 1] if i + 1 < len(order) else None
        reduction = _reduction(nxt, [steps[k] for k in item], objects) \
            if type(nxt) is Call and FUSE_REDUCTIONS else None
        if reduction is None and len(item) < MIN_RUN:
            out += [steps[k] for k in item]
            continue
        after = i + 2 if reduction is not None else i + 1
        rest = [s for later in order[after:] for s in _reads(later, steps)]
        before = [s for earlier in order[:i] for s in _reads(earlier, steps)]
        later = set(rest) | set(slots_in(output))
        donors = [d for d in donated if d not in later and d not in before]
        if reduction is not None:
            taken = i + 1
        out.append(_fuse([steps[k] for k in item], [nodes[k] for k in item], later,
                         donors, objects, reduction))
    return out


def _reductions() -> dict[Any, str]:
    from .. import _statistical_functions as stats

    return {stats.sum: "sum", stats.max: "max", stats.min: "min", stats.mean: "mean"}


_REDUCTIONS = _reductions()


def _reduction(step: Call, calls: list[Call], objects: list[Any]
               ) -> tuple[str, int, Call] | None:
    """(op, the run's call it reduces, the reduction) when `step` reduces a floating-point
    result of the run over every axis into a 0-d array of its dtype (no `dtype=`,
    `keepdims`)."""
    try:
        op = _REDUCTIONS.get(step.fn)
    except TypeError:
        return None
    if op is None or len(step.args.items) != 1 or type(step.args.items[0]) is not Slot:
        return None
    if not all(type(v) is Const and v.value in (None, False) for v in step.kwargs.items):
        return None
    slot = step.args.items[0].index
    k = next((k for k, c in enumerate(calls) if c.out == slot), None)
    if k is None or step.out is None:
        return None
    x, out = objects[slot], objects[step.out]
    if x._device is not CPU:
        return None  # the joined reduction's partials are summed by NumPy
    if type(out) is not Array or x._dtype.kind != "f" or out._dtype is not x._dtype or \
            out.shape != () or x.size == 0:
        return None
    return op, k, step


def _reads(item: Any, steps: list[Call]) -> tuple[int, ...]:
    if type(item) is list:
        return tuple(s for k in item for s in steps[k].reads)
    return item.reads  # type: ignore[no-any-return]


_PURE_MODULES = frozenset({
    "qdarray._elementwise_functions", "qdarray._statistical_functions",
    "qdarray._manipulation_functions", "qdarray._linear_algebra_functions",
    "qdarray._searching_functions", "qdarray._sorting_functions", "qdarray._set_functions",
    "qdarray._creation_functions", "qdarray._data_type_functions", "qdarray._utility_functions",
    "qdarray.linalg", "qdarray.fft",
})


def pure(step: Call) -> bool:
    """Whether a call writes no memory an array can see: a namespace function (they return
    new arrays or views), `x[key]`, or an operator that is not in place."""
    fn = step.fn
    if step.construct:
        return False
    if getattr(fn, "__module__", None) in _PURE_MODULES:
        return True
    if fn is Array.__getitem__:
        return True
    try:
        return fn in FUSABLE or fn in _OPERATORS
    except TypeError:
        return False


_OPERATORS = frozenset({Array.__matmul__, Array.__rmatmul__})


def _fuse(calls: list[Call], nodes: list[Any], later: set[int], donors: list[int],
          objects: list[Any], reduction: tuple[str, int, Call] | None = None) -> Fused:
    produced = {c.out: k for k, c in enumerate(calls)}
    kept = [k for k, c in enumerate(calls) if c.out in later]
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for k in kept:
        by_shape.setdefault(objects[_slot(calls[k])].shape, []).append(k)
    if reduction is None:
        kernels = [_kernel(calls, nodes, produced, outs, objects, donors if len(by_shape) == 1
                           else []) for outs in by_shape.values()]
        return Fused(kernels, calls)
    op, k, call = reduction
    shape = objects[_slot(calls[k])].shape
    red = _kernel(calls, nodes, produced, by_shape.pop(shape, []), objects, [], (op, k))
    assert isinstance(red, ReduceKernel)
    red.result = _slot(call)
    kernels = [_kernel(calls, nodes, produced, outs, objects, [])
               for outs in by_shape.values()]
    return Fused(kernels + [red], calls + [call], red)


def _kernel(calls: list[Call], nodes: list[Any], produced: dict[Any, int], outs: list[int],
            objects: list[Any], donors: list[int], reduce: tuple[str, int] | None = None
            ) -> FusedKernel:
    needed = set(outs) | ({reduce[1]} if reduce else set())
    for k in range(len(calls) - 1, -1, -1):
        if k in needed:
            needed.update(produced[t.index] for t in nodes[k][2]
                          if type(t) is Slot and t.index in produced)
    inputs: list[Any] = []
    input_keys: dict[Any, int] = {}
    scalars: list[Any] = []
    scalar_types: list[DType] = []
    reads: list[tuple[int, Any]] = []
    spec_nodes: list[Node] = []
    index: dict[int, int] = {}
    for k in sorted(needed):
        name, compute, templates, values = nodes[k]
        operands = []
        for t, v in zip(templates, values, strict=True):
            if type(t) is Slot and t.index in produced:
                operands.append(("node", index[produced[t.index]]))
            elif type(v) is Array and v.shape == ():  # its value, read at each run
                operands.append(("scalar", len(scalars)))
                reads.append((len(scalars), t))
                scalars.append(None)
                scalar_types.append(v._dtype)
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
        out_dtype = objects[_slot(calls[k])]._dtype
        spec_nodes.append(Node(name, compute, out_dtype, tuple(operands)))
    shape = objects[_slot(calls[reduce[1] if reduce else outs[0]])].shape
    in_dtypes = tuple(_input(objects, t)._dtype for t in inputs)
    outputs = tuple(index[k] for k in outs)
    if reduce is not None:
        op = "sum" if reduce[0] == "mean" else reduce[0]
        spec = FusedSpec(1, in_dtypes, tuple(scalar_types), tuple(spec_nodes), outputs,
                         (op, index[reduce[1]]))
        dtypes = [objects[_slot(calls[k])]._dtype._np for k in outs]
        red = ReduceKernel(shape, [_slot(calls[k]) for k in outs], dtypes, inputs, scalars,
                           spec, spec)
        red.reads = reads
        red.op = reduce[0]
        red.acc = spec_nodes[index[reduce[1]]].out._np
        return red
    flat = FusedSpec(1, in_dtypes, tuple(scalar_types), tuple(spec_nodes), outputs)
    strided = FusedSpec(max(len(shape), 1), in_dtypes, tuple(scalar_types),
                        tuple(spec_nodes), outputs)
    if not shape:
        strided = flat
    dtypes = [objects[_slot(calls[k])]._dtype._np for k in outs]
    kernel = FusedKernel(shape, [_slot(calls[k]) for k in outs], dtypes, inputs, scalars, flat,
                         strided)
    kernel.reads = reads
    kernel.device = device = objects[_slot(calls[outs[0]])]._device
    kernel.contiguous = [c_strides(shape, _input(objects, t)._dtype.itemsize)
                         for t in inputs]
    if device is not CPU:  # a tape records the calls; inputs keep their memory
        return kernel
    kernel.reverse = _reverse(flat, strided, shape, scalars, reads, dtypes)
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


def _reverse(flat: FusedSpec, strided: FusedSpec, shape: tuple[int, ...], scalars: list[Any],
             reads: list[tuple[int, Any]], dtypes: list[Any]) -> list[Any] | None:
    """The VJP plan of each stored result (None for a result that is not floating-point),
    or None when some result's reverse has an op without an adjoint rule."""
    arrays = tuple(j for j, d in enumerate(flat.inputs) if d.kind == "f")
    read = tuple(i for i, _ in reads if flat.scalars[i].kind == "f")
    plans: list[Any] = []
    for o, dt in enumerate(dtypes):
        if np.dtype(dt).kind != "f":
            plans.append(None)
            continue
        rs_flat = ReverseSpec(flat, o, arrays, read)
        rs_strided = ReverseSpec(strided, o, arrays, read)
        if not differentiable(rs_flat) or not differentiable(rs_strided):
            return None
        plans.append(ReversePlan(rs_flat, rs_strided, shape, scalars, reads))
    return plans


def _slot(call: Call) -> int:
    assert call.out is not None  # fusable calls return an array
    return call.out


def _input(objects: list[Any], t: Any) -> Array:
    return objects[t.index] if type(t) is Slot else t.value  # type: ignore[no-any-return]
