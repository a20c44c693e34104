"""The ops the namespace's kernels need in the IR (complex scalars: COMPLEX, REAL, IMAG and
complex memory, casts and selects; FMA; NEXTAFTER), through the interpreter and the numba CPU
generator, against exact references and NumPy. (The OpenCL generator runs them in
tests/opencl/test_namespace_kernels.py.)"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from qdarray import Device
from qdarray import _dtypes as D
from qdarray.kernels.args import ArgSpec
from qdarray.kernels.emit import Emitter, block
from qdarray.kernels.interp import INTERP
from qdarray.kernels.ir import For, KernelIR, Op, Param
from qdarray.kernels.launch import compile_ir
from qdarray.kernels.ops.math import fma_value
from qdarray.kernels.types import ArrayType

TARGETS = ["interp", "numba_cpu"]


def _elementwise(name: str, types: list, out_t, body) -> KernelIR:
    """out[i] = body(em, x0[i], x1[i], ...) over 1-D arrays."""
    em = Emitter(0, 0)
    params = [Param("out", em.value(ArrayType(out_t, 1)))]
    params += [Param(f"x{k}", em.value(ArrayType(t, 1))) for k, t in enumerate(types)]
    n = em.emit(Op.SHAPE, params[0].value, attrs=(0,))
    i = em.value(D.int64)
    with em.region() as inner:
        xs = [em.emit(Op.LOAD, p.value, i) for p in params[1:]]
        em.emit(Op.STORE, params[0].value, i, body(em, *xs))
    em.stmt(For(i, em.i64(0), n, block(inner), True))
    return KernelIR(name, tuple(params), block(em.out))


def _run(ir: KernelIR, target: str, arrays: list[np.ndarray]) -> None:
    specs = [ArgSpec("array", p.value.type) for p in ir.params]
    kernel_target = INTERP if target == "interp" else Device("cpu").backend.target
    compile_ir(ir, specs, [p.name for p in ir.params], kernel_target, False, [],
               Device("cpu"))(arrays)


def _exact_fma(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))


@pytest.mark.parametrize("target", TARGETS)
def test_fma_rounds_once(target):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(64) for _ in range(3))
    a[:3], b[:3], c[:3] = [3e300, np.inf, 0.0], [3e300, 0.0, -1.0], [-np.inf, 1.0, -0.0]
    f64 = D.float64
    ir = _elementwise("fma", [f64] * 3, f64, lambda em, x, y, z: em.emit(Op.FMA, x, y, z))
    out = np.zeros(64)
    _run(ir, target, [out, a, b, c])
    want = [_exact_fma(*v) for v in zip(a[3:], b[3:], c[3:], strict=True)]
    np.testing.assert_array_equal(out[3:], want)
    assert out[0] == -np.inf and np.isnan(out[1]) and out[2] == 0.0 and np.signbit(out[2])


def test_fma_of_float32_is_rounded_to_float32_once():
    rng = np.random.default_rng(2)
    for a, b, c in rng.standard_normal((500, 3)).astype(np.float32):
        got = fma_value(D.float32, a, b, c)
        exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        nearest = min(abs(Fraction(float(v)) - exact) for v in (
            got, np.nextafter(got, np.float32(-1e30)), np.nextafter(got, np.float32(1e30))))
        assert type(got) is np.float32 and abs(Fraction(float(got)) - exact) == nearest


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ctype", [D.complex64, D.complex128])
def test_complex_parts_casts_and_selects(target, ctype):
    part = D.float32 if ctype is D.complex64 else D.float64
    z = np.array([1 + 2j, -0.0 - 3j, np.inf + 0j, 0j], ctype._np)

    def body(em, x):
        re, im = em.emit(Op.REAL, x), em.emit(Op.IMAG, x)
        swapped = em.emit(Op.COMPLEX, im, re)
        wide = em.cast(swapped, D.complex128)
        nonzero = em.cast(x, D.bool)
        other = em.emit(Op.COMPLEX, em.const(7.0, D.float64), em.const(-1.0, D.float64))
        return em.emit(Op.SELECT, nonzero, wide, other)

    out = np.zeros(4, np.complex128)
    _run(_elementwise("parts", [ctype], D.complex128, body), target, [out, z])
    want = np.empty(4, np.complex128)
    want.real, want.imag = z.imag, z.real
    want[z == 0] = 7 - 1j
    np.testing.assert_array_equal(out, want)
    reals = np.zeros(4, part._np)
    _run(_elementwise("real", [ctype], part, lambda em, x: em.cast(x, part)), target,
         [reals, z])
    np.testing.assert_array_equal(reals, z.real)  # NumPy's complex-to-real cast


@pytest.mark.parametrize("target", TARGETS)
def test_nextafter(target):
    x = np.array([0.0, 1.0, -1.0, np.inf, np.nan])
    y = np.array([1.0, 0.0, -np.inf, 0.0, 1.0])
    out = np.zeros(5)
    f64 = D.float64
    _run(_elementwise("nextafter", [f64, f64], f64,
                      lambda em, a, b: em.emit(Op.NEXTAFTER, a, b)), target, [out, x, y])
    np.testing.assert_array_equal(out, np.nextafter(x, y))


def test_complex_values_are_not_comparable_or_arithmetic_ops():
    em = Emitter(0, 0)
    z = em.value(D.complex64)
    for op in (Op.ADD, Op.LT, Op.EQ):
        with pytest.raises(TypeError):
            em.emit(op, z, z)
    with pytest.raises(TypeError, match="COMPLEX needs two floats of one dtype"):
        em.emit(Op.COMPLEX, em.value(D.float32), em.value(D.float64))
