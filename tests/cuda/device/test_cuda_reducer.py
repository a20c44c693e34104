"""The single-pass max-reducer of CUDA devices (ad/sizing/max_reducer.py) against brute force:
random size expressions, several axes, reads outside arrays, many positions per work-item, and
consecutive dispatches through the two alternating result elements."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from device_harness import load
from hypothesis import assume, given, settings

import qdarray as qd
from qdarray import _dtypes
from qdarray.ad.sizing.bounds import Bin, Const, LoopVar, MaxOverRange, Read, Shape, subexprs
from qdarray.ad.sizing.max_reducer import Reducer, Unsized, chain_of
from qdarray.kernels.types import ArrayType

_brute = load("cuda", "test_sizing_reducer", "ad")
reference, OutOfBounds = _brute.reference, _brute.OutOfBounds


def _run(device: str, e: MaxOverRange, arrays: dict[str, Any], types: dict[str, Any],
         reducer: Reducer | None = None) -> int:
    chain = chain_of(e)
    if reducer is None:
        reducer = Reducer(chain, types, qd.Device(device).backend.target, qd.Device(device))
    assert reducer.single
    begins = [reference(b, {}) for _, b, _ in chain.axes]
    extents = [reference(n, {}) - b for (_, _, n), b in zip(chain.axes, begins, strict=True)]
    slots = [reference(x, {}) for x in chain.inner]
    values = {k: qd.asarray(v, device=device) if isinstance(v, np.ndarray) else v
              for k, v in arrays.items()}
    return reducer.run(values, slots, begins, extents)


@settings(max_examples=15)
@given(body=_brute.expr([LoopVar(1, "i")], 2))
def test_random_bodies_match_brute_force(device, body):
    i = LoopVar(1, "i")
    e = MaxOverRange(i, Const(0), Shape("a", 0), body)
    chain = chain_of(e)
    try:
        for x in chain.inner:  # the sizer computes these first, in earlier rounds
            reference(x, {})
        ranges = [(reference(b, {}), reference(n, {})) for _, b, n in chain.axes]
    except OutOfBounds:
        ranges = []
    assume(ranges and all(b < n for b, n in ranges))  # the sizer reduces non-empty ranges
    try:
        want = reference(e, {})
    except OutOfBounds:
        want = None
    try:
        got = _run(device, e, _brute.VALUES, _brute.TYPES)
    except Unsized:
        got = None
    if want is None:
        assert got is None, str(e)
    elif got is not None:
        assert got == want, str(e)
    else:  # the host check refuses whole axes that leave an array somewhere
        assert any(isinstance(x, Read) and any(isinstance(j, (LoopVar, Bin)) for j in x.index)
                   for x in subexprs(e)), str(e)


def test_consecutive_dispatches_alternate_and_reset_the_elements(device):
    """Maxima that fall from one dispatch to the next (a stale element would keep the larger
    one), negative maxima, and the int64 extremes."""
    i = LoopVar(1, "i")
    e = MaxOverRange(i, Const(0), Const(500), Read("d", (i,)))
    types = {"d": ArrayType(_dtypes.int64, 1)}
    reducer = Reducer(chain_of(e), types, qd.Device(device).backend.target, qd.Device(device))
    rng = np.random.default_rng(0)
    pairs = None
    for top in (1 << 40, 100, 5, -7, -(1 << 62), (1 << 63) - 2, 0):
        data = rng.integers(-(1 << 63), top, 500)  # all below `top`
        data[rng.integers(0, 500)] = top
        assert _run(device, e, {"d": data}, types, reducer) == top
        pairs = reducer.pairs if pairs is None else pairs
        assert reducer.pairs is pairs  # no allocation per dispatch


def test_a_read_outside_an_array_is_never_evaluated_and_the_next_dispatch_is_exact(device):
    i = LoopVar(1, "i")
    gather = MaxOverRange(i, Const(0), Const(4), Read("a", (Read("b", (i,)),)))  # b[i] indexes a
    types = {"a": ArrayType(_dtypes.int32, 1), "b": ArrayType(_dtypes.int64, 1)}
    reducer = Reducer(chain_of(gather), types, qd.Device(device).backend.target,
                      qd.Device(device))
    a = np.array([4, 9, -3, 7], np.int32)
    with pytest.raises(Unsized):
        _run(device, gather, {"a": a, "b": np.array([0, 3, 4, 1])}, types, reducer)
    assert _run(device, gather, {"a": a, "b": np.array([0, 2, 2, 3])}, types, reducer) == 7
    assert _run(device, gather, {"a": a, "b": np.array([2, 2, 2, 2])}, types, reducer) == -3


@pytest.mark.parametrize("shape", [(1003,), (7, 13), (3, 5, 11), (2, 1, 9)])
@pytest.mark.parametrize("items", [9, 64, 1 << 20])
def test_many_positions_per_work_item(device, shape, items, monkeypatch):
    """Few work-items (unrolled groups, a remainder, several axes advanced by carries) and
    more work-items than the grid has threads (grid-stride iterations)."""
    import qdarray.ad.sizing.max_reducer as reducer_mod

    monkeypatch.setattr(reducer_mod, "STRIDED_ITEMS", items)
    rng = np.random.default_rng(len(shape) + items)
    data = rng.integers(-500, 500, shape).astype(np.int16)
    loop_vars = [LoopVar(k + 1, f"i{k}") for k in range(len(shape))]
    e: Any = Bin("-", Read("d", tuple(loop_vars)), Bin("*", Const(2), loop_vars[-1]))
    begins = [1] + [0] * (len(shape) - 1)
    for v, b, n in reversed(list(zip(loop_vars, begins, shape, strict=True))):
        e = MaxOverRange(v, Const(b), Const(n), e)
    got = _run(device, e, {"d": data}, {"d": ArrayType(_dtypes.int16, len(shape))})
    last = np.arange(shape[-1]).reshape((1,) * (len(shape) - 1) + (-1,))
    assert got == (data.astype(np.int64) - 2 * last)[1:].max()
