"""Smoke is steered to a target picture by its initial velocity: DiffTaichi's smoke_taichi.py
(Hu et al., ICLR 2020) in qdarray.

    python examples/smoke.py [--iters 240] [--steps 100] [--n-grid 128] [--device cpu]
                             [--target taichi.png] [--out smoke]

The same maths, sizes and loss as DiffTaichi's examples/smoke_taichi.py: an incompressible
fluid on a periodic 128x128 grid (Stam's stable fluids: semi-Lagrangian advection of the
velocity, a projection by 10 Gauss-Seidel-style Jacobi iterations for the pressure, then the
smoke advected by the projected velocity), 100 steps; the loss is the mean squared difference
between the smoke at the last step and a target picture; the initial velocity field v[0] is
optimised by gradient descent with learning rate 400. The smoke starts as a checkerboard of
16x16 squares.

The target: the original reads taichi.png (DiffTaichi's examples/, resized to the grid by
OpenCV, the blue channel, /255); `--target` takes that PNG (read with matplotlib, resized
with the same bilinear rule) or a .npy array of the grid's shape. Without it, a built-in
picture (a ring) stands in, so the program needs no file.

Every quantity is indexed by time, as in the original (`v[t, y, x]`, and the pressure
`p[a, y, x]` with 11 slots a step), so one tape over all steps keeps nothing beyond the arrays;
each iteration is a forward and a reverse of 1,387 launches. Pictures of the smoke (first
step, last step, target) and of the loss curve are written to `<out>_state.png` and
`<out>_loss.png` when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import qdarray as qd

real = qd.float32                       # the original's `real = ti.f32`
vec2 = qd.types.vector(2, real)
Scalar = qd.Array[real, 3]              # the original's scalar fields, (time, y, x)
Vector = qd.Array[vec2, 3]              # its 2-vector fields, (time, y, x, 2)

n_grid = 128                            # set by Smoke() for other sizes (compile-time constant)
dx = 1.0 / n_grid
num_iterations_gauss_seidel = 10
p_dims = num_iterations_gauss_seidel + 1
steps = 100
learning_rate = 400


# Integer modulo operator for positive values of n
@qd.func
def imod(n, divisor):
    ret = n % divisor
    if ret < 0:
        ret += divisor
    return ret


@qd.func
def dec_index(index):
    new_index = index - 1
    if new_index < 0:
        new_index = n_grid - 1
    return new_index


@qd.func
def inc_index(index):
    new_index = index + 1
    if new_index >= n_grid:
        new_index = 0
    return new_index


@qd.kernel(default_float=real)
def compute_div(t: qd.int32, v_updated: Vector, div: Scalar):
    for y in range(n_grid):
        for x in range(n_grid):
            div[t, y, x] = -0.5 * dx * (v_updated[t, inc_index(y), x][0] -
                                        v_updated[t, dec_index(y), x][0] +
                                        v_updated[t, y, inc_index(x)][1] -
                                        v_updated[t, y, dec_index(x)][1])


@qd.kernel(default_float=real)
def compute_p(t: qd.int32, k: qd.int32, div: Scalar, p: Scalar):
    for y in range(n_grid):
        for x in range(n_grid):
            a = k + t * num_iterations_gauss_seidel
            p[a + 1, y, x] = (div[t, y, x] + p[a, dec_index(y), x] +
                              p[a, inc_index(y), x] + p[a, y, dec_index(x)] +
                              p[a, y, inc_index(x)]) / 4.0


@qd.kernel(default_float=real)
def update_v(t: qd.int32, v_updated: Vector, p: Scalar, v: Vector):
    # Note: as in the original, step t reads p[10 t - 1]: the ninth iterate of step t - 1
    # (zero at t = 1), not the last iterate of step t.
    for y in range(n_grid):
        for x in range(n_grid):
            a = num_iterations_gauss_seidel * t - 1
            # v[t, y, x, 0] is the original's v[t, y, x][0] (a component store)
            v[t, y, x, 0] = v_updated[t, y, x][0] - 0.5 * (
                p[a, inc_index(y), x] - p[a, dec_index(y), x]) / dx
            v[t, y, x, 1] = v_updated[t, y, x][1] - 0.5 * (
                p[a, y, inc_index(x)] - p[a, y, dec_index(x)]) / dx


@qd.func
def advect(field, field_out, v, t_offset, t, y, x):
    """Move field smoke according to x and y velocities (vx and vy)
     using an implicit Euler integrator."""
    # The original's advect kernel takes its fields as ti.template(), for a vector and a
    # scalar field alike; here its body is this func, for one cell, and the two kernels
    # below (advect_v, advect_smoke) are its two instantiations.
    center_x = y - v[t + t_offset, y, x][0]
    center_y = x - v[t + t_offset, y, x][1]

    # Compute indices of source cell
    left_ix = qd.cast(qd.math.floor(center_x), qd.int32)
    top_ix = qd.cast(qd.math.floor(center_y), qd.int32)

    rw = center_x - left_ix  # Relative weight of right-hand cell
    bw = center_y - top_ix  # Relative weight of bottom cell

    # Wrap around edges
    left_ix = imod(left_ix, n_grid)
    right_ix = inc_index(left_ix)
    top_ix = imod(top_ix, n_grid)
    bot_ix = inc_index(top_ix)

    # Linearly-weighted sum of the 4 surrounding cells
    field_out[t, y, x] = (1 - rw) * (
        (1 - bw) * field[t - 1, left_ix, top_ix] +
        bw * field[t - 1, left_ix, bot_ix]) + rw * (
            (1 - bw) * field[t - 1, right_ix, top_ix] +
            bw * field[t - 1, right_ix, bot_ix])


@qd.kernel(default_float=real)
def advect_v(t: qd.int32, v: Vector, v_updated: Vector):
    """The original's advect(v, v_updated, -1, t)."""
    for y in range(n_grid):
        for x in range(n_grid):
            advect(v, v_updated, v, -1, t, y, x)


@qd.kernel(default_float=real)
def advect_smoke(t: qd.int32, smoke: Scalar, v: Vector):
    """The original's advect(smoke, smoke, 0, t)."""
    for y in range(n_grid):
        for x in range(n_grid):
            advect(smoke, smoke, v, 0, t, y, x)


@qd.kernel(default_float=real)
def compute_loss(target: qd.Array[real, 2], smoke: Scalar, loss: qd.Array[real, 1]):
    for i in range(n_grid):
        for j in range(n_grid):
            loss[0] += (target[i, j] - smoke[steps - 1, i, j])**2 * (1 / n_grid**2)


@qd.kernel(default_float=real)
def init(target_img: qd.Array[real, 2], target: qd.Array[real, 2], smoke: Scalar):
    for i, j in qd.ndrange(n_grid, n_grid):
        target[i, j] = target_img[i, j]
        smoke[0, i, j] = (i // 16 + j // 16) % 2


def ring(n: int) -> np.ndarray:
    """The stand-in target: a ring of smoke, 1 inside, 0 outside, on an n x n grid."""
    y, x = np.mgrid[0:n, 0:n] / n - 0.5
    r = np.hypot(x, y)
    return ((r > 0.18) & (r < 0.32)).astype(np.float64)


def resize_bilinear(img: np.ndarray, n: int) -> np.ndarray:
    """`cv2.resize(img, (n, n))` (INTER_LINEAR) of a 2-D image, in floating point: sample
    (i + 0.5) * scale - 0.5, clamped at the borders."""
    def axis(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = np.clip((np.arange(n) + 0.5) * (size / n) - 0.5, 0, size - 1)
        i0 = np.floor(s).astype(int)
        i1 = np.minimum(i0 + 1, size - 1)
        return i0, i1, s - i0
    y0, y1, fy = axis(img.shape[0])
    x0, x1, fx = axis(img.shape[1])
    rows = img[y0] * (1 - fy)[:, None] + img[y1] * fy[:, None]
    return rows[:, x0] * (1 - fx) + rows[:, x1] * fx


def target_image(path: str | None, n: int) -> np.ndarray:
    """The target on the n x n grid, in [0, 1]: a .npy array, a PNG as the original reads
    taichi.png (the blue channel, cv2.imread being BGR), or the stand-in ring."""
    if path is None:
        return ring(n)
    if path.endswith(".npy"):
        return np.load(path).astype(np.float64)
    try:
        import matplotlib.pyplot as plt  # reads PNG as floats in [0, 1]
    except ImportError:
        raise SystemExit(f"reading {path} needs matplotlib (pip install matplotlib); or "
                         "give the target as a .npy of the grid's shape") from None
    img = plt.imread(path)
    return resize_bilinear(img[:, :, 2].astype(np.float64), n)


class Smoke:
    """The fields of the original on one device, its forward and its optimisation loop."""

    def __init__(self, n: int = 128, n_steps: int = 100, device: str = "cpu",
                 target: np.ndarray | None = None) -> None:
        global n_grid, dx, steps
        n_grid, dx, steps = n, 1.0 / n, n_steps
        self.device = device

        def field(*shape: int) -> qd.Array:
            return qd.zeros(shape, dtype=real, device=device, requires_grad=True)

        self.v = field(steps, n_grid, n_grid, 2)
        self.div = field(steps, n_grid, n_grid)
        self.p = field(steps * p_dims, n_grid, n_grid)
        self.v_updated = field(steps, n_grid, n_grid, 2)
        self.target = field(n_grid, n_grid)
        self.smoke = field(steps, n_grid, n_grid)
        self.loss = field(1)
        img = ring(n_grid) if target is None else target
        init(qd.asarray(img, dtype=real, device=device), self.target, self.smoke)

    def params(self) -> dict[str, np.ndarray]:
        """The initial velocity field v[0], as a NumPy float64 array (a copy)."""
        return {"v0": np.array(self.v[0].to_device("cpu"), np.float64)}

    def grads(self) -> dict[str, np.ndarray]:
        """The gradient of the loss by v[0], float64."""
        return {"v0": np.array(self.v.grad[0].to_device("cpu"), np.float64)}

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        self.v[0] = qd.asarray(params["v0"], dtype=real, device=self.device)

    def forward(self) -> None:
        for t in range(1, steps):
            advect_v(t, self.v, self.v_updated)

            compute_div(t, self.v_updated, self.div)
            for k in range(num_iterations_gauss_seidel):
                compute_p(t, k, self.div, self.p)

            update_v(t, self.v_updated, self.p, self.v)
            advect_smoke(t, self.smoke, self.v)
        self.loss[...] = 0
        compute_loss(self.target, self.smoke, self.loss)

    def clear(self) -> None:
        """Nothing to reset between forwards: every step writes what it reads next."""

    def forward_backward(self) -> float:
        """One forward and its reverse on one tape; the gradients are set, not summed."""
        with qd.ad.Tape(loss=self.loss, zero_grads=True):
            self.forward()
        return float(self.loss[0])

    def step(self) -> float:
        """One iteration: forward + backward, then the original's apply_grad."""
        loss = self.forward_backward()
        self.v[0] -= learning_rate * self.v.grad[0]
        return loss

    def optimize(self, iters: int) -> list[float]:
        losses = []
        for opt in range(iters):
            loss = self.step()
            print("Iter", opt, " Loss =", loss)
            losses.append(loss)
        return losses

    def draw(self, out: str, losses: list[float]) -> list[str]:
        """The smoke at the first and the last step beside the target, and the loss."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        smoke = np.asarray(self.smoke.to_device("cpu"))
        fig, axes = plt.subplots(1, 3, figsize=(9, 3.3))
        for ax, img, title in ((axes[0], smoke[0], "step 0"),
                               (axes[1], smoke[steps - 1], f"step {steps - 1}"),
                               (axes[2], np.asarray(self.target.to_device("cpu")), "target")):
            ax.imshow(img, cmap="gray", vmin=0, vmax=1)
            ax.set(xticks=[], yticks=[], title=title)
        fig.tight_layout()
        fig.savefig(f"{out}_state.png", dpi=80)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(losses)
        ax.set(xlabel="iteration", ylabel="loss (mean squared difference)", title="smoke",
               yscale="log")
        fig.tight_layout()
        fig.savefig(f"{out}_loss.png", dpi=80)
        plt.close(fig)
        return [f"{out}_state.png", f"{out}_loss.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=240)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--n-grid", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--target", help="DiffTaichi's examples/taichi.png, or a .npy of the "
                        "grid's shape (default: a ring)")
    parser.add_argument("--out", default="smoke", help="prefix of the pictures")
    args = parser.parse_args()

    sim = Smoke(args.n_grid, args.steps, args.device, target_image(args.target, args.n_grid))
    start = time.perf_counter()
    losses = sim.optimize(args.iters)
    print(f"{args.iters} iterations in {time.perf_counter() - start:.2f} s on {args.device}")
    sim.forward()
    try:
        print("wrote", ", ".join(sim.draw(args.out, losses)))
    except ImportError:
        print("matplotlib is not installed: no pictures (pip install matplotlib)")


if __name__ == "__main__":
    main()
