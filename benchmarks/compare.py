"""qdarray side by side with its peers: the same workloads in one process, as ratios.

    python benchmarks/compare.py [--quick] [--peers numpy numba taichi ...] [--png out.png]
                                 [--device cuda:0]

Workloads, on the CPU unless --device names another device: one launch of a 16-element saxpy
kernel; saxpy over 1e7 float32; the dynamic-loop kernel `v = v - 0.1*v*v + 0.01` repeated
a[i] times (a[i] uniform in [0, 64), N = 1e6, float32, `y[0] += v`) forward, reverse, and
forward + reverse; and qdarray's stack sizing per reverse launch (cached and fresh), which no
peer has. Peers: NumPy, hand-written numba, Taichi, Quadrants, Warp, Dr.Jit, JAX, PyTorch, and
CuPy on a CUDA device; those not installed are reported as skipped. Every figure is a median over
repeats taken after a warm-up; in each repeat every library runs once, in rotating order, so
load from other processes falls on all of them alike, and a ratio is the median of the
per-repeat ratios qdarray / peer (below 1: qdarray is faster). `±` is half the interquartile
range of those ratios: the run's noise. The gradient of every forward + reverse is checked
against a float64 reference. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _peers_arrays  # noqa: E402
import _peers_kernels  # noqa: E402
import _workloads as W  # noqa: E402

# peer name -> (builder, module whose version is reported)
PEERS: dict[str, tuple[Callable[[W.Problem], dict[str, W.Case]], str]] = {
    "numpy": (W.numpy_cases, "numpy"),
    "numba": (W.numba_cases, "numba"),
    "taichi": (_peers_kernels.taichi_cases, "taichi"),
    "quadrants": (_peers_kernels.quadrants_cases, "quadrants"),
    "warp": (_peers_kernels.warp_cases, "warp"),
    "drjit": (_peers_kernels.drjit_cases, "drjit"),
    "jax": (_peers_arrays.jax_cases, "jax"),
    "torch": (_peers_arrays.torch_cases, "torch"),
    "cupy": (_peers_arrays.cupy_cases, "cupy"),
}


def batch_size(run: Callable[[], Any], target: float) -> int:
    """Calls per timed batch so that a batch takes about `target` seconds (also warms up)."""
    run()
    t0 = time.perf_counter()
    run()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(100_000, int(target / once)))


# Seconds of rest before each timed batch: thread pools of the previous library (PyTorch's
# OpenMP threads, for one) spin for a while after their work, and on a small machine that
# would slow whatever runs next by orders of magnitude.
REST = 0.01


def timed(run: Callable[[], Any], number: int) -> float:
    time.sleep(REST)
    t0 = time.perf_counter()
    for _ in range(number):
        run()
    return (time.perf_counter() - t0) / number


def measure(cases: dict[str, W.Case], repeat: int, target: float) -> dict[str, list[float]]:
    """Seconds per call of each case, `repeat` times, the cases rotating within a repeat."""
    names = list(cases)
    numbers = {k: batch_size(cases[k].run, target) for k in names}
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeat):
        for k in names[r % len(names):] + names[:r % len(names)]:
            times[k].append(timed(cases[k].run, numbers[k]))
    return times


def ratio_stats(mine: list[float], theirs: list[float]) -> tuple[float, float]:
    """(median, half the interquartile range) of the per-repeat ratios mine / theirs."""
    ratios = sorted(m / t for m, t in zip(mine, theirs, strict=True))
    if len(ratios) < 4:
        return statistics.median(ratios), (ratios[-1] - ratios[0]) / 2
    q = statistics.quantiles(ratios, n=4)
    return statistics.median(ratios), (q[2] - q[0]) / 2


def build(peers: list[str], problem: W.Problem) -> tuple[dict[str, dict[str, W.Case]],
                                                          dict[str, str]]:
    """Cases by library (qdarray first) and the reason each skipped peer was skipped."""
    libs = {"qdarray": W.qdarray_cases(problem)}
    skipped: dict[str, str] = {}
    for name in peers:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                libs[name] = PEERS[name][0](problem)
        except W.Skipped as exc:
            skipped[name] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a peer that fails to set up is reported
            skipped[name] = f"failed to set up: {type(exc).__name__}: {exc}"[:200]
    return libs, skipped


def run_all(libs: dict[str, dict[str, W.Case]], problem: W.Problem, repeat: int,
            target: float, skipped: dict[str, str]) -> dict[str, Any]:
    """Time every workload and check every gradient; the results as plain data."""
    out: dict[str, Any] = {"times": {}, "ratios": {}, "notes": {}, "gradient_error": {}}
    want = W.reference_gradient(problem["x"], problem["a"])
    for lib, cases in libs.items():
        grad = cases.get("fwd+rev")
        if grad is not None and grad.gradient is not None:
            try:
                out["gradient_error"][lib] = W.gradient_error(grad.gradient(), want)
            except Exception as exc:  # noqa: BLE001 - reported; the reverse cases are dropped
                why = f"failed: {type(exc).__name__}: {exc}"[:200]
                if lib == "qdarray":
                    raise
                # The peer's forward workloads still compare (Quadrants on Vulkan, say,
                # refuses this reverse pass but runs the forward kernel).
                skipped[f"{lib} (reverse)"] = why
                cases.pop("fwd+rev")
                cases.pop("rev", None)
        for w, case in cases.items():
            if case.note:
                out["notes"][f"{lib}/{w}"] = case.note
    libs = {k: v for k, v in libs.items() if k not in skipped}
    for w in W.WORKLOADS:
        cases = {lib: c[w] for lib, c in libs.items() if w in c}
        times = measure(cases, repeat, target)
        out["times"][w] = {lib: statistics.median(t) for lib, t in times.items()}
        out["ratios"][w] = {lib: ratio_stats(times["qdarray"], t)
                            for lib, t in times.items() if lib != "qdarray"}
    pair = measure({"fwd": libs["qdarray"]["fwd"], "rev": libs["qdarray"]["rev"]},
                   repeat, target)
    out["rev_over_fwd"] = ratio_stats(pair["rev"], pair["fwd"])
    sizing = W.qdarray_sizing(problem)
    size_cases = {k: W.Case(f) for k, f in sizing.items()}
    out["sizing"] = {k: statistics.median(t)
                     for k, t in measure(size_cases, repeat, target / 4).items()}
    return out


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    text = f"{model}, {os.cpu_count()} cores, {platform.system()}, " \
        f"Python {platform.python_version()}"
    try:
        import numba

        text += f", numba {numba.config.NUMBA_NUM_THREADS} threads"
    except ImportError:
        pass
    return text


def versions(libs: list[str]) -> dict[str, str]:
    out = {}
    for lib in libs:
        module = sys.modules.get(PEERS[lib][1] if lib in PEERS else lib)
        v = getattr(module, "__version__", "?")
        out[lib] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return out


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def table(result: dict[str, Any]) -> str:
    """The ratio table as markdown (qdarray's own time in the second column)."""
    peers = [p for p in PEERS if any(p in r for r in result["ratios"].values())]
    lines = ["| workload | qdarray | " + " | ".join(peers) + " |",
             "|---|---:|" + "---:|" * len(peers)]
    for w, ratios in result["ratios"].items():
        cells = []
        for p in peers:
            if p in ratios:
                med, half = ratios[p]
                cells.append(f"{med:.2f} ±{half:.2f}")
            else:
                cells.append("n/a")
        lines.append(f"| {w} | {fmt_time(result['times'][w]['qdarray'])} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def goals(result: dict[str, Any]) -> list[str]:
    """The performance goals of the issue, each with its figure and whether it holds."""
    t = result["times"]
    r = result["ratios"]
    out = []

    def line(ok: bool | None, text: str) -> None:
        out.append(f"- [{'x' if ok else ' ' if ok is not None else '-'}] {text}")

    line(t["launch16"]["qdarray"] <= 10e-6,
         f"16-element launch {fmt_time(t['launch16']['qdarray'])} (goal <= 10 us)")
    s = r["saxpy"].get("numba")
    line(None if s is None else s[0] <= 1.1,
         f"saxpy / numba prange {'n/a' if s is None else f'{s[0]:.2f}'} (goal <= 1.1)")
    rf = result["rev_over_fwd"]
    line(rf[0] <= 3, f"reverse / forward {rf[0]:.2f} ±{rf[1]:.2f} (goal <= 3)")
    for peer in ("drjit", "quadrants", "taichi"):
        q = r["fwd+rev"].get(peer)
        line(None if q is None else q[0] < 1,
             f"forward + reverse / {peer} {'skipped' if q is None else f'{q[0]:.2f}'} (goal < 1)")
    for peer in ("taichi", "numba"):
        q = r["fwd"].get(peer)
        line(None if q is None else q[0] <= 1,
             f"forward / {peer} {'skipped' if q is None else f'{q[0]:.2f}'} (goal <= 1)")
    c = result["sizing"]["cached"]
    line(c < 2e-6, f"cached sizing {fmt_time(c)} per launch (goal < 2 us; fresh: "
                   f"{fmt_time(result['sizing']['fresh'])})")
    return out


def report(result: dict[str, Any]) -> str:
    lines = [f"qdarray / peer, median of {result['repeat']} repeats after warm-up "
             f"(below 1: qdarray faster); N = {result['n']}, saxpy n = {result['saxpy_n']}, "
             f"device {result['device']}",
             f"machine: {result['machine']}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()),
             "", table(result), "", "goals:", *goals(result), "", "gradient check "
             "(max error / max |reference|, float64 reference):"]
    for lib, err in result["gradient_error"].items():
        verdict = "ok" if err < 1e-3 else "WRONG"
        lines.append(f"  {lib:<10} {err:.1e}  {verdict}")
    for lib, why in result["skipped"].items():
        lines.append(f"skipped: {lib}: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="N = 1e5, saxpy n = 1e6, 3 repeats: a smoke run")
    parser.add_argument("--n", type=int, help="threads of the dynamic-loop kernel")
    parser.add_argument("--saxpy-n", type=int, help="elements of the saxpy arrays")
    parser.add_argument("--repeat", type=int, help="timed repeats per library (default 7)")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--png", default="compare.png", help="bar chart (needs matplotlib; "
                        "'' for none)")
    parser.add_argument("--json", default="", help="write the raw results here")
    parser.add_argument("--device", default="cpu", help="qdarray's device, e.g. cuda:0 (the "
                        "peers that run there follow; CPU-only peers are skipped)")
    args = parser.parse_args(argv)
    quick = args.quick
    problem = W.Problem(saxpy_n=args.saxpy_n or (1_000_000 if quick else 10_000_000),
                        n=args.n or (100_000 if quick else 1_000_000), device=args.device)
    repeat = args.repeat or (3 if quick else 7)
    libs, skipped = build(args.peers, problem)
    result = run_all(libs, problem, repeat, 0.02 if quick else 0.1, skipped)
    result.update(repeat=repeat, n=problem.n, saxpy_n=problem.saxpy_n, device=problem.device,
                  machine=machine(),
                  skipped=skipped,
                  versions=versions([k for k in ["qdarray", *libs] if k not in skipped]))
    print(report(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.png:
        from _chart import bar_chart

        print(bar_chart(result, args.png))
    return result


if __name__ == "__main__":
    main()
