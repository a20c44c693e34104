"""qdarray.dask in this process (Dask's synchronous scheduler): map_kernel with and without
halos, its gradients, the transpose of overlap, device chunks and the errors. Every result is
compared with the same kernel launched once on the whole array (or with NumPy, or with finite
differences). tests/dask/test_cluster.py runs the same on a dask.distributed cluster."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np
import pytest

import qdarray as qd

da = pytest.importorskip("dask.array", reason="Dask is the scale-out extra (qdarray[dask])")
dask = pytest.importorskip("dask", reason="Dask is the scale-out extra (qdarray[dask])")
qdd = pytest.importorskip("qdarray.dask", reason="Dask is the scale-out extra (qdarray[dask])")

from dask_kernels import (  # noqa: E402
    affine,
    dynamic_loop,
    dynamic_loop_reference,
    scaled,
    stencil,
    stencil_reference,
)

from qdarray.dask._halo import transpose_overlap  # noqa: E402

OPENCL = next((str(d) for d in qd.__array_namespace_info__().devices() if d.kind == "opencl"),
              None)
RNG = np.random.default_rng(3)
X1 = RNG.uniform(-0.5, 1.5, 300)
A1 = RNG.integers(0, 64, 300).astype(np.int32)
X2 = RNG.uniform(-1, 1, (13, 11))
W = np.array([0.3, -0.7, 0.2, 0.5, -0.1])
NUMPY_PAD = {"periodic": "wrap", "reflect": "symmetric", "nearest": "edge"}


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def host(x: Any) -> np.ndarray:
    if type(x) is qd.Array:
        x = x.to_device("cpu")
    return np.asarray(x)


def chunked(a: np.ndarray, chunks: Any, device: str = "cpu") -> Any:
    return da.from_array(qd.asarray(a, device=device), chunks=chunks)


# -- forward -------------------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [300, 64, 100])
def test_accumulator_sums_over_blocks(chunks: int) -> None:
    whole = qd.zeros(1, dtype=qd.float64)
    dynamic_loop(qd.asarray(X1), qd.asarray(A1), whole)
    initial = qd.asarray([2.5])
    y = qdd.map_kernel(dynamic_loop, chunked(X1, chunks), chunked(A1, chunks), initial,
                       out="y")
    assert type(y._meta) is qd.Array and y.shape == (1,) and y.chunks == ((1,),)
    result = y.compute()
    assert type(result) is qd.Array
    np.testing.assert_allclose(host(result), host(whole) + 2.5, rtol=1e-12)
    assert host(initial).tolist() == [2.5]  # the argument itself is never written
    assert host(result)[0] == pytest.approx(dynamic_loop_reference(X1, A1) + 2.5, rel=1e-12)


def test_numpy_chunks_and_keyword_arguments() -> None:
    y = qdd.map_kernel(dynamic_loop, a=da.from_array(A1, chunks=70),
                       x=da.from_array(X1, chunks=70), y=np.zeros(1), out="y")
    assert host(y.compute())[0] == pytest.approx(dynamic_loop_reference(X1, A1), rel=1e-12)


def test_several_outputs_and_a_max_accumulator() -> None:
    x = chunked(X1, 70)
    z0 = da.from_array(qd.asarray(np.ones(300)), chunks=70)
    y, z, top = qdd.map_kernel(affine, x, x, z0, qd.asarray([-1.0]), 3.0,
                               out=("y", "z", "top"), combine="max")
    yv, zv, tv = dask.compute(y, z, top)
    assert all(type(v) is qd.Array for v in (yv, zv, tv))
    np.testing.assert_array_equal(host(yv), X1 * 3.0)
    np.testing.assert_array_equal(host(zv), 1.0 + X1 * X1)
    assert host(tv).tolist() == [X1.max()]
    low = qdd.map_kernel(affine, x, x, z0, qd.asarray([5.0]), 1.0, out=("y", "z", "top"),
                         combine="min")[2]
    assert host(low.compute()).tolist() == [5.0]  # atomic_max never lowers it below 5


def test_blocked_arguments_of_one_shape_are_rechunked_together() -> None:
    y = qdd.map_kernel(dynamic_loop, chunked(X1, 100), chunked(A1, 60), qd.zeros(1), out="y")
    assert host(y.compute())[0] == pytest.approx(dynamic_loop_reference(X1, A1), rel=1e-12)


def test_stencil_with_halos_equals_one_launch() -> None:
    y0 = RNG.uniform(size=X2.shape)
    whole = qd.asarray(y0)
    stencil(qd.asarray(X2), qd.asarray(W), whole)
    y = qdd.map_kernel(stencil, chunked(X2, (4, 5)), qd.asarray(W), chunked(y0, (4, 5)),
                       out="y", depth=1)
    assert y.chunks == ((4, 4, 4, 1), (5, 5, 1))
    result = y.compute()
    assert type(result) is qd.Array
    np.testing.assert_allclose(host(result), host(whole), rtol=1e-13)
    np.testing.assert_allclose(host(result), stencil_reference(X2, W, y0), rtol=1e-13)


@pytest.mark.parametrize("boundary", ["periodic", "reflect", "nearest", 0.25])
def test_stencil_at_the_edges_follows_the_boundary(boundary: Any) -> None:
    if isinstance(boundary, str):
        padded = np.pad(X2, 1, mode=NUMPY_PAD[boundary])
    else:
        padded = np.pad(X2, 1, constant_values=boundary)
    expected = stencil_reference(padded, W, np.zeros(padded.shape))[1:-1, 1:-1]
    y = qdd.map_kernel(stencil, chunked(X2, (5, 4)), qd.asarray(W),
                       chunked(np.zeros(X2.shape), (5, 4)), out="y", depth=1,
                       boundary=boundary)
    np.testing.assert_allclose(host(y.compute()), expected, rtol=1e-13)


# -- gradients -----------------------------------------------------------------------------


def test_gradient_of_an_accumulating_kernel_equals_the_tape() -> None:
    x = qd.asarray(X1, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    with qd.ad.Tape(loss=y):
        dynamic_loop(x, qd.asarray(A1), y)
    gx, gy = qdd.map_kernel_grad(dynamic_loop, chunked(X1, 64), chunked(A1, 64), qd.zeros(1),
                                 out="y", grad=qd.asarray([1.0]), wrt=("x", "y"))
    assert gx.chunks == ((64, 64, 64, 64, 44),) and type(gx._meta) is qd.Array
    np.testing.assert_allclose(host(gx.compute()), host(x.grad), rtol=1e-12)
    assert host(gy.compute()).tolist() == [1.0]  # y's initial value adds as it is


def test_gradient_with_halos_and_a_shared_input_equals_one_launch() -> None:
    cot = RNG.standard_normal(X2.shape)
    y0 = RNG.standard_normal(X2.shape)
    x = qd.asarray(X2, requires_grad=True)
    w = qd.asarray(W, requires_grad=True)
    y = qd.asarray(y0, requires_grad=True)
    stencil(x, w, y)
    y.grad[...] = qd.asarray(cot)
    stencil.grad(x, w, y)
    gx, gw, gy = qdd.map_kernel_grad(stencil, chunked(X2, (4, 3)), qd.asarray(W),
                                     chunked(y0, (4, 3)), out="y", grad=chunked(cot, (5, 5)),
                                     wrt=("x", "w", "y"), depth=1)
    assert gx.chunks == ((4, 4, 4, 1), (3, 3, 3, 2)) and gw.shape == (5,)
    np.testing.assert_allclose(host(gx.compute()), host(x.grad), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(gw.compute()), host(w.grad), rtol=1e-12)
    np.testing.assert_allclose(host(gy.compute()), host(y.grad), rtol=1e-12)


@pytest.mark.parametrize("boundary", ["periodic", "reflect", "nearest", 0.25])
def test_gradient_through_every_boundary_matches_finite_differences(boundary: Any) -> None:
    # <cot, J (dx, dw)> from central differences of the forward == <grad, (dx, dw)>
    cot = RNG.standard_normal(X2.shape)
    dx, dw = RNG.standard_normal(X2.shape), RNG.standard_normal(5)
    zeros = chunked(np.zeros(X2.shape), (4, 4))

    def loss(x: np.ndarray, w: np.ndarray) -> float:
        y = qdd.map_kernel(stencil, chunked(x, (4, 4)), qd.asarray(w), zeros, out="y",
                           depth=1, boundary=boundary)
        return float((cot * host(y.compute())).sum())

    eps = 1e-6
    numeric = (loss(X2 + eps * dx, W + eps * dw) - loss(X2 - eps * dx, W - eps * dw)) / (2 * eps)
    gx, gw = qdd.map_kernel_grad(stencil, chunked(X2, (4, 4)), qd.asarray(W), zeros, out="y",
                                 grad=qd.asarray(cot), wrt=("x", "w"), depth=1,
                                 boundary=boundary)
    gxv, gwv = dask.compute(gx, gw)
    analytic = float((host(gxv) * dx).sum() + (host(gwv) * dw).sum())
    assert analytic == pytest.approx(numeric, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("boundary", ["none", "periodic", 0.25])
def test_blocks_narrower_than_the_halo(boundary: Any) -> None:
    # Dask's overlap merges blocks narrower than the halo into a neighbour; the results keep
    # the blocks given, and the gradient equals the one on blocks wide enough (it raised a
    # shape mismatch: the cotangents were split into the blocks given, not the merged ones)
    narrow, wide = ((1, 5, 0, 7), (4, 1, 6)), (7, 6)
    cot = RNG.standard_normal(X2.shape)

    def both(chunks: Any) -> tuple[Any, ...]:
        zeros = chunked(np.zeros(X2.shape), chunks)
        args = (chunked(X2, chunks), qd.asarray(W), zeros)
        y = qdd.map_kernel(stencil, *args, out="y", depth=2, boundary=boundary)
        gx, gw = qdd.map_kernel_grad(stencil, *args, out="y", grad=qd.asarray(cot),
                                     wrt=("x", "w"), depth=2, boundary=boundary)
        assert y.chunks == gx.chunks == zeros.chunks
        return tuple(host(r) for r in dask.compute(y, gx, gw))

    for got, want in zip(both(narrow), both(wide), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_cotangents_of_another_dtype_are_refused() -> None:
    x, zeros = chunked(X2, 5), chunked(np.zeros(X2.shape), 5)
    for cot in (qd.ones(X2.shape, dtype=qd.int32), qd.ones(X2.shape, dtype=qd.complex128)):
        with pytest.raises(TypeError, match="cotangent of 'y' has dtype .*(int32|complex128)"):
            qdd.map_kernel_grad(stencil, x, qd.asarray(W), zeros, out="y", grad=cot, wrt="x")
    x32 = da.from_array(qd.asarray(X1, dtype=qd.float32), chunks=100)
    y32 = da.from_array(qd.zeros(300, dtype=qd.float32), chunks=100)
    with pytest.raises(TypeError, match="cotangent of 'y' has dtype qdarray.float64; the "
                                        "output has dtype qdarray.float32"):  # a downcast
        qdd.map_kernel_grad(scaled, x32, y32, out="y", grad=qd.ones(300), wrt="x")
    g = qdd.map_kernel_grad(scaled, x32, y32, out="y", grad=qd.ones(300, dtype=qd.float32),
                            wrt="x")
    assert host(g.compute()).tolist() == [2.0] * 300
    with pytest.raises(ValueError, match="depth=True"):
        qdd.map_kernel(stencil, x, qd.asarray(W), zeros, out="y", depth=True)


@pytest.mark.parametrize("boundary", ["none", "periodic", "reflect", "nearest", 0.0])
def test_halo_transpose_is_the_adjoint_of_overlap(boundary: Any) -> None:
    x = RNG.standard_normal((9, 10))
    depth = {0: 2, 1: 1}
    dx = da.from_array(x, chunks=((3, 4, 2), (4, 4, 2)))
    extended = da.overlap.overlap(dx, depth=depth, boundary=boundary)
    g = RNG.standard_normal(extended.shape)
    dg = da.from_array(g, chunks=extended.chunks)
    bounds = dict.fromkeys(range(2), boundary)
    back = transpose_overlap(dg, depth, bounds)
    assert back.chunks == dx.chunks
    # <overlap(x), g> == <x, overlap^T(g)> (overlap is linear for these boundaries)
    assert float((extended.compute() * g).sum()) == pytest.approx(
        float((x * back.compute()).sum()), rel=1e-12)


# -- chunks on a device ---------------------------------------------------------------------


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (pip install 'qdarray[pocl]')")
def test_chunks_stay_on_their_device() -> None:
    x = qdd.to_device(da.from_array(X1, chunks=100), OPENCL)
    a = qdd.to_device(da.from_array(A1, chunks=100), OPENCL)
    assert type(x._meta) is qd.Array and str(x._meta.device) == OPENCL
    checks = {
        "sum": (x.sum(), X1.sum()),
        "std": (x.std(), X1.std()),
        "pipeline": ((da.sin(x) * 2 + x ** 2).max(), (np.sin(X1) * 2 + X1 ** 2).max()),
        "rechunk": (x.rechunk(75)[10:20], X1[10:20]),
        "map_blocks": (x.map_blocks(qd.exp), np.exp(X1)),
        "kernel": (qdd.map_kernel(dynamic_loop, x, a, qd.zeros(1, device=OPENCL), out="y"),
                   [dynamic_loop_reference(X1, A1)]),
    }
    results = dask.compute(*(lazy for lazy, _ in checks.values()))
    for (name, (_, expected)), got in zip(checks.items(), results, strict=True):
        assert type(got) is qd.Array and str(got.device) == OPENCL, name
        np.testing.assert_allclose(host(got), expected, rtol=1e-10, err_msg=name)


def test_to_device_and_sizes() -> None:
    x = qdd.to_device(da.from_array(X2, chunks=(5, 5)), "cpu")
    assert type(x._meta) is qd.Array and x.dtype == np.float64
    block = x.blocks[0, 0].compute()
    assert type(block) is qd.Array and block.shape == (5, 5)
    assert dask.sizeof.sizeof(block) == 5 * 5 * 8


# -- errors ---------------------------------------------------------------------------------


def test_errors_name_the_argument_and_the_fix() -> None:
    x, a = chunked(X1, 100), chunked(A1, 100)
    zero = qd.zeros(1)
    with pytest.raises(TypeError, match="takes a @qd.kernel"):
        qdd.map_kernel(dynamic_loop_reference, x, a, zero, out="y")
    with pytest.raises(ValueError, match="no argument is a Dask array.*from_array"):
        qdd.map_kernel(dynamic_loop, qd.asarray(X1), qd.asarray(A1), zero, out="y")
    with pytest.raises(ValueError, match=r"'x' \(shape \(300,\), blocks \(3,\)\) and 'a' "
                                         r"\(shape \(200,\), blocks \(2,\)\).*rechunk"):
        qdd.map_kernel(dynamic_loop, x, chunked(A1[:200], 100), zero, out="y")
    with pytest.raises(ValueError, match="out='z' is not a parameter of dynamic_loop"):
        qdd.map_kernel(dynamic_loop, x, a, zero, out="z")
    with pytest.raises(TypeError, match="out='scale'.*got a float"):
        qdd.map_kernel(affine, x, x, x, zero, 2.0, out="scale")
    with pytest.raises(ValueError, match="accumulator.*depth="):
        qdd.map_kernel(dynamic_loop, x, a, zero, out="y", depth=1)
    with pytest.raises(ValueError, match="combine='mean'"):
        qdd.map_kernel(dynamic_loop, x, a, zero, out="y", combine="mean")
    with pytest.raises(ValueError, match="depth=-1"):
        qdd.map_kernel(stencil, chunked(X2, 5), qd.asarray(W), chunked(X2, 5), out="y",
                       depth=-1)
    with pytest.raises(ValueError, match="boundary='wrap'"):
        qdd.map_kernel(stencil, chunked(X2, 5), qd.asarray(W), chunked(X2, 5), out="y",
                       depth=1, boundary="wrap")
    with pytest.raises(TypeError, match="dynamic_loop\\(\\): got an unexpected keyword"):
        qdd.map_kernel(dynamic_loop, x, a, zero, out="y", bogus=1)
    with pytest.raises(TypeError, match="wrt='a'.*floating-point"):
        qdd.map_kernel_grad(dynamic_loop, x, a, zero, out="y", grad=zero, wrt="a")
    with pytest.raises(ValueError, match="cotangent of 'y' has shape \\(2,\\)"):
        qdd.map_kernel_grad(dynamic_loop, x, a, zero, out="y", grad=qd.zeros(2), wrt="x")
    with pytest.raises(TypeError, match="accumulator 'y' is a Dask array"):
        qdd.map_kernel_grad(dynamic_loop, x, a, zero, out="y", grad=da.zeros(1), wrt="x")


def test_a_kernel_writing_an_input_not_named_in_out_raises() -> None:
    x, z = chunked(X1, 100), chunked(np.zeros(300), 100)
    y = qdd.map_kernel(affine, x, x, z, qd.zeros(1), 1.0, out=("y", "top"))  # writes z
    with pytest.raises(ValueError, match="affine\\(\\) wrote 'z', which out= does not name"):
        y[0].compute()


def test_import_without_dask_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "qdarray.dask" or m.startswith("qdarray.dask.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"pip install 'qdarray\[dask\]'"):
        importlib.import_module("qdarray.dask")


def test_blocked_arguments_of_other_shapes_with_as_many_blocks_are_refused() -> None:
    """100 elements in blocks of 50 beside 90 in blocks of 45: the grids had as many blocks,
    so each launch got blocks of different lengths and its kernel read past the shorter
    ones' ends (garbage, no error). Block k of every argument must cover the same indices;
    an axis that is not split (one block) may differ."""
    zero = qd.zeros(1)
    with pytest.raises(ValueError, match=r"'x' \(shape \(100,\), chunks \(\(50, 50\),\)\) "
                                         r"and 'a' \(shape \(90,\), chunks \(\(45, 45\),\)\)"
                                         r".*axis 0.*rechunk"):
        qdd.map_kernel(dynamic_loop, chunked(X1[:100], 50), chunked(A1[:90], 45), zero,
                       out="y")
    with pytest.raises(ValueError, match=r"'x' \(shape \(100,\), chunks \(\(50, 50\),\)\) "
                                         r"and 'a' \(shape \(90,\)"):
        qdd.map_kernel_grad(dynamic_loop, chunked(X1[:100], 50), chunked(A1[:90], 45), zero,
                            out="y", grad=qd.ones(1), wrt="x")
