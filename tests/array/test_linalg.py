"""matmul, tensordot, vecdot, matrix_transpose and the linalg extension, against NumPy
(float64 references) and the decompositions' defining identities."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd

FLOATS = st.sampled_from(["float32", "float64", "complex64", "complex128"])
INTS = st.sampled_from(["int8", "int32", "int64", "uint8"])
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}
REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32",
           "complex128": "float64"}


def _matrices(data: st.DataObject, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    a = data.draw(npst.arrays(np.float64, shape, elements=st.floats(-1, 1)))
    if dtype.startswith("complex"):
        a = a + 1j * data.draw(npst.arrays(np.float64, shape, elements=st.floats(-1, 1)))
    return a.astype(dtype)


def _well_conditioned(data: st.DataObject, dtype: str, batch: tuple[int, ...],
                      n: int) -> np.ndarray:
    """Hermitian positive definite: A A^H + n I."""
    a = _matrices(data, dtype, (*batch, n, n)).astype(np.complex128)
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return (spd if dtype.startswith("complex") else spd.real).astype(dtype)


def _close(result: qd.Array, expected: np.ndarray, dtype: str) -> None:
    expected = np.asarray(expected)
    assert result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), expected, rtol=TOL[dtype], atol=TOL[dtype])


def _mT(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


BATCH = st.lists(st.integers(1, 3), max_size=2).map(tuple)
SIDE = st.integers(1, 4)


# -- main-namespace linear algebra ----------------------------------------------------------


@given(st.data())
def test_matmul_matches_numpy_exactly_on_integers(data: st.DataObject) -> None:
    d1, d2 = data.draw(INTS), data.draw(INTS)
    m, k, n = data.draw(SIDE), data.draw(SIDE), data.draw(SIDE)
    b = data.draw(BATCH)
    a1 = data.draw(npst.arrays(d1, (*b, m, k), elements=st.integers(0, 5)))
    a2 = data.draw(npst.arrays(d2, (k, n), elements=st.integers(0, 5)))
    r = qd.matmul(qd.asarray(a1), qd.asarray(a2))
    expected = np.matmul(a1, a2)
    np.testing.assert_array_equal(np.asarray(r), expected)
    assert r.dtype == qd.asarray(expected).dtype
    v = data.draw(npst.arrays(d2, (k,), elements=st.integers(0, 5)))
    np.testing.assert_array_equal(np.asarray(qd.matmul(qd.asarray(a1), qd.asarray(v))),
                                  np.matmul(a1, v))
    np.testing.assert_array_equal(np.asarray(qd.linalg.matmul(qd.asarray(v), qd.asarray(a2))),
                                  np.matmul(v, a2))


@given(st.data())
def test_tensordot_vecdot_transpose_match_numpy(data: st.DataObject) -> None:
    dtype = data.draw(FLOATS)
    shape1 = data.draw(npst.array_shapes(min_dims=1, max_dims=3, max_side=3))
    k = data.draw(st.integers(0, len(shape1)))
    shape2 = shape1[len(shape1) - k:] + data.draw(
        npst.array_shapes(min_dims=0, max_dims=2, max_side=3))
    a1, a2 = _matrices(data, dtype, shape1), _matrices(data, dtype, shape2)
    _close(qd.tensordot(qd.asarray(a1), qd.asarray(a2), axes=k),
           np.tensordot(a1, a2, axes=k), dtype)
    if shape1:
        pairs = ([-1], [0]) if shape2 and shape2[0] == shape1[-1] else ([], [])
        _close(qd.linalg.tensordot(qd.asarray(a1), qd.asarray(a2), axes=pairs),
               np.tensordot(a1, a2, axes=pairs), dtype)
    v = _matrices(data, dtype, shape1[-1:])
    r = qd.vecdot(qd.asarray(a1), qd.asarray(v))
    _close(r, np.sum(np.conj(a1) * v, axis=-1), dtype)
    assert r.dtype == qd.asarray(a1).dtype
    if len(shape1) >= 2:
        x = qd.asarray(a1)
        t = qd.matrix_transpose(x)
        _close(t, np.swapaxes(a1, -1, -2), dtype)
        assert t._buffer is x._buffer
        _close(qd.vecdot(x, x, axis=-2), np.sum(np.conj(a1) * a1, axis=-2), dtype)


def test_main_namespace_errors() -> None:
    x = qd.zeros((2, 3))
    cases = [
        (lambda: qd.matmul(x, x), ValueError, r"shapes \(2, 3\) and \(2, 3\).*\(3 vs 2\)"),
        (lambda: qd.matmul(x, qd.asarray(1.0)), ValueError, "at least 1 dimension"),
        (lambda: qd.matmul(x, qd.asarray([True, False, True])), TypeError,
         "Only numeric dtypes are allowed in matmul; got qdarray.bool"),
        (lambda: qd.matmul(x, np.zeros((3, 2))), TypeError, "Use qd.asarray"),
        (lambda: qd.matrix_transpose(qd.zeros(3)), ValueError, r"got shape \(3,\)"),
        (lambda: qd.tensordot(x, x, axes=1), ValueError, "axis 1 of x1 \\(size 3"),
        (lambda: qd.tensordot(x, x, axes=3), ValueError, "axes=3 exceeds"),
        (lambda: qd.tensordot(x, x, axes=([0], [0, 1])), ValueError, "as many axes"),
        (lambda: qd.tensordot(x, x, axes=-1), ValueError, "non-negative"),
        (lambda: qd.vecdot(x, qd.zeros(2)), ValueError, "equal sizes along axis -1"),
    ]
    for func, exc, match in cases:
        with pytest.raises(exc, match=match):
            func()


# -- decompositions --------------------------------------------------------------------------


@given(st.data())
def test_factorizations_reconstruct_their_input(data: st.DataObject) -> None:
    dtype = data.draw(FLOATS)
    b, n = data.draw(BATCH), data.draw(SIDE)
    m = data.draw(SIDE)
    a = _matrices(data, dtype, (*b, m, n))
    x = qd.asarray(a)
    q, r = qd.linalg.qr(x)
    assert q.dtype == x.dtype and q.shape == (*b, m, min(m, n))
    _close(qd.matmul(q, r), a, dtype)
    np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0)
    qc, rc = qd.linalg.qr(x, mode="complete")
    assert qc.shape == (*b, m, m)
    _close(qd.matmul(qc, rc), a, dtype)
    u, s, vh = qd.linalg.svd(x, full_matrices=False)
    assert s.dtype == qd.asarray(np.zeros(1, REAL_OF[dtype])).dtype
    us = np.asarray(u) * np.asarray(s)[..., None, :]
    np.testing.assert_allclose(us @ np.asarray(vh), a, rtol=TOL[dtype], atol=TOL[dtype])
    _close(qd.linalg.svdvals(x), np.linalg.svd(a.astype(np.complex128), compute_uv=False),
           dtype)
    assert qd.linalg.svd(x).U.shape == (*b, m, m)


@given(st.data())
def test_hermitian_routines(data: st.DataObject) -> None:
    dtype = data.draw(FLOATS)
    b, n = data.draw(BATCH), data.draw(SIDE)
    a = _well_conditioned(data, dtype, b, n)
    x = qd.asarray(a)
    w, v = qd.linalg.eigh(x)
    assert w.dtype == qd.asarray(np.zeros(1, REAL_OF[dtype])).dtype
    wn, vn = np.asarray(w), np.asarray(v)
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10 * n)
    assert np.all(np.diff(wn, axis=-1) >= -TOL[dtype])
    _close(qd.linalg.eigvalsh(x), np.linalg.eigvalsh(a.astype(np.complex128)), dtype)
    lower = qd.linalg.cholesky(x)
    ln = np.asarray(lower)
    np.testing.assert_allclose(ln @ _mT(ln), a, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10 * n)
    upper = np.asarray(qd.linalg.cholesky(x, upper=True))
    np.testing.assert_allclose(upper, _mT(ln), rtol=TOL[dtype], atol=TOL[dtype])


@given(st.data())
def test_inverse_solve_det_and_powers(data: st.DataObject) -> None:
    dtype = data.draw(FLOATS)
    b, n = data.draw(BATCH), data.draw(SIDE)
    a = _well_conditioned(data, dtype, b, n)
    ref = a.astype(np.complex128)
    x = qd.asarray(a)
    inv = qd.linalg.inv(x)
    assert inv.dtype == x.dtype
    _close(inv, np.linalg.inv(ref), dtype)
    rhs = _matrices(data, dtype, (n,))
    _close(qd.linalg.solve(x, qd.asarray(rhs)), np.linalg.solve(ref, rhs.astype(complex)),
           dtype)
    rhs2 = _matrices(data, dtype, (*b, n, 2))
    _close(qd.linalg.solve(x, qd.asarray(rhs2)), np.linalg.solve(ref, rhs2), dtype)
    scale = n ** n
    np.testing.assert_allclose(np.asarray(qd.linalg.det(x)), np.linalg.det(ref),
                               rtol=TOL[dtype] * 10, atol=TOL[dtype] * scale)
    sign, logdet = qd.linalg.slogdet(x)
    ref_sign, ref_log = np.linalg.slogdet(ref)
    np.testing.assert_allclose(np.asarray(sign), ref_sign, rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10)
    _close(logdet, ref_log, dtype)
    p = data.draw(st.integers(-2, 3))
    np.testing.assert_allclose(np.asarray(qd.linalg.matrix_power(x, p)),
                               np.linalg.matrix_power(ref, p), rtol=TOL[dtype] * 100,
                               atol=TOL[dtype] * scale * 10)
    _close(qd.linalg.pinv(x), np.linalg.inv(ref), dtype)


def test_eig_returns_complex_of_the_same_precision() -> None:
    rot = np.array([[0.0, -1.0], [1.0, 0.0]], dtype=np.float32)
    w, v = qd.linalg.eig(qd.asarray(rot))
    assert w.dtype == qd.complex64 and v.dtype == qd.complex64
    np.testing.assert_allclose(np.sort_complex(np.asarray(w)), [-1j, 1j], atol=1e-6)
    np.testing.assert_allclose(rot @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-6)
    vals = qd.linalg.eigvals(qd.asarray(np.diag([2.0, 3.0])))
    assert vals.dtype == qd.complex128
    np.testing.assert_allclose(np.sort(np.asarray(vals).real), [2.0, 3.0])


def test_eig_takes_the_plain_tuple_of_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy's linalg.eig returns a plain (w, v) tuple, not NumPy's named tuple: eig on a GPU
    raised AttributeError: 'tuple' object has no attribute 'eigenvalues'. A library's real
    eigenvalues for real input become the standard's complex ones too."""
    from types import SimpleNamespace

    import qdarray.linalg as qla

    def plain_eig(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w, v = np.linalg.eig(a)
        return w, v

    fake = SimpleNamespace(eig=plain_eig, eigvals=np.linalg.eigvals)
    monkeypatch.setattr(qla, "_linalg", lambda device: fake)
    w, v = qd.linalg.eig(qd.asarray(np.diag([2.0, 3.0]).astype(np.float32)))
    assert w.dtype == qd.complex64 and v.dtype == qd.complex64
    np.testing.assert_allclose(np.asarray(w), [2.0, 3.0])
    assert qd.linalg.eigvals(qd.asarray(np.diag([2.0, 3.0]))).dtype == qd.complex128


def test_tensordot_of_0d_inputs_with_empty_axis_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """tensordot(a, b, axes=((), ())) of a 0-d input is a product (NumPy's result). CuPy
    takes it only when the axes compare equal to ((), ()): the namespace passed ([], [])
    and a GPU raised "An input is zero-dim while axes has dimensions"; the stand-in below
    checks as CuPy does."""
    xp = qd.Device("cpu").backend.xp
    numpy_tensordot = np.tensordot

    def like_cupy(a: np.ndarray, b: np.ndarray, axes: object = 2) -> np.ndarray:
        if (a.ndim == 0 or b.ndim == 0) and axes != 0 and axes != ((), ()):
            raise ValueError("An input is zero-dim while axes has dimensions")
        return numpy_tensordot(a, b, axes=axes)  # type: ignore[arg-type]

    monkeypatch.setattr(xp, "tensordot", like_cupy)
    two, v = qd.asarray(2.0), qd.asarray([3.0, 4.0])
    assert float(qd.tensordot(two, qd.asarray(3.0), axes=((), ()))) == 6.0
    assert np.asarray(qd.tensordot(two, v, axes=((), ()))).tolist() == [6.0, 8.0]
    assert np.asarray(qd.tensordot(v, two, axes=([], []))).tolist() == [6.0, 8.0]
    assert np.asarray(qd.tensordot(v, v, axes=((0,), (0,)))).tolist() == 25.0


def test_rank_norms_and_products() -> None:
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]])
    x = qd.asarray(a)
    assert int(qd.linalg.matrix_rank(x)) == 2
    assert int(qd.linalg.matrix_rank(qd.asarray(a[:2]))) == 1
    assert int(qd.linalg.matrix_rank(x, rtol=0.5)) == 1
    assert int(qd.linalg.matrix_rank(x, rtol=qd.asarray(0.5))) == 1
    assert qd.linalg.matrix_rank(x).dtype == qd.int64
    for order in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
        np.testing.assert_allclose(np.asarray(qd.linalg.matrix_norm(x, ord=order)),
                                   np.linalg.norm(a, ord=order), rtol=1e-12)
    assert qd.linalg.matrix_norm(x, keepdims=True).shape == (1, 1)
    for order in (1, 2, 3.5, float("inf"), float("-inf"), 0):
        np.testing.assert_allclose(np.asarray(qd.linalg.vector_norm(x, ord=order)),
                                   np.linalg.norm(a.ravel(), ord=order), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(qd.linalg.vector_norm(x, axis=(0, 1))),
                               np.linalg.norm(a), rtol=1e-12)
    assert qd.linalg.vector_norm(x, axis=0, keepdims=True).shape == (1, 2)
    c = qd.asarray([1j, 1.0], dtype=qd.complex64)
    assert qd.linalg.vector_norm(c).dtype == qd.float32
    u, v = np.array([1, 2, 3]), np.array([4, 5, 6])
    np.testing.assert_array_equal(np.asarray(qd.linalg.cross(qd.asarray(u), qd.asarray(v))),
                                  np.cross(u, v))
    np.testing.assert_array_equal(np.asarray(qd.linalg.outer(qd.asarray(u), qd.asarray(v))),
                                  np.outer(u, v))
    m = np.arange(12).reshape(3, 4)
    for offset in (-1, 0, 2):
        d = qd.linalg.diagonal(qd.asarray(m), offset=offset)
        np.testing.assert_array_equal(np.asarray(d), np.diagonal(m, offset=offset))
        t = qd.linalg.trace(qd.asarray(m), offset=offset)
        assert int(t) == np.trace(m, offset=offset)
    assert qd.linalg.trace(qd.asarray(m, dtype=qd.int32)).dtype == qd.int64
    assert qd.linalg.trace(qd.asarray(m, dtype=qd.float32)).dtype == qd.float32
    assert qd.linalg.trace(qd.asarray(m), dtype=qd.float64).dtype == qd.float64


def test_diagonal_is_a_read_only_view() -> None:
    x = qd.zeros((3, 3))
    d = qd.linalg.diagonal(x)
    assert d._buffer is x._buffer
    with pytest.raises(ValueError, match="read-only"):
        d[0] = 1.0


def test_linalg_errors() -> None:
    sq = qd.zeros((2, 2))
    rect = qd.zeros((2, 3))
    cases = [
        (lambda: qd.linalg.inv(sq), qd.linalg.LinAlgError,
         "linalg.inv failed: Singular matrix. Try qd.linalg.pinv"),
        (lambda: qd.linalg.solve(sq, qd.zeros(2)), np.linalg.LinAlgError, "Try qd.linalg.pinv"),
        (lambda: qd.linalg.cholesky(qd.asarray([[1.0, 2.0], [2.0, 1.0]])), ValueError,
         "positive definite"),
        (lambda: qd.linalg.inv(rect), ValueError, r"square matrices .* shape \(2, 3\)"),
        (lambda: qd.linalg.det(qd.zeros(3)), ValueError, "at least 2 dimensions"),
        (lambda: qd.linalg.inv(qd.asarray([[1, 0], [0, 1]])), TypeError,
         "Only floating-point dtypes are allowed in linalg.inv; got qdarray.int64"),
        (lambda: qd.linalg.solve(sq, qd.zeros(3)), ValueError, "x2 needs 2 rows"),
        (lambda: qd.linalg.qr(rect, mode="r"), ValueError, "'reduced' or 'complete'"),
        (lambda: qd.linalg.matrix_norm(rect, ord=3), ValueError, "got 3"),
        (lambda: qd.linalg.vector_norm(rect, ord="fro"), TypeError, "real number"),
        (lambda: qd.linalg.cross(qd.zeros(2), qd.zeros(2)), ValueError, "3-element vectors"),
        (lambda: qd.linalg.outer(rect, qd.zeros(2)), ValueError, "two 1-D arrays"),
        (lambda: qd.linalg.matrix_power(qd.asarray([[1, 1], [0, 1]]), -1), TypeError,
         "n=-1 needs a floating-point dtype"),
        (lambda: qd.linalg.matrix_power(sq, 1.5), TypeError, "integer n"),
        (lambda: qd.linalg.pinv(rect, rtol="x"), TypeError, "rtol must be"),
    ]
    for func, exc, match in cases:
        with pytest.raises(exc, match=match):
            func()
    assert issubclass(qd.linalg.LinAlgError, qd.QdarrayError)
    assert qd.linalg.LinAlgError is qd.LinAlgError


def test_integer_matrix_power_stays_integer() -> None:
    m = np.array([[1, 1], [1, 0]])
    r = qd.linalg.matrix_power(qd.asarray(m), 10)
    assert r.dtype == qd.int64
    np.testing.assert_array_equal(np.asarray(r), np.linalg.matrix_power(m, 10))
