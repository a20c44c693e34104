"""Loads test modules of tests/kernels, tests/buffer_view and tests/ad under names of their own,
so tests/cuda/device can run their test functions with the CUDA fixtures (conftest.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent.parent


def load(name: str, folder: str = "kernels", prefix: str = "cuda_shared_") -> Any:
    """The test module tests/<folder>/<name>.py, imported as `<prefix><name>`."""
    if str(TESTS / folder) not in sys.path:
        sys.path.append(str(TESTS / folder))  # its helper modules beside it
    spec = importlib.util.spec_from_file_location(f"{prefix}{name}",
                                                  TESTS / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
