"""Adapters of numpy.linalg and numpy.fft functions to the namespace's linalg and fft.

Part of the table in `_numpy_functions` (see there): each adapter takes the NumPy function's
parameters and calls `qd.linalg` / `qd.fft`; integer input is computed in float64, as NumPy does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _manipulation_functions as mf
from .. import fft, linalg
from .._array import Array
from .operands import (
    NO_VALUE,
    NotInNamespace,
    arrays_of,
    complex_of,
    given,
    inexact,
    one_array,
    refuse,
)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Array:
    a = inexact(one_array(x, "linalg.norm"))
    if isinstance(axis, int | np.integer):
        axis = (int(axis),)
    if axis is None and (ord is None or a.ndim == 1):
        return linalg.vector_norm(a, keepdims=keepdims, ord=2 if ord is None else ord)
    if axis is None:
        if a.ndim != 2:
            raise ValueError("Improper number of dimensions to norm.")
        axis = (0, 1)
    if len(axis) == 1:
        return linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    ends = (a.ndim - 2, a.ndim - 1)
    r = linalg.matrix_norm(mf.moveaxis(a, tuple(axis), ends), keepdims=keepdims,
                           ord="fro" if ord is None else ord)
    return mf.moveaxis(r, ends, tuple(i % a.ndim for i in axis)) if keepdims else r


def one_matrix(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """numpy.linalg functions of one matrix and no options: inv, det, slogdet, svdvals, ..."""

    def adapter(a: Any) -> Any:
        return func(inexact(one_array(a, f"linalg.{name}")))

    adapter.__name__ = f"_{name}"
    return adapter


def svdvals(x: Any, /) -> Array:
    return linalg.svdvals(inexact(one_array(x, "linalg.svdvals")))


def solve(a: Any, b: Any) -> Array:
    x, y = arrays_of((a, b), "linalg.solve")
    return linalg.solve(inexact(x), inexact(y))


def cholesky(a: Any, /, *, upper: Any = False) -> Array:
    return linalg.cholesky(inexact(one_array(a, "linalg.cholesky")), upper=upper)


def qr(a: Any, mode: Any = "reduced") -> Any:
    if mode not in ("reduced", "complete"):
        raise NotInNamespace(f"numpy.linalg.qr with mode={mode!r} has no namespace equivalent")
    return linalg.qr(inexact(one_array(a, "linalg.qr")), mode=mode)


def svd(a: Any, full_matrices: Any = True, compute_uv: Any = True, hermitian: Any = False) -> Any:
    refuse("linalg.svd", hermitian=hermitian or None)
    x = inexact(one_array(a, "linalg.svd"))
    return linalg.svd(x, full_matrices=full_matrices) if compute_uv else linalg.svdvals(x)


def eigh(a: Any, UPLO: Any = "L") -> Any:
    refuse("linalg.eigh", UPLO=None if UPLO == "L" else UPLO)
    return linalg.eigh(inexact(one_array(a, "linalg.eigh")))


def eigvalsh(a: Any, UPLO: Any = "L") -> Array:
    refuse("linalg.eigvalsh", UPLO=None if UPLO == "L" else UPLO)
    return linalg.eigvalsh(inexact(one_array(a, "linalg.eigvalsh")))


def pinv(a: Any, rcond: Any = None, hermitian: Any = False, *, rtol: Any = NO_VALUE) -> Array:
    refuse("linalg.pinv", rcond=rcond, hermitian=hermitian or None)
    x = inexact(one_array(a, "linalg.pinv"))
    return linalg.pinv(x, rtol=rtol if given(rtol) else None)


def matrix_rank(A: Any, tol: Any = None, hermitian: Any = False, *,
                 rtol: Any = None) -> Array:
    refuse("linalg.matrix_rank", tol=tol, hermitian=hermitian or None)
    return linalg.matrix_rank(inexact(one_array(A, "linalg.matrix_rank")), rtol=rtol)


def matrix_power(a: Any, n: Any) -> Array:
    return linalg.matrix_power(one_array(a, "linalg.matrix_power"), n)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: Any = False, ord: Any = 2) -> Array:
    return linalg.vector_norm(inexact(one_array(x, "linalg.vector_norm")), axis=axis,
                              keepdims=keepdims, ord=ord)


def matrix_norm(x: Any, /, *, keepdims: Any = False, ord: Any = "fro") -> Array:
    x = inexact(one_array(x, "linalg.matrix_norm"))
    return linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


def outer(x1: Any, x2: Any, /) -> Array:
    return linalg.outer(*arrays_of((x1, x2), "linalg.outer"))


def cross(x1: Any, x2: Any, /, *, axis: Any = -1) -> Array:
    return linalg.cross(*arrays_of((x1, x2), "linalg.cross"), axis=axis)


# -- fft --------------------------------------------------------------------------------------


def fft_1d(func: Callable[..., Array], name: str, real_input: bool) -> Callable[..., Array]:
    """numpy.fft's one-axis transforms (fft, ifft, rfft, irfft, hfft, ihfft)."""

    def adapter(a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Array:
        refuse(f"fft.{name}", out=out)
        x = one_array(a, f"fft.{name}")
        x = inexact(x) if real_input else complex_of(x)
        return func(x, n=n, axis=axis, norm=norm or "backward")

    adapter.__name__ = f"_{name}"
    return adapter


def fft_nd(func: Callable[..., Array], name: str, real_input: bool,
          default_axes: Any) -> Callable[..., Array]:
    """numpy.fft's n-axis transforms (fftn, ifftn, rfftn, irfftn and the 2-D ones)."""

    def adapter(a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None,
                out: Any = None) -> Array:
        refuse(f"fft.{name}", out=out)
        x = one_array(a, f"fft.{name}")
        x = inexact(x) if real_input else complex_of(x)
        return func(x, s=s, axes=axes, norm=norm or "backward")

    adapter.__name__ = f"_{name}"
    return adapter


def fftshift(x: Any, axes: Any = None) -> Array:
    return fft.fftshift(one_array(x, "fft.fftshift"), axes=axes)


def ifftshift(x: Any, axes: Any = None) -> Array:
    return fft.ifftshift(one_array(x, "fft.ifftshift"), axes=axes)
