"""Kernel-side views: `v.subview(offset, size)` and `v[a:b]` on BufferView values.

Both give a narrower view of the same base (a SUBVIEW instruction, resolved to offset
arithmetic by `passes/resolve_views.py`); it can be indexed, measured (`.size`, `.shape`,
`len`), narrowed again and passed to funcs. Its name stays the parameter's, so writes through
it count as writes of that parameter; its source text labels it in debug-mode messages.
Slices take step 1 only and count from the start (no negative bounds); bounds known when the
kernel compiles are checked then, the others in debug mode.
"""

from __future__ import annotations

import ast
from typing import Any

from ... import _dtypes
from ..ir import Op
from .builder import Builder
from .values import MemRef, SliceVal, TVal, ViewMethod, describe

VIEW_METHODS = ("subview",)


def view_method(kb: Builder, ref: MemRef, name: str, node: ast.AST) -> ViewMethod:
    if not ref.is_view:
        kb.fail(
            f"{describe(ref)} has no method '{name}': only BufferView parameters "
            "have subviews in kernels.",
            "Annotate the parameter qd.BufferView[dtype] (a 1-D contiguous array "
            "converts without a copy), or index the array element by element.",
            node,
        )
    return ViewMethod(ref, name)


def call_view_method(kb: Builder, method: ViewMethod, node: ast.Call) -> MemRef:
    """`v.subview(offset, size)` (also with keywords offset= and size=)."""
    names = ("offset", "size")
    given: dict[str, Any] = {}
    if len(node.args) > 2:
        kb.fail(
            f"subview takes (offset, size); got {len(node.args)} arguments.",
            "Use v.subview(offset, size).",
            node,
        )
    for name, arg in zip(names, node.args, strict=False):
        given[name] = kb.expr(arg)
    for kw in node.keywords:
        if kw.arg not in names or kw.arg in given:
            kb.fail(
                f"subview got an unexpected or repeated argument '{kw.arg}'.",
                "Use v.subview(offset, size).",
                node,
            )
        given[kw.arg] = kb.expr(kw.value)
    missing = [n for n in names if n not in given]
    if missing:
        kb.fail(
            f"subview is missing its {' and '.join(missing)}.", "Use v.subview(offset, size).", node
        )
    kb.node = node
    return subview(kb, method.ref, given["offset"], given["size"], node)


def slice_view(kb: Builder, ref: Any, index: Any, node: ast.Subscript) -> MemRef:
    """`v[a:b]`, `v[a:]`, `v[:b]`, `v[:]` with step 1."""
    text = ast.unparse(node)
    if type(ref) is not MemRef or not ref.is_view:
        kb.fail(
            f"Slicing {describe(ref)} is not supported in kernels; only BufferView "
            "values can be sliced.",
            "Index one element at a time (x[i]), or pass a 1-D window as a "
            "qd.BufferView[dtype] parameter and slice that (v[a:b]).",
            node.slice,
        )
    if type(index) is not SliceVal:
        kb.fail(
            f"A BufferView takes one slice; got {ast.unparse(node.slice)}.",
            "Use v[a:b].",
            node.slice,
        )
    if index.step is not None and index.step != 1:
        kb.fail(
            f"BufferView slices in kernels need step 1; got step "
            f"{index.step if type(index.step) is int else describe(index.step)} "
            f"in {text}.",
            "Use a step-1 slice and index it with a stride, e.g. w[k * step].",
            node,
        )
    for bound in (index.lower, index.upper):
        if type(bound) is int and bound < 0:
            kb.fail(
                f"Negative slice bound {bound} in {text}: kernels do not count from the end.",
                f"Use {ast.unparse(node.value)}.size - {-bound} instead.",
                node,
            )
    lower = 0 if index.lower is None else index.lower
    if type(lower) is int and type(index.upper) is int and index.upper < lower:
        kb.fail(
            f"The slice {text} has stop {index.upper} < start {lower}.", "Use start <= stop.", node
        )
    start = count(kb, lower, "slice start", node)
    if index.upper is None:
        stop = TVal(kb.emit(Op.SHAPE, (ref.value,), (0,), _dtypes.int64))  # type: ignore
    else:
        stop = count(kb, index.upper, "slice stop", node)
    size = TVal(kb.emit(Op.SUB, (stop.value, start.value), (), _dtypes.int64))  # type: ignore
    return new_subview(kb, ref, start, size, text)


def subview(kb: Builder, ref: MemRef, offset: Any, size: Any, node: ast.Call) -> MemRef:
    off = count(kb, offset, "subview offset", node)
    n = count(kb, size, "subview size", node)
    return new_subview(kb, ref, off, n, ast.unparse(node))


def new_subview(kb: Builder, ref: MemRef, offset: TVal, size: TVal, label: str) -> MemRef:
    v = kb.emit(Op.SUBVIEW, (ref.value, offset.value, size.value), (label,), ref.value.type)
    return MemRef(v, ref.name)  # type: ignore[arg-type]


def count(kb: Builder, x: Any, what: str, node: ast.AST) -> TVal:
    """An offset, size or slice bound as int64: an integer, non-negative if constant."""
    if type(x) is int:
        if x < 0:
            kb.fail(
                f"The {what} must be non-negative; got {x}.",
                f"Use a {what} >= 0 (kernels do not count from the end).",
                node,
            )
        return kb.const(x, _dtypes.int64)
    if type(x) is TVal and x.dtype.kind in "iu":
        return kb.cast_to(x, _dtypes.int64)
    kb.type_fail(
        f"The {what} must be an integer; got {describe(x)}.", "Use int(...) to convert it.", node
    )
