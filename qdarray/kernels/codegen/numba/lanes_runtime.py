"""The runtime of the lane renderer (numba/lanes.py): a vector type and its operations as numba
intrinsics.

`lane_ops(width)` returns a namespace of numba intrinsics over `Lanes(dtype, width)`, a numba
type whose LLVM value is the vector `<width x T>` (`i1` lanes for booleans). The lane renderer
(`numba/lanes.py`) writes each IR op of a varying value as one call here, and every
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

The vector type and the LLVM IR the intrinsics emit live in numba/lanes_llvm.py, the memory
operations in numba/lanes_memory.py; this module builds the value operations and the namespace.
"""

from __future__ import annotations

import types as pytypes
from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]

from .lanes_llvm import (
    I1,
    I64,
    Lanes,
    declare,
    intrinsic,
    ir_iota,
    ir_splat,
    is_float,
    signed,
    suffix,
    to_i64,
    types,
)
from .lanes_memory import add_memory_ops

__all__ = ["Lanes", "lane_ops"]

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
        return out(x), lambda c, b, s, a: ir_splat(b, a[0], width)
    ns.splat = splat

    @intrinsic
    def iota(typingctx: Any) -> Any:
        return Lanes(types.int64, width)(), lambda c, b, s, a: ir_iota(I64, width)
    ns.iota = iota

    @intrinsic
    def first(typingctx: Any, n: Any) -> Any:
        n = types.unliteral(n)
        if not isinstance(n, types.Integer):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            count = ir_splat(builder, to_i64(builder, args[0], n), width)
            return builder.icmp_signed("<", ir_iota(I64, width), count)
        return mask_t(n), codegen
    ns.first = first

    def arith(name: str, fop: str | None, iop: str | None) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any, b: Any) -> Any:
            if not same_lanes(a, b):
                return None
            op = fop if is_float(a.dtype) else iop
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
            if is_float(a.dtype):  # numba's negate_real: the signed zero kept
                return builder.fsub(ir.Constant(vt, [ir.Constant(vt.element, -0.0)] * width),
                                    args[0])
            return builder.sub(ir.Constant(vt, None), args[0])
        return a(a), codegen
    ns.neg = neg

    @intrinsic
    def bnot(typingctx: Any, a: Any) -> Any:
        if not isinstance(a, Lanes) or is_float(a.dtype):
            return None
        return a(a), lambda c, b, s, args: b.not_(args[0])
    ns.bnot = bnot

    def compare(name: str, op: str) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any, b: Any) -> Any:
            if not same_lanes(a, b):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                if is_float(a.dtype):
                    if op == "!=":
                        return builder.fcmp_unordered(op, *args)
                    return builder.fcmp_ordered(op, *args)
                if signed(a.dtype):
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
            if not (isinstance(a, Lanes) and is_float(a.dtype)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                vt = args[0].type
                fn = declare(builder, f"llvm.{name}.{suffix(vt)}", vt, [vt])
                return builder.call(fn, [args[0]])
            return a(a), codegen
        f.__name__ = name
        return f
    for name in _FLOAT_UNARY:
        setattr(ns, name, float_unary(name))

    def float_class(name: str) -> Any:
        @intrinsic
        def f(typingctx: Any, a: Any) -> Any:
            if not (isinstance(a, Lanes) and is_float(a.dtype)):
                return None

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                v = args[0]
                if name == "isnan":
                    return builder.fcmp_unordered("uno", v, v)
                vt = v.type
                fabs = builder.call(declare(builder, f"llvm.fabs.{suffix(vt)}", vt, [vt]), [v])
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
        if is_float(src) and not is_float(dst):
            return None  # float -> int: the renderer casts lane by lane, as numba does
        out = Lanes(dst, width)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            x = args[0]
            vt = ir.VectorType(context.get_value_type(dst), width)
            if isinstance(src, types.Boolean):
                return builder.uitofp(x, vt) if is_float(dst) else builder.zext(x, vt)
            if is_float(src):
                if src.bitwidth == dst.bitwidth:
                    return x
                return (builder.fpext if dst.bitwidth > src.bitwidth else builder.fptrunc)(x, vt)
            if is_float(dst):
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
            fn = declare(builder, f"llvm.vector.reduce.or.v{width}i1", I1, [args[0].type])
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
                fn = declare(builder, f"llvm.vector.reduce.{kind}.{suffix(vt)}", vt.element, [vt])
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
    add_memory_ops(ns, width, mask_t)
    return ns


_BUILT: dict[int, Any] = {}


def lane_ops(width: int) -> Any:
    """The lane operations for groups of `width` threads (built once per width)."""
    ops = _BUILT.get(width)
    if ops is None:
        ops = _BUILT[width] = _build(width)
    return ops
