"""Everyday NumPy-style scripts run unchanged on qdarray arrays, with NumPy's results.

Each script below is written for NumPy (calls `np.*`, NumPy's methods and operators, and mixes
in NumPy arrays such as `np.hamming(n)`). It runs once on NumPy arrays and once on qdarray
arrays made from the same values; every result must match NumPy's in value, dtype and shape,
and results NumPy gives as arrays or NumPy scalars must be qdarray arrays. Scripts that only
use functions the protocol table maps to the namespace also run on the first device of every
other kind present (NumPy data and unmapped functions are CPU-only by design: docs/numpy.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qdarray as qd

RNG = np.random.default_rng(7)
DATA = {
    "x": RNG.standard_normal((5, 3)),
    "v": RNG.standard_normal(6),
    "w": RNG.standard_normal(6),
    "i": RNG.integers(-5, 5, size=8),
    "c": RNG.standard_normal(4) + 1j * RNG.standard_normal(4),
    "A": RNG.standard_normal((3, 3)) + 3 * np.eye(3),
    "f": RNG.standard_normal(7).astype(np.float32),
}

# name -> (script, arguments it takes from DATA, whether it runs on devices other than the CPU)
Script = Callable[..., Any]
SCRIPTS: dict[str, tuple[Script, str, bool]] = {}


def script(args: str, devices: bool = True) -> Callable[[Script], Script]:
    def register(f: Script) -> Script:
        SCRIPTS[f.__name__] = (f, args, devices)
        return f

    return register


# -- reductions and statistics ---------------------------------------------------------------


@script("x")
def reductions(x: Any) -> Any:
    return (np.mean(x), np.std(x), x.sum(axis=0), x.mean(axis=1), x.max(), x.min(axis=0),
            x.var(ddof=1), np.prod(x, axis=1), x.argmin(), np.argmax(x, axis=1),
            x.sum(axis=1, keepdims=True), np.sum(x, axis=(0, 1)))


@script("x")
def scans(x: Any) -> Any:
    return x.cumsum(), np.cumsum(x, axis=1), np.cumprod(x[:, 0]), x.cumprod(axis=0)


@script("x")
def standardise(x: Any) -> Any:
    return (x - x.mean(axis=0)) / x.std(axis=0)


@script("x")
def softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@script("i")
def integer_statistics(i: Any) -> Any:
    return (np.mean(i), i.sum(), np.count_nonzero(i > 0), (i > 0).any(), np.all(i < 10),
            i.max(), np.abs(i).max())


@script("x,c", devices=False)
def functions_numpy_computes(x: Any, c: Any) -> Any:
    # Not in the table: NumPy's own functions on the CPU storage.
    return (np.median(x), np.percentile(x, 75, axis=0), np.ptp(x, axis=1), np.angle(c),
            np.einsum("ij,kj->ik", x, x), np.histogram(x, bins=4), np.nanmean(x, axis=0),
            np.flipud(x), np.maximum.accumulate(x, axis=0), np.add.outer(x[0], x[1]))


# -- joining, shaping, dtypes ------------------------------------------------------------------


@script("x,v")
def joining(x: Any, v: Any) -> Any:
    return (np.concatenate([x, x]), np.concatenate([v, v[:2]]), np.stack([v, v], axis=1),
            np.vstack([x, x[:1]]), np.hstack([v, v]))


@script("x")
def shaping(x: Any) -> Any:
    return (x.reshape(3, -1), x.reshape((15,)), np.reshape(x, (3, 5)), x.T, x.transpose(),
            x.transpose(1, 0), x.ravel(), x.flatten(), x[None].squeeze(), np.squeeze(x[:1]),
            np.expand_dims(x, 0).shape, np.swapaxes(x, 0, 1), np.moveaxis(x[None], 0, -1),
            np.broadcast_to(x[0], (2, 3)), np.atleast_2d(x[0]), x.ndim, x.shape, x.size,
            len(x), np.shape(x), np.ndim(x))


@script("x,i")
def dtypes(x: Any, i: Any) -> Any:
    assert x.dtype == np.float64
    assert i.dtype == np.int64
    return (x.astype(np.float32), x.astype("float32"), i.astype(np.float64),
            (x * 10).astype(np.int32), np.zeros(3, dtype=x.dtype).dtype, i.astype(bool),
            np.result_type(x, np.float32), x.itemsize, x.nbytes)


@script("x")
def like_and_copy(x: Any) -> Any:
    y = x.copy()
    y[0, 0] = 100.0
    return (np.zeros_like(x), np.ones_like(x, dtype=np.float32), np.full_like(x, 7.0), x, y,
            np.copy(x), np.empty_like(x).shape)


@script("x")
def python_values(x: Any) -> Any:
    return x.tolist(), x[0].tolist(), x[1, 2].item(), x.item(4), float(x.sum()), int(x.argmax())


# -- elementwise maths, windows, NumPy arrays in the mix ---------------------------------------


@script("x")
def elementwise(x: Any) -> Any:
    return (np.sin(x), np.exp(-x ** 2), np.sqrt(np.abs(x)), np.log1p(np.abs(x)),
            np.arctan2(x, 1.0), np.maximum(x, 0), np.where(x > 0, x, 0), np.clip(x, -0.5, 0.5),
            x.clip(0, 1), np.round(x, 2), x.round(), np.floor(x), np.sign(x), -x, abs(x),
            np.isfinite(x), x > 0, np.logical_and(x > 0, x < 1), 2 ** x, x ** 2)


@script("v", devices=False)
def windowed(v: Any) -> Any:
    n = v.shape[0]
    return np.hamming(n) * v, v * np.hanning(n), np.blackman(n) + v, np.take(v, [0, 3]), \
        np.isin(v, [v[0], 7.0]), np.concatenate([v, np.zeros(2)]), v[[0, 2]]


@script("x,A", devices=False)
def matrix_with_numpy_operands(x: Any, A: Any) -> Any:
    m = np.arange(9.0).reshape(3, 3)
    return A @ m, m @ A, x @ np.ones(3), A.dot(np.ones(3)), np.dot(x, m), x + np.ones(3)


@script("x,A")
def products(x: Any, A: Any) -> Any:
    return (A @ A, x @ A, A.dot(A[0]), np.dot(A, A), np.outer(A[0], A[1]), np.trace(A),
            np.diagonal(A), np.vdot(A[0], A[1]), np.tensordot(x, A, axes=1))


@script("c")
def complex_parts(c: Any) -> Any:
    return c.real, c.imag, c.conj(), np.conj(c), np.abs(c), np.real(c), np.imag(c), c * 1j


@script("x")
def in_place_updates(x: Any) -> Any:
    y = x.copy()
    y *= 2
    y += 1.0
    y[y > 1] = 0.0
    z = x.copy()
    z.sort(axis=0)
    w = x.copy()
    w.fill(3.0)
    return y, z, w


@script("x")
def masks_and_slices(x: Any) -> Any:
    return x[x > 0].sum(), x[::2], x[:, 1], x[-1], x[1:3, ::-1], x[..., 0]


# -- sorting, searching, sets ------------------------------------------------------------------


@script("v,i")
def sorting_and_searching(v: Any, i: Any) -> Any:
    s = np.sort(v)
    order = np.argsort(v)
    return (s, v.argsort(), order, np.searchsorted(s, s[2]), np.searchsorted(s, s[1:4]),
            np.unique(i), np.flip(v), np.roll(v, 2), np.take(v, order[:3]), np.isin(i, i[:3]),
            np.nonzero(i > 0), np.take_along_axis(v, order, axis=0), np.where(i > 0))


@script("v")
def tiles_and_grids(v: Any) -> Any:
    return np.tile(v[:2], 3), np.repeat(v[:3], 2), np.diff(v), np.diff(v, n=2), np.meshgrid(
        v[:2], v[:3])


# -- linear algebra, fft, comparisons ----------------------------------------------------------


@script("x,A")
def linear_algebra(x: Any, A: Any) -> Any:
    sym = A @ A.T
    return (np.linalg.norm(x), np.linalg.norm(x, axis=1), np.linalg.norm(A, "fro"),
            np.linalg.inv(A), np.linalg.solve(A, A[0]), np.linalg.det(A),
            np.linalg.eigh(sym).eigenvalues, np.linalg.svd(A, compute_uv=False),
            np.linalg.cholesky(sym), np.linalg.matrix_power(A, 2), np.linalg.slogdet(A))


@script("v,f")
def fourier(v: Any, f: Any) -> Any:
    return np.fft.fft(v), np.fft.rfft(v), np.fft.irfft(np.fft.rfft(v)), np.fft.fft(f), \
        np.fft.fftshift(v), np.fft.fft2(np.outer(v, v))


@script("x,v")
def comparisons(x: Any, v: Any) -> Any:
    return (np.allclose(x, x + 1e-12), np.allclose(x, x + 1.0), np.isclose(v, v * 1.000001),
            np.array_equal(x, x), np.array_equal(x, x[:2]), x == x, x != x)


# -- the harness -------------------------------------------------------------------------------


def _compare(got: Any, expected: Any, where: str) -> None:
    if isinstance(expected, np.ndarray | np.generic):
        assert isinstance(got, qd.Array), f"{where}: got {type(got).__name__}, not an Array"
        assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
        assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} != {expected.dtype}"
        host = np.asarray(got.to_device("cpu"))
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(host, expected, rtol=1e-6, atol=1e-12, err_msg=where)
        else:
            np.testing.assert_array_equal(host, expected, err_msg=where)
    elif isinstance(expected, tuple | list) and not (expected and isinstance(
            expected[0], int | float | bool) and type(expected) is list):
        assert type(got) is type(expected) or isinstance(got, tuple), where
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            _compare(g, e, f"{where}[{k}]")
    elif isinstance(expected, np.dtype):
        assert np.dtype(got) == expected, where
    else:
        assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
        if isinstance(expected, float):
            assert got == pytest.approx(expected, rel=1e-12), where
        else:
            assert got == expected, where


def _inputs(args: str, device: str) -> tuple[list[Any], list[Any]]:
    names = args.split(",")
    return ([DATA[n].copy() for n in names],
            [qd.asarray(DATA[n].copy(), device=device) for n in names])


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_matches_numpy_on_the_cpu(name: str) -> None:
    func, args, _ = SCRIPTS[name]
    numpy_args, qd_args = _inputs(args, "cpu")
    with np.errstate(all="ignore"):
        expected = func(*numpy_args)
    _compare(func(*qd_args), expected, name)


def _one_device_per_kind() -> list[str]:
    """The first device of each kind besides the CPU (OpenCL, Vulkan, CUDA where present)."""
    first: dict[str, str] = {}
    for d in qd.__array_namespace_info__().devices():
        if d.kind != "cpu":
            first.setdefault(d.kind, str(d))
    return list(first.values())


OTHERS = _one_device_per_kind()


@pytest.mark.skipif(not OTHERS, reason="no device besides the CPU (pip install 'qdarray[pocl]')")
@pytest.mark.parametrize("device", OTHERS)
@pytest.mark.parametrize("name", sorted(n for n, (_, _, on_devices) in SCRIPTS.items()
                                        if on_devices))
def test_script_matches_numpy_on_another_device(name: str, device: str) -> None:
    func, args, _ = SCRIPTS[name]
    numpy_args, qd_args = _inputs(args, device)
    with np.errstate(all="ignore"):
        expected = func(*numpy_args)
    got = func(*qd_args)
    _compare(got, expected, name)
    for leaf in _arrays(got):
        assert leaf.device == device


def _arrays(value: Any) -> list[qd.Array]:
    if isinstance(value, qd.Array):
        return [value]
    if isinstance(value, tuple | list):
        return [a for v in value for a in _arrays(v)]
    return []
