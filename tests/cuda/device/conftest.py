"""CUDA tests: the namespace, kernels and autodiff on the first CUDA device.

They run on a real GPU when CuPy finds one, and in CI under numba's CUDA simulator
(`NUMBA_ENABLE_CUDASIM=1`, set before numba is imported: tests/cuda/test_cuda_simulator.py
runs this directory in a subprocess that way). Sizes are small under the simulator, which
runs a Python thread per CUDA thread.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from device_harness import _restore_debug_mode as _restore_debug_mode
from device_harness import grad as grad
from device_harness import launch as launch
from device_harness import program_dir as program_dir
from device_harness import skip_without_device

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
    skip_without_device(items, HERE, DEVICE, REASON)


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
