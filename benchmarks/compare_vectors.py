"""Vector and matrix types against the same kernels written per component: a 2-D mass-spring
step (spring forces with an anisotropic stiffness matrix per spring, accumulated atomically,
then a damped explicit integration), float32.

    python benchmarks/compare_vectors.py [--n N] [--repeat R] [--device DEV] [--grad]

The vec2 / mat2 kernels compile to the same scalar code as the per-component ones (vectors
are split into scalars before any code generator runs), so the ratio vec / per-component
should be 1 (goal: within 5%). Each repeat times both forms once, in alternating order, in
CPU time of this process (its threads included; on a shared machine, time other processes
take is not counted); the ratio printed is the median of the per-repeat ratios. `--grad` times the
reverse
kernels (`kernel.grad`) instead.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import qdarray as qd

K, DT, DAMP = 40.0, 1e-3, 0.999
_clock = time.process_time


@qd.kernel
def forces_vec(x: qd.Array[qd.vec2, 1], springs: qd.Array[qd.int32, 2],
               rest: qd.Array[qd.float32, 1], stiff: qd.Array[qd.mat2, 1],
               f: qd.Array[qd.vec2, 1]):
    for s in range(springs.shape[0]):
        a, b = springs[s, 0], springs[s, 1]
        d = x[b] - x[a]
        length = qd.math.norm(d)
        force = (K * (length - rest[s]) / length) * (stiff[s] @ d)
        f[a] += force
        f[b] -= force


@qd.kernel
def forces_comp(x: qd.Array[qd.float32, 2], springs: qd.Array[qd.int32, 2],
                rest: qd.Array[qd.float32, 1], stiff: qd.Array[qd.float32, 3],
                f: qd.Array[qd.float32, 2]):
    for s in range(springs.shape[0]):
        a, b = springs[s, 0], springs[s, 1]
        dx = x[b, 0] - x[a, 0]
        dy = x[b, 1] - x[a, 1]
        length = qd.math.sqrt(dx * dx + dy * dy)
        c = K * (length - rest[s]) / length
        fx = c * (stiff[s, 0, 0] * dx + stiff[s, 0, 1] * dy)
        fy = c * (stiff[s, 1, 0] * dx + stiff[s, 1, 1] * dy)
        f[a, 0] += fx
        f[a, 1] += fy
        f[b, 0] -= fx
        f[b, 1] -= fy


@qd.kernel
def integrate_vec(x: qd.Array[qd.vec2, 1], v: qd.Array[qd.vec2, 1], f: qd.Array[qd.vec2, 1],
                  x_new: qd.Array[qd.vec2, 1], v_new: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        vel = DAMP * v[i] + DT * (f[i] + qd.vec2(0.0, -9.8))
        v_new[i] = vel
        x_new[i] = x[i] + DT * vel


@qd.kernel
def integrate_comp(x: qd.Array[qd.float32, 2], v: qd.Array[qd.float32, 2],
                   f: qd.Array[qd.float32, 2], x_new: qd.Array[qd.float32, 2],
                   v_new: qd.Array[qd.float32, 2]):
    for i in range(x.shape[0]):
        vx = DAMP * v[i, 0] + DT * (f[i, 0] + 0.0)
        vy = DAMP * v[i, 1] + DT * (f[i, 1] + -9.8)
        v_new[i, 0] = vx
        v_new[i, 1] = vy
        x_new[i, 0] = x[i, 0] + DT * vx
        x_new[i, 1] = x[i, 1] + DT * vy


def _state(n: int, device: str, grad: bool) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    m = 4 * n
    springs = np.stack([rng.integers(0, n, m), rng.integers(0, n, m)], 1).astype(np.int32)
    springs[:, 1] = np.where(springs[:, 1] == springs[:, 0], (springs[:, 0] + 1) % n,
                             springs[:, 1])
    host = dict(x=rng.uniform(0, 1, (n, 2)), springs=springs, rest=rng.uniform(0.01, 0.1, m),
                stiff=np.eye(2) + rng.normal(0, 0.1, (m, 2, 2)), f=np.zeros((n, 2)),
                v=rng.normal(0, 0.1, (n, 2)), x_new=np.zeros((n, 2)), v_new=np.zeros((n, 2)))
    out = {}
    for name, value in host.items():
        value = value.astype(np.int32 if value.dtype == np.int32 else np.float32)
        out[name] = qd.asarray(value, device=device, requires_grad=grad and name != "springs")
    return out


def _step(forces: Any, integrate: Any, s: dict[str, Any], grad: bool) -> None:
    fargs = (s["x"], s["springs"], s["rest"], s["stiff"], s["f"])
    iargs = (s["x"], s["v"], s["f"], s["x_new"], s["v_new"])
    if grad:
        integrate.grad(*iargs)
        forces.grad(*fargs)
    else:
        forces(*fargs)
        integrate(*iargs)


def _sync(s: dict[str, Any]) -> None:
    np.asarray(s["x_new"][:1].to_device("cpu"))


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000, help="particles (springs: 4n)")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--device", default="cpu")
    p.add_argument("--grad", action="store_true", help="time the reverse kernels")
    args = p.parse_args(argv)
    forms = {"vec2/mat2": (forces_vec, integrate_vec), "per component": (forces_comp,
                                                                         integrate_comp)}
    states = {name: _state(args.n, args.device, args.grad) for name in forms}
    for name, (fk, ik) in forms.items():  # compile and warm up
        _step(fk, ik, states[name], args.grad)
        _sync(states[name])
    times: dict[str, list[float]] = {name: [] for name in forms}
    ratios = []
    names = list(forms)
    for r in range(args.repeat):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            fk, ik = forms[name]
            t0 = _clock()
            _step(fk, ik, states[name], args.grad)
            _sync(states[name])
            times[name].append(_clock() - t0)
        ratios.append(times["vec2/mat2"][-1] / times["per component"][-1])
    what = "reverse" if args.grad else "forward"
    print(f"mass-spring step ({what}), {args.n} particles, {4 * args.n} springs, float32, "
          f"on {args.device}:")
    for name in names:
        print(f"  {name:14s} median {statistics.median(times[name]) * 1e3:8.2f} ms")
    ratio = statistics.median(ratios)
    print(f"  ratio vec2/mat2 / per component: {ratio:.3f} (goal: within 5% of 1)")
    return {"ratio": ratio}


if __name__ == "__main__":
    main()
