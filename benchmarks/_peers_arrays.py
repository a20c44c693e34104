"""Peers without kernels over dynamic loops: JAX, PyTorch and CuPy.

They run the dynamic-loop kernel as a masked loop of max(a) whole-array steps
(`v = where(k < a, f(v), v)`), the formulation their users write: JAX cannot differentiate a
loop whose trip count is data (`fori_loop` with traced bounds has no reverse mode), and
PyTorch records every step of a Python loop on its tape. JAX and PyTorch run on the
problem's device (CPU or CUDA); CuPy needs a CUDA device.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _workloads import Case, Problem, Skipped  # noqa: E402


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any failure to import makes the peer skipped
        raise Skipped(f"{name} is not installed or does not import ({type(exc).__name__})"
                      ) from None


def jax_cases(p: Problem) -> dict[str, Case]:
    jax = _import("jax")
    jnp = _import("jax.numpy")
    lax = _import("jax.lax")
    try:
        device = jax.devices("gpu" if p.gpu else "cpu")[0]
    except RuntimeError as exc:
        raise Skipped(f"jax has no {p.device} device ({exc})"[:200]) from None
    trips = p.max_trips

    def put(values: np.ndarray) -> Any:
        return jax.device_put(values, device)

    saxpy = jax.jit(lambda s, x, y: s * x + y)
    x16, y16, sx, sy = put(p["x16"]), put(p["y16"]), put(p["sx"]), put(p["sy"])
    x, a = put(p["x"]), put(p["a"])
    two = np.float32(2.0)

    def total(x: Any, a: Any) -> Any:
        def step(k: Any, v: Any) -> Any:
            return jnp.where(k < a, v - 0.1 * v * v + 0.01, v)
        return jnp.sum(lax.fori_loop(0, trips, step, x))

    forward = jax.jit(total)
    vjp = jax.jit(lambda x, a: jax.vjp(lambda x: total(x, a), x))
    pullback = vjp(x, a)[1]
    reverse = jax.jit(lambda pb: pb(jnp.float32(1.0))[0])
    both = jax.jit(jax.grad(total))

    note = f"masked fori_loop of {trips} steps"
    return {
        "launch16": Case(lambda: saxpy(two, x16, y16).block_until_ready(), note="jit"),
        "saxpy": Case(lambda: saxpy(two, sx, sy).block_until_ready(), note="jit"),
        "fwd": Case(lambda: forward(x, a).block_until_ready(), note=note),
        "rev": Case(lambda: reverse(pullback).block_until_ready(), note="vjp pullback"),
        "fwd+rev": Case(lambda: both(x, a).block_until_ready(),
                        lambda: np.asarray(both(x, a)), note="jax.grad of " + note),
    }


def torch_cases(p: Problem) -> dict[str, Case]:
    torch = _import("torch")
    if p.gpu and not torch.cuda.is_available():
        raise Skipped(f"torch has no {p.device} device")
    trips = p.max_trips
    dev = p.device

    def put(values: np.ndarray) -> Any:
        return torch.from_numpy(values.copy()).to(dev)

    def synced(f: Any) -> Any:
        if not p.gpu:
            return f

        def run() -> None:
            f()
            torch.cuda.synchronize()
        return run

    x16, y16, sx, sy = put(p["x16"]), put(p["y16"]), put(p["sx"]), put(p["sy"])
    x = put(p["x"]).requires_grad_(True)
    a = put(p["a"])

    def total(x: Any) -> Any:
        v = x
        for k in range(trips):
            v = torch.where(a > k, v - 0.1 * v * v + 0.01, v)
        return v.sum()

    def forward() -> None:
        with torch.no_grad():
            total(x)

    graph = total(x)

    def reverse() -> None:
        graph.backward(retain_graph=True)

    def both() -> None:
        x.grad = None
        total(x).backward()

    def gradient() -> np.ndarray:
        both()
        return x.grad.cpu().numpy().copy()

    note = f"masked loop of {trips} steps"
    return {
        "launch16": Case(synced(lambda: y16.add_(x16, alpha=2.0)), note="y.add_(x, alpha=a)"),
        "saxpy": Case(synced(lambda: sy.add_(sx, alpha=2.0)), note="y.add_(x, alpha=a)"),
        "fwd": Case(synced(forward), note=note + ", no_grad"),
        "rev": Case(synced(reverse), note="backward(retain_graph=True)"),
        "fwd+rev": Case(synced(both), gradient, note="autograd over a " + note),
    }


def cupy_cases(p: Problem) -> dict[str, Case]:
    if not p.gpu:
        raise Skipped(f"cupy runs on CUDA devices; this run is on {p.device} "
                      "(compare.py --device cuda:0)")
    cp = _import("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise Skipped("cupy: no CUDA device")
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        raise Skipped(f"cupy: no CUDA device ({type(exc).__name__})") from None
    trips = p.max_trips
    x16, y16, sx, sy = (cp.asarray(p[k]) for k in ("x16", "y16", "sx", "sy"))
    x, a = cp.asarray(p["x"]), cp.asarray(p["a"])
    saxpy = cp.ElementwiseKernel("float32 s, float32 x", "float32 y", "y = s * x + y", "saxpy")
    two = np.float32(2.0)

    def launch(xs: Any, ys: Any) -> None:
        saxpy(two, xs, ys)
        cp.cuda.Device().synchronize()

    def forward() -> None:
        v = x.copy()
        for k in range(trips):
            v = cp.where(a > k, v - np.float32(0.1) * v * v + np.float32(0.01), v)
        v.sum()
        cp.cuda.Device().synchronize()

    return {
        "launch16": Case(lambda: launch(x16, y16), note="ElementwiseKernel"),
        "saxpy": Case(lambda: launch(sx, sy), note="ElementwiseKernel"),
        "fwd": Case(forward, note=f"masked loop of {trips} steps"),
    }
