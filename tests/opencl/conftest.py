"""OpenCL tests: the namespace and kernels on the first OpenCL device (PoCL in CI).

The whole directory is skipped, with the reason, only when no usable OpenCL device is present
(pyopencl missing, no platform, or every device's compiler failing a trivial build).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from device_harness import _restore_debug_mode as _restore_debug_mode
from device_harness import grad as grad
from device_harness import launch as launch
from device_harness import program_dir as program_dir
from device_harness import skip_without_device


def _first_device() -> tuple[str | None, str]:
    try:
        from qdarray.backends.opencl import _runtime
    except ImportError as exc:
        return None, f"pyopencl is not installed ({exc}); pip install 'qdarray[pocl]'"
    states = _runtime.devices()
    if not states:
        broken = "; ".join(_runtime.unusable()) or "no OpenCL platform found"
        return None, f"no usable OpenCL device ({broken})"
    return f"opencl:{states[0].index}", ""


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
    return "opencl"


@pytest.fixture
def n() -> int:
    return 100_000
