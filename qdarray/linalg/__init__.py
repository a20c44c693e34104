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
from .._devices import Device
from .._dispatch import require_array, same_device
from .._errors import LinAlgError
from .._linear_algebra_functions import matmul, matrix_transpose, numeric_pair, tensordot, vecdot
from .._linear_algebra_functions import wrap as _wrap

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
    return _wrap(r, device)


def det(x: Array, /) -> Array:
    """Determinants of square matrices (a stack gives one per matrix)."""
    device = _floating(x, "det")
    _matrices(x, "det")
    return _wrap(_linalg(device).det(x._data), device)


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and log of the absolute value of determinants, stable where `det` over- or
    underflows. A singular matrix gives sign 0 and logabsdet -inf."""
    device = _floating(x, "slogdet")
    _matrices(x, "slogdet")
    r = _linalg(device).slogdet(x._data)
    return SlogdetResult(_wrap(r.sign, device), _wrap(r.logabsdet, device))


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors of symmetric (Hermitian) matrices.
    Only the lower triangle of each matrix is read."""
    device = _floating(x, "eigh")
    _matrices(x, "eigh")
    r = _run("eigh", _linalg(device).eigh, x._data)
    return EighResult(_wrap(r.eigenvalues, device), _wrap(r.eigenvectors, device))


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (ascending, real) of symmetric (Hermitian) matrices."""
    device = _floating(x, "eigvalsh")
    _matrices(x, "eigvalsh")
    return _wrap(_run("eigvalsh", _linalg(device).eigvalsh, x._data), device)


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and eigenvectors of general square matrices, always complex (complex64
    for float32 input, complex128 for float64), as in the 2025.12 standard."""
    device = _floating(x, "eig")
    _matrices(x, "eig")
    r = _run("eig", _linalg(device).eig, x._data)
    return EigResult(_wrap(r.eigenvalues, device), _wrap(r.eigenvectors, device))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues of general square matrices, always complex (see `eig`)."""
    device = _floating(x, "eigvals")
    _matrices(x, "eigvals")
    return _wrap(_run("eigvals", _linalg(device).eigvals, x._data), device)


def inv(x: Array, /) -> Array:
    """Inverses of square matrices.

    Raises:
        LinAlgError: for a singular matrix.
    """
    device = _floating(x, "inv")
    _matrices(x, "inv")
    r = _run("inv", _linalg(device).inv, x._data,
             hint=" Try qd.linalg.pinv for a least-squares inverse.")
    return _wrap(r, device)


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverses; singular values below `rtol` times the largest are
    treated as zero (default: max(M, N) * eps of the dtype)."""
    device = _floating(x, "pinv")
    _matrices(x, "pinv", square=False)
    return _wrap(_linalg(device).pinv(x._data, rtol=_rtol(rtol, x, "pinv")), device)


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
    return QRResult(_wrap(r.Q, device), _wrap(r.R, device))


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decompositions x = U @ diag(S) @ Vh, singular values descending."""
    device = _floating(x, "svd")
    _matrices(x, "svd", square=False)
    r = _run("svd", _linalg(device).svd, x._data, full_matrices=full_matrices)
    return SVDResult(_wrap(r.U, device), _wrap(r.S, device), _wrap(r.Vh, device))


def svdvals(x: Array, /) -> Array:
    """Singular values of matrices, descending (real, even for complex input)."""
    device = _floating(x, "svdvals")
    _matrices(x, "svdvals", square=False)
    return _wrap(_run("svdvals", _linalg(device).svdvals, x._data), device)


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
    return _wrap(r, device)


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
    return _wrap(r, device)


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
    return _wrap(r, device)


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
    return _wrap(r, device)


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Cross products of 3-element vectors along `axis`, broadcast over other dimensions."""
    device = numeric_pair(x1, x2, "linalg.cross")
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or x.shape[axis] != 3:
            raise ValueError(
                f"linalg.cross needs 3-element vectors along axis {axis}; {name} has shape "
                f"{x.shape}."
            )
    return _wrap(_linalg(device).cross(x1._data, x2._data, axis=axis), device)


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-D arrays."""
    device = numeric_pair(x1, x2, "linalg.outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"linalg.outer needs two 1-D arrays; got shapes {x1.shape} and {x2.shape}."
        )
    return _wrap(_linalg(device).outer(x1._data, x2._data), device)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """A read-only view of the diagonals of the last two axes (`offset` > 0 above the main
    diagonal, < 0 below)."""
    x = require_array(x, "linalg.diagonal")
    _matrices(x, "diagonal", square=False)
    data = _linalg(x._device).diagonal(x._data, offset=offset)
    return Array._new(data, x._device, x._buffer)


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """Sums along the diagonals of the last two axes. Without `dtype`, floating dtypes are
    kept and integers accumulate in the widest integer of their signedness (as `sum`)."""
    x = require_array(x, "linalg.trace")
    _dtypes.check_category(x._dtype, "numeric", "linalg.trace")
    _matrices(x, "trace", square=False)
    d = _dtypes.normalize_dtype(dtype)
    device = x._device
    r = _linalg(device).trace(x._data, offset=offset, dtype=None if d is None else d._np)
    return _wrap(r, device)
