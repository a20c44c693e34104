"""Vector and matrix types in kernels: values, operators, locals, funcs and arrays of vectors,
against NumPy (float64) references; launch checks and compile errors.

The tests that take `launch` run on the interpreter and the CPU here and, through
tests/device_suites.py's VECTORS, on every device directory (OpenCL, Vulkan, CUDA)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qdarray as qd

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


# -- values and operators -------------------------------------------------------------------


@qd.kernel
def vector_ops(a: qd.Array[qd.vec3, 1], b: qd.Array[qd.vec3, 1], s: qd.Array[qd.float32, 1],
               out: qd.Array[qd.float32, 2]):
    for i in range(a.shape[0]):
        u = a[i]
        w = b[i]
        rs = (u + w, u - w, u * w, u / w, -u, s[i] * u, u * 2.0, 1.0 - w,
              qd.vec3(u.z, u.y, u.x), qd.vec3(s[i]), u.zyx)
        for k in qd.static(range(11)):
            out[i, 3 * k] = rs[k][0]
            out[i, 3 * k + 1] = rs[k].y
            out[i, 3 * k + 2] = rs[k][2]
        k = 11
        out[i, 3 * k] = u @ w
        out[i, 3 * k + 1] = qd.math.dot(u, w)
        out[i, 3 * k + 2] = u.x + w[1]


def test_vector_operators(launch):
    n = 5
    a, b, s = rand(n, 3), rand(n, 3), rand(n)
    out = np.zeros((n, 36), np.float32)
    launch(vector_ops, a, b, s, out)
    a64, b64, s64 = a.astype(np.float64), b.astype(np.float64), s.astype(np.float64)[:, None]
    parts = [a64 + b64, a64 - b64, a64 * b64, a64 / b64, -a64, s64 * a64, a64 * 2, 1 - b64,
             a64[:, ::-1], np.repeat(s64, 3, axis=1), a64[:, ::-1],
             np.stack([(a64 * b64).sum(1), (a64 * b64).sum(1), a64[:, 0] + b64[:, 1]], 1)]
    np.testing.assert_allclose(out, np.concatenate(parts, 1), rtol=1e-6, atol=1e-6)
    assert out.dtype == np.float32


@qd.kernel
def matrix_ops(m: qd.Array[qd.mat2, 1], p: qd.Array[qd.mat2, 1], v: qd.Array[qd.vec2, 1],
               mv: qd.Array[qd.vec2, 1], mp: qd.Array[qd.mat2, 1], mt: qd.Array[qd.mat2, 1],
               vm: qd.Array[qd.vec2, 1], built: qd.Array[qd.mat2, 1],
               scalars: qd.Array[qd.float32, 2]):
    for i in range(m.shape[0]):
        a = m[i]
        mv[i] = a @ v[i]
        mp[i] = a @ p[i] + a * 0.5 - p[i] / 2.0
        mt[i] = a.T
        vm[i] = v[i] @ a
        r0 = v[i]
        built[i] = qd.mat2(r0, qd.vec2(a[1, 0], a[1, 1])) + qd.mat2((1.0, 2.0), (3.0, 4.0)) \
            - qd.mat2(1.0, 2.0, 3.0, 4.0)
        row = a[1]
        scalars[i, 0] = a[0, 1]
        scalars[i, 1] = row.x
        scalars[i, 2] = qd.math.trace(a)


def test_matrix_operators(launch):
    n = 4
    m, p, v = rand(n, 2, 2), rand(n, 2, 2), rand(n, 2)
    mv, vm = np.zeros((n, 2), np.float32), np.zeros((n, 2), np.float32)
    mp, mt, built = (np.zeros((n, 2, 2), np.float32) for _ in range(3))
    scalars = np.zeros((n, 3), np.float32)
    launch(matrix_ops, m, p, v, mv, mp, mt, vm, built, scalars)
    m64, p64, v64 = (x.astype(np.float64) for x in (m, p, v))
    tol = dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(mv, np.einsum("nij,nj->ni", m64, v64), **tol)
    np.testing.assert_allclose(mp, m64 @ p64 + m64 * 0.5 - p64 / 2, **tol)
    np.testing.assert_allclose(mt, m64.transpose(0, 2, 1), **tol)
    np.testing.assert_allclose(vm, np.einsum("ni,nij->nj", v64, m64), **tol)
    np.testing.assert_allclose(built, np.stack([v64, m64[:, 1]], 1), **tol)
    np.testing.assert_allclose(scalars, np.stack([m64[:, 0, 1], m64[:, 1, 0],
                                                  m64[:, 0, 0] + m64[:, 1, 1]], 1), **tol)


@qd.kernel
def int_and_double(a: qd.Array[qd.int32, 2], f: qd.Array[qd.float64, 2],
                   out: qd.Array[qd.float64, 2]):
    for i in range(a.shape[0]):
        iv = qd.types.vector(3, qd.int32)(a[i, 0], a[i, 1], a[i, 2])
        fv = qd.vec3d(f[i, 0], f[i, 1], f[i, 2])
        r = iv * 2 + fv  # int32 vector and float64 vector: float64, as NumPy promotes
        q = iv // 2
        out[i, 0] = r.x
        out[i, 1] = r.z
        out[i, 2] = q.y


def test_integer_vectors_and_promotion(launch):
    a = np.array([[1, 2, 3], [4, 5, 7]], np.int32)
    f = np.array([[0.5, 0.25, 0.125], [1.5, 2.5, 3.5]])
    out = np.zeros((2, 3))
    launch(int_and_double, a, f, out)
    np.testing.assert_array_equal(out, np.stack([a[:, 0] * 2 + f[:, 0], a[:, 2] * 2 + f[:, 2],
                                                 a[:, 1] // 2], 1))


# -- locals, branches, loops and funcs ------------------------------------------------------


@qd.func
def reflect(v: qd.vec2, n: qd.vec2) -> qd.vec2:
    if qd.math.dot(v, n) > 0.0:
        return v
    return v - 2.0 * qd.math.dot(v, n) * n


@qd.func
def swap(v):
    return qd.vec2(v.y, v.x)


@qd.kernel
def locals_and_funcs(x: qd.Array[qd.vec2, 1], steps: qd.Array[qd.int32, 1],
                     out: qd.Array[qd.vec2, 1], m_out: qd.Array[qd.mat2, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        acc = qd.vec2(0.0, 0.0)
        m = qd.mat2(1.0, 0.0, 0.0, 1.0)
        for t in range(steps[i]):     # loop-carried vectors and a matrix
            acc += v * 0.5
            if t % 2 == 0:
                v = swap(v)
            else:
                v = reflect(v, qd.vec2(0.0, 1.0))
            m[0, 1] = m[0, 1] + 1.0
            m[1] = m[1] * 2.0
        acc[1] = acc[1] + 100.0
        acc.x += 0.5
        v.y = v.y * 3.0
        out[i] = acc + v
        m_out[i] = m


def _locals_reference(x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    outs, ms = [], []
    for v, n in zip(x.astype(np.float64), steps, strict=True):
        acc, m = np.zeros(2), np.eye(2)
        for t in range(n):
            acc += v * 0.5
            if t % 2 == 0:
                v = v[::-1].copy()
            elif v @ np.array([0.0, 1.0]) <= 0:
                v = v - 2 * v[1] * np.array([0.0, 1.0])
            m[0, 1] += 1
            m[1] *= 2
        acc[1] += 100
        acc[0] += 0.5
        v = v * [1.0, 3.0]
        outs.append(acc + v)
        ms.append(m)
    return np.array(outs), np.array(ms)


def test_locals_branches_loops_and_funcs(launch):
    x = RNG.uniform(-1, 1, size=(6, 2)).astype(np.float32)
    steps = np.array([0, 1, 2, 3, 4, 5], np.int32)
    out, m_out = np.zeros((6, 2), np.float32), np.zeros((6, 2, 2), np.float32)
    launch(locals_and_funcs, x, steps, out, m_out)
    want, want_m = _locals_reference(x, steps)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m_out, want_m, rtol=1e-6)


# -- arrays of vectors ----------------------------------------------------------------------


@qd.kernel
def scatter(x: qd.Array[qd.vec2, 1], idx: qd.Array[qd.int32, 1], total: qd.Array[qd.vec2, 1],
            cells: qd.Array[qd.mat2, 2], y: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        total[idx[i]] += v                 # atomic per component
        total[2] -= v * 2.0
        cells[idx[i], 1] += qd.math.outer(v, v)
        y[i] = v
        y[i] *= 3.0


def test_arrays_of_vectors_load_store_and_atomic_updates(launch):
    n = 64
    x = rand(n, 2)
    idx = (np.arange(n) % 2).astype(np.int32)
    total = np.zeros((3, 2), np.float32)
    cells = np.zeros((2, 2, 2, 2), np.float32)
    y = np.zeros((n, 2), np.float32)
    launch(scatter, x, idx, total, cells, y)
    x64 = x.astype(np.float64)
    want = np.stack([x64[idx == 0].sum(0), x64[idx == 1].sum(0), -2 * x64.sum(0)])
    np.testing.assert_allclose(total, want, rtol=1e-5)
    outer = np.einsum("ni,nj->nij", x64, x64)
    np.testing.assert_allclose(cells[:, 1], np.stack([outer[idx == 0].sum(0),
                                                      outer[idx == 1].sum(0)]), rtol=1e-5)
    np.testing.assert_array_equal(cells[:, 0], 0)
    np.testing.assert_allclose(y, 3 * x, rtol=1e-6)


@qd.kernel
def copy_vec3(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.vec3, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i]


def test_launch_checks_the_trailing_shape_and_dtype():
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"copy_vec3\(\) argument 'y' is an array of vec3, so "
                       r"its last 1 axis must be \(3,\) \(shape \(\.\.\., 3\)\); got an array "
                       r"of shape \(4, 2\)"):
        copy_vec3(x, np.zeros((4, 2), np.float32))
    copy_vec3(x, np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"argument 'x'.*got an array of shape \(5, 4\)"):
        copy_vec3(np.zeros((5, 4), np.float32), np.zeros((5, 3), np.float32))  # same signature
    with pytest.raises(qd.KernelTypeError, match=r"argument 'x': expected qd.Array\[vec3, 1\] "
                       r"\(float32 of shape \(N, 3\)\), got Array\[float64, 2\] of shape"):
        copy_vec3(np.zeros((4, 3)), np.zeros((4, 3), np.float32))
    with pytest.raises(qd.KernelTypeError, match=r"got Array\[float32, 1\] of shape \(3,\)"):
        copy_vec3(np.zeros(3, np.float32), np.zeros((4, 3), np.float32))


@dataclasses.dataclass(frozen=True)
class Points:
    x: qd.Array[qd.vec3, 1]
    w: qd.Array[qd.float32, 1]


@qd.kernel
def weighted(p: Points, y: qd.Array[qd.vec3, 1]):
    for i in range(p.x.shape[0]):
        y[i] = p.x[i] * p.w[i]


def test_dataclass_fields_declared_arrays_of_vectors():
    x, w = rand(4, 3), rand(4)
    y = np.zeros((4, 3), np.float32)
    weighted(Points(x, w), y)
    np.testing.assert_allclose(y, x * w[:, None], rtol=1e-6)
    with pytest.raises(ValueError, match=r"weighted\(\) argument 'p'.x is an array of vec3, so "
                       r"its last 1 axis must be \(3,\)"):
        weighted(Points(np.zeros((4, 2), np.float32), w), y)
    with pytest.raises(qd.KernelTypeError, match=r"argument 'p' field 'x': expected "
                       r"qd.Array\[vec3, 1\] \(an array of float32 whose last axes are \(3,\)\), "
                       r"got Array\[float64, 2\]"):
        weighted(Points(np.zeros((4, 3)), w), y)


def test_types_and_names():
    assert qd.vec3 == qd.types.vector(3, qd.float32)
    assert qd.mat2d == qd.types.matrix(2, 2, qd.float64)
    assert repr(qd.vec3) == "qd.vec3" and repr(qd.types.matrix(2, 3, qd.int32)) == \
        "qd.types.matrix(2, 3, int32)"
    assert qd.mat3.shape == (3, 3) and qd.vec4d.dtype is qd.float64
    with pytest.raises(TypeError, match="inside @qd.kernel"):
        qd.vec3(1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match="integer or float dtype"):
        qd.types.vector(3, qd.bool)
    with pytest.raises(TypeError, match=r"in \[1, 16\]"):
        qd.types.vector(0, qd.float32)


@qd.kernel
def math_select_atomics(x: qd.Array[qd.vec3, 1], acc: qd.Array[qd.vec3, 1],
                        out: qd.Array[qd.vec3, 1], olds: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        old = qd.atomic_add(acc[0], v)          # one atomic per component; the old vector
        qd.atomic_max(acc, 1, v)
        w = v if v.x > 0.5 else -v              # only the taken side runs
        out[i] = qd.math.sqrt(abs(w)) + min(v, 0.5) + qd.select(v.y > v.z, v, 2.0 * v) \
            + len(v)
        olds[i] = old.x


def test_componentwise_math_ternary_select_and_atomics(launch):
    x = rand(16, 3)
    acc, out = np.zeros((2, 3), np.float32), np.zeros((16, 3), np.float32)
    olds = np.zeros(16, np.float32)
    launch(math_select_atomics, x, acc, out, olds)
    x64 = x.astype(np.float64)
    w = np.where(x64[:, :1] > 0.5, x64, -x64)
    sel = np.where(x64[:, 1:2] > x64[:, 2:3], x64, 2 * x64)
    np.testing.assert_allclose(out, np.sqrt(np.abs(w)) + np.minimum(x64, 0.5) + sel + 3,
                               rtol=1e-6)
    np.testing.assert_allclose(acc, np.stack([x64.sum(0), x64.max(0)]), rtol=1e-5)
    # Each thread saw a distinct partial sum: the old values are 0 and sums of x[:, 0].
    assert np.isclose(olds, 0).sum() == 1 and olds.max() < x64[:, 0].sum()
