"""The last lines of every test run: which devices the tests ran on, and which were skipped
and why (tests/conftest.py installs the hook; the lines come just above pytest's final counts).

A device that is missing skips a whole directory of tests with one reason; repeated in a
hundred SKIPPED lines it is easy to miss that a device went untested. This summary counts
the outcomes of each device's tests (tests/opencl, tests/cuda, tests/vulkan; everything else
runs on the CPU) and prints one line per device:

    ------------------------------ devices tested ------------------------------
    cpu: 2210 passed, 3 skipped; skipped: ...
    opencl: 463 passed
    cuda (numba's simulator, no GPU): 3 passed (the CUDA test set in a simulated subprocess:
        90 passed)
    vulkan: NOT TESTED, 120 skipped; skipped: no usable Vulkan device (...)
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

DEVICE_DIRS = {"opencl": "tests/opencl/", "cuda": "tests/cuda/", "vulkan": "tests/vulkan/"}
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
SIMULATOR_TEST = "tests/cuda/test_cuda_simulator.py"


def _device_of(nodeid: str) -> str:
    for kind, prefix in DEVICE_DIRS.items():
        if nodeid.startswith(prefix):
            return kind
    return "cpu"


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def summarize(stats: dict[str, list[Any]]) -> list[str]:
    """One line per device kind from the terminal reporter's reports."""
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in ("cpu", *DEVICE_DIRS)}
    reasons: dict[str, Counter[str]] = {kind: Counter() for kind in counts}
    simulated = ""
    for outcome in OUTCOMES:
        for report in stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            when = getattr(report, "when", "call")
            if not nodeid or (outcome == "passed" and when != "call"):
                continue
            kind = _device_of(nodeid)
            counts[kind][outcome] += 1
            if outcome == "skipped":
                reasons[kind][_skip_reason(report)] += 1
            if nodeid.startswith(SIMULATOR_TEST):
                simulated = dict(getattr(report, "user_properties", ())).get(
                    "simulated CUDA tests", "")
    lines = []
    for kind, count in counts.items():
        total = sum(count.values())
        if total == 0:
            continue
        ran = total - count["skipped"]
        label = kind
        if kind == "cuda" and simulated:
            label = "cuda (numba's simulator, no GPU)"
        elif kind == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0"):
            label = "cuda (numba's simulator)"
        outcome = ", ".join(f"{count[o]} {o}" for o in OUTCOMES if count[o])
        if ran == 0:
            outcome = f"NOT TESTED, {outcome}"
        line = f"{label}: {outcome}"
        if kind == "cuda" and simulated:
            line += f" (the CUDA test set in a simulated subprocess: {simulated})"
        if reasons[kind]:
            why = "; ".join(f"{reason} ({n})" if len(reasons[kind]) > 1 else reason
                            for reason, n in reasons[kind].most_common(3))
            line += f"; skipped: {why}"
        lines.append(line)
    return lines


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> Any:
    """Print the summary after pytest's other summaries (the short test summary included),
    just above its final line of counts, which CI reads as the run's result."""
    result = yield
    lines = summarize(terminalreporter.stats)
    if lines:
        terminalreporter.write_sep("-", "devices tested")
        for line in lines:
            terminalreporter.write_line(line)
    return result
