"""Robustness on the CUDA device (issue 18): first launches racing in threads, assignments
whose value overlaps the target, and kernels on views carrying their base's gradient (the
views of tests/robustness/test_view_gradients.py). Oracles: NumPy on host copies, closed
forms."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest
from conftest import SIMULATED
from device_harness import load

import qdarray as qd
from qdarray.ad.launch import prepare_reverse


@qd.kernel
def _racing(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1], n: qd.int32):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(n):
            v = v * 0.5 + 0.25
        y[i] += v


def _in_threads(work: Callable[[], object], n: int = 8) -> tuple[list[object], list[str]]:
    results: list[object] = []
    errors: list[str] = []
    barrier = threading.Barrier(n)

    def worker() -> None:
        barrier.wait()
        try:
            results.append(work())
        except BaseException as exc:  # noqa: BLE001 - collected and reported by the caller
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def _operands(device: str) -> tuple[qd.Array, qd.Array]:
    x = qd.asarray(np.linspace(0, 1, 16, dtype=np.float32), device=device, requires_grad=True)
    y = qd.zeros(16, dtype=qd.float32, device=device, requires_grad=True)
    return x, y


def _run(x: qd.Array, y: qd.Array) -> tuple[np.ndarray, np.ndarray]:
    _racing(x, y, 3)
    y.grad[...] = 1.0
    _racing.grad(x, y, 3)
    return np.asarray(y.to_device("cpu")), np.asarray(x.grad.to_device("cpu"))


def test_eight_threads_make_the_first_launch_together(device):
    if SIMULATED:
        # numba's simulator keeps its grid state per host thread and cannot run launches
        # from two threads at once: there the threads race on compiling and loading the
        # modules (what a first launch does before it runs), and then run in turn.
        def compile_both() -> None:
            x, y = _operands(device)
            _racing._prepare((x, y, 3), None)
            prepare_reverse(_racing, (x, y, 3), None, False)

        _, errors = _in_threads(compile_both)
        assert errors == []
        results = [_run(*_operands(device)) for _ in range(2)]
    else:
        results, errors = _in_threads(lambda: _run(*_operands(device)))  # type: ignore[assignment]
        assert errors == []
    x = np.linspace(0, 1, 16)
    for y, g in results:  # type: ignore[misc]
        np.testing.assert_allclose(y, x / 8 + 0.25 * (1 + 0.5 + 0.25), rtol=1e-6)
        np.testing.assert_allclose(g, np.full(16, 0.125), rtol=1e-6)


# -- assignments whose value overlaps the target ---------------------------------------------

# On a GPU the sizes of the reproducers (CuPy's own c[:-1] = c[1:] fails from about 2**20
# elements); under the simulator, where device arrays are NumPy arrays, small ones.
N = 1001 if SIMULATED else 4_000_001
SIDE = 33 if SIMULATED else 2049


def _device_array(host: np.ndarray, device: str) -> qd.Array:
    return qd.asarray(host, device=device)


def _host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def test_overlapping_shifted_copies_match_numpy(device):
    base = np.arange(N, dtype=np.float32)
    for key, value in [(slice(None, -1), slice(1, None)), (slice(1, None), slice(None, -1))]:
        x = _device_array(base, device)
        x[key] = x[value]
        expected = base.copy()
        expected[key] = expected[value]
        np.testing.assert_array_equal(_host(x), expected)


def test_overlapping_two_dimensional_and_reversed_copies_match_numpy(device):
    z0 = np.arange(SIDE * SIDE, dtype=np.float32).reshape(SIDE, SIDE)
    z = _device_array(z0, device)
    z[1:, :] = z[:-1, :]
    expected = z0.copy()
    expected[1:, :] = expected[:-1, :]
    np.testing.assert_array_equal(_host(z), expected)
    z = _device_array(z0, device)
    z[...] = z.T
    np.testing.assert_array_equal(_host(z), z0.T)
    x0 = np.arange(6, dtype=np.float32)
    x = _device_array(x0, device)
    x[:] = x[::-1]
    np.testing.assert_array_equal(_host(x), x0[::-1])
    x = _device_array(x0, device)
    x[...] = qd.flip(x)
    np.testing.assert_array_equal(_host(x), x0[::-1])


_views = load("cuda", "test_view_gradients", folder="robustness")


@pytest.mark.parametrize("name, view, view_np", _views.VIEWS, ids=[v[0] for v in _views.VIEWS])
def test_a_kernel_on_a_view_accumulates_into_the_base_gradient(device, name, view, view_np):
    _views._check(name, view, view_np, "kernel.grad", device)
