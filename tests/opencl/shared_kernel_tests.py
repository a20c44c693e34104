"""Loads the kernel test modules of tests/kernels under their own names, so tests/opencl can
run their test functions with the OpenCL `launch` fixture (conftest.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

KERNEL_TESTS = Path(__file__).resolve().parent.parent / "kernels"


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"opencl_shared_{name}",
                                                  KERNEL_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
