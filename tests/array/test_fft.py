"""The fft extension against numpy.fft (complex128 references), with precision kept."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd

NORMS = st.sampled_from(["backward", "ortho", "forward"])
SHAPES = npst.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-11, "complex128": 1e-11}
COMPLEX_OF = {"float32": qd.complex64, "complex64": qd.complex64, "float64": qd.complex128,
              "complex128": qd.complex128}
REAL_OF = {"float32": qd.float32, "complex64": qd.float32, "float64": qd.float64,
           "complex128": qd.float64}


def _signal(data: st.DataObject, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    a = data.draw(npst.arrays(np.float64, shape, elements=st.floats(-1, 1)))
    if dtype.startswith("complex"):
        a = a + 1j * data.draw(npst.arrays(np.float64, shape, elements=st.floats(-1, 1)))
    return a.astype(dtype)


def _close(result: qd.Array, expected: np.ndarray, dtype: str, out: qd.DType) -> None:
    assert result.dtype == out
    assert result.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(np.asarray(result), expected, rtol=TOL[dtype],
                               atol=TOL[dtype] * scale)


@given(st.data())
def test_one_axis_transforms(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    norm = data.draw(NORMS)
    n = data.draw(st.none() | st.integers(2, 8))
    cdt = data.draw(st.sampled_from(["complex64", "complex128"]))
    rdt = data.draw(st.sampled_from(["float32", "float64"]))
    c = _signal(data, shape, cdt)
    r = _signal(data, shape, rdt)
    ref_c = c.astype(np.complex128)
    ref_r = r.astype(np.float64)
    kw = {"n": n, "axis": axis, "norm": norm}
    _close(qd.fft.fft(qd.asarray(c), **kw), np.fft.fft(ref_c, **kw), cdt, COMPLEX_OF[cdt])
    _close(qd.fft.ifft(qd.asarray(c), **kw), np.fft.ifft(ref_c, **kw), cdt, COMPLEX_OF[cdt])
    _close(qd.fft.fft(qd.asarray(r), **kw), np.fft.fft(ref_r, **kw), rdt, COMPLEX_OF[rdt])
    _close(qd.fft.rfft(qd.asarray(r), **kw), np.fft.rfft(ref_r, **kw), rdt, COMPLEX_OF[rdt])
    _close(qd.fft.ihfft(qd.asarray(r), **kw), np.fft.ihfft(ref_r, **kw), rdt, COMPLEX_OF[rdt])
    if n is not None or shape[axis] >= 2:
        _close(qd.fft.irfft(qd.asarray(c), **kw), np.fft.irfft(ref_c, **kw), cdt,
               REAL_OF[cdt])
        _close(qd.fft.hfft(qd.asarray(c), **kw), np.fft.hfft(ref_c, **kw), cdt, REAL_OF[cdt])


@given(st.data())
def test_many_axes_transforms(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    norm = data.draw(NORMS)
    axes = data.draw(st.none() | st.permutations(range(len(shape))).flatmap(
        lambda p: st.integers(1, len(p)).map(lambda k: tuple(p[:k]))))
    s = None
    if axes is not None and data.draw(st.booleans()):
        s = tuple(data.draw(st.integers(2, 6)) for _ in axes)
    cdt = data.draw(st.sampled_from(["complex64", "complex128"]))
    rdt = data.draw(st.sampled_from(["float32", "float64"]))
    c = _signal(data, shape, cdt)
    r = _signal(data, shape, rdt)
    kw = {"s": s, "axes": axes, "norm": norm}
    ref_c = c.astype(np.complex128)
    _close(qd.fft.fftn(qd.asarray(c), **kw), np.fft.fftn(ref_c, **kw), cdt, COMPLEX_OF[cdt])
    _close(qd.fft.ifftn(qd.asarray(c), **kw), np.fft.ifftn(ref_c, **kw), cdt,
           COMPLEX_OF[cdt])
    _close(qd.fft.rfftn(qd.asarray(r), **kw), np.fft.rfftn(r.astype(np.float64), **kw), rdt,
           COMPLEX_OF[rdt])
    last = shape[-1] if axes is None else shape[axes[-1]]
    if s is not None or last >= 2:
        _close(qd.fft.irfftn(qd.asarray(c), **kw), np.fft.irfftn(ref_c, **kw), cdt,
               REAL_OF[cdt])


def test_round_trips() -> None:
    x = np.linspace(-1, 1, 7)
    q = qd.asarray(x)
    np.testing.assert_allclose(np.asarray(qd.fft.irfft(qd.fft.rfft(q), n=7)), x, atol=1e-14)
    np.testing.assert_allclose(np.asarray(qd.fft.ifft(qd.fft.fft(q))), x, atol=1e-14)
    m = qd.asarray(np.arange(12.0).reshape(3, 4))
    back = qd.fft.irfftn(qd.fft.rfftn(m), s=(3, 4))
    np.testing.assert_allclose(np.asarray(back), np.arange(12.0).reshape(3, 4), atol=1e-12)


@given(n=st.integers(1, 12), d=st.sampled_from([1.0, 0.5, 3]),
       dtype=st.sampled_from([None, qd.float32, qd.float64]))
def test_frequencies(n: int, d: float, dtype: qd.DType | None) -> None:
    f = qd.fft.fftfreq(n, d=d, dtype=dtype)
    assert f.dtype == (dtype or qd.float64) and f.device == qd.Device("cpu")
    np.testing.assert_allclose(np.asarray(f), np.fft.fftfreq(n, d=d), rtol=1e-6)
    rf = qd.fft.rfftfreq(n, d=d, dtype=dtype, device="cpu")
    assert rf.dtype == (dtype or qd.float64)
    np.testing.assert_allclose(np.asarray(rf), np.fft.rfftfreq(n, d=d), rtol=1e-6)


@given(st.data())
def test_shifts(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    a = np.arange(int(np.prod(shape))).reshape(shape)
    axes = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)
                     | st.sets(st.integers(0, len(shape) - 1), min_size=1).map(tuple))
    x = qd.asarray(a)
    np.testing.assert_array_equal(np.asarray(qd.fft.fftshift(x, axes=axes)),
                                  np.fft.fftshift(a, axes=axes))
    np.testing.assert_array_equal(np.asarray(qd.fft.ifftshift(x, axes=axes)),
                                  np.fft.ifftshift(a, axes=axes))
    np.testing.assert_array_equal(
        np.asarray(qd.fft.ifftshift(qd.fft.fftshift(x, axes=axes), axes=axes)), a)


def test_fft_errors() -> None:
    x = qd.zeros(4)
    cases = [
        (lambda: qd.fft.fft(qd.asarray([1, 2])), TypeError,
         "Only floating-point dtypes are allowed in fft.fft; got qdarray.int64"),
        (lambda: qd.fft.rfft(qd.zeros(4, dtype=qd.complex64)), TypeError,
         "Only real floating dtypes are allowed in fft.rfft"),
        (lambda: qd.fft.fft(x, n=0), ValueError, "n >= 1; got 0"),
        (lambda: qd.fft.fft(x, norm="none"), ValueError, "norm must be one of"),
        (lambda: qd.fft.fft(qd.asarray(1.0)), ValueError, "at least 1 dimension"),
        (lambda: qd.fft.fft(x, axis=1), IndexError, "axis=1 is out of range for fft.fft"),
        (lambda: qd.fft.irfft(qd.zeros(1)), ValueError, "pass n explicitly"),
        (lambda: qd.fft.fft(qd.zeros(0)), ValueError, "empty axis"),
        (lambda: qd.fft.fftn(qd.zeros((2, 2)), s=(2,), axes=(0, 1)), ValueError,
         "one size in s per axis"),
        (lambda: qd.fft.fftn(qd.zeros((2, 2)), axes=(0, 0)), IndexError, "repeated axes"),
        (lambda: qd.fft.fftn(qd.zeros(2), s=(2, 2)), ValueError, "2 sizes in s"),
        (lambda: qd.fft.fftfreq(0), ValueError, "n >= 1"),
        (lambda: qd.fft.fftfreq(4, d=0), ValueError, "non-zero real sample spacing"),
        (lambda: qd.fft.fftfreq(4, dtype=qd.int32), TypeError,
         "Only real floating dtypes are allowed in fft.fftfreq"),
        (lambda: qd.fft.fftfreq(4, device="tpu"), ValueError, "Unknown device"),
    ]
    for func, exc, match in cases:
        with pytest.raises(exc, match=match):
            func()
