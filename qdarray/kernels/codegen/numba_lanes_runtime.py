"""The runtime of the lane renderer (numba_lanes.py): a vector type and its operations as numba
intrinsics.

`lane_ops(width)` returns a namespace of numba intrinsics over `Lanes(dtype, width)`, a numba
type whose LLVM value is the vector `<width x T>` (`i1` lanes for booleans). The lane renderer
(`numba_lanes.py`) writes each IR op of a varying value as one call here, and every
call is one LLVM instruction or intrinsic, so the generated function keeps a group of threads'
values in vector registers (LLVM splits a vector wider than the machine's into several).

Every operation has the exact semantics of numba's scalar code for the same op: IEEE
arithmetic without fast-math flags (no contraction, no reassociation), float negation as
numba spells it (`-0.0 - x`), ordered float comparisons except `!=`, integer casts as numba
casts (truncation, sign or zero extension by the source's signedness). Anything whose scalar
code is a longer sequence (floor division, powers, casts of floats to integers, libm calls)
is not here: the renderer runs numba's scalar spelling once per lane with `get` / `put`.

    splat(x) iota() first(n)                 a scalar in every lane; 0..width-1; lanes < n
    add sub mul div neg                       arithmetic (div: floats only)
    band bor bxor bnot                        bitwise / logical
    lt le gt ge eq ne  select(m, a, b)        comparisons -> boolean lanes; a where m else b
    sqrt fabs floor ceil trunc isnan isinf isfinite
    cast(v, np.<dtype>)                       int -> int, int/bool -> float, float -> float
    any_(m) hmax(v) hmin(v)                   horizontal: any lane; largest / smallest lane
    get(v, k) put(v, k, x)                    one lane out / in
    load(arr, idx, m) store(arr, idx, v, m)   the run of lanes along the last axis from the
                                              element `idx` (a tuple of scalars): contiguous
                                              masked load / store on C arrays, else gathered
    gather(arr, idx, m) scatter(arr, idx, v, m)   `idx` a tuple of scalars and lane vectors;
                                              overlapping scatter lanes write in lane order
Masked-off lanes are never read or written; lanes of a masked load that are off read as 0.
"""

from __future__ import annotations

import types as pytypes
from collections.abc import Callable
from typing import Any

import numba.core.cgutils
import numba.core.types
import numba.extending
from llvmlite import ir  # type: ignore[import-untyped]

# numba's extension API, used here as untyped Python (its own annotations are partial)
cgutils: Any = numba.core.cgutils
types: Any = numba.core.types
models: Any = numba.extending.models
register_model: Any = numba.extending.register_model


def intrinsic(fn: Callable[..., Any]) -> Any:
    """numba's `@intrinsic` (typing function -> an intrinsic callable from numba code)."""
    return numba.extending.intrinsic(fn)

_I1 = ir.IntType(1)
_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


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


def _is_float(t: Any) -> bool:
    return isinstance(t, types.Float)


def _signed(t: Any) -> bool:
    return isinstance(t, types.Integer) and bool(t.signed)


def _decl(builder: Any, name: str, ret: Any, args: list[Any]) -> Any:
    fnty = ir.FunctionType(ret, args)
    return cgutils.get_or_insert_function(builder.module, fnty, name)


def _suffix(vt: Any) -> str:
    """LLVM's overload suffix of a vector type: v16f32, v8i64, v16i1."""
    e = vt.element
    name = ("f32" if e == ir.FloatType() else "f64" if e == ir.DoubleType()
            else f"i{e.width}")
    return f"v{vt.count}{name}"


def _splat(builder: Any, value: Any, width: int) -> Any:
    vt = ir.VectorType(value.type, width)
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), value, _I32(0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, width), [0] * width))


def _iota(ity: Any, width: int) -> Any:
    return ir.Constant(ir.VectorType(ity, width), [ir.Constant(ity, k) for k in range(width)])


def _to_i64(builder: Any, v: Any, t: Any) -> Any:
    """An integer (scalar or lanes) of numba type `t` as int64, as numba indexes with it."""
    target = ir.VectorType(_I64, v.type.count) if isinstance(v.type, ir.VectorType) else _I64
    width = (v.type.element if isinstance(v.type, ir.VectorType) else v.type).width
    if width == 64:
        return v
    if isinstance(t, Lanes):
        t = t.dtype
    return builder.sext(v, target) if _signed(t) else builder.zext(v, target)


def _pointers(context: Any, builder: Any, aryty: Any, ary: Any, idxty: Any, idx: Any,
              width: int) -> Any:
    """The vector of element pointers of `arr[idx]`, each index a scalar or lanes."""
    arr = context.make_array(aryty)(context, builder, ary)
    strides = cgutils.unpack_tuple(builder, arr.strides, aryty.ndim)
    inds = cgutils.unpack_tuple(builder, idx, len(idxty))
    offset = ir.Constant(ir.VectorType(_I64, width), None)
    for i, t, s in zip(inds, idxty, strides, strict=True):
        i64 = _to_i64(builder, i, t)
        if not isinstance(t, Lanes):
            i64 = _splat(builder, i64, width)
        offset = builder.add(offset, builder.mul(i64, _splat(builder, s, width)))
    base = _splat(builder, builder.ptrtoint(arr.data, _I64), width)
    elem = context.get_data_type(aryty.dtype)
    pvt = ir.VectorType(elem.as_pointer(), width)
    return builder.inttoptr(builder.add(base, offset), pvt)


def _run_pointer(context: Any, builder: Any, aryty: Any, ary: Any, idxty: Any, idx: Any
                 ) -> Any:
    arr = context.make_array(aryty)(context, builder, ary)
    inds = cgutils.unpack_tuple(builder, idx, len(idxty))
    inds = [_to_i64(builder, i, t) for i, t in zip(inds, idxty, strict=True)]
    return cgutils.get_item_pointer(context, builder, aryty, arr, inds)


def _contiguous_run(aryty: Any) -> bool:
    return bool(aryty.layout == "C")


def _mem_in(builder: Any, v: Any, dtype: Any) -> Any:
    """Lanes as they sit in memory (booleans are bytes)."""
    if isinstance(dtype, types.Boolean):
        return builder.zext(v, ir.VectorType(_I8, v.type.count))
    return v


def _mem_out(builder: Any, v: Any, dtype: Any) -> Any:
    if isinstance(dtype, types.Boolean):
        zero = ir.Constant(v.type, None)
        return builder.icmp_unsigned("!=", v, zero)
    return v


def _masked_load(builder: Any, vt: Any, ptr: Any, mask: Any, align: int) -> Any:
    fn = _decl(builder, f"llvm.masked.load.{_suffix(vt)}.p0", vt,
               [vt.element.as_pointer(), _I32, mask.type, vt])
    return builder.call(fn, [ptr, _I32(align), mask, ir.Constant(vt, None)])


def _masked_store(builder: Any, v: Any, ptr: Any, mask: Any, align: int) -> None:
    fn = _decl(builder, f"llvm.masked.store.{_suffix(v.type)}.p0", ir.VoidType(),
               [v.type, v.type.element.as_pointer(), _I32, mask.type])
    builder.call(fn, [v, ptr, _I32(align), mask])


def _gather(builder: Any, vt: Any, ptrs: Any, mask: Any, align: int) -> Any:
    fn = _decl(builder, f"llvm.masked.gather.{_suffix(vt)}.v{vt.count}p0", vt,
               [ptrs.type, _I32, mask.type, vt])
    return builder.call(fn, [ptrs, _I32(align), mask, ir.Constant(vt, None)])


def _scatter(builder: Any, v: Any, ptrs: Any, mask: Any, align: int) -> None:
    fn = _decl(builder, f"llvm.masked.scatter.{_suffix(v.type)}.v{v.type.count}p0",
               ir.VoidType(), [v.type, ptrs.type, _I32, mask.type])
    builder.call(fn, [v, ptrs, _I32(align), mask])


_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_ARITH = {"add": ("fadd", "add"), "sub": ("fsub", "sub"), "mul": ("fmul", "mul"),
          "div": ("fdiv", None), "band": (None, "and_"), "bor": (None, "or_"),
          "bxor": (None, "xor")}
_FLOAT_UNARY = ("sqrt", "fabs", "floor", "ceil", "trunc")


def _build(width: int) -> Any:
    # a module: numba resolves attributes of module globals at compile time
    ns: Any = pytypes.ModuleType(f"lanes{width}")
    ns.width = width
    mask_t = Lanes(types.boolean, width)

    def same_lanes(*ts: Any) -> bool:
        return all(isinstance(t, Lanes) and t == ts[0] for t in ts)

    @intrinsic
    def splat(typingctx: Any, x: Any) -> Any:
        x = types.unliteral(x)
        if not isinstance(x, (types.Number, types.Boolean)):
            return None
        out = Lanes(x, width)
        return out(x), lambda c, b, s, a: _splat(b, a[0], width)
    ns.splat = splat

    @intrinsic
    def iota(typingctx: Any) -> Any:
        return Lanes(types.int64, width)(), lambda c, b, s, a: _iota(_I64, width)
    ns.iota = iota

    @intrinsic
    def first(typingctx: Any, n: Any) -> Any:
        n = types.unliteral(n)
        if not isinstance(n, types.Integer):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            count = _splat(builder, _to_i64(builder, args[0], n), width)
            return builder.icmp_signed("<", _iota(_I64, width), count)
        return mask_t(n), codegen
    ns.first = first

    def arith(name: str, fop: str | None, iop: str | None) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any, b: Any) -> Any:
            if not same_lanes(a, b):
                return None
            op = fop if _is_float(a.dtype) else iop
            if op is None:
                return None
            return a(a, b), lambda c, bld, s, args: getattr(bld, op)(*args)
        f.__name__ = name
        return f
    for name, (fop, iop) in _ARITH.items():
        setattr(ns, name, arith(name, fop, iop))

    @intrinsic
    def neg(typingctx: Any, a: Any) -> Any:
        if not isinstance(a, Lanes) or isinstance(a.dtype, types.Boolean):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            vt = args[0].type
            if _is_float(a.dtype):  # numba's negate_real: the signed zero kept
                return builder.fsub(ir.Constant(vt, [ir.Constant(vt.element, -0.0)] * width),
                                    args[0])
            return builder.sub(ir.Constant(vt, None), args[0])
        return a(a), codegen
    ns.neg = neg

    @intrinsic
    def bnot(typingctx: Any, a: Any) -> Any:
        if not isinstance(a, Lanes) or _is_float(a.dtype):
            return None
        return a(a), lambda c, b, s, args: b.not_(args[0])
    ns.bnot = bnot

    def compare(name: str, op: str) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any, b: Any) -> Any:
            if not same_lanes(a, b):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                if _is_float(a.dtype):
                    if op == "!=":
                        return builder.fcmp_unordered(op, *args)
                    return builder.fcmp_ordered(op, *args)
                if _signed(a.dtype):
                    return builder.icmp_signed(op, *args)
                return builder.icmp_unsigned(op, *args)
            return mask_t(a, b), codegen
        f.__name__ = name
        return f
    for name, op in _CMP.items():
        setattr(ns, name, compare(name, op))

    @intrinsic
    def select(typingctx: Any, m: Any, a: Any, b: Any) -> Any:
        if m != mask_t or not same_lanes(a, b):
            return None
        return a(m, a, b), lambda c, bld, s, args: bld.select(*args)
    ns.select = select

    def float_unary(name: str) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any) -> Any:
            if not (isinstance(a, Lanes) and _is_float(a.dtype)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                vt = args[0].type
                fn = _decl(builder, f"llvm.{name}.{_suffix(vt)}", vt, [vt])
                return builder.call(fn, [args[0]])
            return a(a), codegen
        f.__name__ = name
        return f
    for name in _FLOAT_UNARY:
        setattr(ns, name, float_unary(name))

    def float_class(name: str) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any) -> Any:
            if not (isinstance(a, Lanes) and _is_float(a.dtype)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                v = args[0]
                if name == "isnan":
                    return builder.fcmp_unordered("uno", v, v)
                vt = v.type
                fabs = builder.call(_decl(builder, f"llvm.fabs.{_suffix(vt)}", vt, [vt]), [v])
                inf = ir.Constant(vt, [ir.Constant(vt.element, float("inf"))] * width)
                return builder.fcmp_ordered("==" if name == "isinf" else "<", fabs, inf)
            return mask_t(a), codegen
        f.__name__ = name
        return f
    for name in ("isnan", "isinf", "isfinite"):
        setattr(ns, name, float_class(name))

    @intrinsic
    def cast(typingctx: Any, v: Any, to: Any) -> Any:
        if not isinstance(v, Lanes) or not isinstance(to, types.NumberClass):
            return None
        src, dst = v.dtype, to.instance_type
        if _is_float(src) and not _is_float(dst):
            return None  # float -> int: the renderer casts lane by lane, as numba does
        out = Lanes(dst, width)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            x = args[0]
            vt = ir.VectorType(context.get_value_type(dst), width)
            if isinstance(src, types.Boolean):
                return builder.uitofp(x, vt) if _is_float(dst) else builder.zext(x, vt)
            if _is_float(src):
                if src.bitwidth == dst.bitwidth:
                    return x
                return (builder.fpext if dst.bitwidth > src.bitwidth else builder.fptrunc)(x, vt)
            if _is_float(dst):
                return (builder.sitofp if src.signed else builder.uitofp)(x, vt)
            if src.bitwidth == dst.bitwidth:
                return x
            if dst.bitwidth < src.bitwidth:
                return builder.trunc(x, vt)
            return (builder.sext if src.signed else builder.zext)(x, vt)
        return out(v, to), codegen
    ns.cast = cast

    @intrinsic
    def any_(typingctx: Any, m: Any) -> Any:
        if m != mask_t:
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            fn = _decl(builder, f"llvm.vector.reduce.or.v{width}i1", _I1, [args[0].type])
            return builder.call(fn, [args[0]])
        return types.boolean(m), codegen
    ns.any_ = any_

    def horizontal(name: str) -> Any:
        @intrinsic
        def f(typingctx: Any, v: Any) -> Any:
            if not (isinstance(v, Lanes) and isinstance(v.dtype, types.Integer)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                vt = args[0].type
                kind = ("s" if v.dtype.signed else "u") + name
                fn = _decl(builder, f"llvm.vector.reduce.{kind}.{_suffix(vt)}", vt.element, [vt])
                return builder.call(fn, [args[0]])
            return v.dtype(v), codegen
        f.__name__ = "h" + name
        return f
    ns.hmax = horizontal("max")
    ns.hmin = horizontal("min")

    @intrinsic
    def get(typingctx: Any, v: Any, k: Any) -> Any:
        if not isinstance(v, Lanes) or not isinstance(types.unliteral(k), types.Integer):
            return None
        return v.dtype(v, k), lambda c, b, s, a: b.extract_element(a[0], a[1])
    ns.get = get

    @intrinsic
    def put(typingctx: Any, v: Any, k: Any, x: Any) -> Any:
        if not isinstance(v, Lanes) or not isinstance(types.unliteral(k), types.Integer):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            x1 = context.cast(builder, args[2], sig.args[2], v.dtype)
            return builder.insert_element(args[0], x1, args[1])
        return v(v, k, x), codegen
    ns.put = put

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
        last = _to_i64(builder, lanes_idx[-1], idx[-1])
        lanes_idx[-1] = builder.add(_splat(builder, last, width), _iota(_I64, width))
        types_ = list(idx)[:-1] + [Lanes(types.int64, width)]
        tup = cgutils.pack_struct(builder, lanes_idx)
        return _pointers(context, builder, arr, a, types.Tuple(types_), tup, width)

    @intrinsic
    def load(typingctx: Any, arr: Any, idx: Any, m: Any) -> Any:
        if not index_ok(arr, idx, False) or m != mask_t:
            return None
        out = Lanes(arr.dtype, width)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, mask = args
            vt = ir.VectorType(context.get_data_type(arr.dtype), width)
            size = align(context, arr.dtype)
            if _contiguous_run(arr):
                p = _run_pointer(context, builder, arr, a, idx, i)
                v = _masked_load(builder, vt, p, mask, size)
            else:
                v = _gather(builder, vt, run_pointers(context, builder, arr, a, idx, i),
                            mask, size)
            return _mem_out(builder, v, arr.dtype)
        return out(arr, idx, m), codegen
    ns.load = load

    @intrinsic
    def store(typingctx: Any, arr: Any, idx: Any, v: Any, m: Any) -> Any:
        if (not index_ok(arr, idx, False) or m != mask_t
                or v != Lanes(arr.dtype, width)):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, val, mask = args
            val = _mem_in(builder, val, arr.dtype)
            size = align(context, arr.dtype)
            if _contiguous_run(arr):
                _masked_store(builder, val, _run_pointer(context, builder, arr, a, idx, i),
                              mask, size)
            else:
                _scatter(builder, val, run_pointers(context, builder, arr, a, idx, i), mask,
                         size)
            return context.get_dummy_value()
        return types.none(arr, idx, v, m), codegen
    ns.store = store

    @intrinsic
    def gather(typingctx: Any, arr: Any, idx: Any, m: Any) -> Any:
        if not index_ok(arr, idx, True) or m != mask_t:
            return None
        out = Lanes(arr.dtype, width)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, mask = args
            vt = ir.VectorType(context.get_data_type(arr.dtype), width)
            ptrs = _pointers(context, builder, arr, a, idx, i, width)
            v = _gather(builder, vt, ptrs, mask, align(context, arr.dtype))
            return _mem_out(builder, v, arr.dtype)
        return out(arr, idx, m), codegen
    ns.gather = gather

    @intrinsic
    def scatter(typingctx: Any, arr: Any, idx: Any, v: Any, m: Any) -> Any:
        if (not index_ok(arr, idx, True) or m != mask_t
                or v != Lanes(arr.dtype, width)):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            a, i, val, mask = args
            ptrs = _pointers(context, builder, arr, a, idx, i, width)
            _scatter(builder, _mem_in(builder, val, arr.dtype), ptrs, mask,
                     align(context, arr.dtype))
            return context.get_dummy_value()
        return types.none(arr, idx, v, m), codegen
    ns.scatter = scatter
    return ns


_BUILT: dict[int, Any] = {}


def lane_ops(width: int) -> Any:
    """The lane operations for groups of `width` threads (built once per width)."""
    ops = _BUILT.get(width)
    if ops is None:
        ops = _BUILT[width] = _build(width)
    return ops
