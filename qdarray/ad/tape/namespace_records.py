"""Recorded namespace operations and their reverse: the machinery around the VJP rules.

A recorded operation `out = f(*inputs)` is a `Node` (qdarray/_autodiff.py): its rule, where
each tracked input's cotangent goes (its `targets`: a gradient companion or a Node), the values
the rules asked for, with the write generation of every kept array, and the cotangent of the
array it computed. `backprop` runs it: it takes the output's cotangent, checks the kept arrays
are unchanged, calls each rule, fits the result to the input (sums over broadcast axes, casts
to the input's dtype) and accumulates it.

A write into an array with a companion (`node.out`) has the same companion as output and
input: its reverse reads the companion, clears it, and accumulates the cotangent of the
value before the write back into it.
"""

from __future__ import annotations

from typing import Any

from ... import _data_type_functions as dt
from ... import _elementwise_functions as ew
from ... import _manipulation_functions as mf
from ... import _statistical_functions as st
from ..._array import Array
from ..._autodiff import TAPES, Node, Scatter, defvjp, record
from ..._creation_functions import asarray, zeros
from ..._errors import AutodiffError
from ..._indexing import add_at


def saved_arrays(value: Any) -> list[Array]:
    """The Arrays in a saved value (an Array, or a key tuple holding index arrays)."""
    if type(value) is Array:
        return [value]
    if type(value) is tuple:
        return [v for v in value if type(v) is Array]
    return []


def fit(ct: Array, shape: tuple[int, ...], dtype: Any) -> Array:
    """`ct` summed over the axes its input was broadcast along, broadcast to `shape` where a
    rule left length-1 axes, and cast to `dtype` (the real part for a real input)."""
    if ct.shape != shape:
        extra = ct.ndim - len(shape)
        axes = list(range(extra)) if extra > 0 else []
        for i, n in enumerate(shape):
            if n == 1 and i + extra >= 0 and ct.shape[i + extra] != 1:
                axes.append(i + extra)
        if axes:
            ct = st.sum(ct, axis=tuple(axes), keepdims=True)
            if extra > 0:
                ct = mf.reshape(ct, ct.shape[extra:])
        if ct.shape != shape:
            ct = mf.broadcast_to(ct, shape)
    if ct._dtype is not dtype:
        if ct._dtype.kind == "c" and dtype.kind != "c":
            ct = ew.real(ct)
        if ct._dtype is not dtype:
            ct = dt.astype(ct, dtype)
    return ct


def shape_dtype(target: Any) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype of the array whose cotangent `target` (a Node or a companion) is."""
    if type(target) is Node:
        return target.shape, target.dtype
    return target._data.shape, target._dtype


def accumulate(target: Any, ct: Any, shape: tuple[int, ...], dtype: Any) -> None:
    """Add a rule's result into an input's cotangent (a companion in place, a node's by a new
    array, so that cotangents shared between nodes are never written)."""
    if ct is None:
        return
    if type(target) is Node and target.companion is not None:
        target = target.companion
    if type(ct) is Scatter:
        _scatter(target, ct, shape, dtype)
        return
    ct = fit(ct, shape, dtype)
    if type(target) is Node:
        target.cot = ct if target.cot is None else _add(target.cot, ct)
        return
    xp = target._device.backend.xp
    xp.add(target._data, ct._data, out=target._data)
    target._buffer.generation += 1


def _add(a: Array, b: Array) -> Array:
    return ew.add(a, b)


def _scatter(target: Any, sc: Scatter, shape: tuple[int, ...], dtype: Any) -> None:
    values = sc.values
    if values._dtype is not dtype:
        values = fit(values, values.shape, dtype)
    if type(target) is Node:
        before = target.cot
        cot = zeros(shape, dtype=dtype, device=values._device)
        if before is not None:
            # A node's cotangent may be shared with another node's (rules can return `g`
            # itself): add into a copy of its own.
            before = fit(before, shape, dtype)
            cot._data[...] = before._data
        add_at(cot, sc.key, values)
        if TAPES:  # an enclosing tape differentiates this reverse (nested tapes)
            record("add_at", cot, (before, values), {"key": sc.key})
        target.cot = cot
        return
    add_at(target, sc.key, values)


def writer_text(writer: Any) -> str | None:
    """What a tape's `writers` entry names: a kernel (kept as itself, to spend nothing on
    the text while recording) or the words for another write."""
    if writer is None or type(writer) is str:
        return writer
    return f"kernel '{writer.__name__}'"


def stale_error(node: Node, name: str, arr: Array, writer: Any) -> AutodiffError:
    writer = writer_text(writer)
    by = f" by {writer}" if writer else " (by a write the tape did not see: a kernel outside" \
        " it, or an export such as np.asarray or DLPack)"
    what = "its result" if name == "out" else f"its argument '{name}'"
    return AutodiffError(
        f"{node.describe()} needs {what} (an array of shape {arr.shape}, dtype "
        f"{arr.dtype.name}) as it was when recorded, but it was written afterwards{by}, so the "
        "gradient would be wrong. Use a copy for the later write (qd.asarray(x, copy=True)), "
        "or take the gradient before writing.")


def backprop(node: Node, writers: dict[Any, str]) -> None:
    """Run one recorded operation's VJP rules and accumulate its inputs' cotangents."""
    out = node.out
    if out is None:
        g = node.companion if node.companion is not None else node.cot
        if g is None:
            return  # nothing reached the result
    else:
        g = out
    for (need, _, _), value, gen in zip(node.plan, node.values, node.gens, strict=True):
        if gen is None:
            continue
        if type(gen) is tuple:  # a key: its index arrays
            for index, index_gen in zip(value, gen, strict=True):
                if index_gen is not None and index._buffer.generation != index_gen:
                    raise stale_error(node, need, index, writers.get(index._buffer))
        elif value._buffer.generation != gen:
            raise stale_error(node, need, value, writers.get(value._buffer))
    if out is not None:
        # The output's cotangent is the companion the inputs' cotangents go back into.
        g = asarray(g, copy=True)
    elif node.companion is None:
        node.cot = None  # consumed: every use of the result came after it
    rule = node.rule
    sources = rule.sources
    values = node.values
    k = 0
    results = []
    for i, target in enumerate(node.targets):
        if target is None:
            continue
        shape, dtype = shape_dtype(target)
        kwargs: dict[str, Any] = {}
        for need, kind, _ in sources[0 if rule.variadic else i]:
            if kind != 3:
                kwargs[need] = values[k]
                k += 1
            elif need == "shape":
                kwargs[need] = shape
            elif need == "dtype":
                kwargs[need] = dtype
            else:
                kwargs[need] = i
        results.append((target, rule.fns[0 if rule.variadic else i](g, **kwargs), shape,
                        dtype))
    if out is not None:
        out._data[...] = 0
        out._buffer.generation += 1
    for target, ct, shape, dtype in results:
        accumulate(target, ct, shape, dtype)


def nbytes(x: Any) -> int:
    """The bytes of an Array's elements (0 for anything else)."""
    if type(x) is not Array:
        return 0
    return int(x.size) * int(x._dtype.itemsize)


# The scatter-add of a reverse, recorded when an enclosing tape differentiates the reverse.
defvjp("add_at", x=lambda g: g, values=lambda g, key: g[key])
