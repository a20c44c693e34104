"""`CudaGrad`: the reverse-mode tests' `Grad` with every launch on the CUDA device
(`DeviceGrad` in tests/ad/gradcheck.py)."""

from __future__ import annotations

from cuda_shared import load

DeviceGrad = load("gradcheck", "ad").DeviceGrad


class CudaGrad(DeviceGrad):  # type: ignore[misc, valid-type]
    def __init__(self, device: str) -> None:
        super().__init__("cuda", device)
