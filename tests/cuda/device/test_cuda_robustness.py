"""Robustness on the CUDA device (issue 18): first launches racing in threads, and
assignments whose value overlaps the target. Oracles: NumPy on host copies, closed forms."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from conftest import SIMULATED

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
