"""The operations of `_array_ops.OPS` in NumPy-like libraries other than NumPy, for
`compare_numpy.py`: the baseline (NumPy on the CPU, CuPy on a CUDA device) and the peers whose
per-call cost qdarray's is set beside (PyTorch, JAX, array-api-strict, CuPy).

Each library is a `Library`: its calls by operation name (each takes two native arrays of one
shape), a converter from NumPy arrays to its arrays on the device, and a `sync(result)` that
waits for the device (JAX and GPU libraries dispatch asynchronously), called after each timed
batch. A library that is not installed, or has no such device, raises `Skipped` with the
reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Call = Callable[[Any, Any], Any]


class Skipped(Exception):
    """A library that cannot run here, with the reason."""


@dataclass(frozen=True)
class Library:
    name: str
    calls: dict[str, Call]
    convert: Callable[[np.ndarray], Any]
    sync: Callable[[Any], None]


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any failure to import makes the peer skipped
        raise Skipped(f"{name} is not installed or does not import ({type(exc).__name__})"
                      ) from None


def _no_sync(result: Any) -> None:
    return None


def _numpy_like(m: Any, mutable: bool = True) -> dict[str, Call]:
    """The calls in a module with NumPy's names (NumPy, CuPy, jax.numpy, array-api-strict)."""
    cumulative = getattr(m, "cumulative_sum", None) or m.cumsum
    return {
        "add": lambda a, b: a + b,
        "multiply_scalar": lambda a, b: a * 2.0,
        # JAX arrays are immutable: `x += y` binds x to x + y
        "iadd": (lambda a, b: a.__iadd__(b)) if mutable else (lambda a, b: a + b),
        "less": lambda a, b: a < b,
        "sin": lambda a, b: m.sin(a),
        "exp": lambda a, b: m.exp(a),
        "sqrt": lambda a, b: m.sqrt(a),
        "sum": lambda a, b: m.sum(a),
        "mean": lambda a, b: m.mean(a),
        "max": lambda a, b: m.max(a),
        "cumulative_sum": lambda a, b: cumulative(a),
        "sort": lambda a, b: m.sort(a),
    }


def numpy_library() -> Library:
    return Library("NumPy", _numpy_like(np), np.asarray, _no_sync)


def cupy_library(device: str) -> Library:
    cp = _import("cupy")
    index = int(device.partition(":")[2] or 0)
    try:
        cp.cuda.Device(index).use()
    except Exception as exc:  # noqa: BLE001 - no GPU, no driver: skipped
        raise Skipped(f"CuPy has no device {index} ({type(exc).__name__})") from None
    return Library(f"CuPy {cp.__version__}", _numpy_like(cp), cp.asarray,
                   lambda r: cp.cuda.runtime.deviceSynchronize())


def torch_library(device: str) -> Library:
    torch = _import("torch")
    target = "cpu" if device == "cpu" else f"cuda:{device.partition(':')[2] or 0}"
    if target != "cpu" and not torch.cuda.is_available():
        raise Skipped("this PyTorch has no CUDA device")
    calls: dict[str, Call] = {
        "add": lambda a, b: a + b,
        "multiply_scalar": lambda a, b: a * 2.0,
        "iadd": lambda a, b: a.add_(b),
        "less": lambda a, b: a < b,
        "sin": lambda a, b: torch.sin(a),
        "exp": lambda a, b: torch.exp(a),
        "sqrt": lambda a, b: torch.sqrt(a),
        "sum": lambda a, b: torch.sum(a),
        "mean": lambda a, b: torch.mean(a),
        "max": lambda a, b: torch.max(a),
        "cumulative_sum": lambda a, b: torch.cumsum(a, 0),
        "sort": lambda a, b: torch.sort(a).values,
    }
    sync = _no_sync if target == "cpu" else (lambda r: torch.cuda.synchronize())
    return Library(f"PyTorch {torch.__version__}", calls,
                   lambda a: torch.from_numpy(a.copy()).to(target), sync)


def jax_library(device: str) -> Library:
    jax = _import("jax")
    jnp = _import("jax.numpy")
    try:
        dev = jax.devices("cpu" if device == "cpu" else "gpu")[0]
    except RuntimeError as exc:
        raise Skipped(f"jax has no {device} device ({exc})"[:200]) from None
    return Library(f"JAX {jax.__version__} (eager)", _numpy_like(jnp, mutable=False),
                   lambda a: jax.device_put(a, dev), jax.block_until_ready)


def strict_library(device: str) -> Library:
    if device != "cpu":
        raise Skipped("array-api-strict runs on the CPU only")
    xp = _import("array_api_strict")
    return Library(f"array-api-strict {xp.__version__}", _numpy_like(xp), xp.asarray,
                   _no_sync)


PEERS: dict[str, Callable[[str], Library]] = {
    "torch": torch_library, "jax": jax_library, "array-api-strict": strict_library,
    "cupy": cupy_library,
}
