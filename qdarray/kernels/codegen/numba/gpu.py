"""numba.cuda code generator: `render_numba_cuda(kernel) -> str`, a module of CUDA kernels.

A kernel runs as the stages of `passes/stages.py`, one CUDA launch each, in order on one
stream:

- a parallel loop (or `qd.ndrange` nest) is `stage<k>`: a grid-stride loop over the flattened
  index space (passes/flatten.py), calling the device function
  `_body_<k>(t..., captured values...)` once per iteration (a top-level `continue` is a
  `return`). The launcher picks the grid (at most SMs x 32 blocks of `TPB` threads), so a
  launch needs no exact trip count;
- a run of other top-level statements is a stage launched as one thread;
- top-level pure instructions of the parameters (shapes, scalars, constants) are recomputed
  in every stage and on the host; values and locals a serial stage defines and a later stage
  reads travel through one-element `carry` arrays of their dtype.

Atomics are numba's CUDA atomics (32- and 64-bit integers and floats; a narrower dtype raises
a KernelTypeError naming the array). Atomics that every thread aims at one element are reduced
within the block first (`block_sums.py`). `qd.math` functions are CUDA's libdevice ones. In
debug mode every check writes the error record of the CPU target into a device array, and a
failed check stops the later stages of the launch.

Under numba's simulator (`simulated=True`) the same module runs as Python: math is spelled
with NumPy's ufuncs (which match libdevice's results to rounding), and every stage runs with
NumPy's floating-point warnings off, since each simulated thread is a fresh Python thread.
"""

from __future__ import annotations

import functools
from typing import Any

from ...._errors import KernelTypeError
from ...._version import __version__
from ... import error_record
from ...ir import SEPARATE_ROUNDING, For, Instr, KernelIR, Op, Value
from ...ops import OPS
from ...passes.flatten import flatten_nests
from ...passes.stages import Stage, plan_stages
from ...types import ArrayType, ViewType
from ..block_sums import BlockSum, block_sums, emit_reduction
from ..regions import free_values
from .npy_divmod import float_divmod
from .pysource import PY_TABLE, PySourceEmitter, const, ctor, numpy_math

# Threads per block: a power of two (block reductions halve it). The simulator runs a Python
# thread per CUDA thread, so it gets small blocks.
TPB = 256
TPB_SIMULATED = 32
ABORT = error_record.STAGE  # the error record's slot of 1 + the failed stage
ATOMIC_DTYPES = frozenset({"int32", "uint32", "int64", "uint64", "float32", "float64"})

def _f(dtype: Any) -> str:
    """libdevice's suffix: `sinf` for float32, `sin` for float64."""
    return "f" if dtype.name == "float32" else ""


def _libdevice(name: str) -> Any:
    def spell(e: Any, i: Instr) -> str:
        args = ", ".join(e.val(a) for a in i.args)
        return f"libdevice.{name}{_f(i.result.type)}({args})"  # type: ignore[union-attr]
    return spell


def _rsqrt(e: Any, i: Instr) -> str:
    t: Any = i.result.type  # type: ignore[union-attr]
    return f"np.{t.name}(1.0) / libdevice.sqrt{_f(t)}({e.val(i.args[0])})"


def _sign(e: Any, i: Instr) -> str:
    x = e.val(i.args[0])
    t: Any = i.result.type  # type: ignore[union-attr]
    one = f"np.{t.name}(1)"
    # x - x: +0.0 for either zero, as NumPy's sign(-0.0)
    return f"(({x} - {x}) if {x} == 0 else ({x} if {x} != {x} else ({one} if {x} > 0 else -{one})))"


def _pow(e: Any, i: Instr) -> str:
    t: Any = i.result.type  # type: ignore[union-attr]
    if t.kind in "iu":
        return str(PY_TABLE[Op.POW](e, i))  # ipow / upow (numba/gpu_runtime.py)
    a, b = (e.val(x) for x in i.args)
    return f"libdevice.pow{_f(t)}({a}, {b})"


def _for(e: Any, s: For) -> None:
    """A serial loop over range(begin, end) as a while loop over an int64 counter, bumped
    before the body (so that `continue` keeps it). NVVM unrolls it as it does numba's range
    loop, without the range iterator's remaining count clamped at zero at every step (a
    compare and a select): on sm_90 the reverse of the dynamic-loop kernel's popping loop
    takes 18.75 instructions per step on its hot path instead of 20.75, its pushing loop
    18.25 instead of 17.75 (benchmarks/gpu/tape_sass.py). A loop over uint64 keeps the
    range (its bounds may not fit an int64)."""
    if s.parallel or getattr(s.index.type, "name", "") == "uint64":
        PY_TABLE[Op.FOR](e, s)
        return
    n = f"_n{s.index.id}"
    e.line(f"{n} = np.int64({e.val(s.begin)})")
    e.line(f"while {n} < {e.val(s.end)}:")
    with e.loop():
        e.line(f"{e.val(s.index)} = {ctor(s.index.type)}({n})")
        e.line(f"{n} += 1")
        e.block(s.body)


def _element(e: Any, args: tuple[Value, ...]) -> str:
    """An atomic's index: one integer, a tuple, or 0 for a 0-d array (passed as 1-d)."""
    if not args:
        return "0"
    if len(args) == 1:
        return str(e.val(args[0]))
    return f"({', '.join(e.val(a) for a in args)})"


def _atomic(name: str) -> Any:
    def spell(e: Any, i: Instr) -> str:
        t: Any = i.args[-1].type
        if t.name not in ATOMIC_DTYPES:
            raise KernelTypeError(
                f"Kernel '{e.kernel.name}': atomic {name} on a {t.name} array "
                f"({i.loc.file}:{i.loc.line}) is not supported on CUDA devices, which have "
                "atomics of 32- and 64-bit integers and floats only. Use an int32, int64, "
                "float32 or float64 array for the updated elements.")
        return (f"cuda.atomic.{name}({e.val(i.args[0])}, {_element(e, i.args[1:-1])}, "
                f"{e.val(i.args[-1])})")
    return spell


SIMULATED_TABLE: dict[Op, Any] = {**PY_TABLE, **numpy_math()}
SIMULATED_TABLE.update({
    Op.ABS: "abs({0})", Op.FOR: _for,
    Op.ATOMIC_ADD: _atomic("add"), Op.ATOMIC_MIN: _atomic("min"),
    Op.ATOMIC_MAX: _atomic("max"), Op.FLOORDIV: float_divmod(Op.FLOORDIV, True),
    Op.MOD: float_divmod(Op.MOD, True),
})
def _wrapping(symbol: str) -> Any:
    """int64 `a symbol b` computed in uint64: NVVM took numba's signed arithmetic as unable
    to overflow and folded (x * 100) // 100 back to x and x + 1 > x to true; NumPy's wraps."""
    def spell(e: Any, i: Instr) -> str:
        args = [e.val(x) for x in i.args]
        dtype: Any = i.result.type  # type: ignore[union-attr]
        if not (dtype.kind == "i" and dtype.itemsize == 8):
            return f"-{args[0]}" if symbol == "neg" else f"{args[0]} {symbol} {args[1]}"
        if symbol == "neg":
            return f"np.int64(np.uint64(0) - np.uint64({args[0]}))"
        return f"np.int64(np.uint64({args[0]}) {symbol} np.uint64({args[1]}))"
    return spell


def _float_extremum(name: str) -> Any:
    """A GPU atomic min / max: numba's for integers, the runtime's for floats (which return
    the value they replaced; numba/gpu_runtime.py)."""
    numba_spelling = _atomic(name)

    def spell(e: Any, i: Instr) -> str:
        t: Any = i.args[-1].type
        if t.name not in ("float32", "float64"):
            return numba_spelling(e, i)  # type: ignore[no-any-return]
        return (f"atomic_fextremum{t.name[-2:]}({e.val(i.args[0])}, "
                f"{_element(e, i.args[1:-1])}, {e.val(i.args[-1])}, {name == 'max'})")
    return spell


TABLE: dict[Op, Any] = dict(SIMULATED_TABLE)
TABLE.update({op: _libdevice(d.c_name) for op, d in OPS.items()  # CUDA's libdevice
              if d.family == "math" and d.c_name is not None})
TABLE.update({Op.ADD: _wrapping("+"), Op.SUB: _wrapping("-"), Op.MUL: _wrapping("*"),
              Op.NEG: _wrapping("neg"), Op.RSQRT: _rsqrt, Op.SIGN: _sign, Op.POW: _pow,
              Op.ISNAN: "math.isnan({0})",
              Op.ISINF: "math.isinf({0})", Op.ISFINITE: "math.isfinite({0})",
              Op.FLOORDIV: float_divmod(Op.FLOORDIV, False),
              Op.MOD: float_divmod(Op.MOD, False),
              Op.ATOMIC_MIN: _float_extremum("min"), Op.ATOMIC_MAX: _float_extremum("max")})


@functools.cache
def _forceinline() -> bool:
    """Whether this numba-cuda's `cuda.jit` takes `forceinline` (NVVM inlining of device
    functions; older versions leave inlining to NVVM's heuristics)."""
    import inspect

    from numba import cuda

    return "forceinline" in inspect.signature(cuda.jit).parameters


class NumbaCudaEmitter(PySourceEmitter):
    """Emits the stage kernels and body functions of one kernel (module docstring)."""

    TABLE = TABLE

    def __init__(self, kernel: KernelIR, debug: bool, simulated: bool) -> None:
        super().__init__()
        self.kernel = kernel
        self.debug = debug
        self.simulated = simulated
        self.plan = plan_stages(kernel)
        self.flat = flatten_nests(kernel)
        self.sums: dict[int, BlockSum] = {}
        self.separate = bool(dict(kernel.meta).get(SEPARATE_ROUNDING))

    def instr(self, instr: Instr, spelling: Any) -> None:
        s = self.sums.get(id(instr))
        if s is None:
            if instr.op is Op.MUL and self.separate and not self.simulated:
                t: Any = instr.result.type  # type: ignore[union-attr]
                if t.name in ("float32", "float64"):
                    # libdevice's multiply rounded on its own: NVVM does not contract it
                    spelling = ("libdevice.fmul_rn({0}, {1})" if t.name == "float32" else
                                "libdevice.dmul_rn({0}, {1})")
            super().instr(instr, spelling)
        else:  # a block-reduced atomic: its old value is unused
            s.combine(self, f"{s.name}[0]", self.val(instr.args[-1]))

    # -- pieces ---------------------------------------------------------------------------

    def decorator(self, device: bool) -> str:
        if self.simulated:
            return "@cuda.jit(device=True)" if device else "@cuda.jit"
        if not device:
            return "@cuda.jit(cache=True)"
        return "@cuda.jit(device=True, forceinline=True)" if _forceinline() else \
            "@cuda.jit(device=True)"

    def stage_params(self) -> str:
        names = [f"a{p.value.id}" for p in self.kernel.params]
        names += [f"c{k}" for k in range(self.plan.slots)]
        return ", ".join(names + (["err"] if self.debug else []))

    def prologue(self) -> None:
        """Parameters, host-computable values and carried values, at a stage's start."""
        for p in self.kernel.params:
            t = p.value.type
            src = f"a{p.value.id}"
            is_mem = isinstance(t, (ArrayType, ViewType))
            self.line(f"{self.val(p.value)} = {src if is_mem else f'{ctor(t)}({src})'}")
        for i in self.plan.host:
            self.stmt(i)

    def name(self, item: Value | Any) -> str:
        """The name of a carried value or local."""
        return self.val(item) if isinstance(item, Value) else self.var(item)

    def captures(self, nest: list[For]) -> tuple[list[Value], list[Any]]:
        return free_values(nest[-1].body, [f.index for f in nest])

    def body_args(self, nest: list[For], sums: list[BlockSum]) -> list[str]:
        values, locals_ = self.captures(nest)
        names = [self.val(v) for v in values] + [self.var(v) for v in locals_]
        return names + [s.name for s in sums] + (["err"] if self.debug else [])

    # -- functions ------------------------------------------------------------------------

    def body_function(self, k: int, nest: list[For], sums: list[BlockSum]) -> None:
        self.thread_function(self.decorator(True), f"_body_{k}", nest,
                             self.body_args(nest, sums))
        self.lines += ["", ""]

    def stage(self, k: int, stage: Stage) -> None:
        self.stage_no = k
        self.sums = {}
        sums: list[BlockSum] = []
        if stage.loops:
            values, _ = self.captures(stage.loops)
            self.sums = block_sums(stage.loops[-1].body, {v.id for v in values},
                                   lambda t: t.name in ATOMIC_DTYPES)
            sums = list(self.sums.values())
            self.body_function(k, stage.loops, sums)
        self.line(self.decorator(False))
        self.line(f"def stage{k}({self.stage_params()}):")
        with self.indent():
            if self.simulated:  # each simulated thread starts with NumPy's default errstate
                self.line('with np.errstate(all="ignore"):')
                self.depth += 1
            if self.debug:
                self.line(f"if err[{ABORT}] != 0 and err[{ABORT}] != {k + 1}:")
                with self.indent():
                    self.line("return")
            self.prologue()
            for item in self.plan.loads(stage):
                self.line(f"{self.name(item)} = c{self.plan.slot(item)}[0]")
            if stage.loops:
                self.grid_stride(k, stage.loops, sums)
            else:
                self.block_of(stage)
            if self.simulated:
                self.depth -= 1
        self.sums = {}
        self.lines += ["", ""]

    def block_of(self, stage: Stage) -> None:
        """A serial stage: its statements, then the carried values it defines stored."""
        start = len(self.lines)
        for s in stage.stmts:
            self.stmt(s)
        for item in self.plan.stores(stage):
            self.line(f"c{self.plan.slot(item)}[0] = {self.name(item)}")
        if len(self.lines) == start:
            self.line("pass")

    def grid_stride(self, k: int, nest: list[For], sums: list[BlockSum]) -> None:
        """The stage's threads: a grid-stride loop over the nest's flat index space
        (passes/flatten.py)."""
        flat = self.flat[id(nest[0])]
        for i in flat.sizes:
            self.stmt(i)
        for s in sums:
            self.line(f"{s.name} = cuda.local.array(1, np.{s.dtype.name})")
            self.line(f"{s.name}[0] = {s.identity()}")
        self.line(f"for {self.val(flat.flat)} in range(np.int64(cuda.grid(1)), "
                  f"{self.val(flat.total)}, np.int64(cuda.gridsize(1))):")
        with self.indent():
            for i in flat.decode:
                self.stmt(i)
            ts = [self.val(t) for t in flat.threads]
            self.line(f"_body_{k}({', '.join(ts + self.body_args(nest, sums))})")
            if self.debug:
                self.stop_after_failure("break")
        if sums:
            self.line("_tid = cuda.threadIdx.x")
        for s in sums:
            parts = [self.val(i) if isinstance(i, Value) else const(*i) for i in s.index]
            index = "0" if not parts else parts[0] if len(parts) == 1 else \
                f"({', '.join(parts)})"
            emit_reduction(self, s, f"cuda.atomic.{s.kind}", index)

    def render(self) -> str:
        loc = self.kernel.loc
        libdevice = "" if self.simulated else "from numba.cuda import libdevice"
        self.lines += [
            f'"""Generated by qdarray {__version__} for kernel {self.kernel.name!r} '
            f'({loc.file}:{loc.line}){" (simulator)" if self.simulated else ""}. '
            'Do not edit."""',
            "import math", "", "import numpy as np", "from numba import cuda", libdevice, "",
            "from qdarray.kernels.codegen.numba.gpu_runtime import (atomic_fextremum32, "
            "atomic_fextremum64,", "    fma, ipow, report_index_error, upow)", "",
            f"TPB = {TPB_SIMULATED if self.simulated else TPB}", "", ""]
        for k, stage in enumerate(self.plan.stages):
            self.stage(k, stage)
        self.lines += self.constant_lines()
        return self.source()


class SimulatedEmitter(NumbaCudaEmitter):
    """The emitter for numba's simulator: NumPy's spellings of the math functions."""

    TABLE = SIMULATED_TABLE


def render_numba_cuda(kernel: KernelIR, *, debug: bool = False, simulated: bool = False
                      ) -> str:
    """Python source of a module running `kernel` (views lowered) as numba.cuda stages
    `stage0`, `stage1`, ... (see the module docstring); `simulated`: for numba's simulator."""
    emitter = SimulatedEmitter if simulated else NumbaCudaEmitter
    return emitter(kernel, debug, simulated).render()
