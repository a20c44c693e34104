"""The memory operations of the lane runtime (numba/lanes_runtime.py): the run of lanes along
the last axis from an element (`load`, `store`: contiguous masked loads and stores on C
arrays, else gathered), and lanes at indices of their own (`gather`, `scatter`). Masked-off
lanes are never read or written; lanes of a masked load that are off read as 0; overlapping
scatter lanes write in lane order. `gather_run` and `scatter_run` take lane indices into a
1-d array that often form a run (lane k at i + k, i the same for every active lane: an
adstack's entries of one depth) and check it at run time: one masked load or store when they
do, a gather or scatter otherwise.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]

from .lanes_llvm import (
    I64,
    Lanes,
    cgutils,
    contiguous_run,
    declare,
    intrinsic,
    ir_iota,
    ir_splat,
    masked_gather,
    masked_load,
    masked_scatter,
    masked_store,
    mem_in,
    mem_out,
    pointers,
    run_pointer,
    to_i64,
    types,
)


def add_memory_ops(ns: Any, width: int, mask_t: Any) -> None:
    """Put `load`, `store`, `gather` and `scatter` for `width` lanes into `ns`."""

    def index_ok(arr: Any, idx: Any, lanes_ok: bool) -> bool:
        if not isinstance(arr, types.Array) or not isinstance(idx, types.BaseTuple):
            return False
        if len(idx) != arr.ndim:
            return False
        for t in idx:
            if isinstance(t, Lanes):
                if not lanes_ok or not isinstance(t.dtype, types.Integer):
                    return False
            elif not isinstance(types.unliteral(t), types.Integer):
                return False
        return True

    def align(context: Any, dtype: Any) -> int:
        return int(context.get_abi_sizeof(context.get_data_type(dtype)))

    def run_pointers(context: Any, builder: Any, arr: Any, a: Any, idx: Any, i: Any) -> Any:
        """Element pointers of the run along the last axis (non-contiguous arrays)."""
        lanes_idx = list(cgutils.unpack_tuple(builder, i, len(idx)))
        last = to_i64(builder, lanes_idx[-1], idx[-1])
        lanes_idx[-1] = builder.add(ir_splat(builder, last, width), ir_iota(I64, width))
        types_ = list(idx)[:-1] + [Lanes(types.int64, width)]
        tup = cgutils.pack_struct(builder, lanes_idx)
        return pointers(context, builder, arr, a, types.Tuple(types_), tup, width)

    def reader(name: str, lanes_idx: bool) -> Any:
        """`load` (a run from a tuple of scalars) or `gather` (`lanes_idx`: lane indices)."""
        def read(typingctx: Any, arr: Any, idx: Any, m: Any) -> Any:
            if not index_ok(arr, idx, lanes_idx) or m != mask_t:
                return None
            out = Lanes(arr.dtype, width)

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                a, i, mask = args
                vt = ir.VectorType(context.get_data_type(arr.dtype), width)
                size = align(context, arr.dtype)
                if lanes_idx:
                    ptrs = pointers(context, builder, arr, a, idx, i, width)
                    v = masked_gather(builder, vt, ptrs, mask, size)
                elif contiguous_run(arr):
                    p = run_pointer(context, builder, arr, a, idx, i)
                    v = masked_load(builder, vt, p, mask, size)
                else:
                    v = masked_gather(builder, vt,
                                      run_pointers(context, builder, arr, a, idx, i), mask,
                                      size)
                return mem_out(builder, v, arr.dtype)
            return out(arr, idx, m), codegen
        read.__name__ = name
        return intrinsic(read)

    def writer(name: str, lanes_idx: bool) -> Any:
        """`store` (a run from a tuple of scalars) or `scatter` (`lanes_idx`: lane indices)."""
        def write(typingctx: Any, arr: Any, idx: Any, v: Any, m: Any) -> Any:
            if (not index_ok(arr, idx, lanes_idx) or m != mask_t
                    or v != Lanes(arr.dtype, width)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                a, i, val, mask = args
                val = mem_in(builder, val, arr.dtype)
                size = align(context, arr.dtype)
                if lanes_idx:
                    ptrs = pointers(context, builder, arr, a, idx, i, width)
                    masked_scatter(builder, val, ptrs, mask, size)
                elif contiguous_run(arr):
                    masked_store(builder, val, run_pointer(context, builder, arr, a, idx, i),
                                 mask, size)
                else:
                    masked_scatter(builder, val,
                                   run_pointers(context, builder, arr, a, idx, i), mask, size)
                return context.get_dummy_value()
            return types.none(arr, idx, v, m), codegen
        write.__name__ = name
        return intrinsic(write)

    def run_start(builder: Any, idx: Any, idxty: Any, mask: Any) -> tuple[Any, Any]:
        """(whether the active lanes' indices are i + k for lane k, that i) of a lane index
        vector; no active lane gives False."""
        (i,) = cgutils.unpack_tuple(builder, idx, 1)
        d = builder.sub(to_i64(builder, i, idxty[0]), ir_iota(I64, width))
        vt = d.type
        big = ir.Constant(vt, [ir.Constant(I64, (1 << 63) - 1)] * width)
        small = ir.Constant(vt, [ir.Constant(I64, -(1 << 63))] * width)
        lo = builder.call(declare(builder, f"llvm.vector.reduce.smin.v{width}i64", I64, [vt]),
                          [builder.select(mask, d, big)])
        hi = builder.call(declare(builder, f"llvm.vector.reduce.smax.v{width}i64", I64, [vt]),
                          [builder.select(mask, d, small)])
        return builder.icmp_signed("==", lo, hi), lo

    def run_ok(arr: Any, idx: Any) -> bool:
        return (index_ok(arr, idx, True) and arr.ndim == 1 and contiguous_run(arr)
                and isinstance(idx[0], Lanes))

    @intrinsic
    def gather_run(typingctx: Any, arr: Any, idx: Any, m: Any) -> Any:
        if not run_ok(arr, idx) or m != mask_t:
            return None
        out = Lanes(arr.dtype, width)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, mask = args
            vt = ir.VectorType(context.get_data_type(arr.dtype), width)
            size = align(context, arr.dtype)
            run, lo = run_start(builder, i, idx, mask)
            with builder.if_else(run, likely=True) as (then, otherwise):
                with then:
                    start = cgutils.pack_struct(builder, [lo])
                    p = run_pointer(context, builder, arr, a, types.UniTuple(types.int64, 1),
                                    start)
                    v1 = masked_load(builder, vt, p, mask, size)
                    b1 = builder.block
                with otherwise:
                    ptrs = pointers(context, builder, arr, a, idx, i, width)
                    v2 = masked_gather(builder, vt, ptrs, mask, size)
                    b2 = builder.block
            phi = builder.phi(vt)
            phi.add_incoming(v1, b1)
            phi.add_incoming(v2, b2)
            return mem_out(builder, phi, arr.dtype)
        return out(arr, idx, m), codegen

    @intrinsic
    def scatter_run(typingctx: Any, arr: Any, idx: Any, v: Any, m: Any) -> Any:
        if not run_ok(arr, idx) or m != mask_t or v != Lanes(arr.dtype, width):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, val, mask = args
            val = mem_in(builder, val, arr.dtype)
            size = align(context, arr.dtype)
            run, lo = run_start(builder, i, idx, mask)
            with builder.if_else(run, likely=True) as (then, otherwise):
                with then:
                    start = cgutils.pack_struct(builder, [lo])
                    p = run_pointer(context, builder, arr, a, types.UniTuple(types.int64, 1),
                                    start)
                    masked_store(builder, val, p, mask, size)
                with otherwise:
                    masked_scatter(builder, val, pointers(context, builder, arr, a, idx, i,
                                                          width), mask, size)
            return context.get_dummy_value()
        return types.none(arr, idx, v, m), codegen

    ns.gather_run, ns.scatter_run = gather_run, scatter_run
    ns.load, ns.gather = reader("load", False), reader("gather", True)
    ns.store, ns.scatter = writer("store", False), writer("scatter", True)
