"""The table of NumPy-style programs the whole-program gradient tests differentiate.

Each `Spec` is a program `f(xp, c, *arrays)` returning a scalar, written once for both
qdarray (`xp = qd`) and JAX (`xp = jax.numpy`); `c(value)` makes a constant (a weight, an
index array) on the arrays' device. Programs weight their results with fixed random
constants, so the cotangent reaching each operation is not uniform. A spec with `fj` gives
JAX its own spelling (in-place writes). `gen` makes the inputs, as float64 NumPy arrays.

`check` compares qdarray's gradient (`qd.ad.grad`, on any device) with `jax.grad` of the same
program and with central finite differences of qdarray's own forward in one random direction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import qdarray as qd

Gen = Callable[[np.random.Generator], tuple[np.ndarray, ...]]


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    f: Callable[..., Any]
    gen: Gen
    fj: Callable[..., Any] | None = None
    fd_rtol: float = 1e-5  # float32 steps inside the program need more


def uniform(*shapes: tuple[int, ...], lo: float = -1.0, hi: float = 1.0) -> Gen:
    return lambda rng: tuple(rng.uniform(lo, hi, size=s) for s in shapes)


def spd(n: int, batch: tuple[int, ...] = ()) -> Gen:
    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        b = rng.normal(size=batch + (n, n))
        return (b @ np.swapaxes(b, -1, -2) + n * np.eye(n),)
    return make


def well_conditioned(*shapes: tuple[int, ...]) -> Gen:
    """Square matrices near the identity (first shape), then plain uniform arrays."""
    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        a = rng.uniform(-0.3, 0.3, size=shapes[0]) + np.eye(shapes[0][-1])
        return (a,) + tuple(rng.uniform(-1, 1, size=s) for s in shapes[1:])
    return make


def near_identity(*shapes: tuple[int, ...]) -> Gen:
    """Matrices near the identity of their shape (full rank, well conditioned)."""
    return lambda rng: tuple(rng.uniform(-0.3, 0.3, size=s) + np.eye(*s) for s in shapes)


def wsum(xp: Any, c: Any, y: Any) -> Any:
    """sum(y * W) for a fixed random W of y's shape (real: the real part of y)."""
    w = np.random.default_rng(sum(y.shape) + 7).normal(size=y.shape)
    if y.dtype in (xp.complex64, xp.complex128):
        y = xp.real(y) + 0.5 * xp.imag(y)
    return xp.sum(y * c(w))


def unary(name: str, lo: float = -1.0, hi: float = 1.0) -> Spec:
    return Spec(name, lambda xp, c, x: wsum(xp, c, getattr(xp, name)(x)),
                uniform((3, 4), lo=lo, hi=hi))


def binary(name: str, lo1: float = -1.0, hi1: float = 1.0, lo2: float = -1.0,
           hi2: float = 1.0) -> Spec:
    def gen(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return rng.uniform(lo1, hi1, size=(3, 4)), rng.uniform(lo2, hi2, size=(4,))
    return Spec(name, lambda xp, c, x1, x2: wsum(xp, c, getattr(xp, name)(x1, x2)), gen)


def distinct(*shapes: tuple[int, ...]) -> Gen:
    """Arrays of distinct values (no ties for max, min, sort)."""
    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        out = []
        for s in shapes:
            n = int(np.prod(s))
            out.append((rng.permutation(n) + rng.uniform(0.1, 0.4, size=n)).reshape(s) / n)
        return tuple(out)
    return make


def _setitem_qd(xp: Any, c: Any, x: Any, v: Any) -> Any:
    y = xp.exp(x) + 0.0  # exp keeps its result for the reverse: write into a new array
    y[1, 1:3] = v[:2] * 2.0
    y[c(np.array([0, 2])), 0] = v[2]
    return wsum(xp, c, y * y)


def _setitem_jax(xp: Any, c: Any, x: Any, v: Any) -> Any:
    y = xp.exp(x) + 0.0
    y = y.at[1, 1:3].set(v[:2] * 2.0)
    y = y.at[c(np.array([0, 2])), 0].set(v[2])
    return wsum(xp, c, y * y)


def _setitem_repeated_qd(xp: Any, c: Any, x: Any, v: Any) -> Any:
    """Repeated integer indices: the last write of an element wins (NumPy's forward)."""
    y = x * 1.0
    y[c(np.array([2, 0, 2, 1])), 1:3] = xp.reshape(v, (4, 1)) * 2.0
    y[0, c(np.array([3, 3, 0]))] = v[1]             # a scalar, written twice to y[0, 3]
    return wsum(xp, c, y * y)


def _setitem_repeated_jax(xp: Any, c: Any, x: Any, v: Any) -> Any:
    y = x * 1.0
    y = y.at[c(np.array([2, 0, 2, 1])), 1:3].set(xp.reshape(v, (4, 1)) * 2.0)
    y = y.at[0, c(np.array([3, 3, 0]))].set(v[1])
    return wsum(xp, c, y * y)


def _inplace_qd(xp: Any, c: Any, x: Any, w: Any) -> Any:
    y = x * 1.0
    y *= w
    y += x
    y /= 2.0
    return wsum(xp, c, y * x)


def _inplace_jax(xp: Any, c: Any, x: Any, w: Any) -> Any:
    y = x * 1.0
    y = y * w
    y = y + x
    y = y / 2.0
    return wsum(xp, c, y * x)


def _fft_power(xp: Any, c: Any, x: Any) -> Any:
    z = xp.fft.fft(x, n=10, norm="ortho")
    return wsum(xp, c, xp.real(z * xp.conj(z))) + wsum(xp, c, xp.abs(z))


def _with_zero(*shapes: tuple[int, ...]) -> Gen:
    """Uniform arrays with one exact zero in the first (a running product through 0)."""
    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        out = uniform(*shapes, lo=0.5, hi=1.5)(rng)
        out[0].flat[1] = 0.0
        return out
    return make


def _eigh(xp: Any, c: Any, a: Any) -> Any:
    w, v = xp.linalg.eigh((a + xp.matrix_transpose(a)) / 2.0)
    # Eigenvectors are defined up to sign: v * v and v diag(w) v^T do not see it.
    return wsum(xp, c, w) + wsum(xp, c, v * v) + wsum(xp, c, (v * w[None, :] ** 2) @ v.T)


def _svd(xp: Any, c: Any, a: Any, b: Any) -> Any:
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    u2, s2, vh2 = xp.linalg.svd(b)                 # square: the full and reduced agree
    # Singular vectors are defined up to a sign shared by u[:, k] and vh[k]: u @ vh and
    # squares do not see it.
    return (wsum(xp, c, s) + wsum(xp, c, u * u) + wsum(xp, c, vh * vh) + wsum(xp, c, u @ vh)
            + wsum(xp, c, (u2 * s2[None, :] ** 0.5) @ vh2) + wsum(xp, c, u2 ** 2 * vh2 ** 2))


def _views_of_read_only(xp: Any, c: Any, x: Any) -> Any:
    """Views of results that share their input's memory (a broadcast, the parts of a complex
    array, a diagonal): recorded as views, as they cannot share a gradient."""
    b = xp.broadcast_to(xp.exp(x) + 0.0, (2, 3))
    z = (x + 1j * x[::-1]) * (1 + 2j)
    d = xp.linalg.diagonal(xp.linalg.outer(x, x))
    return (wsum(xp, c, b[1, 1:] ** 2) + wsum(xp, c, xp.matrix_transpose(b)[0] * 3.0)
            + wsum(xp, c, xp.real(z)[1:] ** 3) + wsum(xp, c, xp.imag(z)[::2] ** 2)
            + wsum(xp, c, d[0:2] ** 2) + wsum(xp, c, xp.flip(b, axis=1)[0] * x)
            + wsum(xp, c, xp.reshape(b, (6,)) ** 2) + wsum(xp, c, xp.asarray(b)[:, None] * 2.0))


SPECS: list[Spec] = [
    # -- elementwise functions and operators ---------------------------------------------------
    unary("abs", 0.2, 1.0), unary("negative"), unary("positive"), unary("square"),
    unary("sqrt", 0.5, 2.0), unary("reciprocal", 0.5, 2.0), unary("exp"), unary("expm1"),
    unary("log", 0.5, 2.0), unary("log1p"), unary("log2", 0.5, 2.0),
    unary("log10", 0.5, 2.0), unary("sin"), unary("cos"), unary("tan"),
    unary("asin", -0.9, 0.9), unary("acos", -0.9, 0.9), unary("atan"), unary("sinh"),
    unary("cosh"), unary("tanh"), unary("asinh"), unary("acosh", 1.5, 3.0),
    unary("atanh", -0.9, 0.9),
    Spec("piecewise_constant", lambda xp, c, x: wsum(
        xp, c, (xp.floor(x) + xp.ceil(x) + xp.round(x) + xp.trunc(x) + xp.sign(x)) * x
        + xp.floor_divide(x, 0.3) * x), uniform((3, 4), lo=-2.0, hi=2.0)),
    binary("add"), binary("subtract"), binary("multiply"),
    binary("divide", lo2=0.5, hi2=2.0), binary("pow", 0.5, 2.0),
    binary("remainder", 1.0, 3.0, 0.55, 0.95), binary("atan2"), binary("hypot"),
    binary("logaddexp"), binary("copysign", 0.2, 1.0), binary("maximum"),
    binary("minimum"),
    Spec("operators", lambda xp, c, x, y: wsum(
        xp, c, (x + 2.0) * y - y / (x + 3.0) + x ** 2 - 1.0 / (y - 2.0) + 2.0 ** x - (-x)
        + abs(y)) + wsum(xp, c, x @ y.T), uniform((3, 4), (3, 4))),
    Spec("broadcast_and_scalars", lambda xp, c, x, y, s: wsum(
        xp, c, x * y + s * x - y / (s + 2.0) + xp.reshape(s, (1, 1)) * x),
        uniform((3, 1), (4,), ())),
    Spec("promotion_and_astype", lambda xp, c, x: wsum(
        xp, c, xp.astype(xp.astype(x, xp.float32) * 2.0, xp.float64) * x), uniform((5,)),
        fd_rtol=1e-2),
    Spec("inplace_operators", _inplace_qd, uniform((3, 4), (4,)), fj=_inplace_jax),
    Spec("complex", lambda xp, c, x, y: wsum(
        xp, c, xp.conj(xp.astype(x, xp.complex128) * (1.0 + 2.0j)) * y
        + xp.abs(x + 1j * y) + xp.imag(xp.exp(1j * x)) + xp.real((x + 1j * y) ** 2)),
        uniform((3,), (3,))),
    # -- reductions ------------------------------------------------------------------------------
    Spec("sum", lambda xp, c, x: wsum(xp, c, xp.sum(x, axis=(0, 2)) ** 2)
         + xp.sum(x) ** 2 + wsum(xp, c, xp.sum(x, axis=1, keepdims=True) ** 2),
         uniform((2, 3, 4))),
    Spec("mean", lambda xp, c, x: wsum(xp, c, xp.mean(x, axis=-1) ** 2) + xp.mean(x ** 3),
         uniform((2, 3, 4))),
    Spec("prod", lambda xp, c, x: wsum(xp, c, xp.prod(x, axis=1))
         + xp.prod(x[0]) + wsum(xp, c, xp.prod(x, axis=(0, 2), keepdims=True)),
         uniform((3, 4, 2), lo=0.5, hi=1.5)),
    Spec("max_min", lambda xp, c, x: wsum(xp, c, xp.max(x, axis=0)) + xp.min(x) * 3.0
         + wsum(xp, c, xp.max(x, axis=(0, 1), keepdims=True)), distinct((3, 4, 2))),
    Spec("var_std", lambda xp, c, x: wsum(xp, c, xp.var(x, axis=0)) + xp.std(x)
         + wsum(xp, c, xp.std(x, axis=1, correction=1)), uniform((3, 4))),
    Spec("cumulative_sum", lambda xp, c, x: wsum(xp, c, xp.cumulative_sum(x, axis=1) ** 2)
         + wsum(xp, c, xp.cumulative_sum(x[0], include_initial=True) ** 2), uniform((3, 4))),
    Spec("cumulative_prod", lambda xp, c, x, y: wsum(xp, c, xp.cumulative_prod(x, axis=1))
         + wsum(xp, c, xp.cumulative_prod(y, axis=0, include_initial=True))
         + wsum(xp, c, xp.cumulative_prod(y[0])), _with_zero((3, 4), (3, 4))),
    # -- matrix products -------------------------------------------------------------------------
    Spec("matmul", lambda xp, c, a, b, v, w: wsum(xp, c, a @ b) + wsum(xp, c, v @ b)
         + wsum(xp, c, a @ w) + v @ w + wsum(xp, c, xp.matmul(xp.reshape(a, (1, 3, 4)), b)),
         uniform((3, 4), (4, 5), (4,), (4,))),
    Spec("matmul_batched", lambda xp, c, a, b: wsum(xp, c, xp.matmul(a, b))
         + wsum(xp, c, b.T @ xp.matrix_transpose(a)), uniform((2, 3, 4), (4, 3))),
    Spec("tensordot", lambda xp, c, a, b: wsum(xp, c, xp.tensordot(a, b, axes=1))
         + wsum(xp, c, xp.tensordot(a, xp.permute_dims(b, (1, 2, 0)), axes=([1, 0], [2, 0]))),
         uniform((3, 4), (4, 3, 2))),
    Spec("vecdot", lambda xp, c, a, b: wsum(xp, c, xp.vecdot(a, b))
         + wsum(xp, c, xp.vecdot(a, b[0], axis=0)), uniform((3, 4), (2, 3, 4))),
    # -- linalg ----------------------------------------------------------------------------------
    Spec("solve", lambda xp, c, a, b, v: wsum(xp, c, xp.linalg.solve(a, b))
         + wsum(xp, c, xp.linalg.solve(a, v)), well_conditioned((3, 3), (3, 2), (3,))),
    Spec("solve_batched", lambda xp, c, a, b: wsum(xp, c, xp.linalg.solve(a, b)),
         well_conditioned((2, 3, 3), (2, 3, 1))),
    Spec("inv", lambda xp, c, a: wsum(xp, c, xp.linalg.inv(a)), well_conditioned((3, 3))),
    Spec("det_slogdet", lambda xp, c, a: xp.linalg.det(a) * 2.0
         + xp.linalg.slogdet(a)[1] + xp.linalg.slogdet(-a)[1], well_conditioned((3, 3))),
    Spec("cholesky", lambda xp, c, a: wsum(
        xp, c, xp.linalg.cholesky((a + xp.matrix_transpose(a)) / 2.0))
        + wsum(xp, c, xp.linalg.cholesky((a + a.mT) / 2.0, upper=True)), spd(3)),
    Spec("eigvalsh_svdvals", lambda xp, c, a, b: wsum(
        xp, c, xp.linalg.eigvalsh((a + xp.matrix_transpose(a)) / 2.0))
        + wsum(xp, c, xp.linalg.svdvals(b)), lambda rng: (spd(3)(rng)[0],
                                                          rng.uniform(-1, 1, (3, 2)))),
    Spec("eigh", _eigh, uniform((4, 4))),
    Spec("svd", _svd, distinct((4, 3), (3, 3))),
    Spec("qr", lambda xp, c, a, b: sum(wsum(xp, c, m) for m in xp.linalg.qr(a))
         + wsum(xp, c, xp.linalg.qr(b)[0]) + wsum(xp, c, xp.linalg.qr(b)[1] ** 2),
         near_identity((4, 3), (3, 3))),
    Spec("pinv_matrix_power", lambda xp, c, a, b: wsum(xp, c, xp.linalg.pinv(a))
         + wsum(xp, c, xp.linalg.matrix_power(b, 3)) + wsum(xp, c, xp.linalg.matrix_power(b, -2))
         + wsum(xp, c, xp.linalg.matrix_power(b, 1)) + wsum(xp, c, xp.linalg.matrix_power(b, 0)),
         near_identity((4, 3), (3, 3))),
    Spec("complex_solve_inv_det_power", lambda xp, c, a, b, v, w: wsum(
        xp, c, xp.linalg.solve(a + 0.5j * b, v + 1j * w)) + wsum(
            xp, c, xp.linalg.solve(a + 0.5j * b, w + 0j)) + wsum(
                xp, c, xp.linalg.inv(a - 0.3j * b)) + wsum(
                    xp, c, xp.linalg.det(a + 0.2j * b) * (1 - 2j)) + wsum(
                        xp, c, xp.linalg.matrix_power(a * (1 + 1j), 3)) + wsum(
                            xp, c, xp.linalg.matrix_power(a + 0.1j * b, -2)),
         well_conditioned((3, 3), (3, 3), (3, 2), (3, 2))),
    Spec("vector_norm", lambda xp, c, x: xp.linalg.vector_norm(x)
         + wsum(xp, c, xp.linalg.vector_norm(x, axis=1, ord=1))
         + wsum(xp, c, xp.linalg.vector_norm(x, axis=0, ord=float("inf")))
         + wsum(xp, c, xp.linalg.vector_norm(x, axis=(0, 1), ord=3, keepdims=True))
         + xp.linalg.vector_norm(x, ord=-float("inf")), distinct((3, 4))),
    Spec("matrix_norm", lambda xp, c, x: xp.linalg.matrix_norm(x)
         + xp.linalg.matrix_norm(x, ord="nuc") + xp.linalg.matrix_norm(x, ord=2)
         + xp.linalg.matrix_norm(x, ord=-2) + xp.linalg.matrix_norm(x, ord=1)
         + xp.linalg.matrix_norm(x, ord=float("inf")), distinct((3, 4))),
    Spec("cross_outer_trace_diagonal", lambda xp, c, a, b: wsum(xp, c, xp.linalg.cross(a, b))
         + wsum(xp, c, xp.linalg.outer(a[0], b[1]))
         + xp.linalg.trace(xp.linalg.outer(a[0], b[0]), offset=1)
         + wsum(xp, c, xp.linalg.diagonal(xp.linalg.outer(a[1], b[0]), offset=-1) ** 2),
         uniform((2, 3), (2, 3))),
    # -- fft -------------------------------------------------------------------------------------
    Spec("fft", _fft_power, uniform((8,))),
    Spec("fft_ifft", lambda xp, c, x: wsum(xp, c, xp.fft.ifft(xp.fft.fft(x, axis=0) * x, n=3,
                                                            axis=0)),
         uniform((4, 3))),
    Spec("rfft", lambda xp, c, x: wsum(xp, c, xp.fft.rfft(x)) + wsum(xp, c, xp.fft.rfft(
        x, n=5, norm="forward")) + wsum(xp, c, xp.fft.rfft(x, n=9, axis=0)), uniform((6, 2))),
    Spec("irfft", lambda xp, c, x, y: wsum(xp, c, xp.fft.irfft(x + 1j * y))
         + wsum(xp, c, xp.fft.irfft(x * (1 + 2j), n=7, norm="ortho"))
         + wsum(xp, c, xp.fft.irfft(y + 0j, n=4, norm="forward")), uniform((5,), (5,))),
    Spec("rfftn_irfftn", lambda xp, c, x, y: wsum(xp, c, xp.fft.rfftn(x))
         + wsum(xp, c, xp.fft.rfftn(x, s=(4, 7), axes=(0, 1), norm="ortho"))
         + wsum(xp, c, xp.fft.irfftn(x + 1j * y)) + wsum(xp, c, xp.fft.irfftn(
             x * (1 - 0.5j), s=(3, 5), norm="forward")) + wsum(xp, c, xp.fft.irfftn(
                 y + 0j, axes=(1,))), uniform((3, 4), (3, 4))),
    Spec("hfft_ihfft", lambda xp, c, x, y: wsum(xp, c, xp.fft.hfft(x + 1j * y))
         + wsum(xp, c, xp.fft.hfft(x * (1 + 2j), n=7, norm="ortho", axis=0))
         + wsum(xp, c, xp.fft.ihfft(x)) + wsum(xp, c, xp.fft.ihfft(y, n=5, norm="forward")),
         uniform((5, 2), (5, 2))),
    Spec("fftn_shift", lambda xp, c, x: wsum(xp, c, xp.fft.fftshift(xp.fft.fftn(x)))
         + wsum(xp, c, xp.fft.ifftn(x, s=(3, 5), axes=(0, 1)))
         + wsum(xp, c, xp.fft.ifftshift(x * x, axes=0)), uniform((5, 3))),
    # -- indexing and array manipulation ---------------------------------------------------------
    Spec("getitem", lambda xp, c, x: wsum(xp, c, xp.exp(x)[1:, ::2] ** 2)
         + wsum(xp, c, xp.sin(x)[c(np.array([2, 0, 2])), 1:])
         + xp.sum(x[c(np.arange(12).reshape(3, 4) % 3 == 1)] ** 3)
         + xp.sum(xp.cos(x)[..., 1:2] * xp.cos(x)[0, None]), uniform((3, 4))),
    Spec("setitem", _setitem_qd, uniform((3, 4), (3,)), fj=_setitem_jax),
    Spec("setitem_repeated_indices", _setitem_repeated_qd, uniform((3, 4), (4,)),
         fj=_setitem_repeated_jax),
    Spec("take", lambda xp, c, x: wsum(xp, c, xp.take(x, c(np.array([1, 1, 3, 0])), axis=1))
         + wsum(xp, c, xp.take_along_axis(
             x, c(np.array([[0, 2, 2, 1], [1, 1, 3, 0], [3, 0, 0, 0]])), axis=1)),
         uniform((3, 4))),
    Spec("where_clip", lambda xp, c, x, lo: wsum(xp, c, xp.where(x > 0.5, x * x, -x))
         + wsum(xp, c, xp.clip(x, 0.3, 0.6)) + wsum(xp, c, xp.clip(x, lo, None))
         + wsum(xp, c, xp.clip(x, max=lo)), distinct((3, 4), (4,))),
    Spec("concat_stack", lambda xp, c, x, y: wsum(xp, c, xp.concat([x, y * 2.0, x], axis=1))
         + wsum(xp, c, xp.stack([x, y], axis=1)) + wsum(xp, c, xp.concat([x, y], axis=None)),
         uniform((3, 2), (3, 2))),
    Spec("views", lambda xp, c, x: wsum(xp, c, xp.reshape(xp.sin(x), (6, 4)) ** 2)
         + wsum(xp, c, xp.permute_dims(xp.exp(x), (2, 0, 1)) ** 2)
         + wsum(xp, c, xp.squeeze(xp.expand_dims(x, axis=0), axis=0) ** 3)
         + wsum(xp, c, xp.flip(x * x, axis=1) * x) + wsum(xp, c, xp.moveaxis(x, 0, 2) ** 2)
         + wsum(xp, c, xp.matrix_transpose(x) * 1.5) + wsum(xp, c, xp.unstack(x, axis=1)[2] ** 2)
         + wsum(xp, c, xp.reshape(xp.matrix_transpose(x), (-1,)) ** 2), uniform((2, 3, 4))),
    Spec("broadcast_roll_tile_repeat", lambda xp, c, x: wsum(
        xp, c, xp.broadcast_to(x, (2, 3, 4)) ** 2) + wsum(xp, c, xp.roll(x, 2, axis=1) * x)
        + wsum(xp, c, xp.roll(x, 5) * x) + wsum(xp, c, xp.tile(x, (2, 1, 2)) ** 2)
        + wsum(xp, c, xp.repeat(x, 3, axis=0) ** 2)
        + wsum(xp, c, xp.repeat(x[0], c(np.array([2, 0, 1, 3]))) ** 2)
        + wsum(xp, c, xp.broadcast_arrays(x, x[0:1])[1] ** 2), uniform((3, 4))),
    Spec("views_of_read_only_results", _views_of_read_only, uniform((3,))),
    Spec("sort", lambda xp, c, x: wsum(xp, c, xp.sort(x, axis=0) ** 2)
         + wsum(xp, c, xp.sort(x, descending=True) * x), distinct((3, 4))),
    Spec("tril_triu_diff_meshgrid", lambda xp, c, x, v: wsum(xp, c, xp.tril(x) ** 2)
         + wsum(xp, c, xp.triu(x, k=1) * x) + wsum(xp, c, xp.diff(x, n=2, axis=1) ** 2)
         + wsum(xp, c, xp.diff(v, prepend=x[0, :1]) ** 2)
         + wsum(xp, c, xp.meshgrid(v, x[0])[0] * xp.meshgrid(v, x[1], indexing="ij")[1]),
         uniform((3, 4), (4,))),
]


def program(spec: Spec, device: str) -> Callable[..., Any]:
    """The spec's program over qdarray on `device`."""
    target = qd.Device(device)

    def c(value: Any) -> Any:
        v = np.asarray(value)
        return qd.asarray(v, device=target)

    return lambda *args: spec.f(qd, c, *args)


def jax_gradients(spec: Spec, inputs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """`jax.jit(jax.grad(...))` of the spec's program (float64 on the CPU). Constants stay
    NumPy arrays, so index arrays and masks are concrete under `jit`."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    f = spec.fj or spec.f
    argnums = tuple(range(len(inputs)))
    g = jax.jit(jax.grad(lambda *a: f(jnp, np.asarray, *a), argnums=argnums))
    return [np.asarray(v) for v in g(*map(jnp.asarray, inputs))]


def check(spec: Spec, device: str, *, seed: int = 0, with_jax: bool = True) -> None:
    """qdarray's gradients of `spec` on `device` against JAX and central differences."""
    rng = np.random.default_rng(seed)
    inputs = spec.gen(rng)
    f = program(spec, device)
    args = [qd.asarray(a, device=device) for a in inputs]
    value, grads = qd.ad.value_and_grad(f, argnums=tuple(range(len(args))))(*args)
    got = [np.asarray(g.to_device("cpu")) for g in grads]
    for g, a in zip(got, inputs, strict=True):
        assert g.shape == a.shape and g.dtype == np.float64
    if with_jax:
        want = jax_gradients(spec, inputs)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9,
                                       err_msg=f"{spec.name}: input {i} against jax.grad")
    # One random direction: <grad, d> against the central difference of the forward.
    dirs = [rng.normal(size=a.shape) for a in inputs]
    h = 1e-6

    def at(t: float) -> float:
        moved = [qd.asarray(a + t * d, device=device) for a, d in zip(inputs, dirs, strict=True)]
        return float(f(*moved))

    numeric = (at(h) - at(-h)) / (2 * h)
    analytic = sum(float(np.sum(g * d)) for g, d in zip(got, dirs, strict=True))
    assert abs(numeric - analytic) <= spec.fd_rtol * max(1.0, abs(analytic)), (
        f"{spec.name}: directional derivative {analytic} against finite differences {numeric}")
    assert abs(float(value) - float(f(*[qd.asarray(a, device=device) for a in inputs]))) < 1e-9
