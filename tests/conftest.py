"""Shared fixtures. Hypothesis runs derandomized with bounded example counts."""

from __future__ import annotations

import os

# SciPy reads this once, at import: its Array API support must be on before any test imports it.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
# JAX (the whole-program gradient oracle) would take 75% of a GPU's memory in each test worker.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from device_summary import pytest_terminal_summary as pytest_terminal_summary  # devices tested
from hypothesis import HealthCheck, settings

settings.register_profile(
    "qdarray",
    derandomize=True,
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("qdarray")
