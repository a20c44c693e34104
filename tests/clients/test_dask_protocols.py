"""Dask arrays with qdarray chunks, through the NumPy protocols and pickling alone (the
threaded and the process scheduler): what Dask relies on (`__array_function__`,
`__array_ufunc__`, `shape`, `dtype`, `astype`, `__getitem__`, pickling) is in place."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

da = pytest.importorskip("dask.array", reason="Dask is the scale-out extra (qdarray[dask])")
dask = pytest.importorskip("dask", reason="Dask is the scale-out extra (qdarray[dask])")

A = np.arange(24.0).reshape(4, 6) / 7.0


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_from_array_keeps_qdarray_chunks(scheduler: str) -> None:
    d = da.from_array(qd.asarray(A), chunks=(2, 3))
    assert type(d._meta) is qd.Array and d.dtype == np.float64
    cases = {
        "sum": (d.sum(), A.sum()),
        "mean": ((d * 2 + 1).mean(axis=0), (A * 2 + 1).mean(axis=0)),
        "std": (d.std(), A.std()),
        "sin": (da.sin(d), np.sin(A)),
        "matmul": (d @ d.T, A @ A.T),
        "rechunk": (d.rechunk((4, 2)).T, A.T),
        "slice": (d[1:3, ::2], A[1:3, ::2]),
        "map_blocks": (d.map_blocks(lambda b: b * 2), A * 2),
        "astype": (d.astype(np.float32), A.astype(np.float32)),
    }
    with dask.config.set(scheduler=scheduler, num_workers=2):
        results = dask.compute(*(lazy for lazy, _ in cases.values()))
    for (name, (_, expected)), got in zip(cases.items(), results, strict=True):
        assert type(got) is qd.Array, name
        assert got.dtype == expected.dtype and got.shape == np.shape(expected), name
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, err_msg=name)
