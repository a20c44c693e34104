"""`OpenCLGrad`: the reverse-mode tests' `Grad` with every launch on an OpenCL device
(`DeviceGrad` in tests/ad/gradcheck.py)."""

from __future__ import annotations

from shared_kernel_tests import load

DeviceGrad = load("gradcheck", "ad").DeviceGrad


class OpenCLGrad(DeviceGrad):  # type: ignore[misc, valid-type]
    def __init__(self, device: str) -> None:
        super().__init__("opencl", device)
