"""qdarray on a CUDA GPU side by side with CuPy, hand-written numba.cuda, JAX and PyTorch.

    python benchmarks/compare_cuda.py [--quick] [--json PATH]

Sections (the workloads of the CUDA issue, every figure measured in this run):

1. saxpy, 1e8 float32: a qdarray kernel, the same kernel hand-written in numba.cuda (given
   CuPy arrays, and given numba device arrays), CuPy's ElementwiseKernel, and the namespace
   expression `a * x + y` in qdarray and in CuPy. Bandwidth counts 12 bytes per element.
2. Namespace operations against the same CuPy calls.
3. The max-reducer (the kernel that sizes adstacks) over 1e8 int32 against `cupy.max`.
4. The nonlinear dynamic-loop kernel (`v = v - 0.1*v*v + 0.01` repeated a[i] times, a[i]
   uniform in [0, 64), N = 1e7 float32, `y[0] += v`): qdarray forward, reverse and forward
   plus reverse (a Tape, with the sizing cache; and with fresh sizing), against JAX's and
   PyTorch's masked loops on the same GPU, with each gradient checked against a float64
   reference. Quadrants' figures are the issue's (H200), not measured here.

Each time is the best of several synchronised calls (after warm-up). `--quick` shrinks the
sizes (and runs under numba's simulator, where CuPy, JAX and PyTorch are skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import qdarray as qd  # noqa: E402

QUADRANTS_MS = {"fwd": 17.6, "rev": 14.2}  # the issue's H200 figures
ISSUE_TBPS = {"cupy saxpy": 2.37, "numba saxpy": 2.65, "cupy int32 max": 3.6}
RESULTS: dict[str, Any] = {}


def _cupy() -> Any:
    try:
        import cupy

        return cupy
    except Exception:  # noqa: BLE001 - the simulator, or no CuPy
        return None


CP = _cupy()


def sync() -> None:
    if CP is not None:
        CP.cuda.runtime.deviceSynchronize()


def best(f: Callable[[], Any], repeat: int = 10, warmup: int = 2) -> float:
    """The best of `repeat` synchronised calls, in seconds."""
    for _ in range(warmup):
        f()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def row(name: str, seconds: float | None, nbytes: int | None = None, ref: float | None = None,
        note: str = "") -> None:
    if seconds is None:
        print(f"  {name:<46} {'skipped':>10}  {note}")
        RESULTS[name] = {"skipped": note}
        return
    ms = seconds * 1e3
    bw = f"{nbytes / seconds / 1e12:6.2f} TB/s" if nbytes else " " * 11
    ratio = f"x{seconds / ref:5.2f}" if ref else "      "
    print(f"  {name:<46} {ms:9.3f} ms  {bw}  {ratio}  {note}")
    RESULTS[name] = {"ms": ms, "TB/s": nbytes / seconds / 1e12 if nbytes else None,
                     "ratio": seconds / ref if ref else None, "note": note}


# -- 1. saxpy -------------------------------------------------------------------------------


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def numba_saxpy() -> Any:
    from numba import cuda

    @cuda.jit
    def kernel(a, x, y):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < x.shape[0]:
            y[i] = a * x[i] + y[i]

    return kernel


def section_saxpy(n: int, dev: str) -> None:
    print(f"\n1. saxpy over {n:.0e} float32 (12 bytes per element)")
    rng = np.random.default_rng(0)
    xs, ys = rng.random(n, np.float32), rng.random(n, np.float32)
    x, y = qd.asarray(xs, device=dev), qd.asarray(ys, device=dev)
    a = np.float32(2.0)
    nbytes = 12 * n
    t_numba = None
    if CP is not None:
        kern = numba_saxpy()
        cx, cy = CP.asarray(x), CP.asarray(y)  # views of qdarray's memory
        from numba import cuda

        blocks = (n + 255) // 256
        t_numba = best(lambda: kern[blocks, 256](a, cx, cy))
        row("numba.cuda hand-written, CuPy arguments", t_numba, nbytes)
        nx, ny = cuda.as_cuda_array(cx), cuda.as_cuda_array(cy)
        row("numba.cuda hand-written, numba arguments",
            best(lambda: kern[blocks, 256](a, nx, ny)), nbytes, t_numba)
    t_qd = best(lambda: saxpy(a, x, y))
    row("qdarray kernel", t_qd, nbytes, t_numba, "goal: <= x1.05 of numba.cuda")
    if CP is not None:
        ek = CP.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y", "sx")
        cx, cy = CP.asarray(x), CP.asarray(y)
        t_cp = best(lambda: ek(a, cx, cy))
        row("CuPy ElementwiseKernel", t_cp, nbytes, t_numba)
        row("CuPy expression a * x + y", best(lambda: a * cx + cy), 20 * n, None,
            "2 kernels: 20 bytes per element")
    row("qdarray expression a * x + y", best(lambda: a * x + y), 20 * n, None,
        "2 kernels: 20 bytes per element")
    small = qd.asarray(xs[:16], device=dev), qd.asarray(ys[:16], device=dev)
    row("qdarray kernel launch, 16 elements", best(lambda: saxpy(a, *small), 50), None, None,
        "launch overhead")
    if CP is not None:
        c16 = CP.asarray(small[0]), CP.asarray(small[1])
        row("numba.cuda launch, 16 elements, CuPy arguments",
            best(lambda: kern[1, 256](a, *c16), 50), None, None, "launch overhead")
    print(f"  (the issue's H200 figures: CuPy saxpy {ISSUE_TBPS['cupy saxpy']} TB/s, "
          f"numba.cuda {ISSUE_TBPS['numba saxpy']} TB/s)")


# -- 2. namespace operations ----------------------------------------------------------------


def section_namespace(n: int, dev: str) -> None:
    print(f"\n2. Namespace operations, {n:.0e} float32 elements (ratio: qdarray / CuPy)")
    rng = np.random.default_rng(1)
    hx, hy = rng.random(n, np.float32), rng.random(n, np.float32)
    x, y = qd.asarray(hx, device=dev), qd.asarray(hy, device=dev)
    idx = qd.asarray(rng.integers(0, n, n // 4), device=dev)
    m = int(np.sqrt(n // 16))
    am = qd.asarray(rng.random((m, m), np.float32), device=dev)
    cases: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("add", lambda xp, a, b: xp.add(a, b), (x, y)),
        ("multiply", lambda xp, a, b: xp.multiply(a, b), (x, y)),
        ("sin", lambda xp, a: xp.sin(a), (x,)),
        ("exp", lambda xp, a: xp.exp(a), (x,)),
        ("sqrt", lambda xp, a: xp.sqrt(a), (x,)),
        ("where", lambda xp, a, b: xp.where(a > b, a, b), (x, y)),
        ("astype float64", lambda xp, a: xp.astype(a, xp.float64), (x,)),
        ("sum", lambda xp, a: xp.sum(a), (x,)),
        ("max", lambda xp, a: xp.max(a), (x,)),
        ("cumulative_sum", lambda xp, a: xp.cumulative_sum(a), (x,)),
        ("take", lambda xp, a, i: xp.take(a, i), (x, idx)),
        ("sort (1/10 of the elements)", lambda xp, a: xp.sort(a), (x[: n // 10],)),
        (f"matmul {m}x{m}", lambda xp, a: xp.matmul(a, a), (am,)),
    ]
    cxp = None
    if CP is not None:
        import array_api_compat.cupy as cxp
    for name, f, args in cases:
        t_qd = best(lambda f=f, args=args: f(qd, *args), 5)
        if cxp is None:
            row(name, t_qd, None, None, "CuPy not present")
            continue
        cargs = tuple(CP.asarray(a) for a in args)
        t_cp = best(lambda f=f, cargs=cargs: f(cxp, *cargs), 5)
        row(name, t_qd, None, t_cp, f"CuPy {t_cp * 1e3:.3f} ms; goal: <= x1.0")


# -- 3. the max-reducer ---------------------------------------------------------------------


def section_reducer(n: int, dev: str) -> None:
    from qdarray import _dtypes
    from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
    from qdarray.ad.sizing.max_reducer import Reducer, chain_of
    from qdarray.kernels.types import ArrayType

    print(f"\n3. The max-reducer over {n:.0e} int32 (4 bytes per element)")
    a_np = np.random.default_rng(2).integers(0, 1 << 30, n).astype(np.int32)
    a = qd.asarray(a_np, device=dev)
    i = LoopVar(1, "i")
    chain = chain_of(MaxOverRange(i, Const(0), Const(n), Read("a", (i,))))
    device = qd.Device(dev)
    reducer = Reducer(chain, {"a": ArrayType(_dtypes.int32, 1)}, device.backend.target, device)
    assert reducer.run({"a": a}, [], [0], [n]) == int(a_np.max())
    t_cp = None
    if CP is not None:
        ca = CP.asarray(a)
        t_cp = best(lambda: int(CP.max(ca)))
        row("cupy.max (and the value read back)", t_cp, 4 * n)
    t_red = best(lambda: reducer.run({"a": a}, [], [0], [n]))
    row("qdarray max-reducer dispatch", t_red, 4 * n, t_cp,
        "goal: >= 70% of CuPy's bandwidth (ratio <= x1.43)")
    print(f"  (the issue's H200 figure: CuPy int32 max {ISSUE_TBPS['cupy int32 max']} TB/s)")


# -- 4. the dynamic-loop kernel ---------------------------------------------------------------


@qd.kernel
def dynamic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def reference_gradient(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """d sum(v) / dx in float64, stepping every element `a` times."""
    v = x.astype(np.float64)
    d = np.ones_like(v)
    for k in range(int(a.max(initial=0))):
        live = a > k
        d = np.where(live, d * (1 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    return d


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-6)))
    ok = err < 1e-3
    print(f"  gradient check {name}: max relative error {err:.2e} ({'ok' if ok else 'WRONG'})")
    RESULTS[f"gradient {name}"] = {"max_rel_err": err, "ok": ok}


def section_dynamic(n: int, dev: str, trips: int = 64) -> None:
    print(f"\n4. Dynamic-loop kernel, N = {n:.0e} float32, a[i] uniform in [0, {trips})")
    rng = np.random.default_rng(3)
    x_np = rng.uniform(0.1, 0.9, n).astype(np.float32)
    a_np = rng.integers(0, trips, n).astype(np.int32)
    x = qd.asarray(x_np, device=dev, requires_grad=True)
    a = qd.asarray(a_np, device=dev)
    y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
    sub = slice(0, min(n, 200_000))
    want = reference_gradient(x_np[sub], a_np[sub])

    def fwd_rev() -> None:
        x.grad[...] = 0.0
        with qd.ad.Tape(loss=y):
            dynamic(x, a, y)

    fwd_rev()
    _check("qdarray", np.asarray(x.grad.to_device("cpu"))[sub], want)
    t_fwd = best(lambda: dynamic(x, a, y), 5)
    y.grad[...] = 1.0
    t_rev = best(lambda: dynamic.grad(x, a, y), 5)
    t_both = best(fwd_rev, 5)

    def fresh() -> None:
        a._buffer.generation += 1  # as if `a` had been written: sized again
        fwd_rev()

    t_fresh = best(fresh, 5)
    quadrants = (QUADRANTS_MS["fwd"] + QUADRANTS_MS["rev"]) / 1e3
    t_jax, t_torch = _jax(x_np, a_np, trips, sub, want), _torch(x_np, a_np, trips, sub, want)
    row("qdarray forward", t_fwd, None, QUADRANTS_MS["fwd"] / 1e3, "ratio: / Quadrants fwd")
    row("qdarray reverse (sizing cached)", t_rev, None, QUADRANTS_MS["rev"] / 1e3,
        "ratio: / Quadrants rev")
    row("qdarray forward + reverse (Tape, cached sizing)", t_both, None, t_jax,
        "ratio: / JAX; goal < x1.00")
    row("qdarray forward + reverse, fresh sizing", t_fresh, None, t_jax, "ratio: / JAX")
    row("  the same against Quadrants (17.6 + 14.2 ms)", t_both, None, quadrants,
        "goal: <= x0.50")
    row("JAX masked fori_loop, jax.grad", t_jax, None, None,
        "skipped" if t_jax is None else f"{trips} masked steps")
    row("PyTorch masked loop, autograd", t_torch, None, t_jax,
        "skipped" if t_torch is None else "ratio: / JAX")


def _jax(x_np: np.ndarray, a_np: np.ndarray, trips: int, sub: slice, want: np.ndarray
         ) -> float | None:
    if CP is None:
        return None
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax

        gpu = [d for d in jax.devices() if d.platform == "gpu"]
        if not gpu:
            print("  JAX: no GPU device")
            return None
        x, a = jax.device_put(x_np, gpu[0]), jax.device_put(a_np, gpu[0])

        def total(x: Any, a: Any) -> Any:
            def step(k: Any, v: Any) -> Any:
                return jnp.where(k < a, v - 0.1 * v * v + 0.01, v)
            return jnp.sum(lax.fori_loop(0, trips, step, x))

        grad = jax.jit(jax.grad(total))
        _check("JAX", np.asarray(grad(x, a))[sub], want)
        return best(lambda: grad(x, a).block_until_ready(), 5)
    except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        print(f"  JAX: {type(exc).__name__}: {exc}"[:300])
        return None


def _torch(x_np: np.ndarray, a_np: np.ndarray, trips: int, sub: slice, want: np.ndarray
           ) -> float | None:
    if CP is None:
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            print("  PyTorch: no CUDA device")
            return None
        x = torch.from_numpy(x_np).cuda().requires_grad_(True)
        a = torch.from_numpy(a_np).cuda()

        def both() -> None:
            x.grad = None
            v = x
            for k in range(trips):
                v = torch.where(a > k, v - 0.1 * v * v + 0.01, v)
            v.sum().backward()
            torch.cuda.synchronize()

        both()
        _check("PyTorch", x.grad.cpu().numpy()[sub], want)
        return best(both, 5)
    except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        print(f"  PyTorch: {type(exc).__name__}: {exc}"[:300])
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (the simulator)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    devices = [d for d in qd.__array_namespace_info__().devices() if d.kind == "cuda"]
    if not devices:
        sys.exit("No CUDA device: install qdarray[cuda13] on a machine with an NVIDIA GPU "
                 "(or run with --quick under NUMBA_ENABLE_CUDASIM=1).")
    dev = str(devices[0])
    caps = devices[0].backend.capabilities(devices[0])
    print(f"qdarray {qd.__version__} on {dev} ({caps['device name']}); "
          f"CuPy {CP.__version__ if CP is not None else 'absent'}")
    quick = args.quick
    section_saxpy(2_000 if quick else 100_000_000, dev)
    section_namespace(4_096 if quick else 100_000_000, dev)
    section_reducer(5_000 if quick else 100_000_000, dev)
    section_dynamic(300 if quick else 10_000_000, dev)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": caps["device name"], "results": RESULTS}, f, indent=1)


if __name__ == "__main__":
    main()
