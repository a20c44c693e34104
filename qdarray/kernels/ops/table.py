"""The op table: `OpDef`, `defop` (each family file calls it once per op) and `OPS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ir import Op

TypeRule = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]
"""`rule(arg_types, attrs) -> result type` (None for ops without a result); raises
`TypeError` with a message when the operands are illegal for the op."""

Impl = Callable[..., Any]
"""Reference semantics: `impl(result_type, attrs, *arg_values) -> value`. Scalars are NumPy
scalars of the exact dtype; arrays are NumPy arrays; views are `interp.ViewValue`."""

Adjoint = Callable[..., Any]
"""Reverse-mode rule (filled in by the autodiff transform): `adjoint(builder, instr, adj)`
emits, through `builder`, the IR that adds the op's contribution to the adjoints of its
arguments given `adj`, the adjoint Value of its result. `None`: not differentiable; reverse
mode through such an op raises an AutodiffError that names the op and its source line."""


@dataclass(frozen=True, slots=True)
class OpDef:
    """Everything about one op.

    Attributes:
        op: the `Op` member.
        family: the file that defines it ("arith", "math", "complex", "memory", "atomics",
            "control").
        arity: number of Value arguments, or None when it varies (indices).
        type_rule: result type from argument types and attrs (see `TypeRule`).
        impl: reference semantics for the interpreter, or None when the interpreter
            executes the op structurally (locals, control flow, index checks).
        pure: no side effects and cannot fault: safe to fold, remove when unused, speculate.
        host: the host may evaluate it on scalars with `impl` (launch sizes: trip counts of
            parallel loops computed before a launch, passes/stages.py and the CPU launcher).
        np_name: NumPy's function of the same semantics (`numpy.<np_name>`), if any.
        c_name: C99's (and OpenCL C's, CUDA libdevice's) function of the same semantics on
            floats, if any.
        adjoint: the reverse-mode rule (see `Adjoint`); None until autodiff defines it.
        doc: one line of semantics.
    """

    op: Op
    family: str
    arity: int | None
    type_rule: TypeRule
    impl: Impl | None
    pure: bool
    adjoint: Adjoint | None
    doc: str
    host: bool = False
    np_name: str | None = None
    c_name: str | None = None


OPS: dict[Op, OpDef] = {}


def defop(op: Op, family: str, arity: int | None, type_rule: TypeRule, impl: Impl | None,
          *, pure: bool = True, adjoint: Adjoint | None = None, doc: str = "",
          host: bool = False, np_name: str | None = None, c_name: str | None = None) -> OpDef:
    """Define `op` once; a second definition is a programming error."""
    if op in OPS:
        raise AssertionError(f"{op} is defined twice")
    assert not host or (pure and impl is not None), f"{op}: host ops are pure, with an impl"
    d = OpDef(op, family, arity, type_rule, impl, pure, adjoint, doc, host, np_name, c_name)
    OPS[op] = d
    return d


def opdef(op: Op) -> OpDef:
    return OPS[op]
