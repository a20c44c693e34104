"""CUDA tests: the namespace, kernels and autodiff on the first CUDA device.

They run on a real GPU when CuPy finds one, and in CI under numba's CUDA simulator
(`NUMBA_ENABLE_CUDASIM=1`, set before numba is imported: tests/cuda/test_cuda_simulator.py
runs this directory in a subprocess that way). Sizes are small under the simulator, which
runs a Python thread per CUDA thread.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qdarray as qd

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


def _first_device() -> tuple[str | None, str]:
    try:
        devices = qd.Device("cuda").backend.devices()
    except Exception as exc:  # noqa: BLE001 - no CuPy, no driver: no device
        return None, (f"no CUDA device ({exc}); tests/cuda/test_cuda_simulator.py runs these "
                      "tests under numba's simulator")
    if not devices:
        return None, "CuPy finds no CUDA GPU; tests/cuda/test_cuda_simulator.py runs these " \
                     "tests under numba's simulator"
    return str(devices[0]), ""


DEVICE, REASON = _first_device()
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if DEVICE is None:
        skip = pytest.mark.skip(reason=REASON)
        for item in items:
            if HERE in Path(str(item.fspath)).resolve().parents:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    assert DEVICE is not None
    return DEVICE


@pytest.fixture(scope="session")
def backend() -> str:
    return "cuda"


@pytest.fixture
def n() -> int:
    return 600 if SIMULATED else 100_000


@pytest.fixture(autouse=True)
def _restore_debug_mode() -> Iterator[None]:
    before = qd.debug_mode()
    yield
    qd.set_debug(before)


@pytest.fixture(scope="session")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("programs")


def to_device(x: Any, back: list[tuple[Any, Any]]) -> Any:
    """`x` with every array moved to the CUDA device; (original, copy) pairs to write back."""
    from qdarray._array import Array

    assert DEVICE is not None
    if type(x) is qd.BufferView and x._base.device != DEVICE:
        base = to_device(x._base, back)
        return qd.BufferView(base, offset=x._offset, size=x._size)
    if type(x) is np.ndarray or hasattr(x, "__dlpack__") and type(x) is not Array:
        host = np.from_dlpack(x) if type(x) is not np.ndarray else x
        dev = qd.asarray(np.array(host, copy=True), device=DEVICE)
        back.append((host, dev))
        return dev
    if type(x) is Array and x.device != DEVICE:
        if x.ndim == 1 and x.device == qd.Device("cpu"):
            # A slice moves with its root, so it stays a window at the same offset.
            root, start = x.device.backend.window_root(x._data)
            if root is not x._data:
                base = qd.asarray(root)
                dev_root = base.to_device(DEVICE)
                back.append((base, dev_root))
                return dev_root[start:start + x.shape[0]]
        dev = x.to_device(DEVICE)
        back.append((x, dev))
        return dev
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(x, **{f.name: to_device(getattr(x, f.name), back)
                                         for f in dataclasses.fields(x)})
    return x


@pytest.fixture
def launch() -> Callable[..., None]:
    """`launch(kern, *args)` on the CUDA device: host arrays are copied there and the results
    copied back into them, so the CPU kernel tests run unchanged."""

    def run(kern: Any, *args: Any, **kwargs: Any) -> None:
        back: list[tuple[Any, Any]] = []
        dargs = [to_device(a, back) for a in args]
        dkwargs = {k: to_device(v, back) for k, v in kwargs.items()}
        try:
            kern(*dargs, **dkwargs)
        finally:
            for orig, dev in back:
                host = np.asarray(dev.to_device("cpu"))
                if type(orig) is np.ndarray:
                    orig[...] = host
                else:
                    orig[...] = qd.asarray(host)

    return run
