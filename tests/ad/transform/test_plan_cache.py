"""Reverse plans in the disk cache: a second process runs `kernel.grad` from the stored plan
(stack table, size expressions, counting-kernel dependencies, compiled modules) without the
reverse-mode transform, with the same gradients and messages; unreadable, tampered or
orphaned plans are rebuilt. Oracles: closed-form gradients and the first process's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qdarray as qd
from qdarray.ad import launch as ad_launch
from qdarray.ad.sizing.bounds import Arg, Bin, Const, LoopVar, MaxOverRange, Read, Shape, Slot
from qdarray.ad.transform import plan_json
from qdarray.ad.transform.plan import plan_of
from qdarray.ad.transform.reverse_kernel import Reverse
from qdarray.kernels import cache
from qdarray.kernels.interp import INTERP

SCRIPT = '''
import json, sys
import numpy as np
import qdarray as qd
# the transform (reverse mode imports it where it runs it)
import qdarray.ad.transform.reverse_kernel as R
from qdarray.ad.sizing import at_launch as sizer
from qdarray.kernels import cache

# The plan key includes a hash of qdarray's sources; pinned here so that edits elsewhere in
# a working checkout between the runs of this test do not change it.
cache._fingerprint[:] = ["pinned"]

transforms = []
_build = R.build_reverse
def counted(*args):
    transforms.append(1)
    return _build(*args)
R.build_reverse = counted

@qd.kernel
def ragged(x: qd.BufferView[qd.float64], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        v = x[i]  # marker: stacked local
        for _ in range(a[i]):
            v = v * (1.0 - v) * 3.0
        k = 0
        while k < a[i]:  # sized by the counting pass
            v = v + 0.5 * v * v
            k += 2
        y[i] += v

@qd.kernel
def window(v: qd.BufferView[qd.float64], out: qd.Array[qd.float64, 1], n: int):
    w = v.subview(1, n)
    for i in range(out.shape[0]):
        out[i] += w[i] * w[i]

base = qd.zeros(8, dtype=qd.float64, requires_grad=True)
base[...] = qd.linspace(0.1, 0.4, 8, dtype=qd.float64)
a = qd.asarray(np.array([0, 1, 2, 3, 5], np.int32))
y = qd.zeros(5, dtype=qd.float64, requires_grad=True)
ragged(base[2:7], a, y)
y.grad[...] = 1.0
ragged.grad(base[2:7], a, y)
out = {"grad": np.asarray(base.grad).tolist()}
sizer._TEST_CAPACITY_OVERRIDE = 1
try:
    ragged.grad(base[2:7], a, y)
except qd.ad.AdStackOverflowError as e:
    out["overflow"] = str(e)
sizer._TEST_CAPACITY_OVERRIDE = None
qd.set_debug(True)
o = qd.zeros(3, dtype=qd.float64, requires_grad=True)
o.grad[...] = 1.0
try:
    window.grad(base[0:4], o, 4)
except qd.BufferViewIndexError as e:
    out["debug"] = str(e)
stats = qd.kernels.cache_stats()
out["stats"] = {k: stats[k] for k in ("reverse_plans_written", "reverse_plans_loaded")}
out["transforms"] = len(transforms)
print(json.dumps(out))
'''


def _run(script: Path, cache_dir: Path) -> dict:
    env = {**os.environ, "QDARRAY_CACHE_DIR": str(cache_dir), "QDARRAY_DEBUG": "0"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _closed_form(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """d y[i] / d x[i] of `ragged`, by the chain rule over its iterations."""
    out = np.zeros_like(x)
    for i, (v, n) in enumerate(zip(x, a, strict=True)):
        d = 1.0
        for _ in range(n):
            d *= 3.0 * (1.0 - 2.0 * v)
            v = v * (1.0 - v) * 3.0
        for _ in range((n + 1) // 2):
            d *= 1.0 + v
            v = v + 0.5 * v * v
        out[i] = d
    return out


def test_a_second_process_runs_the_reverse_from_the_stored_plan(tmp_path):
    script = tmp_path / "use_grad.py"
    script.write_text(SCRIPT)
    cold = _run(script, tmp_path / "cache")
    assert cold["transforms"] == 2  # ragged, and window in debug mode
    assert cold["stats"]["reverse_plans_written"] == 2
    assert cold["stats"]["reverse_plans_loaded"] == 0
    want = np.zeros(8)
    want[2:7] = _closed_form(np.linspace(0.1, 0.4, 8)[2:7], np.array([0, 1, 2, 3, 5]))
    np.testing.assert_allclose(cold["grad"], want, rtol=1e-12, atol=0)
    line = SCRIPT.splitlines().index(
        "        v = x[i]  # marker: stacked local") + 1
    assert f"The adstack of 'v' ({script}:{line})" in cold["overflow"]
    assert "capacity 1" in cold["overflow"]
    assert cold["debug"].startswith(
        "Subview 'v.subview(1, n)' (offset 1, size 4) is out of bounds for its parent "
        "BufferView 'v' (offset 0, size 4) in kernel 'window_reverse' (serial code).")

    warm = _run(script, tmp_path / "cache")
    assert warm["transforms"] == 0
    assert warm["stats"]["reverse_plans_written"] == 0
    assert warm["stats"]["reverse_plans_loaded"] == 2
    assert warm["grad"] == cold["grad"]
    assert warm["overflow"] == cold["overflow"] and warm["debug"] == cold["debug"]

    for plan in _plans(tmp_path / "cache"):
        key = json.loads(plan.read_text())["reverse"][0]
        (tmp_path / "cache" / f"qdarray_kernel_{key}.py").unlink()  # named, but gone
    rebuilt = _run(script, tmp_path / "cache")
    assert rebuilt["transforms"] == 2 and rebuilt["stats"]["reverse_plans_written"] == 2
    assert rebuilt["grad"] == cold["grad"] and rebuilt["debug"] == cold["debug"]


# -- in this process ----------------------------------------------------------------------------


@qd.kernel
def logistic(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * (1.0 - v) * 3.5
        y[i] += v


@qd.kernel
def logistic_renamed(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
                     y: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        u = x[i]
        for _ in range(a[i]):
            u = u * (1.0 - u) * 3.5
        y[i] += u


def operands() -> tuple[qd.Array, qd.Array, qd.Array]:
    x = qd.asarray(np.array([0.2, 0.3, 0.4]), requires_grad=True)
    a = qd.asarray(np.array([1, 4, 2], np.int32))
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    y.grad[...] = 1.0
    return x, a, y


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(tmp_path))
    # Pinned: an edit to the checkout while the tests run must not turn plans off.
    monkeypatch.setattr(cache, "_fingerprint", ["pinned"])
    return tmp_path


def _prepare(kern, args, debug=False):
    before = dict(cache.cache_stats())
    launcher = ad_launch.prepare_reverse(kern, args, None, debug)
    after = cache.cache_stats()
    delta = {k: after[k] - before[k] for k in ("reverse_plans_written", "reverse_plans_loaded")}
    return launcher, delta


def _plans(directory: Path) -> list[Path]:
    return sorted(directory.glob("qdarray_reverse_*.json"))


def test_the_stored_plan_equals_the_transforms_plan(cache_dir):
    args = operands()
    built, delta = _prepare(logistic, args)
    assert delta == {"reverse_plans_written": 1, "reverse_plans_loaded": 0}
    assert isinstance(built._rev, Reverse)
    assert built.plan.reverse is not None and built.plan.counting is not None
    loaded, delta = _prepare(logistic, args)
    assert delta == {"reverse_plans_written": 0, "reverse_plans_loaded": 1}
    assert not isinstance(loaded._rev, Reverse)  # the transform did not run
    assert loaded.plan == built.plan
    assert loaded.plan.exprs == plan_of(built.rev, "logistic").exprs
    (e,) = loaded.plan.exprs
    i = str(e.var)  # type: ignore[union-attr]
    assert str(e) == f"MaxOverRange({i}, 0, a.shape[0], (1 + max(a[{i}], 0)))"
    assert [str(t) for t in loaded.plan.threads] == ["max(a.shape[0], 0)"]
    (stack,) = loaded.plan.stacks
    assert (stack.desc.name, stack.desc.loc.func, stack.task) == ("v", "logistic", 0)
    x, a, y = args
    loaded(args)
    np.testing.assert_allclose(np.asarray(x.grad), _logistic_grad([0.2, 0.3, 0.4], [1, 4, 2]),
                               rtol=1e-13)


def _logistic_grad(xs: list[float], ns: list[int]) -> np.ndarray:
    out = []
    for v, n in zip(xs, ns, strict=True):
        d = 1.0
        for _ in range(n):
            d *= 3.5 * (1.0 - 2.0 * v)
            v = v * (1.0 - v) * 3.5
        out.append(d)
    return np.array(out)


def test_interpreted_reverses_store_nothing(cache_dir):
    ad_launch.prepare_reverse(logistic, operands(), INTERP, False)
    assert _plans(cache_dir) == []


@pytest.mark.parametrize("damage", [
    "not json",
    '{"format": 1}',
    "unknown expression",
    "module outside the cache",
    "another key",
])
def test_an_unreadable_plan_is_rebuilt(cache_dir, damage):
    args = operands()
    _prepare(logistic, args)
    (path,) = _plans(cache_dir)
    data = json.loads(path.read_text())
    if damage == "not json":
        path.write_text("{")
    elif damage == '{"format": 1}':
        path.write_text(damage)
    elif damage == "unknown expression":
        data["exprs"] = [["pow", 2, 3]]
        path.write_text(json.dumps(data))
    elif damage == "module outside the cache":
        data["reverse"][0] = "../../elsewhere"
        path.write_text(json.dumps(data))
    else:
        data["key"] = "0" * 32
        path.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning, match="is damaged"):
        launcher, delta = _prepare(logistic, args)
    assert delta == {"reverse_plans_written": 1, "reverse_plans_loaded": 0}
    assert isinstance(launcher._rev, Reverse)
    stored = plan_json.load_plan(path.stem.removeprefix("qdarray_reverse_"), logistic.fn)
    assert stored is not None and stored[0] == launcher.plan
    launcher(args)
    np.testing.assert_allclose(np.asarray(args[0].grad),
                               _logistic_grad([0.2, 0.3, 0.4], [1, 4, 2]), rtol=1e-13)


def test_a_module_is_imported_by_key_only_while_its_content_hashes_to_it(cache_dir):
    source = f"VALUE = {os.getpid()} + 1\n"
    module = cache.load_module(source)
    key = cache.module_key(module)
    assert key == cache.cache_key(source) and cache.module_for_key(key) is module
    del sys.modules[module.__name__]
    assert cache.module_for_key(key).VALUE == os.getpid() + 1  # imported again from disk
    del sys.modules[module.__name__]
    path = cache_dir / f"{module.__name__}.py"
    path.write_text(source + "raise SystemExit('changed')\n")
    assert cache.module_for_key(key) is None
    path.unlink()
    assert cache.module_for_key(key) is None
    assert cache.module_for_key("f" * 32) is None


def test_the_key_covers_code_gradients_debug_mode_target_and_specs(monkeypatch):
    # Pinned: an edit to the checkout while the tests run must not turn keys off.
    monkeypatch.setattr(cache, "_fingerprint", ["pinned"])
    from qdarray.kernels.args import ArgSpec
    from qdarray.kernels.entries import entry_key
    from qdarray.kernels.launch import signature
    from qdarray.kernels.types import ArrayType

    specs, _ = signature(logistic, operands())
    key = entry_key(logistic, specs, "numba_cpu", False, "reverse:x,y")
    assert key == entry_key(logistic, signature(logistic, operands())[0], "numba_cpu", False,
                            "reverse:x,y")
    x32 = ArgSpec("array", ArrayType(qd.float32, 1))
    others = {
        entry_key(logistic_renamed, specs, "numba_cpu", False, "reverse:x,y"),
        entry_key(logistic, specs, "numba_cpu", False, "reverse:y"),
        entry_key(logistic, specs, "numba_cpu", True, "reverse:x,y"),
        entry_key(logistic, specs, "numba_cuda", False, "reverse:x,y"),
        entry_key(logistic, [("x", x32), *specs[1:]], "numba_cpu", False, "reverse:x,y"),
    }
    assert key not in others and len(others) == 5


# -- the JSON form of size expressions ---------------------------------------------------------

_names = st.sampled_from(["a", "b", "n", "x.len"])
_leaves = st.one_of(
    st.builds(Const, st.integers(-(1 << 63), (1 << 63) - 1)),
    st.builds(Arg, _names),
    st.builds(Shape, _names, st.integers(0, 3)),
    st.builds(LoopVar, st.integers(-5, 50), st.sampled_from(["i3", "i", "j7"])),
    st.builds(Slot, st.integers(0, 4)),
)


def _extend(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(Bin, st.sampled_from(["+", "-", "*", "//", "max", "min"]), inner, inner),
        st.builds(Read, _names, st.lists(inner, max_size=2).map(tuple)),
        st.builds(MaxOverRange, st.builds(LoopVar, st.integers(0, 9), st.just("i")),
                  inner, inner, inner),
    )


@given(st.recursive(_leaves, _extend, max_leaves=12))
def test_size_expressions_survive_json(e):
    back = plan_json.decode_expr(json.loads(json.dumps(plan_json.encode_expr(e))))
    assert back == e and hash(back) == hash(e)


@pytest.mark.parametrize("bad", [
    ["const", True], ["const", 1.5], ["bin", "**", ["const", 1], ["const", 2]],
    ["max", ["const", 0], ["const", 0], ["const", 1], ["const", 2]], ["read", "a"],
    ["shape", "a", "0"], "const", [], ["__import__", "os"],
])
def test_malformed_expressions_are_rejected(bad):
    with pytest.raises(plan_json.PlanFormatError):
        plan_json.decode_expr(bad)


def test_no_plan_is_read_or_written_once_the_sources_changed(cache_dir, monkeypatch):
    first, changed = cache._IMPORTED[0], cache._IMPORTED[1:]
    monkeypatch.setattr(cache, "_IMPORTED", ((first[0], first[1] - 1, first[2]),) + changed)
    monkeypatch.setattr(cache, "_fingerprint", [])
    assert cache.code_fingerprint() is None  # a file differs from what this process imported
    launcher, delta = _prepare(logistic, operands())
    assert delta == {"reverse_plans_written": 0, "reverse_plans_loaded": 0}
    assert _plans(cache_dir) == []
    launcher(operands())  # the reverse itself still runs
