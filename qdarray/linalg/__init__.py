"""The standard's `linalg` extension (2024.12, plus `eig` / `eigvals` from 2025.12).

Every function checks its inputs (device, dtype category, matrix shapes), calls the backend's
`xp.linalg` and wraps the result. Decompositions return named tuples of Arrays. Failures of
the numerical routines (a singular matrix, a matrix that is not positive definite) raise
`qd.linalg.LinAlgError`, which is also NumPy's `LinAlgError` and a ValueError.

Example::

    import qdarray as qd
    a = qd.asarray([[4.0, 1.0], [1.0, 3.0]])
    w, v = qd.linalg.eigh(a)
    qd.linalg.solve(a, qd.asarray([1.0, 2.0]))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import _dtypes
from .._array import Array
from .._autodiff import TAPES, Scatter, defvjp, no_vjp, record
from .._creation_functions import arange, eye, tril
from .._data_type_functions import astype
from .._devices import Device
from .._dispatch import require_array, same_device
from .._elementwise_functions import abs, conj, sign  # noqa: A004 - the namespace's abs
from .._errors import LinAlgError
from .._linear_algebra_functions import matmul, matrix_transpose, numeric_pair, tensordot, vecdot
from .._linear_algebra_functions import wrap as _wrap
from .._manipulation_functions import expand_dims, reshape
from .._searching_functions import where
from .._statistical_functions import sum as total

__all__ = [
    "EigResult", "EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult",
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
    "vector_norm",
]


class EighResult(NamedTuple):
    """`eigh`'s result: eigenvalues (ascending) and eigenvectors (columns)."""

    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    """`eig`'s result: complex eigenvalues and eigenvectors (columns)."""

    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    """`qr`'s result: the orthonormal factor Q and the upper triangular factor R."""

    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    """`slogdet`'s result: the sign of the determinant and the log of its absolute value."""

    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    """`svd`'s result: U, the singular values S (descending) and Vh, with x = U diag(S) Vh."""

    U: Array
    S: Array
    Vh: Array


# -- checks ----------------------------------------------------------------------------------


def _floating(arg: Any, func: str, name: str = "x") -> Device:
    x = require_array(arg, f"linalg.{func}", name)
    _dtypes.check_category(x._dtype, "floating-point", f"linalg.{func}")
    return x._device


def _matrices(x: Array, func: str, square: bool = True) -> None:
    if x.ndim < 2:
        raise ValueError(
            f"linalg.{func} needs a matrix or a stack of matrices (at least 2 dimensions); "
            f"got shape {x.shape}."
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"linalg.{func} needs square matrices in the last two axes; got shape {x.shape}."
        )


def _run(func: str, call: Any, *args: Any, hint: str = "", **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"linalg.{func} failed: {exc}.{hint}") from None


def _linalg(device: Device) -> Any:
    return device.backend.xp.linalg


# -- decompositions and solvers --------------------------------------------------------------


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """The Cholesky factor of symmetric (Hermitian) positive-definite matrices: lower
    triangular L with x = L @ L^H, or upper U = L^H when `upper` is True.

    Raises:
        LinAlgError: when a matrix is not positive definite.
    """
    device = _floating(x, "cholesky")
    _matrices(x, "cholesky")
    r = _run("cholesky", _linalg(device).cholesky, x._data, upper=upper,
             hint=" Check that the matrix is symmetric positive definite; try adding a small "
                  "multiple of the identity.")
    out = _wrap(r, device)
    if TAPES:
        return _taped("linalg.cholesky", out, x, {"upper": upper})
    return out


# Holomorphic functions of a matrix: their rules hold for complex matrices as written (JAX's
# convention: the transpose of the derivative, without conjugation).
_HOLOMORPHIC = frozenset({"linalg.inv", "linalg.det", "linalg.matrix_power"})


def _taped(name: str, out: Array, x: Array, params: dict[str, Any] | None = None) -> Array:
    """Record a one-input linalg operation; complex input has no rule here (it raises) but
    for the holomorphic functions."""
    if x._dtype.kind == "c" and name not in _HOLOMORPHIC:
        name += " of a complex matrix"
    return record(name, out, (x,), params)  # type: ignore[no-any-return]


def det(x: Array, /) -> Array:
    """Determinants of square matrices (a stack gives one per matrix)."""
    device = _floating(x, "det")
    _matrices(x, "det")
    out = _wrap(_linalg(device).det(x._data), device)
    if TAPES:
        return _taped("linalg.det", out, x)
    return out


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and log of the absolute value of determinants, stable where `det` over- or
    underflows. A singular matrix gives sign 0 and logabsdet -inf."""
    device = _floating(x, "slogdet")
    _matrices(x, "slogdet")
    r = _linalg(device).slogdet(x._data)
    sign, logabsdet = _wrap(r.sign, device), _wrap(r.logabsdet, device)
    if TAPES:
        # The sign of a real determinant is piecewise constant: no gradient, nothing kept.
        logabsdet = _taped("linalg.slogdet", logabsdet, x)
        if x._dtype.kind == "c":
            sign = record("linalg.slogdet's sign", sign, (x,))
    return SlogdetResult(sign, logabsdet)


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors of symmetric (Hermitian) matrices.
    Only the lower triangle of each matrix is read."""
    device = _floating(x, "eigh")
    _matrices(x, "eigh")
    r = _run("eigh", _linalg(device).eigh, x._data)
    w, v = _wrap(r.eigenvalues, device), _wrap(r.eigenvectors, device)
    if TAPES:
        # One record per result: the VJP is the sum of theirs.
        w_kept, v_kept = w, v
        w = _taped("linalg.eigh", w, x, {"v": v_kept})
        v = _taped("linalg.eigh's eigenvectors", v, x, {"w": w_kept})
    return EighResult(w, v)


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (ascending, real) of symmetric (Hermitian) matrices."""
    device = _floating(x, "eigvalsh")
    _matrices(x, "eigvalsh")
    out = _wrap(_run("eigvalsh", _linalg(device).eigvalsh, x._data), device)
    if TAPES:
        return _taped("linalg.eigvalsh", out, x)
    return out


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and eigenvectors of general square matrices, always complex (complex64
    for float32 input, complex128 for float64), as in the 2025.12 standard."""
    device = _floating(x, "eig")
    _matrices(x, "eig")
    if TAPES:
        no_vjp("linalg.eig", x)
    # NumPy's array-api-compat gives a named tuple, CuPy's eig a plain (w, v) tuple
    w, v = _run("eig", _linalg(device).eig, x._data)
    return EigResult(_wrap(_complex(w, x, device), device),
                     _wrap(_complex(v, x, device), device))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues of general square matrices, always complex (see `eig`)."""
    device = _floating(x, "eigvals")
    _matrices(x, "eigvals")
    if TAPES:
        no_vjp("linalg.eigvals", x)
    w = _run("eigvals", _linalg(device).eigvals, x._data)
    return _wrap(_complex(w, x, device), device)


def _complex(native: Any, x: Array, device: Device) -> Any:
    """`native` in the complex dtype `eig` gives for `x` (complex64 for float32 input,
    complex128 for float64), whatever the device's library returned."""
    want = np.result_type(x._dtype._np, np.complex64)
    if np.dtype(native.dtype) == want:
        return native
    return device.backend.xp.astype(native, want)


def inv(x: Array, /) -> Array:
    """Inverses of square matrices.

    Raises:
        LinAlgError: for a singular matrix.
    """
    device = _floating(x, "inv")
    _matrices(x, "inv")
    r = _run("inv", _linalg(device).inv, x._data,
             hint=" Try qd.linalg.pinv for a least-squares inverse.")
    out = _wrap(r, device)
    if TAPES:
        return _taped("linalg.inv", out, x)
    return out


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverses; singular values below `rtol` times the largest are
    treated as zero (default: max(M, N) * eps of the dtype)."""
    device = _floating(x, "pinv")
    _matrices(x, "pinv", square=False)
    out = _wrap(_linalg(device).pinv(x._data, rtol=_rtol(rtol, x, "pinv")), device)
    if TAPES:
        return _taped("linalg.pinv", out, x)
    return out


def _rtol(rtol: Any, x: Array, func: str) -> Any:
    if rtol is None or type(rtol) in (int, float):
        return rtol
    if type(rtol) is Array:
        same_device(x, rtol, f"linalg.{func}")
        _dtypes.check_category(rtol._dtype, "real numeric", f"linalg.{func} rtol")
        return rtol._data
    raise TypeError(
        f"linalg.{func} rtol must be a float, an Array or None; got {type(rtol).__name__}."
    )


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Ranks of matrices: the number of singular values above `rtol` times the largest."""
    device = _floating(x, "matrix_rank")
    _matrices(x, "matrix_rank", square=False)
    r = _linalg(device).matrix_rank(x._data, rtol=_rtol(rtol, x, "matrix_rank"))
    return _wrap(r, device)


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """QR decompositions x = Q @ R; `mode` "reduced" (Q is M x K, K = min(M, N)) or
    "complete" (Q is M x M)."""
    device = _floating(x, "qr")
    _matrices(x, "qr", square=False)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr mode must be 'reduced' or 'complete'; got {mode!r}.")
    r = _run("qr", _linalg(device).qr, x._data, mode=mode)
    q, rr = _wrap(r.Q, device), _wrap(r.R, device)
    if TAPES:
        m, n = x.shape[-2:]
        name = ("linalg.qr" if m >= n and (mode == "reduced" or m == n) else
                "linalg.qr of a wide matrix" if m < n else
                "linalg.qr(mode='complete') of a tall matrix (its extra columns of Q are not "
                "unique)")
        q_kept, r_kept = q, rr
        rr = _taped(name, rr, x, {"q": q_kept})
        q = _taped(name + "'s Q" if name == "linalg.qr" else name, q, x, {"r": r_kept})
    return QRResult(q, rr)


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decompositions x = U @ diag(S) @ Vh, singular values descending."""
    device = _floating(x, "svd")
    _matrices(x, "svd", square=False)
    r = _run("svd", _linalg(device).svd, x._data, full_matrices=full_matrices)
    u, sv, vh = _wrap(r.U, device), _wrap(r.S, device), _wrap(r.Vh, device)
    if TAPES:
        m, n = x.shape[-2:]
        name = "linalg.svd" if m == n or not full_matrices else (
            "linalg.svd(full_matrices=True) of a non-square matrix (its extra singular "
            "vectors are not unique; use full_matrices=False)")
        kept = {"u": u, "s": sv, "vh": vh}
        sv = _taped(name, sv, x, kept)
        u = _taped(name + "'s U" if name == "linalg.svd" else name, u, x, kept)
        vh = _taped(name + "'s Vh" if name == "linalg.svd" else name, vh, x, kept)
    return SVDResult(u, sv, vh)


def svdvals(x: Array, /) -> Array:
    """Singular values of matrices, descending (real, even for complex input)."""
    device = _floating(x, "svdvals")
    _matrices(x, "svdvals", square=False)
    out = _wrap(_run("svdvals", _linalg(device).svdvals, x._data), device)
    if TAPES:
        return _taped("linalg.svdvals", out, x)
    return out


def solve(x1: Array, x2: Array, /) -> Array:
    """The solution of x1 @ X = x2 for square x1. `x2` is one vector when 1-D, and a (stack
    of) matrices otherwise; leading dimensions broadcast.

    Raises:
        LinAlgError: for a singular x1.
    """
    device = _floating(x1, "solve", "x1")
    _floating(x2, "solve", "x2")
    same_device(x1, x2, "linalg.solve")
    _matrices(x1, "solve")
    n = x1.shape[-1]
    rows = x2.shape[0] if x2.ndim == 1 else (x2.shape[-2] if x2.ndim >= 2 else None)
    if rows != n:
        raise ValueError(
            f"linalg.solve cannot solve with x1 of shape {x1.shape} and x2 of shape "
            f"{x2.shape}: x2 needs {n} rows (its only axis when 1-D, else its second-to-last)."
        )
    r = _run("solve", _linalg(device).solve, x1._data, x2._data,
             hint=" Try qd.linalg.pinv(x1) @ x2 for a least-squares solution.")
    out = _wrap(r, device)
    if TAPES:
        return record("linalg.solve", out, (x1, x2))  # type: ignore[no-any-return]
    return out


def matrix_power(x: Array, n: int, /) -> Array:
    """Integer powers of square matrices; negative `n` inverts first (floating dtypes)."""
    x = require_array(x, "linalg.matrix_power")
    _dtypes.check_category(x._dtype, "numeric", "linalg.matrix_power")
    _matrices(x, "matrix_power")
    if type(n) is not int:
        raise TypeError(f"linalg.matrix_power needs an integer n; got {type(n).__name__}.")
    if n < 0 and x._dtype.kind not in "fc":
        raise TypeError(
            f"linalg.matrix_power with n={n} needs a floating-point dtype; got {x._dtype}."
        )
    device = x._device
    r = _run("matrix_power", _linalg(device).matrix_power, x._data, n,
             hint=" A negative power needs an invertible matrix.")
    out = _wrap(r, device)
    if TAPES:
        return _taped("linalg.matrix_power", out, x, {"n": n})
    return out


# -- norms and products ----------------------------------------------------------------------


def matrix_norm(x: Array, /, *, keepdims: bool = False,
                ord: int | float | str | None = "fro") -> Array:
    """Matrix norms over the last two axes: "fro", "nuc", 1, -1, 2, -2, inf or -inf."""
    device = _floating(x, "matrix_norm")
    _matrices(x, "matrix_norm", square=False)
    if ord not in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf"), None):
        raise ValueError(
            f"linalg.matrix_norm ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; "
            f"got {ord!r}."
        )
    r = _linalg(device).matrix_norm(x._data, keepdims=keepdims, ord=ord)
    out = _wrap(r, device)
    if TAPES:
        return record("linalg.matrix_norm", out, (x,), {"ord": ord})  # type: ignore[no-any-return]
    return out


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: int | float = 2) -> Array:
    """Vector p-norms over `axis` (all axes when None): any real `ord`, inf and -inf
    included; the result is real."""
    from .._axis import normalize_axes

    device = _floating(x, "vector_norm")
    if axis is not None:
        axis = normalize_axes(axis, x.ndim, "linalg.vector_norm")
        if len(axis) == 1:
            axis = axis[0]
    if type(ord) not in (int, float):
        raise TypeError(f"linalg.vector_norm ord must be a real number; got {ord!r}.")
    r = _linalg(device).vector_norm(x._data, axis=axis, keepdims=keepdims, ord=ord)
    out = _wrap(r, device)
    if TAPES:
        axes = None if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        return record("linalg.vector_norm", out, (x,),  # type: ignore[no-any-return]
                      {"axis": axes, "ord": ord})
    return out


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Cross products of 3-element vectors along `axis`, broadcast over other dimensions."""
    device = numeric_pair(x1, x2, "linalg.cross")
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or x.shape[axis] != 3:
            raise ValueError(
                f"linalg.cross needs 3-element vectors along axis {axis}; {name} has shape "
                f"{x.shape}."
            )
    out = _wrap(_linalg(device).cross(x1._data, x2._data, axis=axis), device)
    if TAPES:
        return record("linalg.cross", out, (x1, x2), {"axis": axis})  # type: ignore[no-any-return]
    return out


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-D arrays."""
    device = numeric_pair(x1, x2, "linalg.outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"linalg.outer needs two 1-D arrays; got shapes {x1.shape} and {x2.shape}."
        )
    out = _wrap(_linalg(device).outer(x1._data, x2._data), device)
    if TAPES:
        return record("linalg.outer", out, (x1, x2))  # type: ignore[no-any-return]
    return out


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """A read-only view of the diagonals of the last two axes (`offset` > 0 above the main
    diagonal, < 0 below)."""
    x = require_array(x, "linalg.diagonal")
    _matrices(x, "diagonal", square=False)
    data = _linalg(x._device).diagonal(x._data, offset=offset)
    out = Array._new_view(data, x)
    if TAPES:
        return record("linalg.diagonal", out, (x,), {"offset": offset})  # type: ignore[no-any-return]
    return out


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """Sums along the diagonals of the last two axes. Without `dtype`, floating dtypes are
    kept and integers accumulate in the widest integer of their signedness (as `sum`)."""
    x = require_array(x, "linalg.trace")
    _dtypes.check_category(x._dtype, "numeric", "linalg.trace")
    _matrices(x, "trace", square=False)
    d = _dtypes.normalize_dtype(dtype)
    device = x._device
    r = _linalg(device).trace(x._data, offset=offset, dtype=None if d is None else d._np)
    out = _wrap(r, device)
    if TAPES:
        return record("linalg.trace", out, (x,), {"offset": offset})  # type: ignore[no-any-return]
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------
# Real matrices (complex ones raise, naming the function), except the norms, outer, cross and
# trace. Symmetric-input functions (cholesky, eigvalsh) give the symmetric gradient, as JAX
# does: the derivative along symmetric directions, which is what a symmetric input can move.


def _mat(g: Array) -> Array:
    """A per-matrix scalar with two length-1 axes appended, to scale matrices."""
    return expand_dims(expand_dims(g, axis=-1), axis=-1)


def _solve_x1(g: Array, x1: Array, out: Array) -> Any:
    vector = out.ndim == x1.ndim - 1
    z = solve(matrix_transpose(x1), expand_dims(g, axis=-1) if vector else g)
    return -(z @ matrix_transpose(expand_dims(out, axis=-1) if vector else out))


def _solve_x2(g: Array, x1: Array, shape: tuple[int, ...]) -> Array:
    vector = len(shape) == 1
    z = solve(matrix_transpose(x1), expand_dims(g, axis=-1) if vector else g)
    return z[..., 0] if vector else z


def _cholesky_rule(g: Array, out: Array, upper: bool) -> Any:
    lower = matrix_transpose(out) if upper else out
    g_lower = matrix_transpose(g) if upper else g
    m = matrix_transpose(lower) @ g_lower
    n = m.shape[-1]
    phi = tril(m) - (m * eye(n, dtype=m.dtype, device=m.device)) * 0.5
    s = solve(matrix_transpose(lower), phi)                       # L^-T phi
    s = matrix_transpose(solve(matrix_transpose(lower), matrix_transpose(s)))  # ... L^-1
    return (s + matrix_transpose(s)) * 0.5


def _eigvalsh_rule(g: Array, x: Array) -> Any:
    v = eigh(x).eigenvectors
    return (v * expand_dims(g, axis=-2)) @ matrix_transpose(v)


def _svdvals_rule(g: Array, x: Array) -> Any:
    u, _, vh = svd(x, full_matrices=False)
    return (u * expand_dims(g, axis=-2)) @ vh


def _t(x: Array) -> Array:
    return matrix_transpose(x)


def _gaps(w: Array) -> Any:
    """F[..., i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    n = w.shape[-1]
    diag = eye(n, dtype=_dtypes.bool, device=w.device)
    diff = expand_dims(w, axis=-2) - expand_dims(w, axis=-1)
    return where(diag, 0.0, 1.0 / where(diag, 1.0, diff))


def _sym(a: Array) -> Any:
    return (a + _t(a)) * 0.5


def _eigh_vectors_rule(g: Array, out: Array, w: Array) -> Any:
    # dV = V (F o (V^T dA V)): its transpose, symmetrized as for eigvalsh.
    return _sym(out @ (_gaps(w) * (_t(out) @ g)) @ _t(out))


def _pinv_rule(g: Array, x: Array, out: Array) -> Any:
    # d(A+) = -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+ (constant rank).
    p, pt, gt = out, _t(out), _t(g)
    m, n = x.shape[-2:]
    i_m = eye(m, dtype=x.dtype, device=x.device)
    i_n = eye(n, dtype=x.dtype, device=x.device)
    return (-(pt @ g @ pt) + (i_m - x @ p) @ gt @ p @ pt + pt @ p @ gt @ (i_n - p @ x))


def _right_solve_rt(a: Array, r: Array) -> Array:
    """a @ R^-T."""
    return _t(solve(r, _t(a)))


def _qr_part(n_mat: Array, q: Array, r: Array, gq: Array | None) -> Array:
    # A tall or square x = Q R: x' = (gQ + Q (triu(N) + tril(N^T, -1))) R^-T, with
    # N = gR R^T - Q^T gQ.
    upper = n_mat - tril(n_mat, k=-1) + tril(_t(n_mat), k=-1)
    lhs = q @ upper if gq is None else gq + q @ upper
    return _right_solve_rt(lhs, r)


def _svd_u_rule(g: Array, u: Array, s: Array, vh: Array) -> Any:
    f = _gaps(s * s)
    inner = (f * (_t(u) @ g - _t(g) @ u)) * expand_dims(s, axis=-2)
    m = u.shape[-2]
    rest = (eye(m, dtype=u.dtype, device=u.device) - u @ _t(u)) @ (g / expand_dims(s, axis=-2))
    return (u @ inner + rest) @ vh


def _svd_vh_rule(g: Array, u: Array, s: Array, vh: Array) -> Any:
    v, gv = _t(vh), _t(g)
    f = _gaps(s * s)
    inner = expand_dims(s, axis=-1) * (f * (vh @ gv - g @ v))
    n = v.shape[-2]
    rest = (u / expand_dims(s, axis=-2)) @ g @ (eye(n, dtype=v.dtype, device=v.device)
                                                - v @ vh)
    return u @ inner @ vh + rest


def _matrix_power_rule(g: Array, x: Array, n: int) -> Any:
    if n == 0:
        return None
    y = x if n > 0 else inv(x)
    m = n if n > 0 else -n
    powers = [eye(x.shape[-1], dtype=x.dtype, device=x.device)]
    for _ in range(m - 1):
        powers.append(powers[-1] @ y)
    gy = _sum_of([_t(powers[k]) @ g @ _t(powers[m - 1 - k]) for k in range(m)])
    return gy if n > 0 else -(_t(y) @ gy @ _t(y))


def _sum_of(terms: list[Array]) -> Array:
    total_ = terms[0]
    for t in terms[1:]:
        total_ = total_ + t
    return total_


def _unit(x: Array, a: Array) -> Any:
    """d|x|/dx in JAX's convention: sign(x), or conj(x) / |x| for complex (0 at 0)."""
    if x._dtype.kind == "c":
        return where(a == 0.0, 0.0, conj(x) / where(a == 0.0, 1.0, a))
    return sign(x)


def _norm_ct(gk: Array, ok: Array, x: Array, ord: Any, axis: Any) -> Any:
    a = abs(x)
    if ord == 0:
        return None
    if ord == 1:
        return gk * _unit(x, a)
    if ord in (float("inf"), float("-inf")):
        hit = a == ok
        counts = astype(total(hit, axis=axis, keepdims=True), gk.dtype)
        return where(hit, gk * _unit(x, a) / counts, 0.0)
    safe = where(ok == 0.0, 1.0, ok)
    if ord == 2:
        return where(ok == 0.0, 0.0, gk * _unit(x, a) * a / safe)
    return where(ok == 0.0, 0.0, gk * _unit(x, a) * (a / safe) ** (ord - 1))


def _vector_norm_rule(g: Array, x: Array, out: Array, axis: Any, ord: Any,
                      shape: tuple[int, ...]) -> Any:
    axes = tuple(range(len(shape))) if axis is None else axis
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return _norm_ct(reshape(g, kept), reshape(out, kept), x, ord, axes)


def _matrix_norm_rule(g: Array, x: Array, out: Array, ord: Any) -> Any:
    kept = x.shape[:-2] + (1, 1)
    gk = reshape(g, kept)
    if ord in ("fro", None):
        return _norm_ct(gk, reshape(out, kept), x, 2, (-2, -1))
    if ord in ("nuc", 2, -2):
        u, _, vh = svd(x, full_matrices=False)
        if ord != "nuc":
            k = 0 if ord == 2 else u.shape[-1] - 1
            u, vh = u[..., :, k:k + 1], vh[..., k:k + 1, :]
        ct = gk * (u @ vh)
        return conj(ct) if ct.dtype.kind == "c" else ct
    # 1 / -1: the largest / smallest column sum of |x|; inf / -inf: of row sums
    a = abs(x)
    sums = total(a, axis=-2 if ord in (1, -1) else -1, keepdims=True)
    hit = sums == reshape(out, kept)
    counts = astype(total(hit, axis=(-2, -1), keepdims=True), gk.dtype)
    return where(hit, gk * _unit(x, a) / counts, 0.0)


def _diagonal_rule(g: Array, offset: int) -> Scatter:
    k = g.shape[-1]
    positions = arange(k, dtype=_dtypes.int64, device=g.device)
    return Scatter((Ellipsis, positions + max(0, -offset), positions + max(0, offset)), g)


def _trace_rule(g: Array, offset: int, shape: tuple[int, ...]) -> Any:
    return _mat(g) * eye(shape[-2], shape[-1], k=offset, dtype=g.dtype, device=g.device)


defvjp("linalg.solve", x1=_solve_x1, x2=_solve_x2)
defvjp("linalg.inv", x=lambda g, out: -(matrix_transpose(out) @ g @ matrix_transpose(out)))
defvjp("linalg.det", x=lambda g, x, out: _mat(g * out) * matrix_transpose(inv(x)))
defvjp("linalg.slogdet", x=lambda g, x: _mat(g) * matrix_transpose(inv(x)))
defvjp("linalg.cholesky", x=_cholesky_rule)
defvjp("linalg.eigvalsh", x=_eigvalsh_rule)
defvjp("linalg.eigh", x=lambda g, v: (v * expand_dims(g, axis=-2)) @ _t(v))
defvjp("linalg.eigh's eigenvectors", x=_eigh_vectors_rule)
defvjp("linalg.pinv", x=_pinv_rule)
defvjp("linalg.qr", x=lambda g, out, q: _qr_part(g @ _t(out), q, out, None))
defvjp("linalg.qr's Q", x=lambda g, out, r: _qr_part(-(_t(out) @ g), out, r, g))
defvjp("linalg.svd", x=lambda g, u, vh: (u * expand_dims(g, axis=-2)) @ vh)
defvjp("linalg.svd's U", x=_svd_u_rule)
defvjp("linalg.svd's Vh", x=_svd_vh_rule)
defvjp("linalg.matrix_power", x=_matrix_power_rule)
defvjp("linalg.svdvals", x=_svdvals_rule)
defvjp("linalg.vector_norm", x=_vector_norm_rule)
defvjp("linalg.matrix_norm", x=_matrix_norm_rule)
defvjp("linalg.cross", x1=lambda g, x2, axis: cross(x2, g, axis=axis),
       x2=lambda g, x1, axis: cross(g, x1, axis=axis))
defvjp("linalg.outer", x1=lambda g, x2: g @ x2, x2=lambda g, x1: x1 @ g)
defvjp("linalg.diagonal", x=_diagonal_rule)
defvjp("linalg.trace", x=_trace_rule)
