"""numba extensions the CPU code generator calls: exact atomics, the debug error record.

numba's CPU target has no atomics usable inside `prange`, so each one is an `@intrinsic`
over llvmlite's IRBuilder: integer add/min/max are single `atomicrmw` instructions; float add
is `atomicrmw fadd`; float min/max are compare-exchange loops on the element's bits (they
store only when the new value compares less/greater, so NaN values never win, matching
the interpreter). All use monotonic ordering: each update is atomic, nothing more is ordered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]

import numba
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ... import error_record

# Generated code calls numba's `get_thread_id` (the WORKER op), a symbol of numba's
# threading layer that numba loads when it compiles such a call; machine code loaded from
# numba's cache finds the symbol only once the layer is loaded, which this call does.
get_thread_id: Any = getattr(numba, "get_thread_id")  # noqa: B009 - not in numba's __all__
get_thread_id()


def _element_pointer(context: Any, builder: Any, aryty: Any, ary: Any, idxty: Any,
                     idx: Any) -> Any:
    arr = context.make_array(aryty)(context, builder, ary)
    if isinstance(idxty, types.BaseTuple):
        inds = cgutils.unpack_tuple(builder, idx, len(idxty))  # type: ignore[no-untyped-call]
        ityps = list(idxty.types)  # type: ignore[attr-defined]
    else:
        inds, ityps = [idx], [idxty]
    inds = [context.cast(builder, i, t, types.intp) for i, t in zip(inds, ityps, strict=True)]
    return cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
        context, builder, aryty, arr, inds, wraparound=False)


def _float_cas_loop(builder: Any, ptr: Any, value: Any, bits: int, better: str) -> Any:
    """Store `value` while it compares `better` ('<' or '>') than the element; return old."""
    ity = ir.IntType(bits)
    iptr = builder.bitcast(ptr, ity.as_pointer())
    entry = builder.block
    first = builder.load_atomic(iptr, "monotonic", align=bits // 8)
    loop = builder.append_basic_block("cas.loop")
    update = builder.append_basic_block("cas.update")
    done = builder.append_basic_block("cas.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    current = builder.phi(ity)
    current.add_incoming(first, entry)
    wins = builder.fcmp_ordered(better, value, builder.bitcast(current, value.type))
    builder.cbranch(wins, update, done)
    builder.position_at_end(update)
    pair = builder.cmpxchg(iptr, current, builder.bitcast(value, ity), "monotonic", "monotonic")
    seen = builder.extract_value(pair, 0)
    ok = builder.extract_value(pair, 1)
    current.add_incoming(seen, update)
    builder.cbranch(ok, done, loop)
    builder.position_at_end(done)
    old = builder.phi(ity)
    old.add_incoming(current, loop)
    old.add_incoming(current, update)
    return builder.bitcast(old, value.type)


def _atomic(kind: str) -> Any:
    def typer(typingctx: Any, ary: Any, idx: Any, val: Any) -> Any:
        if not isinstance(ary, types.Array) or ary.dtype != val:
            return None
        dtype = ary.dtype

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, v = args
            ptr = _element_pointer(context, builder, ary, a, idx, i)
            if isinstance(dtype, types.Float):
                if kind == "add":
                    return builder.atomic_rmw("fadd", ptr, v, "monotonic")
                return _float_cas_loop(builder, ptr, v, dtype.bitwidth,
                                       "<" if kind == "min" else ">")
            op = kind if kind == "add" else (kind if dtype.signed else "u" + kind)
            return builder.atomic_rmw(op, ptr, v, "monotonic")

        return dtype(ary, idx, val), codegen

    typer.__name__ = f"atomic_{kind}"
    return intrinsic(typer)


atomic_add = _atomic("add")
atomic_min = _atomic("min")
atomic_max = _atomic("max")


@intrinsic
def atomic_cas(typingctx: Any, ary: Any, idx: Any, expected: Any, new: Any) -> Any:
    """Compare-and-swap one integer element: store `new` if it holds `expected`; return old."""
    if not isinstance(ary, types.Array) or not isinstance(ary.dtype, types.Integer):
        return None
    dtype = ary.dtype

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        a, i, e, n = args
        ptr = _element_pointer(context, builder, ary, a, idx, i)
        e = context.cast(builder, e, sig.args[2], dtype)
        n = context.cast(builder, n, sig.args[3], dtype)
        pair = builder.cmpxchg(ptr, e, n, "monotonic", "monotonic")
        return builder.extract_value(pair, 0)

    return dtype(ary, idx, expected, new), codegen


_fill_record = njit(cache=True, nogil=True)(error_record.fill)


@njit(cache=True, nogil=True)
def report_index_error(err: Any, site: int, depth: int, stage: int, thread: Any,
                       vals: Any) -> None:
    """Record the first failed index check of a launch in the error record
    (error_record.py; later failures are dropped)."""
    if atomic_cas(err, error_record.SITE, 0, site + 1) == 0:  # type: ignore[call-arg]
        _fill_record(err, depth, stage, thread, vals)


@njit(cache=True, nogil=True)
def ipow(a: Any, n: Any) -> Any:
    """int64 power with wrap-around; a negative exponent truncates 1 / a**-n toward 0.
    Narrower signed types call it on int64 values and wrap the result."""
    if n < 0:
        if a == 1:
            return np.int64(1)
        if a == -1:
            return np.int64(1) if n % 2 == 0 else np.int64(-1)
        return np.int64(0)
    result = np.int64(1)
    base = a
    while n:
        if n & 1:
            result = result * base
        base = base * base
        n >>= 1
    return result


@njit(cache=True, nogil=True)
def upow(a: Any, n: Any) -> Any:
    """uint64 power with wrap-around (unsigned types call it on uint64 values)."""
    result = np.uint64(1)
    base = a
    while n:
        if n & np.uint64(1):
            result = result * base
        base = base * base
        n = n >> np.uint64(1)
    return result


@intrinsic
def fma(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c with one rounding (LLVM's llvm.fma, which the CPU's FMA unit or libm runs)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.fma(*args)

    return a(a, b, c), codegen
