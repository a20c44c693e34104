"""The PNG bar chart of `compare.py`: one group of bars per workload, one bar per peer,
each the ratio qdarray / peer on a log scale (below the line at 1: qdarray is faster)."""

from __future__ import annotations

from typing import Any


def bar_chart(result: dict[str, Any], path: str) -> str:
    """Write the chart to `path`; returns a line saying where, or why it was not written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return f"chart: skipped ({path} not written: matplotlib is not installed; " \
               "pip install matplotlib)"
    ratios = result["ratios"]
    workloads = list(ratios)
    peers = [p for p in dict.fromkeys(p for r in ratios.values() for p in r)]
    width = 0.8 / max(len(peers), 1)
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=100)
    for k, peer in enumerate(peers):
        xs, ys, errs = [], [], []
        for i, w in enumerate(workloads):
            if peer in ratios[w]:
                med, half = ratios[w][peer]
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(med)
                errs.append(half)
        ax.bar(xs, ys, width, yerr=errs, label=peer, capsize=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("time ratio qdarray / peer (log)")
    ax.set_title(f"qdarray vs peers (below 1: qdarray faster); N = {result['n']}, "
                 f"median of {result['repeat']}", fontsize=10)
    ax.legend(fontsize=8, ncol=4)
    fig.text(0.01, 0.01, result["machine"], fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return f"chart: {path}"
