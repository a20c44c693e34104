"""Peers with kernel languages: Taichi 1.7.4 and Quadrants 1.3.3 (one API), Warp, and Dr.Jit.

Each `*_cases(problem)` imports its library (raising `Skipped` when that fails), builds the
same kernels the qdarray workloads run, written as that library's users write them, and
returns one `Case` per workload it can run, on the problem's device (CPU or CUDA).
"""

# No `from __future__ import annotations`: Taichi and Quadrants evaluate kernel annotations.
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


def taichi_cases(p: Problem) -> dict[str, Case]:
    """Taichi: its adstack size is a global option fixed before compiling (`ad_stack_size`);
    the smallest that runs this kernel is max(a) + 2 (with max(a) + 1 it dies with a bus
    error, with the default it overflows silently or crashes)."""
    ti = _import("taichi")
    ti.init(arch=ti.cuda if p.gpu else ti.cpu, log_level=ti.WARN,
            ad_stack_size=p.max_trips + 2, cpu_max_num_threads=p.threads)
    return _taichi_like(ti, p, f"Tape; ad_stack_size={p.max_trips + 2} set by hand")


def quadrants_cases(p: Problem) -> dict[str, Case]:
    """Quadrants: adstacks sized at launch (`ad_stack_experimental_enabled=True`,
    `ad_stack_size=0`)."""
    qd = _import("quadrants")
    # A run on a Vulkan device compares with Quadrants' Vulkan back end on the same driver.
    arch = qd.cuda if p.gpu else qd.vulkan if p.device.startswith("vulkan") else qd.cpu
    qd.init(arch=arch, log_level=qd.WARN, ad_stack_experimental_enabled=True)
    return _taichi_like(qd, p, "Tape; adstacks sized at launch")


def _taichi_like(ti: Any, p: Problem, note: str) -> dict[str, Case]:
    arr = ti.types.ndarray(dtype=ti.f32, ndim=1)

    @ti.kernel
    def saxpy(s: ti.f32, x: arr, y: arr):  # type: ignore[valid-type]
        for i in range(x.shape[0]):
            y[i] = s * x[i] + y[i]

    def nd(values: np.ndarray) -> Any:
        out = ti.ndarray(ti.f32, shape=values.shape)
        out.from_numpy(values)
        return out

    x16, y16, sx, sy = nd(p["x16"]), nd(p["y16"]), nd(p["sx"]), nd(p["sy"])
    x = ti.field(ti.f32, shape=p.n, needs_grad=True)
    a = ti.field(ti.i32, shape=p.n)
    y = ti.field(ti.f32, shape=(), needs_grad=True)
    x.from_numpy(p["x"])
    a.from_numpy(p["a"])

    @ti.kernel
    def logistic():
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v - 0.1 * v * v + 0.01
            y[None] += v

    def launch(s: Any, xs: Any, ys: Any) -> None:
        saxpy(2.0, xs, ys)
        ti.sync()

    def forward() -> None:
        logistic()
        ti.sync()

    def reverse() -> None:
        logistic.grad()
        ti.sync()

    def both() -> None:
        with ti.ad.Tape(loss=y):  # zeroes all gradients, seeds y.grad with 1
            logistic()
        ti.sync()

    def gradient() -> np.ndarray:
        both()
        return np.asarray(x.grad.to_numpy())

    y.grad[None] = 1.0
    return {
        "launch16": Case(lambda: launch(2.0, x16, y16), note="ndarray arguments"),
        "saxpy": Case(lambda: launch(2.0, sx, sy), note="ndarray arguments"),
        "fwd": Case(forward, note="fields"),
        "rev": Case(reverse, note="kernel.grad()"),
        "fwd+rev": Case(both, gradient, note=note),
    }


def warp_cases(p: Problem) -> dict[str, Case]:
    """Warp (its CPU kernels run on one thread). Warp replays a dynamic loop in the reverse
    pass instead of storing the overwritten `v`, so its gradient is wrong; the check shows by
    how much."""
    wp = _import("warp")
    wp.config.quiet = True
    wp.init()
    dev = p.device

    @wp.kernel
    def saxpy(s: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):  # type: ignore
        i = wp.tid()
        y[i] = s * x[i] + y[i]

    @wp.kernel
    def logistic(x: wp.array(dtype=float), a: wp.array(dtype=int),  # type: ignore
                 y: wp.array(dtype=float)):  # type: ignore
        i = wp.tid()
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        wp.atomic_add(y, 0, v)

    def arr(values: np.ndarray, grad: bool = False) -> Any:
        return wp.array(values, dtype=wp.dtype_from_numpy(values.dtype), device=dev,
                        requires_grad=grad)

    x16, y16, sx, sy = arr(p["x16"]), arr(p["y16"]), arr(p["sx"]), arr(p["sy"])
    x, a = arr(p["x"], grad=True), arr(p["a"])
    y = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
    seed = wp.ones(1, dtype=float, device=dev)
    n = p.n

    def launch(xs: Any, ys: Any) -> None:
        wp.launch(saxpy, dim=xs.shape[0], inputs=[2.0, xs, ys], device=dev)
        wp.synchronize_device(dev)

    def forward() -> None:
        wp.launch(logistic, dim=n, inputs=[x, a, y], device=dev)
        wp.synchronize_device(dev)

    recorded = wp.Tape()
    with recorded:
        wp.launch(logistic, dim=n, inputs=[x, a, y], device=dev)
    y.grad.fill_(1.0)

    def reverse() -> None:
        recorded.backward()
        wp.synchronize_device(dev)

    def both() -> None:
        tape = wp.Tape()
        with tape:
            wp.launch(logistic, dim=n, inputs=[x, a, y], device=dev)
        tape.zero()
        tape.backward(grads={y: seed})
        wp.synchronize_device(dev)

    def gradient() -> np.ndarray:
        both()
        return np.asarray(x.grad.numpy())

    one = "" if p.gpu else "; one CPU thread"
    return {
        "launch16": Case(lambda: launch(x16, y16)),
        "saxpy": Case(lambda: launch(sx, sy), note=one[2:]),
        "fwd": Case(forward, note=one[2:]),
        "rev": Case(reverse, note="tape.backward()" + one),
        "fwd+rev": Case(both, gradient, note="Tape; replays the loop (wrong gradient)" + one),
    }


def drjit_cases(p: Problem) -> dict[str, Case]:
    """Dr.Jit 1.5 (its LLVM back end on the CPU, CUDA on a GPU): the dynamic loop as a
    symbolic `dr.while_loop`, whose reverse mode needs the loop's trip bound by hand
    (`max_iterations`, max(a) here: a smaller one gives a wrong gradient); its kernels run
    the threads of a loop in the lanes of SIMD registers, with masks. `dr.eval` and
    `dr.sync_thread` end each call."""
    dr = _import("drjit")
    if p.gpu:
        from drjit.cuda.ad import Float, Int
    else:
        from drjit.llvm.ad import Float, Int
        dr.set_thread_count(p.threads)
    a = Int(p["a"])
    trips = max(p.max_trips, 1)

    def run(x: Any) -> Any:
        def body(v: Any, i: Any) -> Any:
            return v - 0.1 * v * v + 0.01, i + 1
        v, _ = dr.while_loop(state=(x, Int(0)), cond=lambda v, i: i < a, body=body,
                             max_iterations=trips)
        return v

    xf = Float(p["x"])
    sx, sy = Float(p["sx"]), Float(p["sy"])
    x16, y16 = Float(p["x16"]), Float(p["y16"])

    def saxpy(xs: Any, ys: Any) -> None:
        out = 2.0 * xs + ys
        dr.eval(out)
        dr.sync_thread()

    def forward() -> None:
        s = dr.sum(run(xf))
        dr.eval(s)
        dr.sync_thread()

    def both() -> Any:
        x = Float(p["x"])
        dr.enable_grad(x)
        dr.backward(dr.sum(run(x)))
        g = x.grad
        dr.eval(g)
        dr.sync_thread()
        return g

    note = f"symbolic while_loop, max_iterations={trips} set by hand; dr.backward"
    return {
        "launch16": Case(lambda: saxpy(x16, y16), note="a traced expression, evaluated"),
        "saxpy": Case(lambda: saxpy(sx, sy), note="a traced expression, evaluated"),
        "fwd": Case(forward, note="symbolic while_loop and dr.sum"),
        "fwd+rev": Case(both, lambda: np.asarray(both()), note=note),
    }
