"""The default device: qd.set_default_device, the thread-local `with qd.default_device(...)`
and QDARRAY_DEFAULT_DEVICE; creation functions and the inspection API follow it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd

OTHER = next((str(d) for d in qd.__array_namespace_info__().devices() if d.kind != "cpu"), None)
needs_other = pytest.mark.skipif(OTHER is None, reason="no device besides the CPU "
                                 "(pip install 'qdarray[pocl]' gives an OpenCL one)")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def restore_default() -> Iterator[None]:
    before = qd.get_default_device()
    yield
    qd.set_default_device(before)


def test_the_cpu_is_the_default() -> None:
    assert qd.get_default_device() == "cpu"
    assert qd.__array_namespace_info__().default_device() == qd.Device("cpu")


@needs_other
def test_creation_functions_follow_the_context() -> None:
    info = qd.__array_namespace_info__()
    cpu_array = qd.ones(2)
    with qd.default_device(OTHER) as device:
        assert device == OTHER and qd.get_default_device() == OTHER
        assert info.default_device() == OTHER
        made = [qd.zeros(2), qd.ones(2), qd.empty(2), qd.full(2, 1.5), qd.arange(3),
                qd.linspace(0, 1, 3), qd.eye(2), qd.asarray([1, 2]), qd.asarray(2.0),
                qd.asarray(np.arange(3.0)), qd.asarray(np.float32(1)), qd.fft.fftfreq(4)]
        for x in made:
            assert x.device == OTHER
        # Arrays stay where they are, and so do arrays made from them
        for x in (qd.asarray(cpu_array), qd.zeros_like(cpu_array), cpu_array + 1):
            assert x.device == "cpu"
        assert qd.asarray([1.0], device="cpu").device == "cpu"
        np.testing.assert_array_equal(np.asarray(qd.asarray(np.arange(3.0))), np.arange(3.0))
    assert qd.zeros(2).device == "cpu"


@needs_other
def test_blocks_nest_restore_on_errors_and_belong_to_their_thread() -> None:
    seen: list[str] = []

    def other_thread() -> None:
        seen.append(str(qd.zeros(1).device))

    with qd.default_device(OTHER):
        with qd.default_device("cpu"):
            assert qd.zeros(1).device == "cpu"
        assert qd.zeros(1).device == OTHER
        with pytest.raises(KeyError), qd.default_device("cpu"):
            raise KeyError("inside")
        assert qd.zeros(1).device == OTHER
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen == ["cpu"]


@needs_other
def test_set_default_device_is_process_wide() -> None:
    seen: list[str] = []
    qd.set_default_device(OTHER)
    t = threading.Thread(target=lambda: seen.append(str(qd.ones(1).device)))
    t.start()
    t.join()
    assert seen == [OTHER] and qd.ones(1).device == OTHER
    with qd.default_device("cpu"):
        assert qd.ones(1).device == "cpu"  # the thread's block wins
    qd.set_default_device(None)
    assert qd.ones(1).device == "cpu"


def test_unknown_and_absent_devices_are_refused() -> None:
    with pytest.raises(ValueError, match="Unknown device 'gpu'"):
        qd.set_default_device("gpu")
    # an absent device of an installed backend is a ValueError; a backend whose dependency is
    # missing is a RuntimeError naming the dependency
    absent = ValueError if importlib.util.find_spec("pyopencl") else RuntimeError
    with pytest.raises(absent, match="opencl:99.*(not present|available)|pyopencl"):
        with qd.default_device("opencl:99"):
            pass
    assert qd.get_default_device() == "cpu"


def _run(code: str, value: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    env = dict(os.environ, QDARRAY_DEFAULT_DEVICE=value, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@needs_other
def test_environment_variable_sets_the_process_default() -> None:
    assert OTHER is not None
    run = _run("import qdarray as qd; print(qd.zeros(2).device, "
               "qd.__array_namespace_info__().default_device())", OTHER)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [OTHER, OTHER]


def test_a_bad_environment_variable_names_itself() -> None:
    run = _run("import qdarray", "tpu:0")
    assert run.returncode != 0
    assert "QDARRAY_DEFAULT_DEVICE='tpu:0' does not name a device" in run.stderr
