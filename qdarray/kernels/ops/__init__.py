"""One `OpDef` per IR op: its type rule, its reference semantics, its adjoint slot and its
facts (whether the host may evaluate it, its NumPy and C names).

Each family file (`arith.py`, `math.py`, `memory.py`, `atomics.py`, `control.py`) calls
`defop(...)` once per op, so everything about an op sits in one place. Code generators keep
their own table `Op -> spelling`, built from the names an op's `defop` gives where they can;
`tests/kernels/test_op_coverage.py` checks that the interpreter and every generator cover
every op.

Adding an op: add the member to `ir.Op` under its banner, `defop` it in its family file (type
rule, `impl`), give it one entry in each code generator's table, and a test against NumPy.
"""

from __future__ import annotations

from . import adstack, arith, atomics, complex, control, math, memory, vector  # noqa: F401  (fill OPS)
from .table import OPS, Adjoint, Impl, OpDef, TypeRule, defop, opdef

__all__ = ["OPS", "Adjoint", "Impl", "OpDef", "TypeRule", "defop", "opdef"]
