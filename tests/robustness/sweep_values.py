"""The pieces of the cross-device agreement sweep (test_cross_device_sweep.py): edge values per
dtype, the swept functions and kernel ops (enumerated from the namespace's and the op
registry's own tables), the NumPy spelling of each namespace function, one IR kernel per
(dtype, arity) that applies every scalar op of the registry, and the comparison rule.

Nothing here is a hand list of functions or ops: a function added to `_dispatch.CATEGORIES`
or an op added with `defop` joins the sweep, or fails `test_the_sweep_covers_...` until it is
placed in the test module's table of exclusions.
"""

from __future__ import annotations

import inspect
import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import standard_values

import qdarray as qd
from qdarray import _dtypes as D
from qdarray import _elementwise_functions
from qdarray._dispatch import _FLOAT_FOR, CATEGORIES, KINDS
from qdarray.kernels.emit import Emitter, block
from qdarray.kernels.ir import For, KernelIR, Op, Param
from qdarray.kernels.ops import OPS
from qdarray.kernels.types import ArrayType

FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")
DTYPES = ("bool", *INTS, *FLOATS, *COMPLEX)

# Functions and ops whose float results follow each device's math library: within ULPS units
# in the last place of the CPU's (NumPy's) value. Everything else is exact. docs/opencl.md
# ("Transcendental functions follow the device's OpenCL library, within a few ulp of
# NumPy's"), docs/vulkan.md ("Math in kernels follows NumPy to within a few ulp": exp and its
# relatives within 3 ulp, float64 within 6e-16 relative, the rest listed as exact).
ULPS = 4
TRANSCENDENTAL = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "logaddexp",
    "pow", "hypot", "cbrt", "rsqrt", "POW", "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN",
    "ATAN2", "SINH", "COSH", "TANH", "ASINH", "ACOSH", "ATANH", "EXP", "EXP2", "EXPM1", "LOG",
    "LOG1P", "LOG2", "LOG10", "HYPOT", "CBRT", "RSQRT",
})


# -- edge values ------------------------------------------------------------------------------


def edge_values(dtype: str) -> np.ndarray:
    """The edge values of `dtype`: signed zeros, infinities, NaN, the smallest subnormal, the
    largest finite value and a few ordinary ones for floats; the extremes, -1, 0, 1 (and 2 and
    the width minus one, the shift counts' edges) for integers; every pair of real-part and
    imaginary-part edges for complex dtypes."""
    if dtype == "bool":
        return np.array([False, True])
    if dtype in COMPLEX:
        part = edge_values("float32" if dtype == "complex64" else "float64")
        part = part[[0, 1, 2, 3, 4, 7, 9, 10]]  # 0, -0, inf, -inf, nan, 1, -1, 0.5
        re, im = np.meshgrid(part, part, indexing="ij")
        z = np.empty(re.size, dtype)
        z.real = re.ravel()
        z.imag = im.ravel()
        return z
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        fi = np.finfo(np_dtype)
        values = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.smallest_subnormal,
                  -fi.smallest_subnormal, 1.0, fi.max, -1.0, 0.5, -fi.max, fi.smallest_normal,
                  -2.5, 3.0, 1e-3, 100.0]
        return np.array(values, np_dtype)
    ii = np.iinfo(np_dtype)
    values = sorted({ii.min, ii.max, 0, 1, 2, np_dtype.itemsize * 8 - 1} |
                    ({-1} if ii.min < 0 else set()))
    return np.array(values, np_dtype)


def operands(dtype: str, arity: int) -> list[np.ndarray]:
    """Every `arity`-tuple of `dtype`'s edge values, one array per position."""
    v = edge_values(dtype)
    if arity == 1:
        return [v]
    idx = np.array(list(itertools.product(range(v.size), repeat=arity))).T
    return [v[i] for i in idx]


# -- the namespace's elementwise functions ----------------------------------------------------


@dataclass(frozen=True)
class Function:
    """One swept namespace function: its name, the number of array operands and the dtypes of
    DTYPES its category accepts."""

    name: str
    arity: int
    dtypes: tuple[str, ...]


def elementwise_functions() -> tuple[list[Function], set[str]]:
    """The elementwise functions of the namespace (those of `_dispatch.CATEGORIES`, the table
    every one of them dispatches through, defined in `_elementwise_functions`) that take one
    or two arrays; the names of the others (in CATEGORIES but not elementwise, or of
    another signature)."""
    swept, other = [], set()
    for name, category in CATEGORIES.items():
        fn = getattr(_elementwise_functions, name, None)
        params = inspect.signature(fn).parameters.values() if fn is not None else []
        positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
        if fn is None or len(positional) not in (1, 2) or len(params) != len(positional):
            other.add(name)
            continue
        kinds = KINDS[category]
        dtypes = tuple(d for d in DTYPES if np.dtype(d).kind in kinds)
        swept.append(Function(name, len(positional), dtypes))
    return swept, other


REDUCTIONS = ("sum", "prod", "max", "min", "mean", "cumulative_sum")


def reduction_dtypes(name: str) -> tuple[str, ...]:
    """The dtypes of DTYPES that reduction `name` accepts (the standard's: numeric for sums and
    products, real numeric for max and min, floating-point for mean)."""
    kinds = {"max": "iuf", "min": "iuf", "mean": "fc"}.get(name, "iufc")
    return tuple(d for d in DTYPES if np.dtype(d).kind in kinds)


_NP_NAMES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
             "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh", "pow": "power",
             "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
             "bitwise_right_shift": "right_shift", "conj": "conjugate"}
def computes_in_float(name: str) -> bool:
    """Whether namespace function `name` computes integer and boolean input in float (it
    dispatches through `float_unary` or `float_binary`)."""
    code = getattr(qd, name).__code__
    return bool({"float_unary", "float_binary"} & set(code.co_names))


_STANDARD = {"expm1": standard_values.std_expm1, "tanh": standard_values.std_tanh,
             "floor_divide": standard_values.std_floor_divide}


def numpy_result(fn: Function, args: list[np.ndarray]) -> np.ndarray:
    """NumPy's value of `fn` with the project's documented rules: the standard's special cases
    where they differ from NumPy's (tests/standard_values.py), and integer or boolean input of
    a float function computed in float32 or float64 (qdarray/_elementwise_functions.py), never
    float16."""
    if computes_in_float(fn.name):
        args = [a.astype(_FLOAT_FOR[a.dtype.name]._np) if a.dtype.kind in "biu" else a
                for a in args]
    with np.errstate(all="ignore"):
        if fn.name in _STANDARD:
            return np.asarray(_STANDARD[fn.name](*args))
        if fn.name == "imag" and args[0].dtype.kind != "c":
            return np.zeros_like(args[0])
        return np.asarray(getattr(np, _NP_NAMES.get(fn.name, fn.name))(*args))


def numpy_reduction(name: str, x: np.ndarray) -> np.ndarray:
    """NumPy's reduction `name` of each row of `x` (the standard's name)."""
    fn = {"max": np.max, "min": np.min, "sum": np.sum, "prod": np.prod, "mean": np.mean,
          "cumulative_sum": np.cumulative_sum}[name]
    with np.errstate(all="ignore"):
        return np.asarray(fn(x, axis=1))


# -- the scalar ops of the kernel op registry -------------------------------------------------


# The op families whose operands are scalars; the others take arrays, views, vectors or
# adstacks (memory, atomics, vector) or are statements (control's IF, FOR, ...: no impl).
SCALAR_FAMILIES = ("arith", "math", "complex", "control")


@dataclass(frozen=True)
class OpCase:
    """One op applied in a sweep kernel: the op, its attrs, the result dtype."""

    op: Op
    attrs: tuple[Any, ...]
    result: Any

    @property
    def label(self) -> str:
        return self.op.name + ("" if not self.attrs else f"->{self.attrs[0].name}")


def scalar_ops(dtype: str, arity: int) -> list[OpCase]:
    """Every pure op of the registry with a reference implementation that takes `arity` scalar
    operands of `dtype` (its own type rule says which); CAST once to every dtype."""
    t = getattr(D, dtype)
    cases = []
    for op, d in OPS.items():
        if d.family not in SCALAR_FAMILIES or d.arity != arity or d.impl is None:
            continue
        attr_sets: list[tuple[Any, ...]] = [()]
        if op is Op.CAST:
            attr_sets = [(getattr(D, name),) for name in DTYPES]
        for attrs in attr_sets:
            try:
                result = d.type_rule((t,) * arity, attrs)
            except (TypeError, ValueError):
                continue
            cases.append(OpCase(op, attrs, result))
    return cases


def op_kernel(dtype: str, arity: int, cases: list[OpCase]) -> tuple[KernelIR, list[Any]]:
    """One kernel applying every op of `cases` to the elements of `arity` arrays of `dtype`:
    `out_<result>[k, i] = op_k(x0[i], ...)`, one output per result dtype (the results' dtypes
    in order of first use, returned with the kernel)."""
    em = Emitter(0, 0)
    results: list[Any] = []
    for c in cases:
        if c.result not in results:
            results.append(c.result)
    params = []

    def param(name: str, t: Any) -> Any:
        v = em.value(t)
        params.append(Param(name, v))
        return v

    outs = [param(f"out_{r.name}", ArrayType(r, 2)) for r in results]
    xs = [param(f"x{j}", ArrayType(getattr(D, dtype), 1)) for j in range(arity)]
    with em.region() as top:
        n = em.emit(Op.SHAPE, xs[0], attrs=(0,))
        i = em.value(D.int64)
        rows = {r: 0 for r in results}
        with em.region() as body:
            vals = [em.emit(Op.LOAD, x, i) for x in xs]
            for c in cases:
                y = em.emit(c.op, *vals, attrs=c.attrs)
                row = rows[c.result]
                rows[c.result] += 1
                em.emit(Op.STORE, outs[results.index(c.result)], em.i64(row), i, y)
        em.stmt(For(i, em.i64(0), n, block(body), True))
    return KernelIR(f"sweep_{dtype}_{arity}", tuple(params), block(top)), results


def run_op_kernel(dtype: str, arity: int, cases: list[OpCase], device: str | None
                  ) -> dict[str, np.ndarray]:
    """Each case's results on `device` (None: the interpreter), by label."""
    from qdarray.kernels import interp
    from qdarray.kernels.args import ArgSpec
    from qdarray.kernels.launch import compile_ir

    ir, results = op_kernel(dtype, arity, cases)
    xs = operands(dtype, arity)
    n = xs[0].size
    counts = {r: sum(c.result is r for c in cases) for r in results}
    outs = [np.zeros((counts[r], n), r._np) for r in results]
    if device is None:
        with np.errstate(all="ignore"):
            interp.run(ir, [*outs, *xs])
    else:
        dev = qd.Device(device)
        specs = [ArgSpec("array", p.value.type) for p in ir.params]
        arrays = [qd.asarray(a, device=device) for a in (*outs, *xs)]
        launch = compile_ir(ir, specs, [p.name for p in ir.params], dev.backend.target, False,
                            [], dev)
        launch(arrays)
        outs = [np.asarray(a.to_device("cpu")) for a in arrays[:len(outs)]]
    got, rows = {}, {r: 0 for r in results}
    for c in cases:
        got[c.label] = outs[results.index(c.result)][rows[c.result]]
        rows[c.result] += 1
    return got


# -- agreement --------------------------------------------------------------------------------


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits as integers that order as the floats do (-0 and +0 both 0)."""
    ints = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64).astype(np.float64)
    big = 2.0 ** (a.dtype.itemsize * 8 - 1)
    return np.where(ints < 0, -(ints + big), ints)


def disagreements(expected: np.ndarray, got: np.ndarray, ulps: int) -> np.ndarray:
    """Indices where `got` differs from `expected`: exactly (values, signed zeros, NaN
    positions, with any NaN equal to any NaN) when `ulps` is 0; with `ulps`, finite floats may
    differ by that many units in the last place, while zeros (and their signs), infinities
    and NaN still agree exactly."""
    if expected.dtype.kind == "c":
        return np.union1d(disagreements(expected.real, got.real, ulps),
                          disagreements(expected.imag, got.imag, ulps))
    if expected.ndim > 1:  # rows (cumulative sums): the rows that differ
        flat = [disagreements(expected[:, j], got[:, j], ulps) for j in range(expected.shape[1])]
        return np.unique(np.concatenate(flat))
    if expected.dtype.kind != "f":
        return np.flatnonzero(expected != got)
    both_nan = np.isnan(expected) & np.isnan(got)
    same = (expected == got) & (np.signbit(expected) == np.signbit(got))
    if ulps:
        finite = np.isfinite(expected) & np.isfinite(got) & (expected != 0) & (got != 0)
        close = np.abs(_ordered(expected) - _ordered(got)) <= ulps
        same |= finite & close
    return np.flatnonzero(~(same | both_nan))


def describe(args: list[np.ndarray], expected: np.ndarray, got: np.ndarray,
             bad: np.ndarray, limit: int = 4) -> str:
    """The first few disagreements as `f(args) = got, expected value`."""
    rows = []
    for k in bad[:limit]:
        inputs = ", ".join(repr(a[k].item()) for a in args)
        rows.append(f"({inputs}) -> {got[k].tolist()!r}, expected {expected[k].tolist()!r}")
    more = f" (and {bad.size - limit} more)" if bad.size > limit else ""
    return "; ".join(rows) + more


# -- the CUDA simulator's side (a subprocess with NUMBA_ENABLE_CUDASIM=1) ---------------------


def to_json(a: np.ndarray) -> list[str]:
    """An array as [dtype, hex of its bytes]: exact, NaN payloads and signed zeros included."""
    return [a.dtype.str, np.ascontiguousarray(a).tobytes().hex()]


def from_json(v: list[str], dtype: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(v[1]), dtype=np.dtype(v[0]))


def simulated_main(groups: list[str]) -> None:
    """Prints, as one line of JSON, each kernel group's results on `cuda:0` (groups as
    "dtype:arity"), for a process that runs under numba's CUDA simulator."""
    out = {}
    for g in groups:
        dtype, arity = g.split(":")
        got = run_op_kernel(dtype, int(arity), scalar_ops(dtype, int(arity)), "cuda:0")
        out[g] = {label: to_json(a) for label, a in got.items()}
    print(json.dumps(out))
