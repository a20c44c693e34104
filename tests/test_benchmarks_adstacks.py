"""benchmarks/compare_tapes.py at a small size: the measured peak of a reverse launch stays
near the sum of the trip counts (packed) and far below threads x maximum for the skewed
workload, and the checkpointed reverse under 1/8 of the packed tape fits it with gradients
equal bit for bit (the packed layout, which the CPU measures on request; its own is
per-worker scratch). (Times are reported, not asserted: the machine is shared.)"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import compare_tapes  # noqa: E402


def test_packed_memory_and_checkpointing_figures() -> None:
    got = compare_tapes.main(["--n", "3000", "--repeat", "1", "--layout", "packed"])
    skewed, uniform = got["memory skewed"], got["memory uniform"]
    for row in (skewed, uniform):  # measured: at least the heaps; the tables and a few
        packed = row["adstack_bytes"] + row["adstack_index_bytes"]  # temporaries beside
        assert row["adstack_bytes"] <= row["peak measured"] <= 1.05 * packed + 65536
    assert skewed["peak / sum"] <= 1.5 and skewed["threads x max / sum"] > 20
    assert uniform["peak / sum"] <= 1.3
    ck = got["checkpointing"]
    assert ck["gradients bitwise equal"] and ck["stride"] >= 1
    assert ck["checkpointed tape bytes"] <= ck["limit"] == ck["packed tape bytes"] // 8
