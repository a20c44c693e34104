"""The typed kernel IR: one `Op` enum, frozen nodes, structured control flow.

A kernel is a `KernelIR`: typed parameters and a `Block` of statements. Statements are
`Instr` (one op producing at most one SSA `Value`) and the structured control nodes `If`, `For`,
`While`, `Break` and `Continue`, which own their bodies as regions (nested `Block`s); there are
no gotos. Mutable locals are explicit `Var`s, read and written only by LOAD_VAR / STORE_VAR, so
every overwrite of a local is visible (reverse mode keeps overwritten values on adstacks).

Scoping: a Value defined in a block is visible in the rest of that block and in the blocks
nested in it, never after the block ends. `For.index` is visible inside `For.body`; the values
`While.cond_body` defines are visible in `While.cond` only.

Every node carries a `SourceLoc`, whose `stack` holds the frames of the `@qd.func` calls that
were inlined to reach it (kernel first), so a node can report its whole Python call stack.
Nodes are never mutated: passes build new ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from .types import Type, type_str


class Op(Enum):
    """Every operation of the IR. `ops/<family>.py` defines each one with `defop`."""

    # -- values and conversions ---------------------------------------------------------
    CONST = auto()
    CAST = auto()
    SELECT = auto()

    # -- arithmetic -----------------------------------------------------------------------
    ADD = auto()
    SUB = auto()
    MUL = auto()
    TRUEDIV = auto()
    FLOORDIV = auto()
    MOD = auto()
    POW = auto()
    NEG = auto()
    ABS = auto()
    MIN = auto()
    MAX = auto()

    # -- bitwise and logical --------------------------------------------------------------
    BIT_AND = auto()
    BIT_OR = auto()
    BIT_XOR = auto()
    BIT_NOT = auto()
    SHL = auto()
    SHR = auto()
    NOT = auto()

    # -- comparisons ----------------------------------------------------------------------
    EQ = auto()
    NE = auto()
    LT = auto()
    LE = auto()
    GT = auto()
    GE = auto()

    # -- math (qd.math) -------------------------------------------------------------------
    SIN = auto()
    COS = auto()
    TAN = auto()
    ASIN = auto()
    ACOS = auto()
    ATAN = auto()
    SINH = auto()
    COSH = auto()
    TANH = auto()
    ASINH = auto()
    ACOSH = auto()
    ATANH = auto()
    EXP = auto()
    EXP2 = auto()
    EXPM1 = auto()
    LOG = auto()
    LOG2 = auto()
    LOG10 = auto()
    LOG1P = auto()
    SQRT = auto()
    RSQRT = auto()
    CBRT = auto()
    FLOOR = auto()
    CEIL = auto()
    TRUNC = auto()
    ROUND = auto()
    SIGN = auto()
    ISNAN = auto()
    ISINF = auto()
    ISFINITE = auto()
    ATAN2 = auto()
    HYPOT = auto()
    COPYSIGN = auto()
    FMOD = auto()
    NEXTAFTER = auto()
    FMA = auto()

    # -- complex scalars (namespace kernels only; `ops/complex.py`) -------------------------
    COMPLEX = auto()
    REAL = auto()
    IMAG = auto()

    # -- vectors and matrices (frontend only; `ops/vector.py`, `passes/scalarize.py`) -----
    VEC_PACK = auto()
    VEC_ELEM = auto()

    # -- memory ---------------------------------------------------------------------------
    LOAD = auto()
    STORE = auto()
    SHAPE = auto()
    LOAD_VAR = auto()
    STORE_VAR = auto()
    CHECK_INDEX = auto()
    SUBVIEW = auto()

    # -- atomics --------------------------------------------------------------------------
    ATOMIC_ADD = auto()
    ATOMIC_MIN = auto()
    ATOMIC_MAX = auto()

    # -- adstacks (reverse mode; `ops/adstack.py`) -----------------------------------------
    ADSTACK_PUSH = auto()
    ADSTACK_POP = auto()
    ADSTACK_TOP = auto()
    ADSTACK_OWN = auto()
    WORKER = auto()
    LANE = auto()

    # -- structured control flow (the statement nodes below) ------------------------------
    IF = auto()
    FOR = auto()
    WHILE = auto()
    BREAK = auto()
    CONTINUE = auto()


# -- source locations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One Python frame of a kernel's call stack: function name, file and current line."""

    func: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.func} ({self.file}:{self.line})"


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """Where a node comes from: file, line, columns [col, end_col) on that line, function.

    `stack` holds the frames of the inlined callers, the kernel first; `frames()` appends this
    location's own frame, giving the whole stack down to the node.
    """

    file: str
    line: int
    col: int
    end_col: int
    func: str
    stack: tuple[Frame, ...] = ()

    def frames(self) -> tuple[Frame, ...]:
        return self.stack + (Frame(self.func, self.file, self.line),)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOC = SourceLoc("<unknown>", 0, 0, 0, "<unknown>")


# -- values and instructions ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA temporary: defined once (by an Instr, a For index or a Param), typed."""

    id: int
    type: Type

    def __str__(self) -> str:
        return f"%{self.id}"


@dataclass(frozen=True, slots=True)
class Var:
    """A mutable local; accessed only through LOAD_VAR / STORE_VAR. Its `dtype` is a scalar
    type, or a vector type until `passes/scalarize.py` splits it into one Var per component."""

    id: int
    name: str
    dtype: Type

    def __str__(self) -> str:
        return f"${self.name}.{self.id}"


@dataclass(frozen=True, slots=True)
class Instr:
    """One operation. `attrs` holds the op's static operands (constant value, axis, Var, ...)."""

    op: Op
    result: Value | None
    args: tuple[Value, ...]
    attrs: tuple[Any, ...] = ()
    loc: SourceLoc = UNKNOWN_LOC


@dataclass(frozen=True, slots=True)
class Block:
    """A region: a sequence of statements."""

    stmts: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class If:
    cond: Value
    then_body: Block
    else_body: Block
    loc: SourceLoc = UNKNOWN_LOC
    op = Op.IF


@dataclass(frozen=True, slots=True)
class For:
    """`for index in range(begin, end)` (step 1). `parallel`: one thread per iteration.

    Parallel loops are top-level statements of the kernel; a parallel loop whose body is
    just another parallel loop forms a nest (`qd.ndrange`) whose threads are index tuples.
    """

    index: Value
    begin: Value
    end: Value
    body: Block
    parallel: bool
    loc: SourceLoc = UNKNOWN_LOC
    op = Op.FOR


@dataclass(frozen=True, slots=True)
class While:
    """Run `cond_body`, test `cond`; while true run `body` and repeat."""

    cond_body: Block
    cond: Value
    body: Block
    loc: SourceLoc = UNKNOWN_LOC
    op = Op.WHILE


@dataclass(frozen=True, slots=True)
class Break:
    loc: SourceLoc = UNKNOWN_LOC
    op = Op.BREAK


@dataclass(frozen=True, slots=True)
class Continue:
    loc: SourceLoc = UNKNOWN_LOC
    op = Op.CONTINUE


Stmt = Instr | If | For | While | Break | Continue


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel parameter. `name` is the Python name (`p.x` for a dataclass field)."""

    name: str
    value: Value


# KernelIR.meta key: every float multiply rounds on its own, never contracted with an add into
# a fused multiply-add (a kernel standing for separate namespace calls, whose values it must
# give bit for bit: qd.jit's fused runs). Targets whose compilers contract by default (NVVM)
# spell such multiplies with a rounding of their own.
SEPARATE_ROUNDING = "separate_rounding"


@dataclass(frozen=True, slots=True)
class KernelIR:
    """A compiled kernel body: parameters in call order, the body, where it was defined."""

    name: str
    params: tuple[Param, ...]
    body: Block
    loc: SourceLoc = UNKNOWN_LOC
    meta: tuple[tuple[str, Any], ...] = field(default=())

    def replace_body(self, body: Block) -> KernelIR:
        return KernelIR(self.name, self.params, body, self.loc, self.meta)


# -- walking --------------------------------------------------------------------------------


def child_blocks(stmt: Stmt) -> tuple[Block, ...]:
    """The regions a statement owns, in execution order."""
    if isinstance(stmt, If):
        return (stmt.then_body, stmt.else_body)
    if isinstance(stmt, For):
        return (stmt.body,)
    if isinstance(stmt, While):
        return (stmt.cond_body, stmt.body)
    return ()


def operands(stmt: Stmt) -> tuple[Value, ...]:
    """The Values a statement reads itself (not those of its nested regions): an
    instruction's arguments, a for loop's bounds, an if's or a while's condition."""
    if isinstance(stmt, Instr):
        return stmt.args
    if isinstance(stmt, For):
        return (stmt.begin, stmt.end)
    if isinstance(stmt, (If, While)):
        return (stmt.cond,)
    return ()


def walk(block: Block) -> Any:
    """Every statement of `block` and its nested regions, in source order."""
    for stmt in block.stmts:
        yield stmt
        for child in child_blocks(stmt):
            yield from walk(child)


def instrs(block: Block) -> Any:
    """Every Instr of `block` and its nested regions."""
    for stmt in walk(block):
        if isinstance(stmt, Instr):
            yield stmt


def max_ids(kernel: KernelIR) -> tuple[int, int]:
    """(largest Value id, largest Var id) used in `kernel`, for passes that add new ones."""
    vmax = max((p.value.id for p in kernel.params), default=-1)
    varmax = -1
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr):
            if stmt.result is not None:
                vmax = max(vmax, stmt.result.id)
            if stmt.op in (Op.LOAD_VAR, Op.STORE_VAR):
                varmax = max(varmax, stmt.attrs[0].id)
        elif isinstance(stmt, For):
            vmax = max(vmax, stmt.index.id)
    return vmax, varmax


# -- text form ------------------------------------------------------------------------------


def _attr_str(a: Any) -> str:
    if isinstance(a, float):
        return repr(a)
    return type_str(a) if not isinstance(a, (Var, str, int, bool)) else str(a)


def format_instr(instr: Instr) -> str:
    parts = [instr.op.name]
    parts += [str(a) for a in instr.args]
    parts += [_attr_str(a) for a in instr.attrs]
    text = " ".join(parts)
    if instr.result is not None:
        text = f"{instr.result}: {type_str(instr.result.type)} = {text}"
    return text


def _format_block(block: Block, indent: str, out: list[str]) -> None:
    for stmt in block.stmts:
        if isinstance(stmt, Instr):
            out.append(indent + format_instr(stmt))
        elif isinstance(stmt, If):
            out.append(f"{indent}if {stmt.cond}:")
            _format_block(stmt.then_body, indent + "  ", out)
            if stmt.else_body.stmts:
                out.append(f"{indent}else:")
                _format_block(stmt.else_body, indent + "  ", out)
        elif isinstance(stmt, For):
            kind = "parallel for" if stmt.parallel else "for"
            out.append(f"{indent}{kind} {stmt.index}: {type_str(stmt.index.type)} "
                       f"in [{stmt.begin}, {stmt.end}):")
            _format_block(stmt.body, indent + "  ", out)
        elif isinstance(stmt, While):
            out.append(f"{indent}while:")
            _format_block(stmt.cond_body, indent + "    ", out)
            out.append(f"{indent}  test {stmt.cond}, do:")
            _format_block(stmt.body, indent + "  ", out)
        else:
            out.append(indent + stmt.op.name.lower())


def format_kernel(kernel: KernelIR) -> str:
    """The kernel as text (stable: used in tests and cache keys)."""
    params = ", ".join(f"{p.name}={p.value}: {type_str(p.value.type)}" for p in kernel.params)
    out = [f"kernel {kernel.name}({params}):"]
    _format_block(kernel.body, "  ", out)
    return "\n".join(out)
