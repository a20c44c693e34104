"""qdarray on a real dask.distributed LocalCluster of 2 worker processes (one cluster for the
module): reductions, elementwise pipelines, map_kernel with and without halos and a blockwise
gradient, each equal to the single-array result; a worker killed mid-computation recovers
through Dask without a wrong result."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import qdarray as qd

da = pytest.importorskip("dask.array", reason="Dask is the scale-out extra (qdarray[dask])")
dask = pytest.importorskip("dask", reason="Dask is the scale-out extra (qdarray[dask])")
distributed = pytest.importorskip("distributed",
                                  reason="dask.distributed is the scale-out extra (qdarray[dask])")
qdd = pytest.importorskip("qdarray.dask", reason="Dask is the scale-out extra (qdarray[dask])")

from dask_kernels import dynamic_loop, stencil  # noqa: E402

RNG = np.random.default_rng(11)
X1 = RNG.uniform(-0.5, 1.5, 4000)
A1 = RNG.integers(0, 64, 4000).astype(np.int32)
X2 = RNG.uniform(-1, 1, (40, 30))
W = np.array([0.3, -0.7, 0.2, 0.5, -0.1])


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # Two worker processes of one thread each; the workers import qdarray.dask at start
    # (preload), which registers qdarray's chunk sizes and element counts with Dask.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", preload=["qdarray.dask"],
                                       silence_logs=50)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def host(x: Any) -> np.ndarray:
    return np.asarray(x.to_device("cpu") if type(x) is qd.Array else x)


def chunked(a: np.ndarray, chunks: Any) -> Any:
    return da.from_array(qd.asarray(a), chunks=chunks)


def test_reductions_and_pipelines_equal_the_single_array(client: Any) -> None:
    x2 = qd.asarray(X2)
    d = chunked(X2, (16, 12))
    single = {
        "sum": qd.sum(x2),
        "mean_axis0": qd.mean(x2, axis=0),
        "std": qd.std(x2, correction=1),
        "max_axis1": qd.max(x2, axis=1),
        "argmin": qd.argmin(x2),
        "pipeline": qd.sum(qd.sin(x2) * 2 + x2 ** 2, axis=1) / (1 + qd.abs(qd.mean(x2))),
        "map_blocks_rechunk": qd.exp(x2)[::2].T,
        "matmul": x2 @ x2.T,
    }
    lazy = {
        "sum": d.sum(),
        "mean_axis0": d.mean(axis=0),
        "std": d.std(ddof=1),
        "max_axis1": d.max(axis=1),
        "argmin": d.argmin(),
        "pipeline": (da.sin(d) * 2 + d ** 2).sum(axis=1) / (1 + abs(d.mean())),
        "map_blocks_rechunk": d.map_blocks(qd.exp).rechunk((7, 30))[::2].T,
        "matmul": d @ d.T,
    }
    results = dict(zip(lazy, client.compute(list(lazy.values()), sync=True), strict=True))
    for name, expected in single.items():
        got = results[name]
        assert type(got) is qd.Array or name == "argmin", name
        np.testing.assert_allclose(host(got), host(expected), rtol=1e-12, atol=1e-12,
                                   err_msg=name)


def test_map_kernel_equals_one_launch(client: Any) -> None:
    whole = qd.zeros(1, dtype=qd.float64)
    dynamic_loop(qd.asarray(X1), qd.asarray(A1), whole)
    y = qdd.map_kernel(dynamic_loop, chunked(X1, 500), chunked(A1, 500), qd.zeros(1), out="y")
    got = client.compute(y, sync=True)
    assert type(got) is qd.Array
    np.testing.assert_allclose(host(got), host(whole), rtol=1e-12)


def test_map_kernel_with_halos_equals_one_launch(client: Any) -> None:
    y0 = RNG.standard_normal(X2.shape)
    whole = qd.asarray(y0)
    stencil(qd.asarray(X2), qd.asarray(W), whole)
    y = qdd.map_kernel(stencil, chunked(X2, (9, 8)), qd.asarray(W), chunked(y0, (9, 8)),
                       out="y", depth=1)
    got = client.compute(y, sync=True)
    assert type(got) is qd.Array
    np.testing.assert_allclose(host(got), host(whole), rtol=1e-13)


def test_blockwise_gradient_equals_one_launch(client: Any) -> None:
    cot = RNG.standard_normal(X2.shape)
    x = qd.asarray(X2, requires_grad=True)
    w = qd.asarray(W, requires_grad=True)
    y = qd.zeros(X2.shape, dtype=qd.float64, requires_grad=True)
    stencil(x, w, y)
    y.grad[...] = qd.asarray(cot)
    stencil.grad(x, w, y)
    gx, gw = qdd.map_kernel_grad(stencil, chunked(X2, (9, 8)), qd.asarray(W),
                                 chunked(np.zeros(X2.shape), (9, 8)), out="y",
                                 grad=qd.asarray(cot), wrt=("x", "w"), depth=1)
    gxv, gwv = client.compute([gx, gw], sync=True)
    np.testing.assert_allclose(host(gxv), host(x.grad), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(gwv), host(w.grad), rtol=1e-12)

    xs = qd.asarray(X1, requires_grad=True)
    ys = qd.zeros(1, dtype=qd.float64, requires_grad=True)
    with qd.ad.Tape(loss=ys):
        dynamic_loop(xs, qd.asarray(A1), ys)
    g = qdd.map_kernel_grad(dynamic_loop, chunked(X1, 500), chunked(A1, 500), qd.zeros(1),
                            out="y", grad=qd.asarray([1.0]), wrt="x")
    np.testing.assert_allclose(host(client.compute(g, sync=True)), host(xs.grad), rtol=1e-12)


def _slow(block: Any) -> Any:
    time.sleep(0.4)
    return block


def test_killed_worker_recovers_without_a_wrong_result(client: Any) -> None:
    # Blocks that take a while, so that the computation is under way on both workers when
    # one of them dies (SIGKILL: no goodbye to the scheduler). Its tasks and the results it
    # held are computed again on the workers left and the one its nanny starts.
    whole = qd.zeros(1, dtype=qd.float64)
    dynamic_loop(qd.asarray(X1), qd.asarray(A1), whole)
    x = chunked(X1, 250).map_blocks(_slow, meta=qd.empty((0,), dtype=qd.float64))
    y = qdd.map_kernel(dynamic_loop, x, chunked(A1, 250), qd.zeros(1), out="y")
    pids = client.run(os.getpid)
    future = client.compute(y)
    deadline = time.monotonic() + 60
    victim = None
    while victim is None and time.monotonic() < deadline:
        busy = [w for w, tasks in client.processing().items() if tasks]
        held = [w for w, keys in client.has_what().items() if keys]
        victim = next((w for w in busy if w in held), None)
        time.sleep(0.05)
    assert victim is not None, "the computation never got under way on a worker"
    os.kill(pids[victim], signal.SIGKILL)
    got = future.result(timeout=120)
    assert not future.cancelled()
    np.testing.assert_allclose(host(got), host(whole), rtol=1e-12)
    client.wait_for_workers(2, timeout=60)
    assert pids[victim] not in client.run(os.getpid).values()  # the nanny started a new one
