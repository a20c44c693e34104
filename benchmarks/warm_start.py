"""First call of a cached kernel in a new process, against a cached `numba.njit` of the same
body in a new process.

    python benchmarks/warm_start.py [--runs 7] [--keep DIR]

Writes two scripts into a temporary directory, each timing from before its imports to the
end of its first call: one defines a qdarray kernel (a loop with a data-dependent trip count)
and calls it on NumPy arrays, then calls its reverse (`kernel.grad`, on qdarray arrays with
gradients); the other defines the same body as a `numba.njit(cache=True)` function and calls
it on the same NumPy arrays. Bytecode caches are on for both (`PYTHONPYCACHEPREFIX` in the
work directory). Each script runs twice first to fill the
caches (qdarray's in `DIR/qdarray-cache`, numba's beside the script), then `--runs` times; the
medians are reported: seconds to the end of the first call (imports included: numba's own
start-up is the floor), the CPU seconds the process used until then (the figure to compare
on a busy machine, whose waits inflate wall time), the process's wall time, and for qdarray
the first reverse call and the cache counters of the last run (a warm first call runs no
frontend: `entries_loaded`; its reverse runs no transform: `reverse_plans_loaded`; numba
compiles nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QDARRAY = '''
import time
t0 = time.perf_counter()
import json
import numpy as np
import qdarray as qd

@qd.kernel
def body(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * 0.5 + 1.0
        y[i] += v

x = np.linspace(0.0, 1.0, 1000)
a = (np.arange(1000) % 7).astype(np.int32)
y = np.zeros(1000)
body(x, a, y)  # NumPy arrays, as the numba function gets
t1 = time.perf_counter()
c1 = time.process_time()
qx = qd.asarray(x, requires_grad=True)
qy = qd.asarray(y, requires_grad=True)
qy.grad[...] = 1.0
body.grad(qx, a, qy)
t2 = time.perf_counter()
stats = qd.kernels.cache_stats()
print(json.dumps({"first_call": t1 - t0, "first_call_cpu": c1, "first_reverse": t2 - t1,
                  "stats": {k: v for k, v in stats.items() if k != "directory"}}))
'''

NUMBA = '''
import time
t0 = time.perf_counter()
import json
import numba
import numpy as np

@numba.njit(cache=True)
def body(x, a, y):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * 0.5 + 1.0
        y[i] += v

x = np.linspace(0.0, 1.0, 1000)
a = (np.arange(1000) % 7).astype(np.int32)
y = np.zeros(1000)
body(x, a, y)
t1 = time.perf_counter()
print(json.dumps({"first_call": t1 - t0, "first_call_cpu": time.process_time()}))
'''


def _run(script: Path, env: dict[str, str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed:\n{done.stderr}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def measure(workdir: Path, runs: int) -> dict[str, Any]:
    """Medians over `runs` warm runs of each script (see the module docstring)."""
    env = {**os.environ, "QDARRAY_CACHE_DIR": str(workdir / "qdarray-cache"),
           "QDARRAY_DEBUG": "0", "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}
    # Both processes read their modules' bytecode caches, as an installed package does
    # (with PYTHONDONTWRITEBYTECODE set, a source checkout would compile every module of
    # qdarray at each start, and numba's come from site-packages' caches).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    scripts = {"qdarray": workdir / "qd_first_call.py", "numba": workdir / "nb_first_call.py"}
    scripts["qdarray"].write_text(QDARRAY)
    scripts["numba"].write_text(NUMBA)
    for script in scripts.values():
        for _ in range(2):
            _run(script, env)
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in scripts}
    for _ in range(runs):  # interleaved, so that load on the machine hits both alike
        for name, script in scripts.items():
            samples[name].append(_run(script, env))
    result: dict[str, Any] = {}
    for name, rows in samples.items():
        result[name] = {k: statistics.median(r[k] for r in rows)
                        for k in rows[0] if k != "stats"}
    result["qdarray_stats"] = samples["qdarray"][-1]["stats"]
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", help="work in this directory (kept) instead of a temporary one")
    opts = parser.parse_args(argv)
    if opts.keep:
        Path(opts.keep).mkdir(parents=True, exist_ok=True)
        result = measure(Path(opts.keep), opts.runs)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = measure(Path(tmp), opts.runs)
    qd_, nb = result["qdarray"], result["numba"]
    print(f"medians of {opts.runs} warm runs in new processes (seconds):")
    print(f"  cached numba.njit, imports + first call:   {nb['first_call']:.3f}"
          f"   (process wall {nb['wall']:.3f})")
    print(f"  cached qdarray kernel, imports + first call: {qd_['first_call']:.3f}"
          f"   (process wall {qd_['wall']:.3f})")
    print(f"  difference: {qd_['first_call'] - nb['first_call']:+.3f} (goal: within 0.1)")
    print(f"  CPU seconds of the process to the end of the first call: numba "
          f"{nb['first_call_cpu']:.3f}, qdarray {qd_['first_call_cpu']:.3f}, difference "
          f"{qd_['first_call_cpu'] - nb['first_call_cpu']:+.3f} (less sensitive to a busy machine)")
    print(f"  qdarray first reverse call after it:        {qd_['first_reverse']:.3f}")
    stats = result["qdarray_stats"]
    print("  qdarray cache counters of the last run: "
          + ", ".join(f"{k} {stats[k]}" for k in ("entries_loaded", "reverse_plans_loaded",
                                                   "modules_written", "numba_compiled",
                                                   "numba_loaded")))
    return result


if __name__ == "__main__":
    main()
