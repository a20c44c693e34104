"""Cross-device agreement on edge values (the reliability issue's generated sweep).

Every elementwise function of the namespace (unary and binary, enumerated from
`_dispatch.CATEGORIES`), the reductions `sum`, `prod`, `max`, `min`, `mean` and
`cumulative_sum`, and every scalar op of the kernel op registry (`kernels/ops`, enumerated
from `OPS`) run on edge values (tests/robustness/sweep_values.py: signed zeros, infinities,
NaN, subnormals, the largest finite value, integer extremes, booleans, complex pairs; every
pair of them for binary functions) on every device present:

- namespace functions: the CPU's results equal NumPy's (with the standard's special cases of
  tests/standard_values.py and float32 for small integers), and OpenCL's and Vulkan's equal
  the CPU's: bit for bit (signed zeros, NaN positions: any NaN equals any NaN) for exact
  functions, within `ULPS` units in the last place for transcendental ones (docs/opencl.md,
  docs/vulkan.md);
- kernel ops: one kernel per (dtype, arity) applies every op to every tuple of edge values;
  the interpreter (kernels/interp.py, the executable definition of each op) is the oracle for
  the compiled CPU, OpenCL, Vulkan and (in a subprocess, tests/cuda/test_cuda_simulator.py's
  way) numba's CUDA simulator.

Size is bounded for CI: each function costs one launch per dtype and device, each kernel group
one compile per device. Integer dtypes rotate over the namespace functions (two of the eight
per function; every integer dtype is swept by several functions), and the compiled devices
run the kernel groups of four integer dtypes (BOUNDED_INTS; the simulator runs them all);
QDARRAY_SWEEP=full sweeps every integer dtype everywhere.

Known, deliberate differences are the one table KNOWN below (with the doc that states each);
wrong values found and not fixed yet are the table WRONG, each checked by a strict xfail.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import sweep_values as S

import qdarray as qd
from qdarray.kernels.ir import Op
from qdarray.kernels.ops import OPS

HERE = Path(__file__).resolve().parent
FULL = os.environ.get("QDARRAY_SWEEP", "") == "full"
FUNCTIONS, NOT_SWEPT = S.elementwise_functions()
GROUPS = [(d, a) for d in S.DTYPES for a in (1, 2, 3) if S.scalar_ops(d, a)]
# The integer dtypes whose kernel groups the compiled devices run in CI (the narrowest and
# widest, signed and unsigned); numba compiles each group's kernel in seconds.
BOUNDED_INTS = ("int8", "int64", "uint8", "uint64")
COMPILED = [(d, a) for d, a in GROUPS if FULL or d not in S.INTS or d in BOUNDED_INTS]


def _present() -> set[str]:
    return {str(d) for d in qd.__array_namespace_info__().devices()}


DEVICES = ("opencl:0", "vulkan:0")


def _device_param(device: str) -> object:
    skip = pytest.mark.skip(reason=f"no {device} device here (qdarray finds "
                                   f"{sorted(_present())})")
    return pytest.param(device, marks=() if device in _present() else skip, id=device)


# -- what the sweep leaves out, and why ----------------------------------------------------------

# Namespace names in CATEGORIES that are not one- or two-array elementwise functions.
NOT_ELEMENTWISE = {
    "matmul": "a linear-algebra function (tests/opencl/test_namespace.py compares it)",
    "clip": "takes optional bounds: tests/opencl/test_namespace.py and "
            "tests/array/test_special_cases.py pin its NaN and bound cases",
}
# Op families without scalar operands (arrays, views, vectors, adstacks, statements), and
# CONST, whose value is an attribute.
NOT_SCALAR_OPS = {op for op, d in OPS.items() if d.family not in S.SCALAR_FAMILIES} | {
    op for op, d in OPS.items() if d.impl is None} | {Op.CONST}


def _outside(dtype: str) -> Callable[[list[np.ndarray]], np.ndarray]:
    """Float (or complex: their real parts) operands that are NaN, infinite or outside the
    range of integer `dtype`."""
    info = np.iinfo(dtype)

    def where(args: list[np.ndarray]) -> np.ndarray:
        if args[0].dtype.kind not in "fc":
            return np.zeros(args[0].shape, bool)
        x = np.real(args[0]).astype(np.float64)
        with np.errstate(invalid="ignore"):
            return ~np.isfinite(x) | (x <= info.min - 1.0) | (x >= info.max + 1.0)

    return where


@dataclass(frozen=True)
class Known:
    """Inputs whose results may differ, deliberately: on `devices` (kinds; "*" all), for the
    functions or op labels `cases` with dtypes `dtypes` ("*" all), where `inputs(args)` is
    True; `doc` states it."""

    devices: tuple[str, ...]
    cases: tuple[str, ...]
    dtypes: tuple[str, ...]
    inputs: Callable[[list[np.ndarray]], np.ndarray]
    reason: str
    doc: str

    def applies(self, device: str, case: str, dtype: str) -> bool:
        return (device.split(":")[0] in self.devices or "*" in self.devices) and \
            case in self.cases and ("*" in self.dtypes or dtype in self.dtypes)


KNOWN: tuple[Known, ...] = (
    *(Known(("*",), (f"CAST->{t}",), ("*",), _outside(t),
            "a NaN, infinite or out-of-range float (or complex) converted to an integer: C "
            "leaves it undefined (inf to uint64: NumPy 0, the compiled devices 2**63)",
            "docs/kernels.md: 'Converting a float that is NaN or out of the integer's range to "
            "an integer is undefined.'") for t in S.INTS),
    Known(("*",), ("pow",), S.INTS, lambda args: args[1] < 0,
          "an integer to a negative integer power: NumPy (so the CPU) raises ValueError; the "
          "device kernels' total integer power gives the truncated 1 / x**-n. Left out of the "
          "input on every device",
          "docs/kernels.md: 'an integer x ** n with n < 0 is the truncated 1 / x**-n'"),
)


@dataclass(frozen=True)
class Wrong:
    """A value a device gets wrong that is not fixed yet: `case` of `dtype` on `device`."""

    device: str
    case: str
    dtype: str
    value: str


_POW64 = "up to ~100 ulp off where |y log x| is large (exp(y log|x|) in plain float64; " \
         "as docs/vulkan.md says): pow(1.8e308, -1.0) is 5.562684646268137e-309, NumPy " \
         "5.562684646268003e-309; pow(2.2250738585072014e-308, 1.0) is " \
         "2.2250738585072626e-308; off the sweep, pow(1e300, 1.0) is 107 ulp low"
_FMA = "subnormal operands round the product first: fma(tiny, 0.5, tiny) is tiny, not 2 tiny, " \
       "and fma(tiny, -tiny, 0.0) is +0.0, not -0.0 (tiny: the smallest subnormal)"
WRONG: tuple[Wrong, ...] = (
    Wrong("vulkan:0", "pow", "float64", _POW64), Wrong("vulkan:0", "POW", "float64", _POW64),
    *(Wrong("vulkan:0", "FMA", d, _FMA) for d in S.FLOATS),
)


def _wrong(device: str, case: str, dtype: str) -> bool:
    return any(w.device == device and w.case == case and w.dtype == dtype for w in WRONG)


def _excluded(device: str, case: str, dtype: str, args: list[np.ndarray]) -> np.ndarray:
    mask = np.zeros(args[0].shape, bool)
    for k in KNOWN:
        if k.applies(device, case, dtype):
            mask |= k.inputs(args)
    return mask


def _check(device: str, case: str, dtype: str, args: list[np.ndarray], expected: np.ndarray,
           got: np.ndarray, ulps: int) -> str | None:
    """A line describing the disagreements of `got` with `expected`, or None."""
    assert got.dtype == expected.dtype, f"{case}({dtype}) on {device}: dtype {got.dtype}, " \
                                        f"expected {expected.dtype}"
    assert got.shape == expected.shape, (case, dtype, device, got.shape, expected.shape)
    bad = S.disagreements(expected, got, ulps)
    if expected.ndim == 1:
        bad = bad[~_excluded(device, case, dtype, args)[bad]]
    if bad.size == 0:
        return None
    return f"{case}({dtype}) on {device}: {S.describe(args, expected, got, bad)}"


# -- namespace functions -------------------------------------------------------------------------


def _dtypes_of(fn: S.Function) -> tuple[str, ...]:
    if FULL:
        return fn.dtypes
    k = [f.name for f in FUNCTIONS].index(fn.name)
    ints = [d for d in fn.dtypes if d in S.INTS]
    keep = {ints[k % len(ints)], ints[(k + 3) % len(ints)]} if ints else set()
    return tuple(d for d in fn.dtypes if d not in S.INTS or d in keep)


def _operands(name: str, dtype: str) -> list[np.ndarray]:
    """The edge values of `dtype` for function `name`, less those that KNOWN leaves out of
    the input on every device (where the CPU raises)."""
    fn = next(f for f in FUNCTIONS if f.name == name)
    args = S.operands(dtype, fn.arity)
    keep = ~_excluded("*", name, dtype, args)
    return [a[keep] for a in args]


@functools.cache
def _namespace_result(name: str, dtype: str, device: str) -> np.ndarray:
    args = [qd.asarray(a, device=device) for a in _operands(name, dtype)]
    return np.asarray(getattr(qd, name)(*args).to_device("cpu"))


def test_the_sweep_covers_every_elementwise_function_and_scalar_op():
    public = {n for n in dir(S._elementwise_functions) if not n.startswith("_")
              and callable(getattr(S._elementwise_functions, n))}
    elementwise = {n for n in public if n in {f.name for f in FUNCTIONS} | NOT_SWEPT}
    assert NOT_SWEPT == set(NOT_ELEMENTWISE), "place each new function in NOT_ELEMENTWISE"
    assert {f.name for f in FUNCTIONS} == elementwise - set(NOT_ELEMENTWISE)
    swept = {c.op for d, a in GROUPS for c in S.scalar_ops(d, a)}
    assert swept == set(OPS) - NOT_SCALAR_OPS
    assert all(any(d in _dtypes_of(f) for f in FUNCTIONS) for d in S.DTYPES)


@pytest.mark.parametrize("name", [f.name for f in FUNCTIONS])
def test_cpu_namespace_equals_numpy(name):
    fn = next(f for f in FUNCTIONS if f.name == name)
    problems = []
    for dtype in fn.dtypes:
        args = _operands(name, dtype)
        expected = S.numpy_result(fn, args)
        ulps = S.ULPS if name in S.TRANSCENDENTAL and dtype in S.COMPLEX else 0
        line = _check("cpu", name, dtype, args, expected, _namespace_result(name, dtype, "cpu"),
                      ulps)
        if line and not _wrong("cpu", name, dtype):
            problems.append(line)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("device", [_device_param(d) for d in DEVICES])
@pytest.mark.parametrize("name", [f.name for f in FUNCTIONS])
def test_namespace_agrees_with_the_cpu(name, device):
    fn = next(f for f in FUNCTIONS if f.name == name)
    problems = []
    for dtype in _dtypes_of(fn):
        if _wrong(device, name, dtype):
            continue
        args = _operands(name, dtype)
        ulps = S.ULPS if name in S.TRANSCENDENTAL else 0
        line = _check(device, name, dtype, args, _namespace_result(name, dtype, "cpu"),
                      _namespace_result(name, dtype, device), ulps)
        if line:
            problems.append(line)
    assert not problems, "\n".join(problems)


def _pairs(dtype: str) -> np.ndarray:
    """Every pair of edge values as the rows of an (n, 2) array."""
    a, b = S.operands(dtype, 2)
    return np.stack([a, b], axis=1)


@functools.cache
def _reduction(name: str, dtype: str, device: str) -> np.ndarray:
    x = qd.asarray(_pairs(dtype), device=device)
    return np.asarray(getattr(qd, name)(x, axis=1).to_device("cpu"))


@pytest.mark.parametrize("device", ["cpu", *(_device_param(d) for d in DEVICES)])
@pytest.mark.parametrize("name", S.REDUCTIONS)
def test_reductions_of_pairs(name, device):
    """Each reduction of every pair of edge values (two elements: no order to differ by):
    the CPU against NumPy, the others against the CPU, exactly."""
    problems = []
    for dtype in S.reduction_dtypes(name):
        if _wrong(device, name, dtype):
            continue
        x = _pairs(dtype)
        expected = S.numpy_reduction(name, x) if device == "cpu" else \
            _reduction(name, dtype, "cpu")
        line = _check(device, name, dtype, [x[:, 0], x[:, 1]], expected,
                      _reduction(name, dtype, device), 0)
        if line:
            problems.append(line)
    assert not problems, "\n".join(problems)


# -- kernel ops ------------------------------------------------------------------------------


@functools.cache
def _op_results(dtype: str, arity: int, device: str | None) -> dict[str, np.ndarray]:
    return S.run_op_kernel(dtype, arity, S.scalar_ops(dtype, arity), device)


def _op_problems(dtype: str, arity: int, device: str, got: dict[str, list]) -> list[str]:
    ref = _op_results(dtype, arity, None)
    args = S.operands(dtype, arity)
    problems = []
    for c in S.scalar_ops(dtype, arity):
        if _wrong(device, c.label, dtype):
            continue
        ulps = S.ULPS if c.op.name in S.TRANSCENDENTAL else 0
        line = _check(device, c.label, dtype, args, ref[c.label], np.asarray(got[c.label]),
                      ulps)
        if line:
            problems.append(line)
    return problems


@pytest.mark.parametrize("device", ["cpu", *(_device_param(d) for d in DEVICES)])
@pytest.mark.parametrize("dtype,arity", COMPILED, ids=[f"{d}-{a}" for d, a in COMPILED])
def test_kernel_ops_agree_with_the_interpreter(dtype, arity, device):
    problems = _op_problems(dtype, arity, device, _op_results(dtype, arity, device))
    assert not problems, "\n".join(problems)


@functools.cache
def _simulated() -> dict[str, dict[str, list]]:
    """The kernel groups' results under numba's CUDA simulator, from a subprocess (the
    simulator is chosen when numba is imported)."""
    path = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=path)
    code = "import sweep_values, sys; sweep_values.simulated_main(sys.argv[1:])"
    cmd = [sys.executable, "-c", code, *(f"{d}:{a}" for d, a in GROUPS)]
    done = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_kernel_ops_agree_under_the_cuda_simulator():
    results = _simulated()
    problems = []
    for dtype, arity in GROUPS:
        got = {k: S.from_json(v, dtype) for k, v in results[f"{dtype}:{arity}"].items()}
        problems += _op_problems(dtype, arity, "cuda:0", got)
    assert not problems, "\n".join(problems)


# -- wrong values not fixed yet ---------------------------------------------------------------


@pytest.mark.parametrize("wrong", [pytest.param(
    w, marks=pytest.mark.xfail(strict=True, reason=f"{w.case}({w.dtype}) on {w.device}: "
                                                    f"{w.value}"),
    id=f"{w.case}-{w.dtype}-{w.device}") for w in WRONG])
def test_wrong_values_not_fixed_yet(wrong):
    if wrong.device not in _present() | {"cpu", "cuda:0"}:
        pytest.skip(f"no {wrong.device} device here")
    fn = next((f for f in FUNCTIONS if f.name == wrong.case), None)
    if fn is not None:
        args = _operands(fn.name, wrong.dtype)
        expected = S.numpy_result(fn, args) if wrong.device == "cpu" else \
            _namespace_result(fn.name, wrong.dtype, "cpu")
        line = _check(wrong.device, fn.name, wrong.dtype, args, expected,
                      _namespace_result(fn.name, wrong.dtype, wrong.device),
                      S.ULPS if fn.name in S.TRANSCENDENTAL else 0)
        assert line is None, line
        return
    if wrong.case in S.REDUCTIONS:
        x = _pairs(wrong.dtype)
        line = _check(wrong.device, wrong.case, wrong.dtype, [x[:, 0], x[:, 1]],
                      _reduction(wrong.case, wrong.dtype, "cpu"),
                      _reduction(wrong.case, wrong.dtype, wrong.device), 0)
        assert line is None, line
        return
    arity = next(a for d, a in GROUPS if d == wrong.dtype and any(
        c.label == wrong.case for c in S.scalar_ops(d, a)))
    ref = _op_results(wrong.dtype, arity, None)[wrong.case]
    if wrong.device.startswith("cuda"):
        got = S.from_json(_simulated()[f"{wrong.dtype}:{arity}"][wrong.case], wrong.dtype)
    else:
        got = _op_results(wrong.dtype, arity, wrong.device)[wrong.case]
    op_ulps = S.ULPS if wrong.case in S.TRANSCENDENTAL else 0
    line = _check(wrong.device, wrong.case, wrong.dtype, S.operands(wrong.dtype, arity), ref,
                  got, op_ulps)
    assert line is None, line
