"""`qd.math` functions of vectors and matrices: dot, cross, norm, normalize, outer, trace,
determinant, inverse, eye, diag, polar_decompose, svd and sym_eig.

Each function is written once, as scalar code over a *kit* (`Kit`: the scalar functions and
`select`) on plain Python lists (a vector is a list of scalars, a matrix a list of rows).
Inside kernels the frontend runs it with scalars that emit IR (`frontend/vector_calls.py`),
so the kernel holds straight-line scalar code that every device runs and that reverse mode
differentiates like any other; outside kernels the same code runs on NumPy float64 scalars
(`HOST`), so `qd.math.svd(np.eye(3))` works on the host and gives what a kernel gives.

Choices (see docs/vectors.md for where derivatives are not defined):

- `sym_eig(A)`: cyclic Jacobi with a fixed number of sweeps (no data-dependent loops); each
  rotation angle is `0.5 * atan2(2 a_pq sgn(d), |d|)`, `d = a_qq - a_pp`, the small-angle
  choice, so eigenvector signs follow the input smoothly; eigenvalues descending, the
  eigenvectors the columns of a rotation `Q` (A = Q diag(w) Q^T).
- `svd(A)` (Taichi's convention: A = U sig V^T, U and V rotations, sig a diagonal matrix
  with sig[0, 0] >= sig[1, 1] >= |sig[2, 2]|, the last one negative when det(A) < 0): 2x2
  through the closed-form polar decomposition and `sym_eig` of its symmetric factor; 3x3 as
  McAdams et al.: Jacobi eigenvectors V of A^T A, then Givens QR of A V gives U and sig.
- `polar_decompose(A)` (A = R S): 2x2 closed form as Taichi's `polar_decompose2d` (R a
  rotation); 3x3 scaled Newton iteration X <- (g X + X^-T / g) / 2 with a fixed count, which
  is smooth wherever det(A) != 0, identity included (R orthogonal, S symmetric positive
  definite; for det(A) < 0, R is a reflection).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

Vec = list[Any]
Mat = list[list[Any]]

JACOBI_SWEEPS = {4: 4, 8: 5}   # by the dtype's item size: float32, float64
NEWTON_STEPS = {4: 7, 8: 9}


class Kit(Protocol):
    """The scalar functions the algorithms call (operators + - * / < come with the
    scalars themselves)."""

    itemsize: int

    def sqrt(self, x: Any) -> Any: ...
    def atan2(self, y: Any, x: Any) -> Any: ...
    def sin(self, x: Any) -> Any: ...
    def cos(self, x: Any) -> Any: ...
    def abs(self, x: Any) -> Any: ...
    def select(self, cond: Any, a: Any, b: Any) -> Any: ...


class _Host:
    """The kit of host calls: NumPy float64 scalars."""

    itemsize = 8

    def sqrt(self, x: Any) -> Any:
        return np.sqrt(x)

    def atan2(self, y: Any, x: Any) -> Any:
        return np.arctan2(y, x)

    def sin(self, x: Any) -> Any:
        return np.sin(x)

    def cos(self, x: Any) -> Any:
        return np.cos(x)

    def abs(self, x: Any) -> Any:
        return np.abs(x)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        return a if cond else b


HOST = _Host()


# -- the algorithms (scalar code over a kit) ------------------------------------------------


def dot_(a: Vec, b: Vec) -> Any:
    acc = a[0] * b[0]
    for x, y in zip(a[1:], b[1:], strict=True):
        acc = acc + x * y
    return acc


def cross_(a: Vec, b: Vec) -> Any:
    if len(a) == 2:
        return a[0] * b[1] - a[1] * b[0]
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def norm_(k: Kit, v: Vec) -> Any:
    return k.sqrt(dot_(v, v))


def normalize_(k: Kit, v: Vec, eps: Any) -> Vec:
    inv = 1.0 / (norm_(k, v) + eps)
    return [x * inv for x in v]


def outer_(a: Vec, b: Vec) -> Mat:
    return [[x * y for y in b] for x in a]


def trace_(m: Mat) -> Any:
    acc = m[0][0]
    for i in range(1, len(m)):
        acc = acc + m[i][i]
    return acc


def transpose_(m: Mat) -> Mat:
    return [list(col) for col in zip(*m, strict=True)]


def matmul_(a: Mat, b: Mat) -> Mat:
    cols = transpose_(b)
    return [[dot_(r, c) for c in cols] for r in a]


def _minor(m: Mat, i: int, j: int) -> Mat:
    return [row[:j] + row[j + 1:] for r, row in enumerate(m) if r != i]


def determinant_(m: Mat) -> Any:
    n = len(m)
    if n == 1:
        return m[0][0]
    if n == 2:
        return m[0][0] * m[1][1] - m[0][1] * m[1][0]
    acc = None
    for j in range(n):
        term = m[0][j] * determinant_(_minor(m, 0, j))
        acc = term if acc is None else (acc + term if j % 2 == 0 else acc - term)
    return acc


def inverse_(m: Mat) -> Mat:
    """The adjugate over the determinant (no pivoting: n <= 4)."""
    n = len(m)
    inv_det = 1.0 / determinant_(m)
    if n == 1:
        return [[inv_det]]
    out: Mat = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            c = determinant_(_minor(m, j, i)) * inv_det
            out[i][j] = c if (i + j) % 2 == 0 else -c
    return out


def _sgn(k: Kit, x: Any) -> Any:
    return k.select(x < 0.0, -1.0, 1.0)


def sym_eig_(k: Kit, a: Mat) -> tuple[Vec, Mat]:
    """Eigenvalues (descending) and eigenvectors (the columns of a rotation) of a symmetric
    2x2 or 3x3 matrix: cyclic Jacobi, a fixed number of sweeps."""
    n = len(a)
    a = [list(row) for row in a]
    q: Mat = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    pairs = [(0, 1)] if n == 2 else [(0, 1), (0, 2), (1, 2)]
    sweeps = 1 if n == 2 else JACOBI_SWEEPS[k.itemsize]
    for _ in range(sweeps):
        for p, r in pairs:
            app, arr, apr = a[p][p], a[r][r], a[p][r]
            d = arr - app
            theta = 0.5 * k.atan2(2.0 * apr * _sgn(k, d), k.abs(d))
            c, s = k.cos(theta), k.sin(theta)
            # A <- J^T A J, Q <- Q J with J the rotation by theta in the (p, r) plane; theta
            # zeroes a_pr (exactly, as a function of A, so its derivative is 0 too).
            cs2 = 2.0 * c * s * apr
            a[p][p] = c * c * app - cs2 + s * s * arr
            a[r][r] = s * s * app + cs2 + c * c * arr
            a[p][r] = a[r][p] = 0.0
            for j in range(n):
                if j not in (p, r):
                    apj, arj = a[p][j], a[r][j]
                    a[p][j] = a[j][p] = c * apj - s * arj
                    a[r][j] = a[j][r] = s * apj + c * arj
            for i in range(n):
                qip, qir = q[i][p], q[i][r]
                q[i][p] = c * qip - s * qir
                q[i][r] = s * qip + c * qir
    w = [a[i][i] for i in range(n)]
    order = [(0, 1)] if n == 2 else [(0, 1), (0, 2), (1, 2)]
    for i, j in order:  # sort descending; a swap negates one column to keep det(Q) = +1
        swap = w[i] < w[j]
        w[i], w[j] = k.select(swap, w[j], w[i]), k.select(swap, w[i], w[j])
        for row in q:
            row[i], row[j] = k.select(swap, row[j], row[i]), k.select(swap, -row[i], row[j])
    return w, q


def polar2_(k: Kit, a: Mat) -> tuple[Mat, Mat]:
    """A = R S for 2x2 A, R a rotation (Taichi's polar_decompose2d)."""
    x = a[0][0] + a[1][1]
    y = a[1][0] - a[0][1]
    inv = 1.0 / k.sqrt(x * x + y * y)
    c, s = x * inv, y * inv
    r = [[c, -s], [s, c]]
    return r, matmul_(transpose_(r), a)


def polar3_(k: Kit, a: Mat) -> tuple[Mat, Mat]:
    """A = R S for 3x3 A by the scaled Newton iteration (a fixed number of steps)."""
    x = [list(row) for row in a]
    for _ in range(NEWTON_STEPS[k.itemsize]):
        inv_t = transpose_(inverse_(x))
        g = k.sqrt(k.sqrt(_frob2(inv_t) / _frob2(x)))
        x = [[0.5 * (g * x[i][j] + inv_t[i][j] / g) for j in range(3)] for i in range(3)]
    s = matmul_(transpose_(x), a)
    s = [[0.5 * (s[i][j] + s[j][i]) for j in range(3)] for i in range(3)]
    return x, s


def _frob2(m: Mat) -> Any:
    return dot_([v for row in m for v in row], [v for row in m for v in row])


def polar_(k: Kit, a: Mat) -> tuple[Mat, Mat]:
    return polar2_(k, a) if len(a) == 2 else polar3_(k, a)


def svd2_(k: Kit, a: Mat) -> tuple[Mat, Mat, Mat]:
    r, s = polar2_(k, a)
    w, v = sym_eig_(k, s)
    return matmul_(r, v), [[w[0], 0.0], [0.0, w[1]]], v


def _givens(k: Kit, b: Mat, u: Mat, p: int, r: int) -> None:
    """Zero b[r][p] by a rotation of rows p and r of b (u accumulates its transpose)."""
    x, y = b[p][p], b[r][p]
    n2 = x * x + y * y
    ok = 0.0 < n2
    inv = 1.0 / k.sqrt(k.select(ok, n2, 1.0))
    c = k.select(ok, x * inv, 1.0)
    s = k.select(ok, y * inv, 0.0)
    for j in range(3):
        bp, br = b[p][j], b[r][j]
        b[p][j] = c * bp + s * br
        b[r][j] = c * br - s * bp
    for i in range(3):
        up, ur = u[i][p], u[i][r]
        u[i][p] = c * up + s * ur
        u[i][r] = c * ur - s * up


def svd3_(k: Kit, a: Mat) -> tuple[Mat, Mat, Mat]:
    _, v = sym_eig_(k, matmul_(transpose_(a), a))
    b = matmul_(a, v)
    u: Mat = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    for p, r in ((0, 1), (0, 2), (1, 2)):
        _givens(k, b, u, p, r)
    sig = [[b[i][i] if i == j else 0.0 for j in range(3)] for i in range(3)]
    return u, sig, v


def svd_(k: Kit, a: Mat) -> tuple[Mat, Mat, Mat]:
    return svd2_(k, a) if len(a) == 2 else svd3_(k, a)


# -- the public functions (host versions; in kernels the frontend compiles them) -------------


def _vec(x: Any, what: str) -> Vec:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise TypeError(f"qd.math.{what} takes vectors (1-D); got shape {arr.shape}.")
    return list(arr)


def _mat(x: Any, what: str, sizes: tuple[int, ...] = ()) -> Mat:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or (sizes and arr.shape[0] not in sizes):
        want = " or ".join(f"{n}x{n}" for n in sizes) if sizes else "square"
        raise TypeError(f"qd.math.{what} takes a {want} matrix; got shape {arr.shape}.")
    return [list(row) for row in arr]


def dot(a: Any, b: Any) -> Any:
    """The dot product of two vectors of one length."""
    return dot_(_vec(a, "dot"), _vec(b, "dot"))


def cross(a: Any, b: Any) -> Any:
    """The cross product of two 3-vectors; of two 2-vectors, the scalar a.x b.y - a.y b.x."""
    out = cross_(_vec(a, "cross"), _vec(b, "cross"))
    return np.array(out) if isinstance(out, list) else out


def norm(v: Any) -> Any:
    """The Euclidean length sqrt(dot(v, v)) (its gradient at v = 0 is not defined: NaN)."""
    return norm_(HOST, _vec(v, "norm"))


def normalize(v: Any, eps: float = 0.0) -> Any:
    """v / (norm(v) + eps), as Taichi's `v.normalized(eps)`."""
    return np.array(normalize_(HOST, _vec(v, "normalize"), eps))


def outer(a: Any, b: Any) -> Any:
    """The outer product: a matrix with entries a[i] * b[j]."""
    return np.array(outer_(_vec(a, "outer"), _vec(b, "outer")))


def trace(m: Any) -> Any:
    """The sum of the diagonal of a square matrix."""
    return trace_(_mat(m, "trace"))


def determinant(m: Any) -> Any:
    """The determinant of a square matrix (up to 4x4)."""
    return determinant_(_mat(m, "determinant", (1, 2, 3, 4)))


def inverse(m: Any) -> Any:
    """The inverse of a square matrix (up to 4x4) by its adjugate; singular: inf/NaN."""
    return np.array(inverse_(_mat(m, "inverse", (1, 2, 3, 4))))


def eye(n: int, dtype: Any = None) -> Any:
    """The n x n identity matrix (float32 in kernels unless `dtype` is given)."""
    return np.eye(n)


def diag(v: Any) -> Any:
    """The square matrix with vector `v` on its diagonal."""
    return np.diag(_vec(v, "diag"))


def sym_eig(m: Any) -> Any:
    """(w, Q) of a symmetric 2x2 or 3x3 matrix: eigenvalues w descending (a vector) and the
    eigenvectors as the columns of a rotation Q, m = Q diag(w) Q^T."""
    w, q = sym_eig_(HOST, _mat(m, "sym_eig", (2, 3)))
    return np.array(w), np.array(q)


def polar_decompose(m: Any) -> Any:
    """(R, S) with m = R S, R orthogonal, S symmetric, of a 2x2 or 3x3 matrix."""
    r, s = polar_(HOST, _mat(m, "polar_decompose", (2, 3)))
    return np.array(r), np.array(s)


def svd(m: Any) -> Any:
    """(U, sig, V) with m = U sig V^T of a 2x2 or 3x3 matrix, Taichi's convention: U, V
    rotations, sig a diagonal matrix, descending, its last entry negative if det(m) < 0."""
    u, sig, v = svd_(HOST, _mat(m, "svd", (2, 3)))
    return np.array(u), np.array(sig), np.array(v)


FUNCTIONS = (dot, cross, norm, normalize, outer, trace, determinant, inverse, eye, diag,
             sym_eig, polar_decompose, svd)
