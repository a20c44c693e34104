"""What a kernel reads from Python besides its arguments (issue 18 and issue 12's cache keyed
before the frontend): globals, closure cells, funcs and module attributes changed after the
first compile are seen by every signature; a kernel whose file was edited after import is
refused instead of compiling another function's body; a second process runs cached kernels
without the frontend, and not when what they read has changed.

Oracles: NumPy computations of the same formulas with the values in force, and the disk
cache's counters and files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd
from qdarray.kernels import env

SCALE = 2.0
OFFSETS = (1, 2, 3)
config = types.ModuleType("robustness_config")
config.GAIN = 3.0  # type: ignore[attr-defined]


@qd.func
def gained(v):
    return v * config.GAIN


@qd.kernel
def scaled(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] * SCALE


@qd.kernel
def unrolled(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        acc = 0.0
        for k in qd.static(range(len(OFFSETS))):
            acc += x[i] * OFFSETS[k]
        y[i] = gained(acc)


def _run(kern, x):
    y = np.zeros_like(x)
    kern(x, y)
    return y


@pytest.fixture
def restore_globals():
    saved = (SCALE, OFFSETS, config.GAIN)  # type: ignore[attr-defined]
    yield
    globals()["SCALE"], globals()["OFFSETS"], config.GAIN = saved  # type: ignore[attr-defined]


@pytest.mark.parametrize("dtype", [np.float64])
def test_a_global_changed_after_the_first_compile_reaches_every_signature(restore_globals,
                                                                          dtype):
    x1 = np.arange(4.0, dtype=dtype)
    x2 = np.arange(6.0, dtype=dtype)[::2]  # another layout: a second signature
    np.testing.assert_array_equal(_run(scaled, x1), x1 * 2.0)
    globals()["SCALE"] = 5.0
    np.testing.assert_array_equal(_run(scaled, x2), x2 * 5.0)  # new signature
    np.testing.assert_array_equal(_run(scaled, x1), x1 * 5.0)  # old signature too
    globals()["SCALE"] = 5.0 + 0.0  # an equal value bound anew: no recompile needed
    np.testing.assert_array_equal(_run(scaled, x1), x1 * 5.0)


def test_static_values_module_attributes_and_funcs_are_watched(restore_globals):
    x = np.arange(3.0)
    np.testing.assert_array_equal(_run(unrolled, x), x * 6 * 3.0)
    globals()["OFFSETS"] = (1, 2, 3, 4)
    np.testing.assert_array_equal(_run(unrolled, x), x * 10 * 3.0)
    config.GAIN = 0.5  # type: ignore[attr-defined]
    np.testing.assert_array_equal(_run(unrolled, x), x * 10 * 0.5)


def test_closure_values_are_read_when_compiling_and_watched():
    def make(factor):
        @qd.kernel
        def k(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
            for i in range(x.shape[0]):
                y[i] = x[i] * factor
        return k, lambda v: locals().update(factor=v)

    k, _ = make(2.0)
    x = np.arange(3.0)
    np.testing.assert_array_equal(_run(k, x), x * 2.0)
    cell = k.fn.__closure__[k.fn.__code__.co_freevars.index("factor")]
    cell.cell_contents = 7.0
    np.testing.assert_array_equal(_run(k, x), x * 7.0)
    np.testing.assert_array_equal(_run(k, x[::2].copy()), x[::2] * 7.0)


SETTINGS = types.SimpleNamespace(offset=1.0)  # a plain object: no fingerprint


@qd.kernel
def offset_scaled(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] * SCALE + SETTINGS.offset


@pytest.fixture
def restore_settings():
    saved = SETTINGS.offset
    yield
    SETTINGS.offset = saved


def test_attributes_of_plain_objects_are_watched_with_the_globals(restore_globals,
                                                                  restore_settings):
    """A kernel reading `obj.attr` of an object without a fingerprint (a config namespace, a
    user class instance) is not cached across processes, but in this process a change of
    the attribute, of the object bound to the name, or of any other global it reads
    compiles it again (it kept the first values, silently)."""
    x = np.arange(3.0)
    np.testing.assert_array_equal(_run(offset_scaled, x), x * 2.0 + 1.0)
    globals()["SCALE"] = 3.0
    np.testing.assert_array_equal(_run(offset_scaled, x), x * 3.0 + 1.0)
    SETTINGS.offset = 10.0
    np.testing.assert_array_equal(_run(offset_scaled, x), x * 3.0 + 10.0)
    saved = SETTINGS
    try:
        globals()["SETTINGS"] = types.SimpleNamespace(offset=-4.0)
        np.testing.assert_array_equal(_run(offset_scaled, x), x * 3.0 - 4.0)
    finally:
        globals()["SETTINGS"] = saved
    np.testing.assert_array_equal(_run(offset_scaled, x), x * 3.0 + 10.0)


def test_gradients_follow_a_changed_global(restore_globals):
    x = qd.asarray(np.arange(3.0), requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    y.grad[...] = 1.0
    scaled.grad(x, y)
    np.testing.assert_array_equal(np.asarray(x.grad), [2.0, 2.0, 2.0])
    globals()["SCALE"] = 4.0
    x.grad[...] = 0.0
    y.grad[...] = 1.0  # the reverse of an overwrite consumed it
    scaled.grad(x, y)
    np.testing.assert_array_equal(np.asarray(x.grad), [4.0, 4.0, 4.0])


def test_fingerprints_tell_values_apart_and_give_up_on_opaque_ones():
    fp = env.fingerprint
    assert fp(1) != fp(1.0) != fp(True)
    assert fp((1, 2)) != fp([1, 2]) and fp((1, (2,))) == fp((1, (2,)))
    assert fp(qd.float32) != fp(qd.float64) and fp(np.float32(1)) != fp(np.float64(1))
    assert fp(np) == "module:numpy" and fp(np.sin) == "ufunc:sin"
    assert fp(gained) is not None and fp(gained) != fp(scaled)
    assert fp(lambda: 0) is None  # user code: what it computes is unknown
    assert fp(object()) is None and fp((1, object())) is None


# -- files edited after import, and new processes -------------------------------------------

KERNELS = '''
import numpy as np
import qdarray as qd

LIMIT = {limit}

@qd.kernel
def first(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i] + 1.0

@qd.kernel
def second(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = min(x[i], LIMIT) * 10.0
'''

USE = '''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kernels_module as m
import qdarray as qd

x = qd.asarray(np.arange(4.0), requires_grad=True)
y = qd.zeros(4, dtype=qd.float64, requires_grad=True)
m.second(x, y)
frontend = "qdarray.kernels.frontend" in sys.modules  # not even imported
# nor the passes and the code generator
compiler = [n for n in ("qdarray.kernels.passes", "qdarray.kernels.codegen.numba.cpu")
            if n in sys.modules]
reverse = m.second.grad
import qdarray.ad.launch as L
ran = []
def counted(f):
    def wrapper(*args, **kwargs):
        ran.append(f.__name__)
        return f(*args, **kwargs)
    return wrapper
L._build_reverse = counted(L._build_reverse)
y.grad[...] = 1.0
reverse(x, y)
# a reverse from its stored plan imports neither the frontend nor the transform
transform = [n for n in ("qdarray.kernels.frontend", "qdarray.kernels.passes",
                         "qdarray.ad.transform.generator") if n in sys.modules]
stats = qd.kernels.cache_stats()
print(json.dumps({"y": np.asarray(y).tolist(), "grad": np.asarray(x.grad).tolist(),
                  "frontend": frontend, "compiler": compiler, "reverse_ran": ran,
                  "transform": transform,
                  "stats": {k: v for k, v in stats.items() if k != "directory"}}))
'''


def test_a_kernel_whose_file_was_edited_after_import_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "edited_kernels.py"
    path.write_text(textwrap.dedent(KERNELS.format(limit=1.5)))
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_kernels as m  # type: ignore[import-not-found]

    x = np.arange(4.0)
    y = np.zeros(4)
    m.first(x, y)  # compiles while the file holds its code
    # `second` is deleted and another kernel moves to its lines: compiling it now would
    # take `third`'s body for `second`.
    text = path.read_text().split("@qd.kernel\ndef second")[0] + textwrap.dedent('''
        @qd.kernel
        def third(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
            for i in range(x.shape[0]):
                y[i] = -x[i]
        ''')
    path.write_text(text)
    with pytest.raises(qd.KernelSourceError, match="'second'.* changed after it was imported"):
        m.second(x, y)
    m.first(x, y)  # compiled before the edit: runs
    np.testing.assert_array_equal(y, x + 1.0)
    sys.modules.pop("edited_kernels", None)


def _process(tmp_path: Path, limit: float) -> dict:
    folder = tmp_path / "mod"
    folder.mkdir(exist_ok=True)
    (folder / "kernels_module.py").write_text(KERNELS.format(limit=limit))
    script = tmp_path / "use.py"
    script.write_text(USE)
    environ = {**os.environ, "QDARRAY_CACHE_DIR": str(tmp_path / "cache"), "QDARRAY_DEBUG": "0"}
    done = subprocess.run([sys.executable, str(script), str(folder)], env=environ,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_runs_the_kernel_and_its_reverse_without_the_frontend(tmp_path):
    cold = _process(tmp_path, 1.5)
    assert cold["frontend"] and cold["stats"]["entries_written"] == 1
    assert cold["stats"]["reverse_plans_written"] == 1
    assert cold["reverse_ran"] == ["_build_reverse"]
    assert "qdarray.ad.transform.generator" in cold["transform"]
    assert cold["compiler"] == ["qdarray.kernels.passes", "qdarray.kernels.codegen.numba.cpu"]
    warm = _process(tmp_path, 1.5)
    assert not warm["frontend"] and warm["compiler"] == [] and warm["reverse_ran"] == []
    assert warm["transform"] == []
    assert warm["stats"]["entries_loaded"] == 1 and warm["stats"]["reverse_plans_loaded"] == 1
    assert warm["stats"]["numba_compiled"] == 0 and warm["stats"]["modules_written"] == 0
    for out in (cold, warm):
        assert out["y"] == [0.0, 10.0, 15.0, 15.0]
        assert out["grad"] == [10.0, 10.0, 0.0, 0.0]
    # The same kernel text, another value of the global it reads: the entries do not hold.
    changed = _process(tmp_path, 2.5)
    assert changed["frontend"] and changed["stats"]["entries_loaded"] == 0
    assert changed["y"] == [0.0, 10.0, 20.0, 25.0]
    assert changed["grad"] == [10.0, 10.0, 10.0, 0.0]


@qd.func
def _doubled(a):
    """A func whose docstring
    continues on a second line (its blanks are the string's text)."""
    return 2.0 * a


def test_kernels_and_funcs_with_multi_line_docstrings_compile():
    """The check that the file still holds the code compiles the text re-indented; lines
    inside a multi-line string must keep their blanks, or the docstring differs and the
    kernel is refused as edited (it was, on Python 3.11, for any two-line docstring)."""

    @qd.kernel
    def doubled_nested(x: qd.Array[qd.float64, 1]):
        """A kernel in a function,
            with a docstring indented more than its code."""
        for i in range(x.shape[0]):
            x[i] = _doubled(x[i]) + SCALE * 2.0

    x = np.ones(3)
    doubled_nested(x)
    np.testing.assert_array_equal(x, [6.0, 6.0, 6.0])
