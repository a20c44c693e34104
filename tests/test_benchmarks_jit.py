"""benchmarks/compare_jit.py: the chains and the mixed program run at a tiny size, qd.jit's
results are checked against NumPy and eager qdarray inside, absent peers are skipped."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import compare_jit  # noqa: E402


def test_chains_and_mixed_program_at_a_tiny_size() -> None:
    result = compare_jit.main(["--n", "5000", "--mixed-n", "3000", "--repeat", "2",
                               "--calls", "20"])
    chains = result["chains"]
    assert set(chains["ratios"]) == set(compare_jit.CHAINS)
    for ratios in chains["ratios"].values():
        expected = {"numpy", "qdarray eager"} | ({"numexpr"} - set(chains["skipped"]))
        assert set(ratios) == expected
        assert all(m > 0 and q >= 0 for m, q in ratios.values())
    mixed = result["mixed"]
    assert mixed["forward"][0] > 0 and mixed["value_and_grad"][0] > 0
    assert set(result["small"]) == {"qd.jit", "qdarray eager", "numpy"}
    assert "qdarray eager" in result["gradient"]["ratios"]
