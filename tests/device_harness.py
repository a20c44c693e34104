"""What the device test directories (tests/cuda/device, tests/opencl) share: loading the test
modules of tests/kernels, tests/buffer_view and tests/ad under names of their own, skipping a
directory without its device, and the fixtures that run those modules' tests on the device.

A device directory's conftest.py finds its device, defines `device`, `backend` and `n`, and
re-exports the fixtures below; its test modules take the shared tests by name
(tests/device_suites.py). tests/ is on sys.path through tests/conftest.py.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from kernel_fixtures import _restore_debug_mode, program_dir  # noqa: F401  (re-exported fixtures)

import qdarray as qd

TESTS = Path(__file__).resolve().parent


def load(prefix: str, name: str, folder: str = "kernels") -> ModuleType:
    """The test module <name>.py of tests/<folder>/ or a folder below it (test modules have
    unique names), imported as `<prefix>_<name>`.

    Each prefix gets a copy of its own (its own kernels), so directories that run in one
    session do not share state; a second load with the same prefix returns the first."""
    full = f"{prefix}_{name}"
    if full in sys.modules:
        return sys.modules[full]
    (path,) = (TESTS / folder).rglob(f"{name}.py")
    for helpers in (TESTS / folder, path.parent):  # its helper modules beside it and above
        if str(helpers) not in sys.path:
            sys.path.append(str(helpers))
    spec = importlib.util.spec_from_file_location(full, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def shared(prefix: str, name: str, tests: Iterable[str], folder: str = "kernels") -> dict[str, Any]:
    """The tests (or fixtures) named `tests` of tests/<folder>/<name>.py, by name, for a device
    test module to add to its globals, where pytest collects them with the device's fixtures."""
    module = load(prefix, name, folder)
    return {test: getattr(module, test) for test in tests}


def skip_without_device(items: list[pytest.Item], here: Path, device: str | None,
                        reason: str) -> None:
    """Marks every test collected below `here` skipped, with `reason`, when `device` is None
    (for a device directory's `pytest_collection_modifyitems`)."""
    if device is not None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


def device_grad(backend: str, device: str) -> Any:
    """The reverse-mode tests' `Grad` with every launch on `device` (`DeviceGrad` in
    tests/ad/gradcheck.py)."""
    return load(backend, "gradcheck", "ad").DeviceGrad(backend, device)


def to_device(x: Any, device: str, back: list[tuple[Any, Any]]) -> Any:
    """`x` with every array moved to `device`; (original, copy) pairs to write back."""
    from qdarray._array import Array

    if type(x) is qd.BufferView and x._base.device != device:
        base = to_device(x._base, device, back)
        return qd.BufferView(base, offset=x._offset, size=x._size)
    if type(x) is np.ndarray or hasattr(x, "__dlpack__") and type(x) is not Array:
        host = np.from_dlpack(x) if type(x) is not np.ndarray else x
        dev = qd.asarray(np.array(host, copy=True), device=device)
        back.append((host, dev))
        return dev
    if type(x) is Array and x.device != device:
        if x.ndim == 1 and x.device == qd.Device("cpu"):
            # A slice of a bigger array moves with its root, so it stays a window at the same
            # offset (what a BufferView of it reports).
            root, start = x.device.backend.window_root(x._data)
            if root is not x._data:
                base = qd.asarray(root)  # shares the root's memory
                dev_root = base.to_device(device)
                back.append((base, dev_root))
                return dev_root[start:start + x.shape[0]]
        dev = x.to_device(device)
        back.append((x, dev))
        return dev
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(x, **{f.name: to_device(getattr(x, f.name), device, back)
                                         for f in dataclasses.fields(x)})
    return x


# -- fixtures a device directory's conftest.py re-exports --------------------------------------


@pytest.fixture
def launch(device: str) -> Callable[..., None]:
    """`launch(kern, *args)` on the device: host arrays are copied there and the results
    copied back into them, so the CPU kernel tests run unchanged."""

    def run(kern: Any, *args: Any, **kwargs: Any) -> None:
        back: list[tuple[Any, Any]] = []
        dargs = [to_device(a, device, back) for a in args]
        dkwargs = {k: to_device(v, device, back) for k, v in kwargs.items()}
        try:
            kern(*dargs, **dkwargs)
        finally:
            for orig, dev in back:
                host = np.asarray(dev.to_device("cpu"))
                if type(orig) is np.ndarray:
                    orig[...] = host
                else:
                    orig[...] = qd.asarray(host)

    return run


@pytest.fixture
def grad(backend: str, device: str) -> Any:
    """The reverse-mode tests' `Grad` on the device."""
    return device_grad(backend, device)


def run_map(spec: Any, device: str, out: np.ndarray, *operands: np.ndarray) -> np.ndarray:
    """`out` after the namespace's map kernel `spec` (kernels/library/maps.py), compiled for
    `device` as any kernel is, ran over `operands`."""
    from qdarray.kernels.args import ArgSpec
    from qdarray.kernels.launch import compile_ir
    from qdarray.kernels.library.maps import map_kernel
    from qdarray.kernels.types import ArrayType

    ir = map_kernel(spec)
    specs = [ArgSpec("array", p.value.type) if isinstance(p.value.type, ArrayType)
             else ArgSpec("scalar", p.value.type) for p in ir.params]
    arrays = [qd.asarray(a, device=device) for a in (out, *operands)]
    dev = qd.Device(device)
    compile_ir(ir, specs, [p.name for p in ir.params], dev.backend.target, False, [], dev)(arrays)
    return np.asarray(arrays[0].to_device("cpu"))
