"""Reverse-mode tests run every kernel on the IR interpreter ("interp", the reference
semantics) and through numba on the CPU ("cpu")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gradcheck import Grad

import qdarray as qd
from qdarray.ad.sizing import at_launch as sizer

BACKENDS = ["interp", "cpu"]



@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _reset_state() -> Iterator[None]:
    debug = qd.debug_mode()
    yield
    qd.set_debug(debug)
    sizer._TEST_CAPACITY_OVERRIDE = None


@pytest.fixture
def grad(backend: str) -> Grad:
    return Grad(backend)
