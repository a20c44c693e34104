"""Peers without kernels over dynamic loops: JAX, PyTorch and CuPy.

They run the dynamic-loop kernel as a masked loop of max(a) whole-array steps
(`v = where(k < a, f(v), v)`), the formulation their users write: JAX cannot differentiate a
loop whose trip count is data (`fori_loop` with traced bounds has no reverse mode), and
PyTorch records every step of a Python loop on its tape. All run on the CPU except CuPy,
which needs a CUDA device.
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
    cpu = jax.devices("cpu")[0]
    trips = p.max_trips

    def put(values: np.ndarray) -> Any:
        return jax.device_put(values, cpu)

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
    trips = p.max_trips
    x16, y16 = torch.from_numpy(p["x16"].copy()), torch.from_numpy(p["y16"].copy())
    sx, sy = torch.from_numpy(p["sx"].copy()), torch.from_numpy(p["sy"].copy())
    x = torch.from_numpy(p["x"].copy()).requires_grad_(True)
    a = torch.from_numpy(p["a"].copy())

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
        return x.grad.numpy().copy()

    note = f"masked loop of {trips} steps"
    return {
        "launch16": Case(lambda: y16.add_(x16, alpha=2.0), note="y.add_(x, alpha=a)"),
        "saxpy": Case(lambda: sy.add_(sx, alpha=2.0), note="y.add_(x, alpha=a)"),
        "fwd": Case(forward, note=note + ", no_grad"),
        "rev": Case(reverse, note="backward(retain_graph=True)"),
        "fwd+rev": Case(both, gradient, note="autograd over a " + note),
    }


def cupy_cases(p: Problem) -> dict[str, Case]:
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

    note = "on the GPU, against qdarray on the CPU"
    return {
        "launch16": Case(lambda: launch(x16, y16), note="ElementwiseKernel; " + note),
        "saxpy": Case(lambda: launch(sx, sy), note="ElementwiseKernel; " + note),
        "fwd": Case(forward, note=f"masked loop of {trips} steps; " + note),
    }
