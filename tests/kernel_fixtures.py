"""Fixtures of the host kernel tests (tests/kernels, tests/buffer_view): each test runs on the
IR interpreter ("interp", the reference semantics) and the numba CPU code generator ("cpu"),
and debug mode is restored after it. A directory's conftest.py re-exports what it uses; the
device directories reuse `_restore_debug_mode` and `program_dir` through tests/device_harness.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import qdarray as qd

BACKENDS = ["interp", "cpu"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def launch(backend: str) -> Callable[..., None]:
    """`launch(kern, *args)` on the test's backend."""

    def run(kern: Any, *args: Any, **kwargs: Any) -> None:
        if backend == "interp":
            kern.interpret(*args, **kwargs)
        else:
            kern(*args, **kwargs)

    return run


@pytest.fixture
def launch_grad(backend: str) -> Callable[..., None]:
    """`launch_grad(kern, *args)`: the reverse of `kern` on the test's backend."""

    def run(kern: Any, *args: Any) -> None:
        if backend == "interp":
            kern.grad.interpret(*args)
        else:
            kern.grad(*args)

    return run


@pytest.fixture(autouse=True)
def _restore_debug_mode() -> Iterator[None]:
    before = qd.debug_mode()
    yield
    qd.set_debug(before)


@pytest.fixture(scope="session")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Where random test kernels are written (kernels need a source file)."""
    return tmp_path_factory.mktemp("programs")
