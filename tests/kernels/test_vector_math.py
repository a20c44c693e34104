"""qd.math on vectors and matrices in kernels: values against NumPy (float64) and gradients
against float64 central finite differences (tests/ad/gradcheck.py), and the acceptance
programs of vector types: a 2-D mass-spring step and the 2x2 polar decomposition of a
deformation gradient, written with qd.vec2d / qd.mat2d and written per component, give the
same values and gradients.

Tests taking `grad` or `launch` run on the interpreter and the CPU here and on every device
directory (tests/device_suites.py's VECTOR_MATH). The 3x3 decompositions unroll to about a
thousand scalar operations, which numba types slowly (tens of seconds): their values and
gradients are checked on the interpreter, which runs the same scalar IR every target
compiles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ad"))
from gradcheck import Grad  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture
def grad(backend: str) -> Grad:
    return Grad(backend)


# -- dot, cross, norm, normalize, outer, trace, determinant, inverse, eye, diag --------------


@qd.kernel
def small_functions(a: qd.Array[qd.vec3d, 1], b: qd.Array[qd.vec3d, 1],
                    m: qd.Array[qd.mat3d, 1], out: qd.Array[qd.float64, 2],
                    vecs: qd.Array[qd.vec3d, 2], mats: qd.Array[qd.mat3d, 2]):
    for i in range(a.shape[0]):
        u, w, mm = a[i], b[i], m[i]
        m2 = qd.mat2d(mm[0, 0], mm[0, 1], mm[1, 0], mm[1, 1])
        out[i, 0] = qd.math.dot(u, w)
        out[i, 1] = qd.math.norm(u)
        out[i, 2] = qd.math.trace(mm)
        out[i, 3] = qd.math.determinant(mm)
        out[i, 4] = qd.math.cross(u.xy, w.xy)
        out[i, 5] = qd.math.determinant(m2)
        inv2 = qd.math.inverse(m2)
        out[i, 6] = inv2[0, 1] + 2.0 * inv2[1, 0]
        vecs[i, 0] = qd.math.cross(u, w)
        vecs[i, 1] = qd.math.normalize(u)
        vecs[i, 2] = qd.math.normalize(w, eps=0.25)
        mats[i, 0] = qd.math.outer(u, w)
        mats[i, 1] = qd.math.inverse(mm)
        mats[i, 2] = qd.math.eye(3, qd.float64) * 2.0 + qd.math.diag(u) - mm.T


def _small_args(n: int = 2) -> dict[str, np.ndarray]:
    m = RNG.uniform(-1, 1, size=(n, 3, 3)) + 2 * np.eye(3)
    return dict(a=RNG.uniform(-1, 1, size=(n, 3)), b=RNG.uniform(-1, 1, size=(n, 3)), m=m,
                out=np.zeros((n, 7)), vecs=np.zeros((n, 3, 3)), mats=np.zeros((n, 3, 3, 3)))


def test_small_functions_values(launch):
    args = _small_args()
    launch(small_functions, *args.values())
    a, b, m = args["a"], args["b"], args["m"]
    inv2 = np.linalg.inv(m[:, :2, :2])
    want = np.stack([(a * b).sum(1), np.linalg.norm(a, axis=1), np.trace(m, axis1=1, axis2=2),
                     np.linalg.det(m), a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
                     np.linalg.det(m[:, :2, :2]), inv2[:, 0, 1] + 2 * inv2[:, 1, 0]], 1)
    np.testing.assert_allclose(args["out"], want, rtol=1e-12, atol=1e-12)
    norms = np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(args["vecs"], np.stack(
        [np.cross(a, b), a / np.linalg.norm(a, axis=1, keepdims=True), b / (norms + 0.25)], 1),
        rtol=1e-12, atol=1e-12)
    diag = np.einsum("ni,ij->nij", a, np.eye(3))
    np.testing.assert_allclose(args["mats"], np.stack(
        [np.einsum("ni,nj->nij", a, b), np.linalg.inv(m),
         2 * np.eye(3) + diag - m.transpose(0, 2, 1)], 1), rtol=1e-11, atol=1e-12)


def test_small_functions_gradients(grad):
    grad.check(small_functions, _small_args, ("a", "b", "m"), ("out", "vecs", "mats"),
               rtol=1e-6, atol=1e-8)


@qd.kernel
def det4(m: qd.Array[qd.mat4d, 1], out: qd.Array[qd.float64, 1], inv: qd.Array[qd.mat4d, 1]):
    for i in range(m.shape[0]):
        out[i] = qd.math.determinant(m[i])
        inv[i] = qd.math.inverse(m[i])


def test_four_by_four_determinant_and_inverse():
    m = RNG.uniform(-1, 1, size=(3, 4, 4)) + 2 * np.eye(4)
    out, inv = np.zeros(3), np.zeros((3, 4, 4))
    det4.interpret(m, out, inv)
    np.testing.assert_allclose(out, np.linalg.det(m), rtol=1e-12)
    np.testing.assert_allclose(inv, np.linalg.inv(m), rtol=1e-10, atol=1e-12)


# -- decompositions -------------------------------------------------------------------------


@qd.kernel
def decompose2(a: qd.Array[qd.mat2d, 1], r: qd.Array[qd.mat2d, 1], s: qd.Array[qd.mat2d, 1],
               u: qd.Array[qd.mat2d, 1], sig: qd.Array[qd.vec2d, 1], v: qd.Array[qd.mat2d, 1],
               w: qd.Array[qd.vec2d, 1], q: qd.Array[qd.mat2d, 1]):
    for i in range(a.shape[0]):
        am = a[i]
        r[i], s[i] = qd.math.polar_decompose(am)
        uu, ss, vv = qd.math.svd(am)
        u[i] = uu
        sig[i] = qd.vec2d(ss[0, 0], ss[1, 1])
        v[i] = vv
        w[i], q[i] = qd.math.sym_eig(am + am.T)


@qd.kernel
def decompose3(a: qd.Array[qd.mat3d, 1], r: qd.Array[qd.mat3d, 1], s: qd.Array[qd.mat3d, 1],
               u: qd.Array[qd.mat3d, 1], sig: qd.Array[qd.vec3d, 1], v: qd.Array[qd.mat3d, 1],
               w: qd.Array[qd.vec3d, 1], q: qd.Array[qd.mat3d, 1]):
    for i in range(a.shape[0]):
        am = a[i]
        r[i], s[i] = qd.math.polar_decompose(am)
        uu, ss, vv = qd.math.svd(am)
        u[i] = uu
        sig[i] = qd.vec3d(ss[0, 0], ss[1, 1], ss[2, 2])
        v[i] = vv
        w[i], q[i] = qd.math.sym_eig(am + am.T)


def _decompose_args(n: int, inputs: np.ndarray) -> dict[str, np.ndarray]:
    k = inputs.shape[-1]
    mat, vec = np.zeros((len(inputs), k, k)), np.zeros((len(inputs), k))
    return dict(a=inputs.copy(), r=mat.copy(), s=mat.copy(), u=mat.copy(), sig=vec.copy(),
                v=mat.copy(), w=vec.copy(), q=mat.copy())


def _check_decompositions(args: dict[str, np.ndarray], tol: float) -> None:
    a = args["a"]
    k = a.shape[-1]
    eye = np.broadcast_to(np.eye(k), a.shape)
    r, s, u, sig, v, w, q = (args[n] for n in ("r", "s", "u", "sig", "v", "w", "q"))
    close = dict(rtol=tol, atol=tol)
    # polar: A = R S, R orthogonal, S symmetric
    np.testing.assert_allclose(r @ s, a, **close)
    np.testing.assert_allclose(r @ r.transpose(0, 2, 1), eye, **close)
    np.testing.assert_allclose(s, s.transpose(0, 2, 1), **close)
    # svd: A = U diag(sig) V^T, rotations, |sig| descending, the singular values of A
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", u, sig, v), a, **close)
    np.testing.assert_allclose(np.linalg.det(u), 1, **close)
    np.testing.assert_allclose(np.linalg.det(v), 1, **close)
    np.testing.assert_allclose(np.abs(sig), np.linalg.svd(a, compute_uv=False), **close)
    np.testing.assert_allclose(np.sign(sig[:, -1]), np.sign(np.linalg.det(a)))
    # sym_eig: A + A^T = Q diag(w) Q^T, descending, Q a rotation
    sym = a + a.transpose(0, 2, 1)
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", q, w, q), sym, **close)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym)[:, ::-1], **close)
    np.testing.assert_allclose(np.linalg.det(q), 1, **close)


# Generic inputs: distinct singular values and eigenvalues, det > 0 and det < 0.
A2 = np.array([[[1.2, 0.3], [-0.4, 0.9]], [[0.5, 1.1], [0.8, -0.3]]])
A3 = np.array([[[1.1, 0.2, -0.3], [0.1, 0.8, 0.4], [-0.2, 0.3, 1.3]],
               [[0.4, -0.9, 0.2], [1.0, 0.3, -0.5], [0.2, 0.6, -0.7]]])


def test_decompositions_2x2_values(launch):
    args = _decompose_args(2, A2)
    launch(decompose2, *args.values())
    _check_decompositions(args, 1e-12)
    # Taichi's polar_decompose2d: R a rotation (also for det < 0, where S is indefinite).
    np.testing.assert_allclose(np.linalg.det(args["r"]), 1, rtol=1e-12)


def test_decompositions_2x2_gradients(grad):
    grad.check(decompose2, lambda: _decompose_args(2, A2), ("a",),
               ("r", "s", "u", "sig", "v", "w", "q"), rtol=1e-6, atol=1e-8)


def test_decompositions_3x3_values_and_host_agree():
    args = _decompose_args(2, A3)
    decompose3.interpret(*args.values())
    _check_decompositions(args, 1e-12)
    for i, a in enumerate(A3):  # qd.math outside kernels runs the same code on NumPy scalars
        np.testing.assert_allclose(qd.math.svd(a)[0], args["u"][i], atol=1e-13)
        np.testing.assert_allclose(qd.math.polar_decompose(a)[1], args["s"][i], atol=1e-13)


def test_decompositions_3x3_gradients():
    Grad("interp").check(decompose3, lambda: _decompose_args(2, A3), ("a",),
                         ("r", "s", "u", "sig", "v", "w", "q"), rtol=1e-5, atol=1e-7)


_SLOW_ON_CPU = ("numba types the unrolled 3x3 decompositions (about a thousand scalar "
                "operations, forward and reverse) for tens of seconds; the interpreter tests "
                "above run the same scalar IR")


def test_decompositions_3x3_on_devices(launch, grad, backend):
    if backend == "cpu":
        pytest.skip(_SLOW_ON_CPU)
    args = _decompose_args(2, A3)
    launch(decompose3, *args.values())
    _check_decompositions(args, 1e-11)
    grad.check(polar3, lambda: dict(a=A3.copy(), r=np.zeros((2, 3, 3)), s=np.zeros((2, 3, 3))),
               ("a",), ("r", "s"), rtol=1e-5, atol=1e-7)


@qd.kernel
def polar3(a: qd.Array[qd.mat3d, 1], r: qd.Array[qd.mat3d, 1], s: qd.Array[qd.mat3d, 1]):
    for i in range(a.shape[0]):
        r[i], s[i] = qd.math.polar_decompose(a[i])


def test_polar_3x3_is_differentiable_at_the_identity():
    # Repeated singular values (the rest state of a deformation gradient): the polar
    # decomposition is smooth there, and its Newton iteration differentiates exactly.
    make = lambda: dict(a=np.stack([np.eye(3), np.diag([1.0, 1.0, 2.0])]),  # noqa: E731
                        r=np.zeros((2, 3, 3)), s=np.zeros((2, 3, 3)))
    Grad("interp").check(polar3, make, ("a",), ("r", "s"), rtol=1e-6, atol=1e-8)


@qd.kernel
def decompose3_f32(a: qd.Array[qd.mat3, 1], r: qd.Array[qd.mat3, 1], s: qd.Array[qd.mat3, 1],
                   u: qd.Array[qd.mat3, 1], sig: qd.Array[qd.vec3, 1], v: qd.Array[qd.mat3, 1],
                   w: qd.Array[qd.vec3, 1], q: qd.Array[qd.mat3, 1]):
    for i in range(a.shape[0]):
        am = a[i]
        r[i], s[i] = qd.math.polar_decompose(am)
        uu, ss, vv = qd.math.svd(am)
        u[i] = uu
        sig[i] = qd.vec3(ss[0, 0], ss[1, 1], ss[2, 2])
        v[i] = vv
        w[i], q[i] = qd.math.sym_eig(am + am.T)


def test_decompositions_3x3_float32():
    args = {k: v.astype(np.float32) for k, v in _decompose_args(2, A3).items()}
    decompose3_f32.interpret(*args.values())
    _check_decompositions({k: v.astype(np.float64) for k, v in args.items()}, 2e-5)


# -- the acceptance programs: vector form and component form agree --------------------------

K_SPRING, DT, DAMP = 40.0, 1e-2, 0.99


@qd.kernel
def spring_forces_vec(x: qd.Array[qd.vec2d, 1], springs: qd.Array[qd.int32, 2],
                      rest: qd.Array[qd.float64, 1], f: qd.Array[qd.vec2d, 1]):
    for s in range(springs.shape[0]):
        a, b = springs[s, 0], springs[s, 1]
        d = x[b] - x[a]
        length = qd.math.norm(d)
        force = K_SPRING * (length - rest[s]) * d / length
        f[a] += force
        f[b] -= force


@qd.kernel
def spring_forces_comp(x: qd.Array[qd.float64, 2], springs: qd.Array[qd.int32, 2],
                       rest: qd.Array[qd.float64, 1], f: qd.Array[qd.float64, 2]):
    for s in range(springs.shape[0]):
        a, b = springs[s, 0], springs[s, 1]
        dx = x[b, 0] - x[a, 0]
        dy = x[b, 1] - x[a, 1]
        length = qd.math.sqrt(dx * dx + dy * dy)
        c = K_SPRING * (length - rest[s])
        fx = c * dx / length
        fy = c * dy / length
        f[a, 0] += fx
        f[a, 1] += fy
        f[b, 0] -= fx
        f[b, 1] -= fy


@qd.kernel
def integrate_vec(x: qd.Array[qd.vec2d, 1], v: qd.Array[qd.vec2d, 1],
                  f: qd.Array[qd.vec2d, 1], x_new: qd.Array[qd.vec2d, 1],
                  v_new: qd.Array[qd.vec2d, 1]):
    for i in range(x.shape[0]):
        vel = DAMP * v[i] + DT * (f[i] + qd.vec2d(0.0, -9.8))
        v_new[i] = vel
        x_new[i] = x[i] + DT * vel


@qd.kernel
def integrate_comp(x: qd.Array[qd.float64, 2], v: qd.Array[qd.float64, 2],
                   f: qd.Array[qd.float64, 2], x_new: qd.Array[qd.float64, 2],
                   v_new: qd.Array[qd.float64, 2]):
    for i in range(x.shape[0]):
        vx = DAMP * v[i, 0] + DT * (f[i, 0] + 0.0)
        vy = DAMP * v[i, 1] + DT * (f[i, 1] + -9.8)
        v_new[i, 0] = vx
        v_new[i, 1] = vy
        x_new[i, 0] = x[i, 0] + DT * vx
        x_new[i, 1] = x[i, 1] + DT * vy


def _springs() -> dict[str, np.ndarray]:
    n = 6
    springs = np.array([[i, (i + 1) % n] for i in range(n)] + [[0, 3], [1, 4]], np.int32)
    x = np.stack([np.cos(np.arange(n)), np.sin(np.arange(n))], 1) + RNG.normal(0, 0.05, (n, 2))
    return dict(x=x, springs=springs, rest=np.full(len(springs), 0.9), f=np.zeros((n, 2)))


def _integrate() -> dict[str, np.ndarray]:
    n = 6
    return dict(x=RNG.normal(size=(n, 2)), v=RNG.normal(size=(n, 2)),
                f=RNG.normal(size=(n, 2)), x_new=np.zeros((n, 2)), v_new=np.zeros((n, 2)))


def test_mass_spring_step_vector_and_component_forms_agree(grad):
    base = _springs()
    runs = {}
    for kern in (spring_forces_vec, spring_forces_comp):
        g = grad.check(kern, lambda: {k: v.copy() for k, v in base.items()}, ("x", "rest"),
                       ("f",), rtol=1e-6, atol=1e-8)
        runs[kern.__name__] = g
    for name in ("x", "rest"):
        np.testing.assert_allclose(runs["spring_forces_vec"][name],
                                   runs["spring_forces_comp"][name], rtol=1e-12, atol=1e-12)
    step = _integrate()
    grads = [grad.check(kern, lambda: {k: v.copy() for k, v in step.items()}, ("x", "v", "f"),
                        ("x_new", "v_new"), rtol=1e-6, atol=1e-8)
             for kern in (integrate_vec, integrate_comp)]
    for name in ("x", "v", "f"):
        np.testing.assert_allclose(grads[0][name], grads[1][name], rtol=1e-12, atol=1e-12)


def test_mass_spring_forces_equal(launch):
    outs = []
    for kern in (spring_forces_vec, spring_forces_comp):
        args = {k: v.copy() for k, v in _springs_fixed().items()}
        launch(kern, *args.values())
        outs.append(args["f"])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-13, atol=1e-13)
    assert np.abs(outs[0]).max() > 1


def _springs_fixed() -> dict[str, np.ndarray]:
    n = 5
    springs = np.array([[i, (i + 1) % n] for i in range(n)], np.int32)
    x = np.stack([np.cos(np.arange(n)), 1.3 * np.sin(np.arange(n))], 1)
    return dict(x=x, springs=springs, rest=np.full(n, 0.5), f=np.zeros((n, 2)))


MU, LAM = 2.0, 3.0


@qd.kernel
def corotated_vec(F: qd.Array[qd.mat2d, 1], R: qd.Array[qd.mat2d, 1],
                  psi: qd.Array[qd.float64, 1]):
    for p in range(F.shape[0]):
        f = F[p]
        r, s = qd.math.polar_decompose(f)
        R[p] = r
        d = f - r
        J = qd.math.determinant(f)
        psi[p] = MU * (d[0, 0] ** 2 + d[0, 1] ** 2 + d[1, 0] ** 2 + d[1, 1] ** 2) \
            + 0.5 * LAM * (J - 1.0) ** 2 + s[0, 1]


@qd.kernel
def corotated_comp(F: qd.Array[qd.float64, 3], R: qd.Array[qd.float64, 3],
                   psi: qd.Array[qd.float64, 1]):
    for p in range(F.shape[0]):
        a, b, c, d = F[p, 0, 0], F[p, 0, 1], F[p, 1, 0], F[p, 1, 1]
        x = a + d
        y = c - b
        scale = 1.0 / qd.math.sqrt(x * x + y * y)
        co = x * scale
        si = y * scale
        R[p, 0, 0] = co
        R[p, 0, 1] = -si
        R[p, 1, 0] = si
        R[p, 1, 1] = co
        s01 = co * b + si * d                       # (R^T F)[0, 1]
        J = a * d - b * c
        psi[p] = MU * ((a - co) ** 2 + (b + si) ** 2 + (c - si) ** 2 + (d - co) ** 2) \
            + 0.5 * LAM * (J - 1.0) ** 2 + s01


def _deformations() -> dict[str, np.ndarray]:
    F = np.eye(2) + RNG.normal(0, 0.3, size=(4, 2, 2))
    F[0] = np.eye(2)  # the rest state
    return dict(F=F, R=np.zeros((4, 2, 2)), psi=np.zeros(4))


def test_polar_decomposition_of_a_deformation_gradient_forms_agree(grad):
    base = _deformations()
    values, grads = [], []
    for kern in (corotated_vec, corotated_comp):
        args = {k: qd.asarray(v.copy()) for k, v in base.items()}
        grad.forward(kern, *args.values())
        values.append([np.asarray(args[k].to_device("cpu")) for k in ("R", "psi")])
        grads.append(grad.check(kern, lambda: {k: v.copy() for k, v in base.items()}, ("F",),
                                ("R", "psi"), rtol=1e-6, atol=1e-8))
    for got, want in zip(values[0], values[1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(grads[0]["F"], grads[1]["F"], rtol=1e-12, atol=1e-12)


@qd.kernel
def orbit_loop(x: qd.Array[qd.vec2d, 1], m: qd.Array[qd.mat2d, 1], n: qd.Array[qd.int32, 1],
               y: qd.Array[qd.vec2d, 1]):
    for i in range(x.shape[0]):
        p = x[i]
        a = m[i]
        for _ in range(n[i]):              # a data-dependent trip count: adstacks in reverse
            p = 0.9 * (a @ p) + qd.vec2d(0.01, -0.02)
            a[0, 1] = a[0, 1] * 0.5
        y[i] = p


def test_gradients_through_a_dynamic_loop_of_vectors(grad):
    def make() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(5)
        return dict(x=rng.normal(size=(4, 2)), m=rng.normal(0, 0.7, size=(4, 2, 2)),
                    n=np.array([0, 1, 3, 6], np.int32), y=np.zeros((4, 2)))
    grad.check(orbit_loop, make, ("x", "m"), ("y",), rtol=1e-6, atol=1e-8)
