"""`qd.jit` on the CPU: elementwise chains and compare_tape's mixed program, measured in one run.

    python benchmarks/compare_jit.py [--n N] [--repeat R] [--threads T]
                                     [--only chains|gradient|mixed|small]

1. Elementwise chains of float32 arrays of N elements (default 1e7) with T threads
   (default 2): `arith6`, six arithmetic operations `((a * x + b) * x - a) * 0.5 + b`,
   and `tanh6`, the issue's `qd.tanh(a * x + b) * 0.5 + 0.5` with one more subtraction
   (qd.jit fuses the operations on either side of `tanh`, which stays NumPy's: docs/jit.md).
   Each repeat runs qd.jit (one fused kernel, numba's threads set to T), NumPy (one
   temporary per operation, single-threaded), numexpr (`set_num_threads(T)`) and eager
   qdarray once each, in a shuffled order; wall-clock time; a ratio is the median of the
   per-repeat ratios peer / qd.jit (above 1, qd.jit is faster) with half the interquartile
   range. Results are checked against NumPy first (bit for bit for `arith6`).
2. `qd.ad.value_and_grad` of `sum(arith6)` with respect to a, x and b at N elements: of the
   jitted function (a fused forward and a fused reverse kernel) against the eager one and
   JAX's `jax.jit(value_and_grad)` on the CPU.
3. compare_tape's mixed program (N = 1e6 by default with --mixed-n): the forward value
   jitted against eager, `qd.ad.value_and_grad` of the jitted program against the eager
   one (the jitted program runs its calls through the tape there: docs/jit.md), and against
   JAX's `jax.jit(value_and_grad)` of compare_tape's masked-loop formulation on the CPU.

4. Host time per call of `arith6` on 16-element arrays (CPU time of this process, best of
   blocks of --calls calls): qd.jit, eager qdarray and NumPy.

Missing peers (numexpr, JAX) are reported as skipped.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
# numba's OpenMP workers spin after a parallel loop by default, taking the cores from the
# libraries timed next on a small machine; passive waiting leaves them free.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402
import numpy as np  # noqa: E402

import qdarray as qd  # noqa: E402

CHAINS = {
    "arith6": "((a * x + b) * x - a) * 0.5 + b",
    "tanh6": "tanh(a * x + b) * 0.5 + 0.5 - x",
}
# numexpr computes a float32 array times the literal 0.5 in float64; a float32 constant
# keeps its result float32, as NumPy's and qdarray's are.
NUMEXPR = {k: v.replace("0.5", "h") for k, v in CHAINS.items()}


def _qd_chain(name: str) -> Callable[..., Any]:
    if name == "arith6":
        return lambda a, x, b: ((a * x + b) * x - a) * 0.5 + b
    return lambda a, x, b: qd.tanh(a * x + b) * 0.5 + 0.5 - x


def _np_chain(name: str) -> Callable[..., Any]:
    if name == "arith6":
        return lambda a, x, b: ((a * x + b) * x - a) * np.float32(0.5) + b
    return lambda a, x, b: np.tanh(a * x + b) * np.float32(0.5) + np.float32(0.5) - x


def _order(names: list[str], r: int) -> list[str]:
    """The order of repeat `r`: shuffled (seeded), so that no case always runs after the
    same other one (a rotation would: the memory and threads one leaves behind bias the
    next)."""
    order = list(names)
    random.Random(r).shuffle(order)
    return order


def _ratios(base: list[float], peer: list[float]) -> tuple[float, float]:
    r = sorted(p / b for b, p in zip(base, peer, strict=True))
    return r[len(r) // 2], (r[3 * len(r) // 4] - r[len(r) // 4]) / 2


def chains(n: int, repeat: int, threads: int) -> dict[str, Any]:
    """Time every chain with every library present; print and return the table."""
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        import numexpr
        numexpr.set_num_threads(threads)
        skipped = {}
    except ImportError as exc:
        numexpr = None
        skipped = {"numexpr": f"numexpr is not installed ({exc})"}
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    arrays = [qd.asarray(h) for h in host]
    out: dict[str, Any] = {"ratios": {}, "times": {}, "skipped": skipped}
    print(f"\nelementwise chains, N = {n:.0e} float32, {threads} threads, "
          f"median of {repeat} repeats (ratio = peer time / qd.jit time):")
    for name, text in CHAINS.items():
        jitted = qd.jit(_qd_chain(name))
        eager = _qd_chain(name)
        ref = _np_chain(name)(*host)
        got = np.asarray(jitted(*arrays))
        got = np.asarray(jitted(*arrays))
        if name == "arith6":
            assert np.array_equal(got, ref), "qd.jit differs from NumPy"
        else:
            np.testing.assert_allclose(got, ref, rtol=4e-7 * 4, atol=1e-6)
        cases: dict[str, Callable[[], Any]] = {
            "qd.jit": lambda jitted=jitted: jitted(*arrays),
            "numpy": lambda name=name: _np_chain(name)(*host),
            "qdarray eager": lambda eager=eager: eager(*arrays),
        }
        if numexpr is not None:
            env = dict(zip("axb", host, strict=True)) | {"h": np.float32(0.5)}
            cases["numexpr"] = lambda name=name, env=env: numexpr.evaluate(NUMEXPR[name], env)
            np.testing.assert_allclose(cases["numexpr"](), ref, rtol=1e-5, atol=1e-6)
        names = list(cases)
        times: dict[str, list[float]] = {k: [] for k in names}
        for k in names:
            cases[k]()  # warm
        for r in range(repeat):
            for k in _order(names, r):
                t0 = time.perf_counter()
                cases[k]()
                times[k].append(time.perf_counter() - t0)
        base = times["qd.jit"]
        out["times"][name] = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        out["ratios"][name] = {k: _ratios(base, times[k]) for k in names if k != "qd.jit"}
        print(f"  {name}: {text}")
        for k in names:
            line = f"    {k:14s} {out['times'][name][k] * 1e3:8.2f} ms"
            if k != "qd.jit":
                m, q = out["ratios"][name][k]
                line += f"   {k} / qd.jit = {m:.2f} ±{q:.2f}"
            print(line)
    for k, why in skipped.items():
        print(f"  {k} skipped: {why}")
    return out


def mixed(n: int, repeat: int) -> dict[str, Any]:
    """compare_tape's mixed program: forward and value_and_grad, jitted against eager."""
    from compare_tape import TRIPS, Skipped, jax_case, qd_program

    rng = np.random.default_rng(7)
    raw = qd.asarray(rng.normal(size=n).astype(np.float32))
    w = qd.asarray(np.array([0.8, -0.1], dtype=np.float32))
    a = qd.asarray(rng.integers(0, TRIPS, n).astype(np.int32))
    t = qd.asarray(rng.uniform(0.2, 0.6, n).astype(np.float32))
    jitted = qd.jit(qd_program)
    vg_eager = qd.ad.value_and_grad(qd_program, argnums=(0, 1))
    vg_jit = qd.ad.value_and_grad(jitted, argnums=(0, 1))
    skipped: dict[str, str] = {}
    try:
        data = {"raw": np.asarray(raw), "w": np.asarray(w), "a": np.asarray(a),
                "t": np.asarray(t)}
        jax_run = jax_case(data, "cpu")[0]
    except Skipped as exc:
        jax_run = None
        skipped["jax"] = str(exc)
    cases: dict[str, Callable[[], Any]] = {
        "forward qd.jit": lambda: float(jitted(raw, w, a, t)),
        "forward eager": lambda: float(qd_program(raw, w, a, t)),
        "value_and_grad of qd.jit": lambda: float(vg_jit(raw, w, a, t)[0]),
        "value_and_grad eager": lambda: float(vg_eager(raw, w, a, t)[0]),
    }
    if jax_run is not None:
        cases["jax.jit(value_and_grad)"] = jax_run
    assert cases["forward qd.jit"]() == cases["forward qd.jit"]()
    np.testing.assert_allclose(cases["forward qd.jit"](), cases["forward eager"](), rtol=1e-6)
    g1 = vg_jit(raw, w, a, t)[1]
    g2 = vg_eager(raw, w, a, t)[1]
    for x, y in zip(g1, g2, strict=True):  # the fused reverse reassociates a little
        x, y = np.asarray(x), np.asarray(y)
        assert np.max(np.abs(x - y)) <= 1e-5 * np.max(np.abs(y)), "gradients differ"
    names = list(cases)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeat):
        for k in _order(names, r):
            time.sleep(0.05)  # as compare_tape.py: the threads of the run before settle
            t0 = time.perf_counter()
            cases[k]()
            times[k].append(time.perf_counter() - t0)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(f"\ncompare_tape's mixed program, N = {n:.0e} float32, median of {repeat} repeats:")
    fwd = _ratios(times["forward qd.jit"], times["forward eager"])
    rev = _ratios(times["value_and_grad of qd.jit"], times["value_and_grad eager"])
    for k in names:
        print(f"    {k:26s} {med[k] * 1e3:8.2f} ms")
    print(f"    forward: eager / qd.jit = {fwd[0]:.2f} ±{fwd[1]:.2f}; value_and_grad: eager / "
          f"qd.jit = {rev[0]:.2f} ±{rev[1]:.2f}")
    out = {"times": med, "forward": fwd, "value_and_grad": rev, "skipped": skipped}
    if jax_run is not None:
        out["jax"] = _ratios(times["jax.jit(value_and_grad)"],
                             times["value_and_grad of qd.jit"])
        print(f"    value_and_grad of qd.jit / jax.jit = {out['jax'][0]:.2f} ±{out['jax'][1]:.2f}"
              " (JAX: the masked 64-step loop of compare_tape.py)")
    for k, why in skipped.items():
        print(f"    {k} skipped: {why}")
    return out


def gradient(n: int, repeat: int) -> dict[str, Any]:
    """value_and_grad of sum(arith6) with respect to a, x and b (float32, N elements):
    qd.ad.value_and_grad of the jitted function (one fused forward, one fused reverse)
    against the eager one and, where JAX is installed, jax.jit(jax.value_and_grad)."""
    rng = np.random.default_rng(1)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    arrays = [qd.asarray(h) for h in host]
    chain = _qd_chain("arith6")

    def loss(a: Any, x: Any, b: Any) -> Any:
        return qd.sum(chain(a, x, b))

    vg_jit = qd.ad.value_and_grad(qd.jit(loss), argnums=(0, 1, 2))
    vg_eager = qd.ad.value_and_grad(loss, argnums=(0, 1, 2))
    got, want = vg_jit(*arrays), vg_eager(*arrays)
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    cases: dict[str, Callable[[], Any]] = {
        "qd.jit": lambda: float(vg_jit(*arrays)[0]),
        "qdarray eager": lambda: float(vg_eager(*arrays)[0]),
    }
    skipped: dict[str, str] = {}
    try:
        import jax
        import jax.numpy as jnp

        def jloss(a: Any, x: Any, b: Any) -> Any:
            return jnp.sum(((a * x + b) * x - a) * 0.5 + b)

        jvg = jax.jit(jax.value_and_grad(jloss, argnums=(0, 1, 2)))
        dev = jax.devices("cpu")[0]
        jarrays = [jax.device_put(h, dev) for h in host]
        cases["jax.jit"] = lambda: float(jvg(*jarrays)[0])
    except ImportError as exc:
        skipped["jax"] = f"jax is not installed ({exc})"
    names = list(cases)
    times: dict[str, list[float]] = {k: [] for k in names}
    for k in names:
        cases[k]()
    for r in range(repeat):
        for k in _order(names, r):
            time.sleep(0.05)
            t0 = time.perf_counter()
            cases[k]()
            times[k].append(time.perf_counter() - t0)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    ratios = {k: _ratios(times["qd.jit"], times[k]) for k in names if k != "qd.jit"}
    print(f"\nvalue_and_grad of sum(arith6), N = {n:.0e} float32, median of {repeat} repeats "
          "(ratio = peer time / qd.jit time):")
    for k in names:
        line = f"    {k:14s} {med[k] * 1e3:8.2f} ms"
        if k != "qd.jit":
            line += f"   {k} / qd.jit = {ratios[k][0]:.2f} ±{ratios[k][1]:.2f}"
        print(line)
    for k, why in skipped.items():
        print(f"    {k} skipped: {why}")
    return {"times": med, "ratios": ratios, "skipped": skipped}


def small(calls: int) -> dict[str, float]:
    """Host time per call of `arith6` on 16-element float32 arrays, in microseconds of this
    process's CPU time (best of 5 blocks of `calls` calls): qd.jit, eager qdarray, NumPy."""
    host = [np.arange(16, dtype=np.float32) + k for k in range(3)]
    arrays = [qd.asarray(h) for h in host]
    jitted = qd.jit(_qd_chain("arith6"))
    eager = _qd_chain("arith6")
    numpy = _np_chain("arith6")
    cases = {"qd.jit": lambda: jitted(*arrays), "qdarray eager": lambda: eager(*arrays),
             "numpy": lambda: numpy(*host)}
    out = {}
    for k, f in cases.items():
        f()
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(calls):
                f()
            best = min(best, time.process_time() - t0)
        out[k] = best / calls * 1e6
    print("\narith6 on 16-element float32 arrays, host time per call: " + ", ".join(
        f"{k} {v:.1f} us" for k, v in out.items()))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--mixed-n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=("chains", "gradient", "mixed", "small"))
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if args.only in (None, "chains"):
        result["chains"] = chains(args.n, args.repeat, args.threads)
    if args.only in (None, "gradient"):
        result["gradient"] = gradient(args.n, args.repeat)
    if args.only in (None, "mixed"):
        result["mixed"] = mixed(args.mixed_n, args.repeat)
    if args.only in (None, "small"):
        result["small"] = small(args.calls)
    return result


if __name__ == "__main__":
    main()
