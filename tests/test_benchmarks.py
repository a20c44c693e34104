"""benchmarks/compare.py: runs on small sizes with the peers at hand, reports absent peers as
skipped, checks gradients against a float64 reference that is itself checked here, and writes
its chart (or says why not)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _workloads as W  # noqa: E402
import compare  # noqa: E402
from _chart import bar_chart  # noqa: E402

SMALL = ["--n", "3000", "--saxpy-n", "5000", "--repeat", "3", "--png", ""]


@pytest.fixture(scope="module")
def result():
    return compare.main([*SMALL, "--peers", "numpy", "numba"])


def test_ratios_for_every_workload_and_peer(result):
    assert set(result["ratios"]) == set(W.WORKLOADS)
    assert set(result["ratios"]["saxpy"]) == {"numpy", "numba"}
    assert set(result["ratios"]["rev"]) == {"numba"}  # NumPy has no reverse mode
    for workload, ratios in result["ratios"].items():
        assert result["times"][workload]["qdarray"] > 0
        for median, half_iqr in ratios.values():
            assert median > 0 and half_iqr >= 0
    assert result["sizing"]["cached"] > 0 and result["sizing"]["fresh"] > 0


def test_gradients_agree_with_the_reference(result):
    assert result["gradient_error"]["qdarray"] < 1e-5
    assert result["gradient_error"]["numba"] < 1e-5


def test_report_lists_goals_and_checks(result):
    text = compare.report(result)
    assert "| fwd+rev |" in text
    assert "16-element launch" in text and "(goal <= 10 us)" in text
    assert "forward + reverse / quadrants skipped" in text
    assert "qdarray    " in text and "ok" in text


def test_absent_peers_are_skipped_not_failed(monkeypatch):
    def absent(problem):
        raise W.Skipped("nothing here is installed (ModuleNotFoundError)")

    def broken(problem):
        raise RuntimeError("boom")

    monkeypatch.setitem(compare.PEERS, "taichi", (absent, "taichi"))
    monkeypatch.setitem(compare.PEERS, "warp", (broken, "warp"))
    libs, skipped = compare.build(["taichi", "warp"], W.Problem(saxpy_n=16, n=16))
    assert list(libs) == ["qdarray"]
    assert skipped["taichi"] == "nothing here is installed (ModuleNotFoundError)"
    assert skipped["warp"] == "failed to set up: RuntimeError: boom"


@pytest.mark.skipif(importlib.util.find_spec("taichi") is not None,
                    reason="taichi is installed here, so it is not skipped")
def test_a_missing_library_is_reported_by_name():
    _, skipped = compare.build(["taichi"], W.Problem(saxpy_n=16, n=16))
    assert "taichi is not installed" in skipped["taichi"]


def test_reference_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.random(50)
    a = rng.integers(0, 64, 50)

    def forward(x):
        v = x.copy()
        for k in range(64):
            v = np.where(k < a, v - 0.1 * v * v + 0.01, v)
        return v

    h = 1e-6
    fd = (forward(x + h) - forward(x - h)) / (2 * h)
    np.testing.assert_allclose(W.reference_gradient(x, a), fd, rtol=1e-6, atol=1e-9)
    assert W.gradient_error(fd * 1.1, fd) > 0.05


def test_chart_is_written_or_skipped_with_a_reason(result, tmp_path):
    out = tmp_path / "chart.png"
    message = bar_chart(result, str(out))
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in message and not out.exists()
    else:
        assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask.distributed is the scale-out extra (qdarray[dask])")
def test_dask_scale_out_script_runs_small(tmp_path):
    # benchmarks/dask_dynamic_loop.py on one worker process, then its GPU cluster set-up (a
    # Nanny per GPU, the fallback without dask-cuda) with CPU chunks: the lead runs it on GPUs.
    import json

    import dask_dynamic_loop as bench

    out = tmp_path / "dask.json"
    result = bench.main(["--workers", "1", "--n", "6000", "--blocks", "3", "--repeat", "1",
                         "--json", str(out)])
    assert result["runs"][1]["y"] == pytest.approx(result["one_process"]["y"], rel=1e-5)
    assert result["runs"][1]["gradient_sum"] == pytest.approx(
        result["one_process"]["gradient_sum"], rel=1e-5)
    assert result["runs"][1]["gradient_s"] > 0 and json.loads(out.read_text())["n"] == 6000
    assert "| Dask, 1 worker processes |" in bench.report(result)
    cluster = bench.gpu_cluster(1)
    try:
        differences = bench.check(cluster, "cpu")
    finally:
        cluster.close()
    assert set(differences) == {"y", "gradient", "pipeline_sum", "std"}
    assert max(differences.values()) < 1e-5


def test_compare_numpy_reports_overheads_for_qdarray_and_peers(capsys):
    # benchmarks/compare_numpy.py: the added time per small call of qdarray and of each peer at
    # hand over NumPy, and qdarray's ratio on larger arrays, with the goals
    import compare_numpy

    out = compare_numpy.main(["--large", "3000", "--repeat", "1", "--ops", "sort",
                              "--peers", "torch", "array-api-strict"])
    assert out["baseline"] == "NumPy"
    ours = next(v for k, v in out["small_us"].items() if k.startswith("qdarray"))
    assert set(ours) == {"sort"} and all(np.isfinite(v) for v in ours.values())
    assert all(r > 0 for by_size in out["large_ratio"].values() for r in by_size.values())
    text = capsys.readouterr().out
    assert "(goal <= 1 on the CPU)" in text and "sort on large arrays" in text
    for label, name, module in (("PyTorch", "torch", "torch"),
                                ("array-api-strict", "array-api-strict", "array_api_strict")):
        present = importlib.util.find_spec(module) is not None
        assert any(k.startswith(label) for k in out["small_us"]) == present
        assert (f"skipped {name}: {module} is not installed" in text) != present


def test_compare_vectors_prints_the_ratio_of_the_two_forms(capsys):
    # benchmarks/compare_vectors.py: the vec2/mat2 mass-spring step against the per-component
    # one, forward and reverse, on a small system.
    import compare_vectors

    for extra in ([], ["--grad"]):
        out = compare_vectors.main(["--n", "64", "--repeat", "3", *extra])
        assert out["ratio"] > 0
    text = capsys.readouterr().out
    assert "ratio vec2/mat2 / per component" in text and "(reverse)" in text


def test_launch_host_cost_reports_every_part_and_checks_gradients(capsys):
    import launch_host_cost

    result = launch_host_cost.main(["--steps", "8", "--runs", "1"])
    assert set(result) == {"step", "axpy"}
    for row in result.values():
        assert row["plain_us"] > 0 and row["recorded_us"] > 0 and row["reverse_us"] > 0
        assert row["recorded_over_plain"] == row["recorded_us"] / row["plain_us"]
    assert "recorded/plain" in capsys.readouterr().out


def test_compile_long_kernel_times_first_compiles_in_fresh_processes(capsys, tmp_path):
    # benchmarks/compile_long_kernel.py: a generated kernel of N statements compiled in a new
    # process with an empty cache; the kernel computes what its statements say
    import compile_long_kernel

    path = tmp_path / "long_kernel_of_three.py"
    path.write_text(compile_long_kernel.kernel_source(3))
    spec = importlib.util.spec_from_file_location("long_kernel_of_three", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.full(4, 2.0, np.float32)
    y = np.zeros(4, np.float32)
    module.long(x, y)
    want = np.float32(2.0)
    for k in range(3):
        want = want * np.float32(0.5 + k * 1e-3) + np.float32(0.25 + k * 1e-4)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    compile_long_kernel.main(["--statements", "4", "--runs", "1"])
    line = capsys.readouterr().out.strip()
    assert line.startswith("4 statements: first compile ") and float(line.split()[4]) > 0


def test_gc_pause_alternates_the_pause_and_restores_it(capsys):
    # benchmarks/gc_pause.py: iterations alternate with and without the tapes' pause
    import gc_pause

    import qdarray as qd

    out = gc_pause.main(["--programs", "electric", "--iters", "4", "--steps", "8"])
    assert [len(out["electric"][on]) for on in (True, False)] == [2, 2]
    assert qd.ad.pause_gc() is True
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("electric: pause on  median") and "pause off" in lines[1]


def test_jit_devices_compares_fused_and_eager_calls(capsys):
    # benchmarks/jit_devices.py on the CPU (the other devices where present run the same code)
    import jit_devices

    out = jit_devices.main(["--device", "cpu", "--n", "1000", "--calls", "2"])
    assert out["eager"] > 0 and out["jit"] > 0
    assert "eager / qd.jit" in capsys.readouterr().out


def test_thread_wakeup_times_spinning_and_sleeping_workers(capsys, tmp_path):
    # benchmarks/thread_wakeup.py; a peer Python without taichi is reported as skipped
    import thread_wakeup

    missing = tmp_path / "python"
    missing.write_text("#!/bin/sh\nexit 1\n")
    missing.chmod(0o755)
    thread_wakeup.main(["--peer-python", str(missing)])
    lines = capsys.readouterr().out.strip().splitlines()
    figures = [float(w) for w in lines[0].replace(",", " ").split() if w[:1].isdigit()]
    assert lines[0].startswith("numba prange") and len(figures) == 4 and min(figures) > 0
    assert lines[1].startswith("taichi: skipped")
