"""Vulkan tests: the runtime, the SPIR-V writer and the namespace on the first Vulkan device
(lavapipe, Mesa's CPU implementation, in CI).

Tests that need a device are skipped, with the reason, when none is present (the `vulkan`
binding or the loader missing, or no usable device); the SPIR-V writer's tests need only
`spirv-val` (Debian's spirv-tools) and are skipped, with the reason, without it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


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
def spirv_val() -> str:
    if SPIRV_VAL is None:
        pytest.skip("spirv-val is not installed (Debian: apt-get install spirv-tools)")
    return SPIRV_VAL
