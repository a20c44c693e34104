"""DiffTaichi's smoke in JAX and PyTorch, timed: compare_sims.py runs this file with the peers'
Python (jax[cpu], torch) in a fresh process per measurement, beside qdarray's
examples/smoke.py and the original smoke_taichi.py.

    python _smoke_peers.py --framework jax|jax_scan|torch --threads 1 --target target.npy \\
        --weights init.npz --iters 5 --warmup 2 --out result.npz
    python _smoke_peers.py --make-target DIFFTAICHI/examples/taichi.png --n-grid 128 \\
        --out target.npy

The array code is DiffTaichi's smoke_jax.py and smoke_pytorch.py (their `advect` as written,
their roll-based projection), computing the function smoke_taichi.py computes, which differs
from theirs in four places, each changed here to smoke_taichi.py's:

- the sizes: a 128x128 grid and 10 pressure iterations (theirs: 110 and 6), 100 steps;
- the pressure starts from the previous step's last iterate (theirs: from zero), and the
  velocity update of step t uses the ninth iterate of step t - 1 (zero at t = 1), as
  smoke_taichi.py's `update_v` reads `p[10 t - 1]` (theirs: the current step's last);
- the smoke starts as smoke_taichi.py's checkerboard and the target is its taichi.png (theirs:
  init_smoke.png and peace.png), both read from files written by compare_sims.py;
- float32 and loss = mean((target - smoke)^2) after 99 steps, as smoke_taichi.py
  (smoke_jax.py: 100 steps, float64 requested but float32 under JAX's default).

Three ways to differentiate it: `jax` is smoke_jax.py's own structure (each step a jitted
function, the forward keeps each step's input, the reverse runs a jitted `vjp` of each step
backwards: its `d_simulate`); `jax_scan` is one `jax.jit(jax.value_and_grad(...))` over a
`lax.scan` of the steps; `torch` is smoke_pytorch.py's (autograd over the forward,
`loss.backward()`). This file imports nothing of qdarray.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

N_ITERS = 10  # smoke_taichi.py's num_iterations_gauss_seidel
NINTH = N_ITERS - 2  # the iterate update_v reads one step later: p[10 t - 1]


def resize_bilinear(img: np.ndarray, n: int) -> np.ndarray:
    """`cv2.resize(img, (n, n))` (INTER_LINEAR) in floating point, as examples/smoke.py."""
    def axis(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = np.clip((np.arange(n) + 0.5) * (size / n) - 0.5, 0, size - 1)
        i0 = np.floor(s).astype(int)
        return i0, np.minimum(i0 + 1, size - 1), s - i0
    y0, y1, fy = axis(img.shape[0])
    x0, x1, fx = axis(img.shape[1])
    rows = img[y0] * (1 - fy)[:, None] + img[y1] * fy[:, None]
    return rows[:, x0] * (1 - fx) + rows[:, x1] * fx


def checkerboard(n: int) -> np.ndarray:
    """smoke_taichi.py's initial smoke: (i // 16 + j // 16) % 2."""
    i, j = np.mgrid[0:n, 0:n]
    return ((i // 16 + j // 16) % 2).astype(np.float32)


def jax_sides(args: argparse.Namespace, v0: np.ndarray, target: np.ndarray) -> Any:
    if args.threads == 1:
        os.environ["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")
    import jax
    import jax.numpy as np_

    dtype = np_.float32
    n = target.shape[0]
    h = 1.0 / n

    def advect(f, vx, vy):  # smoke_jax.py's, as written (`dtype` float32)
        rows, cols = f.shape
        cell_ys, cell_xs = np_.meshgrid(np_.arange(rows), np_.arange(cols))
        cell_xs = cell_xs.astype(dtype)
        cell_ys = cell_ys.astype(dtype)
        center_xs = (cell_xs - vx).ravel()
        center_ys = (cell_ys - vy).ravel()
        left_ix = np_.floor(center_xs).astype(int)
        top_ix = np_.floor(center_ys).astype(int)
        rw = center_xs - left_ix
        bw = center_ys - top_ix
        left_ix = np_.mod(left_ix, rows)
        right_ix = np_.mod(left_ix + 1, rows)
        top_ix = np_.mod(top_ix, cols)
        bot_ix = np_.mod(top_ix + 1, cols)
        flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
            + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
        return np_.reshape(flat_f, (rows, cols))

    def step(state):
        """One step of smoke_taichi.py: state = (vx, vy, smoke, p_last, p_ninth)."""
        vx, vy, smoke, p, p_used = state
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        div = -0.5 * h * (np_.roll(vx_updated, -1, axis=0) - np_.roll(vx_updated, 1, axis=0)
                          + np_.roll(vy_updated, -1, axis=1) - np_.roll(vy_updated, 1, axis=1))
        ninth = p
        for k in range(N_ITERS):
            p = (div + np_.roll(p, 1, axis=0) + np_.roll(p, -1, axis=0) +
                 np_.roll(p, 1, axis=1) + np_.roll(p, -1, axis=1)) / 4.0
            if k == NINTH:
                ninth = p
        vx = vx_updated - 0.5 * (np_.roll(p_used, -1, axis=0) - np_.roll(p_used, 1, axis=0)) / h
        vy = vy_updated - 0.5 * (np_.roll(p_used, -1, axis=1) - np_.roll(p_used, 1, axis=1)) / h
        smoke = advect(smoke, vx, vy)
        return vx, vy, smoke, p, ninth

    zeros = np_.zeros((n, n), dtype)
    smoke0 = np_.asarray(checkerboard(n))
    target_ = np_.asarray(target, dtype)

    def loss_of(smoke):
        return np_.mean((target_ - smoke) ** 2)

    if args.framework == "jax_scan":
        def objective(v):
            state = (v[..., 0], v[..., 1], smoke0, zeros, zeros)
            state, _ = jax.lax.scan(lambda s, _: (step(s), None), state, None,
                                    length=args.steps - 1)
            return loss_of(state[2])
        value_and_grad = jax.jit(jax.value_and_grad(objective))

        def iteration(v):
            loss, g = value_and_grad(np_.asarray(v, dtype))
            return float(loss), np.asarray(g)
        return iteration

    step_jit = jax.jit(step)
    d_step = jax.jit(lambda state, d_out: jax.vjp(step, state)[1](d_out)[0])
    d_loss = jax.jit(jax.value_and_grad(loss_of))

    def iteration(v):
        """smoke_jax.py's d_simulate: keep each step's input, then a vjp per step."""
        state = (np_.asarray(v[..., 0], dtype), np_.asarray(v[..., 1], dtype), smoke0, zeros,
                 zeros)
        states = []
        for _ in range(1, args.steps):
            states.append(state)
            state = step_jit(state)
        loss, d_smoke = d_loss(state[2])
        d_state = (zeros, zeros, d_smoke, zeros, zeros)
        for s in reversed(states):
            d_state = d_step(s, d_state)
        return float(loss), np.stack([np.asarray(d_state[0]), np.asarray(d_state[1])], -1)
    return iteration


def torch_side(args: argparse.Namespace, v0: np.ndarray, target: np.ndarray) -> Any:
    import torch

    torch.set_num_threads(args.threads)
    device = torch.device("cpu")
    n = target.shape[0]
    h = 1.0 / n

    def roll_col(t, n):  # smoke_pytorch.py's
        return torch.cat((t[:, -n:], t[:, :-n]), axis=1)

    def roll_row(t, n):
        return torch.cat((t[-n:, :], t[:-n, :]), axis=0)

    def advect(f, vx, vy):  # smoke_pytorch.py's, as written
        rows, cols = f.shape
        cell_ys, cell_xs = torch.meshgrid(torch.arange(rows), torch.arange(cols),
                                          indexing="ij")
        cell_ys = torch.transpose(cell_ys, 0, 1).float().to(device)
        cell_xs = torch.transpose(cell_xs, 0, 1).float().to(device)
        center_xs = (cell_xs - vx).flatten()
        center_ys = (cell_ys - vy).flatten()
        left_ix = torch.floor(center_xs).long()
        top_ix = torch.floor(center_ys).long()
        rw = center_xs - left_ix.float()
        bw = center_ys - top_ix.float()
        left_ix = torch.remainder(left_ix, rows)
        right_ix = torch.remainder(left_ix + 1, rows)
        top_ix = torch.remainder(top_ix, cols)
        bot_ix = torch.remainder(top_ix + 1, cols)
        flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
            + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
        return torch.reshape(flat_f, (rows, cols))

    smoke0 = torch.tensor(checkerboard(n))
    target_ = torch.tensor(target, dtype=torch.float32)

    def iteration(v):
        vx = torch.tensor(v[..., 0], dtype=torch.float32, requires_grad=True)
        vy = torch.tensor(v[..., 1], dtype=torch.float32, requires_grad=True)
        x, y, smoke = vx, vy, smoke0
        p = torch.zeros(n, n)
        p_used = torch.zeros(n, n)
        for _ in range(1, args.steps):
            x_updated = advect(x, x, y)
            y_updated = advect(y, x, y)
            div = -0.5 * h * (roll_row(x_updated, -1) - roll_row(x_updated, 1) +
                              roll_col(y_updated, -1) - roll_col(y_updated, 1))
            ninth = p
            for k in range(N_ITERS):
                p = (div + roll_row(p, 1) + roll_row(p, -1) + roll_col(p, 1) +
                     roll_col(p, -1)) / 4.0
                if k == NINTH:
                    ninth = p
            x = x_updated - 0.5 * (roll_row(p_used, -1) - roll_row(p_used, 1)) / h
            y = y_updated - 0.5 * (roll_col(p_used, -1) - roll_col(p_used, 1)) / h
            p_used = ninth
            smoke = advect(smoke, x, y)
        loss = ((smoke - target_) ** 2).mean()
        loss.backward()
        return float(loss.item()), np.stack([vx.grad.numpy(), vy.grad.numpy()], -1)
    return iteration


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=["jax", "jax_scan", "torch"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--target", help="the target, a .npy of the grid's shape")
    parser.add_argument("--weights", help="the initial v[0], an .npz with v0")
    parser.add_argument("--steps", type=int, default=0, help="0: the original's 100")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--make-target", help="a PNG: write its target (--n-grid) to --out")
    parser.add_argument("--n-grid", type=int, default=128)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.make_target:
        from PIL import Image  # smoke_taichi.py: cv2.imread(...)[:, :, 0], BGR: the blue

        img = np.asarray(Image.open(args.make_target).convert("RGB"), np.float64)[:, :, 2]
        np.save(args.out, resize_bilinear(img, args.n_grid) / 255.0)
        return
    args.steps = args.steps or 100
    target = np.load(args.target)
    v = np.load(args.weights)["v0"].astype(np.float32)
    side = torch_side if args.framework == "torch" else jax_sides
    iteration = side(args, v, target)
    times, losses, grad0 = [], [], None
    for it in range(args.warmup + args.iters):
        start = time.perf_counter()
        loss, g = iteration(v)  # float(loss) and the NumPy gradient: the work is done
        elapsed = time.perf_counter() - start
        losses.append(loss)
        if it == 0:
            grad0 = g.astype(np.float64)
        if it >= args.warmup:
            times.append(elapsed)
        v = (v - 400 * g).astype(np.float32)  # smoke_taichi.py's apply_grad
    np.savez(args.out, times=np.array(times), losses=np.array(losses), grad_v0=grad0)


if __name__ == "__main__":
    main()
