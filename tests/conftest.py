"""Shared fixtures. Hypothesis runs derandomized with bounded example counts."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "qdarray",
    derandomize=True,
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("qdarray")
