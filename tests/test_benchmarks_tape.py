"""benchmarks/compare_tape.py: the recording overhead table and the mixed program run on small
sizes, every library's gradient agrees with qdarray's float64 one, absent peers are skipped."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import compare_tape  # noqa: E402


def test_overhead_rows_time_both_paths() -> None:
    rows = compare_tape.overhead(repeat=1, calls=20)
    assert [name for name, _, _ in rows][:2] == ["x + y", "x * y"]
    assert all(plain > 0 and taped > 0 for _, plain, taped in rows)


def test_mixed_program_gradients_agree_and_peers_are_timed_or_skipped() -> None:
    result = compare_tape.mixed(n=3000, repeat=2, device="cpu")
    assert set(result["times"]) | set(result["skipped"]) == {"qdarray", "qd.jit", "jax", "torch"}
    assert "qdarray" in result["times"] and "qd.jit" in result["times"]
    for name, error in result["errors"].items():
        assert error < 1e-5, (name, error)
