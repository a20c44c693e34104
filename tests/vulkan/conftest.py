"""Vulkan tests: the runtime, the SPIR-V writer and the namespace on the first Vulkan device
(lavapipe, Mesa's CPU implementation, in CI).

Tests that need a device are skipped, with the reason, when none is present (the `vulkan`
binding or the loader missing, or no usable device); the SPIR-V writer's tests need only
`spirv-val` (Debian's spirv-tools) and are skipped, with the reason, without it.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from device_harness import _restore_debug_mode as _restore_debug_mode
from device_harness import grad as grad
from device_harness import launch as launch
from device_harness import program_dir as program_dir


def _first_device() -> tuple[str | None, str]:
    try:
        from qdarray.backends.vulkan import _binding, _instance
    except ImportError as exc:
        return None, f"the vulkan binding is not installed ({exc}); pip install 'qdarray[vulkan]'"
    try:
        devices = _instance.physical_devices()
    except _binding.VulkanUnavailableError as exc:
        return None, str(exc)
    if not devices:
        left = "; ".join(_instance.unusable()) or "the loader lists none"
        return None, f"no usable Vulkan device ({left}); apt-get install mesa-vulkan-drivers"
    return "vulkan:0", ""


DEVICE, REASON = _first_device()
SPIRV_VAL = shutil.which("spirv-val")
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        if "device" in getattr(item, "fixturenames", ()) and DEVICE is None:
            item.add_marker(pytest.mark.skip(reason=REASON))


@pytest.fixture(scope="session")
def device() -> str:
    assert DEVICE is not None
    return DEVICE


@pytest.fixture(scope="session")
def backend() -> str:
    return "vulkan"


@pytest.fixture
def n() -> int:
    return 100_000


@pytest.fixture(scope="session")
def spirv_val() -> str:
    if SPIRV_VAL is None:
        pytest.skip("spirv-val is not installed (Debian: apt-get install spirv-tools)")
    return SPIRV_VAL


@pytest.fixture(scope="session", autouse=True)
def every_module_passes_spirv_val() -> Iterator[None]:
    """Every SPIR-V module a test builds a pipeline from is checked by spirv-val first (once
    per module): a module the validator rejects fails the test that built it."""
    if DEVICE is None or SPIRV_VAL is None:
        yield
        return
    from qdarray.backends.vulkan import _pipelines

    original = _pipelines.program
    checked: set[bytes] = set()

    def validated(st, spirv, n_buffers, push_bytes):  # type: ignore[no-untyped-def]
        key = hashlib.sha256(spirv).digest()
        if key not in checked:
            with tempfile.NamedTemporaryFile(suffix=".spv") as fh:
                fh.write(spirv)
                fh.flush()
                done = subprocess.run([SPIRV_VAL, "--target-env", "vulkan1.2", fh.name],
                                      capture_output=True, text=True)
            assert done.returncode == 0, f"spirv-val rejects a module: {done.stderr}"
            checked.add(key)
        return original(st, spirv, n_buffers, push_bytes)

    _pipelines.program = validated
    yield
    _pipelines.program = original
