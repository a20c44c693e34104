"""The frontend: a kernel's Python AST -> typed IR.

`build(src, specs)` walks the kernel's statements once with one visitor, `Builder`
(builder.py), which owns the compile's state and hands each AST node to the helper of its
construct: `exprs.py` (operators, names, subscripts), `stmts.py` (assignments, if, return),
`loops.py` (for, while, static unrolling), `calls.py` (casts, math, atomics, func inlining)
and `views.py` (kernel-side BufferView subviews); all of them, and the vector forms
(`vectors.py`, `vector_calls.py`), build on the scalar operators of `scalars.py`. Types come
from the argument specs of the call; every error is raised as a `KernelSyntaxError` or
`KernelTypeError` carrying the source line and a caret.
"""

from __future__ import annotations

from typing import Any

from ... import _dtypes
from ..._dtypes import DType
from ..args import ArgSpec
from ..ir import KernelIR, Param
from ..source import FunctionSource, parse_function
from . import calls, exprs, loops, stmts
from .builder import Builder, Visit
from .diagnostics import CompileError, public_error
from .scope import FuncCtx, Scope
from .values import MemRef, StructVal, TVal, VecVal

__all__ = ["build", "parse_function", "FunctionSource"]


# Every construct of the kernel language, by AST node type.
VISITORS: dict[type, Visit] = {**exprs.VISITORS, **stmts.VISITORS, **loops.VISITORS,
                               **calls.VISITORS}


def _param(kb: Builder, name: str, spec: ArgSpec, params: list[Param]) -> Any:
    """The kernel-language value of one parameter (dataclass fields flattened)."""
    if spec.kind == "struct":
        fields = tuple((fname, _param(kb, f"{name}.{fname}", fspec, params))
                       for fname, fspec in spec.fields)
        return StructVal(spec.cls, fields)  # type: ignore[arg-type]
    value = kb.new_value(spec.type)
    params.append(Param(name, value))
    if spec.kind in ("array", "view"):
        return MemRef(value, name, spec.elem, spec.elem_name)
    return TVal(value, spec.weak)


def build(src: FunctionSource, specs: list[tuple[str, ArgSpec]], recorder: Any = None,
          default_float: DType = _dtypes.float64) -> KernelIR:
    """The IR of kernel `src` for arguments described by `specs` (name, spec) in order;
    `recorder` (an `env.Recorder`) notes what the compile reads from Python; Python floats
    take `default_float` where no other operand decides (options.py)."""
    b = Builder(src.name, VISITORS)
    b.recorder = recorder
    b.ctx = FuncCtx(src, Scope(), (), is_kernel=True, params=frozenset(n for n, _ in specs),
                    default_float=default_float)
    try:
        params: list[Param] = []
        bindings = [(name, _param(b, name, spec, params)) for name, spec in specs]
        b.node = src.tree
        for name, value in bindings:
            if src.assign_counts[name] or (type(value) is VecVal and
                                           src.component_counts[name]):
                stmts.assign_name(b, name, value, src.tree)  # reassigned in the body: a local
            else:
                b.ctx.scope.bind(name, value)
        b.body(src.tree.body)
    except CompileError as err:
        raise public_error(err) from None
    body = b.block(b.em.blocks[0])
    meta = (("written", tuple(sorted(b.written))),)
    return KernelIR(src.name, tuple(params), body, src.loc(src.tree, src.name, ()), meta)
