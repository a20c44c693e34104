"""The LLVM side of the lane runtime (numba/lanes_runtime.py): the `Lanes` numba type, whose
value is the vector `<width x T>` (`i1` lanes for booleans), and the LLVM IR its intrinsics
are built from: splats, lane indices, integer widening as numba indexes, the element pointers
of an indexed run of lanes, and the masked load / store / gather / scatter intrinsics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]

import numba.core.cgutils
import numba.core.types
import numba.extending

# numba's extension API, used here as untyped Python (its own annotations are partial)
cgutils: Any = numba.core.cgutils
types: Any = numba.core.types
models: Any = numba.extending.models
register_model: Any = numba.extending.register_model


def intrinsic(fn: Callable[..., Any]) -> Any:
    """numba's `@intrinsic` (typing function -> an intrinsic callable from numba code)."""
    return numba.extending.intrinsic(fn)


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)


class Lanes(types.Type):  # type: ignore[misc]
    """`width` values of scalar numba type `dtype`, one per lane."""

    def __init__(self, dtype: Any, width: int) -> None:
        self.dtype = dtype
        self.width = width
        super().__init__(name=f"lanes{width}[{dtype}]")


@register_model(Lanes)
class LanesModel(models.PrimitiveModel):  # type: ignore[misc]
    def __init__(self, dmm: Any, fe_type: Lanes) -> None:
        elem = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elem, fe_type.width))


def is_float(t: Any) -> bool:
    return isinstance(t, types.Float)


def signed(t: Any) -> bool:
    return isinstance(t, types.Integer) and bool(t.signed)


def declare(builder: Any, name: str, ret: Any, args: list[Any]) -> Any:
    fnty = ir.FunctionType(ret, args)
    return cgutils.get_or_insert_function(builder.module, fnty, name)


def suffix(vt: Any) -> str:
    """LLVM's overload suffix of a vector type: v16f32, v8i64, v16i1."""
    e = vt.element
    name = ("f32" if e == ir.FloatType() else "f64" if e == ir.DoubleType()
            else f"i{e.width}")
    return f"v{vt.count}{name}"


def ir_splat(builder: Any, value: Any, width: int) -> Any:
    vt = ir.VectorType(value.type, width)
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), value, I32(0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(I32, width), [0] * width))


def ir_iota(ity: Any, width: int) -> Any:
    return ir.Constant(ir.VectorType(ity, width), [ir.Constant(ity, k) for k in range(width)])


def to_i64(builder: Any, v: Any, t: Any) -> Any:
    """An integer (scalar or lanes) of numba type `t` as int64, as numba indexes with it."""
    target = ir.VectorType(I64, v.type.count) if isinstance(v.type, ir.VectorType) else I64
    width = (v.type.element if isinstance(v.type, ir.VectorType) else v.type).width
    if width == 64:
        return v
    if isinstance(t, Lanes):
        t = t.dtype
    return builder.sext(v, target) if signed(t) else builder.zext(v, target)


def pointers(context: Any, builder: Any, aryty: Any, ary: Any, idxty: Any, idx: Any,
              width: int) -> Any:
    """The vector of element pointers of `arr[idx]`, each index a scalar or lanes."""
    arr = context.make_array(aryty)(context, builder, ary)
    strides = cgutils.unpack_tuple(builder, arr.strides, aryty.ndim)
    inds = cgutils.unpack_tuple(builder, idx, len(idxty))
    offset = ir.Constant(ir.VectorType(I64, width), None)
    for i, t, s in zip(inds, idxty, strides, strict=True):
        i64 = to_i64(builder, i, t)
        if not isinstance(t, Lanes):
            i64 = ir_splat(builder, i64, width)
        offset = builder.add(offset, builder.mul(i64, ir_splat(builder, s, width)))
    base = ir_splat(builder, builder.ptrtoint(arr.data, I64), width)
    elem = context.get_data_type(aryty.dtype)
    pvt = ir.VectorType(elem.as_pointer(), width)
    return builder.inttoptr(builder.add(base, offset), pvt)


def run_pointer(context: Any, builder: Any, aryty: Any, ary: Any, idxty: Any, idx: Any
                 ) -> Any:
    arr = context.make_array(aryty)(context, builder, ary)
    inds = cgutils.unpack_tuple(builder, idx, len(idxty))
    inds = [to_i64(builder, i, t) for i, t in zip(inds, idxty, strict=True)]
    return cgutils.get_item_pointer(context, builder, aryty, arr, inds)


def contiguous_run(aryty: Any) -> bool:
    return bool(aryty.layout == "C")


def mem_in(builder: Any, v: Any, dtype: Any) -> Any:
    """Lanes as they sit in memory (booleans are bytes)."""
    if isinstance(dtype, types.Boolean):
        return builder.zext(v, ir.VectorType(I8, v.type.count))
    return v


def mem_out(builder: Any, v: Any, dtype: Any) -> Any:
    if isinstance(dtype, types.Boolean):
        zero = ir.Constant(v.type, None)
        return builder.icmp_unsigned("!=", v, zero)
    return v


def masked_load(builder: Any, vt: Any, ptr: Any, mask: Any, align: int) -> Any:
    fn = declare(builder, f"llvm.masked.load.{suffix(vt)}.p0", vt,
               [vt.element.as_pointer(), I32, mask.type, vt])
    return builder.call(fn, [ptr, I32(align), mask, ir.Constant(vt, None)])


def masked_store(builder: Any, v: Any, ptr: Any, mask: Any, align: int) -> None:
    fn = declare(builder, f"llvm.masked.store.{suffix(v.type)}.p0", ir.VoidType(),
               [v.type, v.type.element.as_pointer(), I32, mask.type])
    builder.call(fn, [v, ptr, I32(align), mask])


def masked_gather(builder: Any, vt: Any, ptrs: Any, mask: Any, align: int) -> Any:
    fn = declare(builder, f"llvm.masked.gather.{suffix(vt)}.v{vt.count}p0", vt,
               [ptrs.type, I32, mask.type, vt])
    return builder.call(fn, [ptrs, I32(align), mask, ir.Constant(vt, None)])


def masked_scatter(builder: Any, v: Any, ptrs: Any, mask: Any, align: int) -> None:
    fn = declare(builder, f"llvm.masked.scatter.{suffix(v.type)}.v{v.type.count}p0",
               ir.VoidType(), [v.type, ptrs.type, I32, mask.type])
    builder.call(fn, [v, ptrs, I32(align), mask])
