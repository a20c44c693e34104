"""Kernels and funcs pickle by module and name, or by source; another process compiles them
again or loads them from its disk cache (qdarray/kernels/pickling.py)."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels import Kernel
from qdarray.kernels.pickling import rebuild_function

ROOT = Path(__file__).resolve().parents[2]


@qd.func
def half_step(v):
    return v - 0.1 * v * v + 0.01


@qd.kernel
def dynamic_loop(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                 y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = half_step(v)
        y[0] += v


def dynamic_loop_reference(x: np.ndarray, a: np.ndarray) -> float:
    total = 0.0
    for xi, ai in zip(x, a, strict=True):
        v = float(xi)
        for _ in range(int(ai)):
            v = v - 0.1 * v * v + 0.01
        total += v
    return total


def make_scaler(factor: float):
    @qd.func
    def scaled(v):
        return v * factor

    @qd.kernel
    def scale(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            y[i] = scaled(x[i]) + half_step(0.0)

    return scale


def test_top_level_kernel_and_func_pickle_by_reference():
    for obj in (dynamic_loop, half_step):
        data = pickle.dumps(obj)
        assert len(data) < 200  # a module and a name, no code
        assert pickle.loads(data) is obj
    assert copy.deepcopy(dynamic_loop) is dynamic_loop


def test_local_kernel_pickles_by_value_and_unpickles_once():
    scale = make_scaler(3.0)
    data = pickle.dumps(scale)
    first = pickle.loads(data)
    assert first is not scale and type(first) is Kernel
    assert pickle.loads(data) is first  # one object per pickle: it compiles once
    assert pickle.loads(pickle.dumps(first)) is first
    y = qd.zeros(3, dtype=qd.float64)
    first(qd.asarray(np.array([1.0, 2.0, -0.5])), y)
    np.testing.assert_allclose(np.asarray(y), np.array([1.0, 2.0, -0.5]) * 3.0 + 0.01, rtol=0,
                               atol=1e-15)


def make_annotated():
    @qd.kernel
    def halve(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            v: qd.float64 = x[i]  # `qd` appears in no bytecode of this module's kernel
            y[i] = v * 0.5

    return halve


def test_names_only_the_source_reads_travel():
    halve = make_annotated()
    assert "qd" not in halve.fn.__code__.co_names  # (this module has future annotations)
    rebuilt = pickle.loads(pickle.dumps(halve))
    assert rebuilt.fn.__globals__ is not halve.fn.__globals__
    assert rebuilt.fn.__globals__["qd"] is qd
    y = qd.zeros(2, dtype=qd.float64)
    rebuilt(qd.asarray(np.array([3.0, -1.0])), y)
    assert np.asarray(y).tolist() == [1.5, -0.5]


def test_unpickled_kernel_runs_its_reverse():
    scale = pickle.loads(pickle.dumps(make_scaler(2.5)))
    x = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    y = qd.zeros(2, dtype=qd.float64, requires_grad=True)
    scale(x, y)
    y.grad[...] = qd.asarray(np.array([1.0, 10.0]))
    scale.grad(x, y)
    np.testing.assert_allclose(np.asarray(x.grad), [2.5, 25.0])  # y = 2.5 x + c


def test_pickled_source_replaces_an_edited_file(tmp_path):
    # The pickle carries the text the code was compiled from: the unpickled kernel parses it,
    # not the file as it is now.
    module = tmp_path / "edited_kernels.py"
    module.write_text(textwrap.dedent("""
        import qdarray as qd

        def make():
            @qd.kernel
            def add_one(x: qd.Array[qd.float64, 1]):
                for i in range(x.shape[0]):
                    x[i] = x[i] + 1.0
            return add_one
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import edited_kernels
        data = pickle.dumps(edited_kernels.make())
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("edited_kernels", None)
    module.write_text("# edited after pickling\n" * 3)
    kernel = pickle.loads(data)
    x = qd.zeros(3, dtype=qd.float64)
    kernel(x)
    np.testing.assert_array_equal(np.asarray(x), [1.0, 1.0, 1.0])


def test_unpicklable_without_cloudpickle_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    with pytest.raises(pickle.PicklingError, match="cloudpickle.*top level"):
        pickle.dumps(make_scaler(1.0))


OFFSET = 0.5


def make_shifter():
    @qd.kernel
    def shift(x: qd.Array[qd.float64, 1]):
        for i in range(x.shape[0]):
            x[i] = x[i] + OFFSET

    return shift


def test_a_pickle_carries_the_globals_as_they_are_now(monkeypatch):
    # The kernel here compiles again when OFFSET changes; a pickle made after the change must
    # carry the new value too (it sent the first pickle's again: a worker ran the old one)
    shift = make_shifter()
    before = pickle.loads(pickle.dumps(shift))
    monkeypatch.setattr(sys.modules[__name__], "OFFSET", 2.0)
    after = pickle.loads(pickle.dumps(shift))
    for kernel, want in ((shift, 2.0), (before, 0.5), (after, 2.0)):
        x = qd.zeros(2, dtype=qd.float64)
        kernel(x)
        assert np.asarray(x).tolist() == [want, want]


def test_rebuild_is_keyed_by_the_payload():
    a = pickle.dumps(make_scaler(2.0))
    b = pickle.dumps(make_scaler(4.0))
    scale_2, scale_4 = pickle.loads(a), pickle.loads(b)
    assert scale_2 is not scale_4
    assert rebuild_function(Kernel, scale_2._pickle_payload) is scale_2
    y = qd.zeros(1, dtype=qd.float64)
    scale_4(qd.ones(1, dtype=qd.float64), y)
    assert float(np.asarray(y)[0]) == pytest.approx(4.01)


_CHILD = """
import json, pickle, sys
import numpy as np
import qdarray as qd
kernel = pickle.loads(open(sys.argv[1], "rb").read())
x = qd.asarray(np.linspace(-1, 1, 1000))
a = qd.asarray((np.arange(1000) % 7).astype(np.int32))
y = qd.zeros(1, dtype=qd.float64)
kernel(x, a, y)
stats = qd.kernels.cache_stats()
print(json.dumps({"y": float(np.asarray(y)[0]), "compiled": stats["numba_compiled"],
                  "loaded": stats["numba_loaded"]}))
"""


@pytest.mark.slow
def test_other_process_compiles_once_then_loads_from_its_disk_cache(tmp_path):
    # A kernel defined in a script that no longer exists (pickled by value), run in two fresh
    # processes sharing a cache directory: the first compiles, the second loads the code.
    script = tmp_path / "gone.py"
    script.write_text(textwrap.dedent("""
        import qdarray as qd

        def make():
            @qd.func
            def step(v):
                return v - 0.1 * v * v + 0.01

            @qd.kernel
            def loop(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                     y: qd.Array[qd.float64, 1]):
                for i in range(x.shape[0]):
                    v = x[i]
                    for _ in range(a[i]):
                        v = step(v)
                    y[0] += v
            return loop
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import gone
        (tmp_path / "kernel.pkl").write_bytes(pickle.dumps(gone.make()))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("gone", None)
    script.unlink()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QDARRAY_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "kernel.pkl")],
                             env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    x = np.linspace(-1, 1, 1000)
    expected = dynamic_loop_reference(x, np.arange(1000) % 7)
    for run in runs:
        assert run["y"] == pytest.approx(expected, rel=1e-12)
    assert runs[0]["compiled"] >= 1
    assert runs[1]["compiled"] == 0 and runs[1]["loaded"] >= 1


def test_top_level_kernel_in_this_process_matches_reference():
    x = np.linspace(-1, 1, 50)
    a = (np.arange(50) % 5).astype(np.int32)
    y = qd.zeros(1, dtype=qd.float64)
    pickle.loads(pickle.dumps(dynamic_loop))(qd.asarray(x), qd.asarray(a), y)
    assert float(np.asarray(y)[0]) == pytest.approx(dynamic_loop_reference(x, a), rel=1e-12)
