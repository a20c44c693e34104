"""Views of arrays with gradients carry the gradient (issue 18): a kernel run on a view made
by a namespace function (`w.T`, `qd.reshape`, `qd.flip`, ...) accumulates into `w.grad`,
as a kernel run on a slice does, instead of contributing a silent zero (CPU and OpenCL;
the CUDA views are in tests/cuda/device/test_cuda_robustness.py when CuPy is present).

Oracle: for y = sum(v * c) over a view v = f(w), dy/dw is c scattered back through the same
view, computed with NumPy on a zero array: f(G) += c."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


@qd.kernel
def dot1(v: qd.Array[qd.float64, 1], c: qd.Array[qd.float64, 1], out: qd.Array[qd.float64, 1]):
    for i in range(v.shape[0]):
        out[0] += v[i] * c[i]


@qd.kernel
def dot2(v: qd.Array[qd.float64, 2], c: qd.Array[qd.float64, 2], out: qd.Array[qd.float64, 1]):
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            out[0] += v[i, j] * c[i, j]


@qd.kernel
def dot3(v: qd.Array[qd.float64, 3], c: qd.Array[qd.float64, 3], out: qd.Array[qd.float64, 1]):
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            for k in range(v.shape[2]):
                out[0] += v[i, j, k] * c[i, j, k]


DOTS = {1: dot1, 2: dot2, 3: dot3}

# (name, the view on a qdarray array, the same view on a NumPy array)
VIEWS = [
    ("T", lambda w: w.T, lambda a: a.T),
    ("mT", lambda w: w.mT, lambda a: np.swapaxes(a, -1, -2)),
    ("reshape", lambda w: qd.reshape(w, (6, 2)), lambda a: a.reshape(6, 2)),
    ("flip", lambda w: qd.flip(w, axis=1), lambda a: np.flip(a, axis=1)),
    ("permute_dims", lambda w: qd.permute_dims(w, (1, 0)), lambda a: a.transpose(1, 0)),
    ("moveaxis", lambda w: qd.moveaxis(w, 0, 1), lambda a: np.moveaxis(a, 0, 1)),
    ("expand_dims", lambda w: qd.expand_dims(w, axis=0), lambda a: a[None]),
    ("squeeze", lambda w: qd.squeeze(qd.expand_dims(w, axis=1), axis=1), lambda a: a),
    ("unstack", lambda w: qd.unstack(w, axis=1)[2], lambda a: a[:, 2]),
    ("matrix_transpose", lambda w: qd.matrix_transpose(w), lambda a: a.T),
    ("asarray", lambda w: qd.asarray(w), lambda a: a),
    ("from_dlpack", lambda w: qd.from_dlpack(w), lambda a: a),
    ("slice", lambda w: w[1:, ::2], lambda a: a[1:, ::2]),
    ("view of a view", lambda w: qd.flip(w.T, axis=0)[1:], lambda a: np.flip(a.T, axis=0)[1:]),
    ("numpy transpose", lambda w: np.transpose(w), lambda a: a.T),
    ("buffer view", lambda w: qd.asarray(qd.BufferView(qd.reshape(w, (12,)), offset=3, size=5)),
     lambda a: a.reshape(12)[3:8]),
]


def _expected(view_np, c: np.ndarray) -> np.ndarray:
    g = np.zeros((4, 3))
    view_np(g)[...] += c
    return g


def _opencl() -> str:
    if "opencl:0" not in [str(d) for d in qd.__array_namespace_info__().devices()]:
        pytest.skip("no OpenCL device (install pocl-opencl-icd for one on the CPU)")
    return "opencl:0"


def _host(x) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def _check(name, view, view_np, how, device):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((4, 3))
    w = qd.asarray(base, requires_grad=True, device=device)
    v = view(w)
    assert v.grad is not None, f"{name} dropped the gradient"
    np.testing.assert_array_equal(_host(v), view_np(base))
    c = rng.standard_normal(v.shape)
    cd = qd.asarray(c, device=device)
    out = qd.zeros(1, dtype=qd.float64, requires_grad=True, device=device)
    kern = DOTS[v.ndim]
    if how == "Tape":
        with qd.ad.Tape(loss=out):
            kern(v, cd, out)
    else:
        kern(v, cd, out)
        out.grad[...] = 1.0
        kern.grad(v, cd, out)
    np.testing.assert_allclose(_host(out), [np.sum(view_np(base) * c)], rtol=1e-12)
    np.testing.assert_array_equal(_host(w.grad), _expected(view_np, c))
    np.testing.assert_array_equal(_host(v.grad), c)


@pytest.mark.parametrize("name, view, view_np", VIEWS, ids=[v[0] for v in VIEWS])
@pytest.mark.parametrize("how", ["kernel.grad", "Tape"])
def test_a_kernel_on_a_view_accumulates_into_the_base_gradient(name, view, view_np, how):
    _check(name, view, view_np, how, None)


@pytest.mark.parametrize("name, view, view_np", VIEWS, ids=[v[0] for v in VIEWS])
def test_a_kernel_on_a_view_accumulates_into_the_base_gradient_on_opencl(name, view, view_np):
    _check(name, view, view_np, "kernel.grad", _opencl())


def test_requires_grad_on_a_view_keeps_the_base_gradient():
    w = qd.zeros((2, 3), dtype=qd.float64, requires_grad=True)
    v = qd.asarray(w.T, requires_grad=True)  # already has one: it stays the base's view
    v.grad[0, 1] = 5.0
    assert float(w.grad[1, 0]) == 5.0


def test_a_broadcast_view_of_an_array_with_a_gradient_is_refused_by_the_reverse():
    w = qd.asarray(np.arange(3.0), requires_grad=True)
    b = qd.broadcast_to(w, (2, 3))
    assert b.grad is not None and not np.asarray(b.grad).flags.writeable
    out = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    dot2(b, np.ones((2, 3)), out)
    out.grad[...] = 1.0
    with pytest.raises(Exception, match="read-only"):  # never a silent zero
        dot2.grad(b, np.ones((2, 3)), out)
