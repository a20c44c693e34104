"""A soft robot of MPM particles learns to walk: DiffTaichi's diffmpm.py (Hu et al., ICLR 2020)
in qdarray.

    python examples/diffmpm.py [--iters 100] [--steps 1024] [--device cpu] [--out diffmpm]

The same maths, sizes and loss as DiffTaichi's examples/diffmpm.py: 2-D MLS-MPM on a 128x128
grid, an elastic solid (a deformation gradient F per particle, its rotation from the polar
decomposition, fixed corotated stress) whose four legs are actuated along their columns by
sine waves through tanh; the loss is minus the mean x position of the solid after `steps`
steps; plain gradient descent with learning rate 0.1.

Particle state is indexed by time (`x[t, p]`, `F[t, p]`: `qd.Array[qd.vec2, 2]` and
`qd.Array[qd.mat2, 2]`). The grid is one set of arrays cleared and refilled every step, as
in the original; where the original replaces the tape's reverse of a step by recomputing the
grid (`ti.ad.grad_replaced`), qdarray's tape keeps a copy of the grid a step overwrites while
an earlier step's reverse still needs it, so the program is written as a plain loop. The
initial weights are randn * 0.01 as in the original, from seed 0 (the original sets none).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np

import qdarray as qd

real = qd.float32                       # the original's `real = ti.f32`
vec2 = qd.types.vector(2, real)
mat2 = qd.types.matrix(2, 2, real)
ivec2 = qd.types.vector(2, qd.int32)
weights3 = qd.types.matrix(3, 2, real)  # the three quadratic B-spline weights per axis

dim = 2
n_grid = 128
dx = 1 / n_grid
inv_dx = 1 / dx
dt = 1e-3
p_vol = 1
E = 10
mu = E
la = E
max_steps = 2048
gravity = 3.8
bound = 3
coeff = 0.5
n_sin_waves = 4
actuation_omega = 20
act_strength = 4
# Set by the scene (the original's globals, read by its kernels as constants).
n_actuators = 0
n_solid_particles = 0


@dataclasses.dataclass(frozen=True)
class Particles:
    x: qd.Array[vec2, 2]                # (max_steps, n_particles, 2)
    v: qd.Array[vec2, 2]
    C: qd.Array[mat2, 2]                # (max_steps, n_particles, 2, 2)
    F: qd.Array[mat2, 2]
    actuator_id: qd.Array[qd.int32, 1]
    particle_type: qd.Array[qd.int32, 1]


@dataclasses.dataclass(frozen=True)
class Grid:
    v_in: qd.Array[vec2, 2]             # (n_grid, n_grid, 2)
    m_in: qd.Array[real, 2]
    v_out: qd.Array[vec2, 2]


@qd.kernel(default_float=real)
def clear_grid(g: Grid):
    for i, j in qd.ndrange(n_grid, n_grid):
        g.v_in[i, j] = vec2(0, 0)
        g.m_in[i, j] = 0


@qd.kernel(default_float=real)
def p2g(f: qd.int32, ps: Particles, g: Grid, actuation: qd.Array[real, 2]):
    for p in range(ps.x.shape[1]):
        base = ivec2(ps.x[f, p] * inv_dx - 0.5)
        fx = ps.x[f, p] * inv_dx - vec2(base)
        w = weights3(0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2)
        new_F = (qd.math.eye(2, real) + dt * ps.C[f, p]) @ ps.F[f, p]
        J = qd.math.determinant(new_F)
        if ps.particle_type[p] == 0:  # fluid
            sqrtJ = qd.math.sqrt(J)
            new_F = mat2(sqrtJ, 0, 0, sqrtJ)

        ps.F[f + 1, p] = new_F
        r, s = qd.math.polar_decompose(new_F)

        act_id = ps.actuator_id[p]

        act = actuation[f, max(0, act_id)] * act_strength
        if act_id == -1:
            act = 0.0

        A = mat2(0.0, 0.0, 0.0, 1.0) * act
        cauchy = mat2(0.0, 0.0, 0.0, 0.0)
        mass = 0.0
        if ps.particle_type[p] == 0:
            mass = 4
            cauchy = mat2(1.0, 0.0, 0.0, 0.1) * (J - 1) * E
        else:
            mass = 1
            cauchy = 2 * mu * (new_F - r) @ new_F.T + qd.math.diag(vec2(la * (J - 1) * J))
        cauchy += new_F @ A @ new_F.T
        stress = -(dt * p_vol * 4 * inv_dx * inv_dx) * cauchy
        affine = stress + mass * ps.C[f, p]
        for i in qd.static(range(3)):
            for j in qd.static(range(3)):
                dpos = (vec2(i, j) - fx) * dx
                weight = w[i, 0] * w[j, 1]
                g.v_in[base[0] + i, base[1] + j] += weight * (mass * ps.v[f, p] + affine @ dpos)
                g.m_in[base[0] + i, base[1] + j] += weight * mass


@qd.kernel(default_float=real)
def grid_op(g: Grid):
    # The original's `for i, j in grid_m_in` is qd.ndrange(n_grid, n_grid); spelled as one
    # loop here because reverse mode fails on a local assigned in a branch of an ndrange
    # loop and read in a nested one (`lin` below): tests/ad/test_ndrange_branches.py.
    for k in range(n_grid * n_grid):
        i = k // n_grid
        j = k % n_grid
        inv_m = 1 / (g.m_in[i, j] + 1e-10)
        v_out = inv_m * g.v_in[i, j]
        v_out[1] -= dt * gravity
        if i < bound and v_out[0] < 0:
            v_out[0] = 0
            v_out[1] = 0
        if i > n_grid - bound and v_out[0] > 0:
            v_out[0] = 0
            v_out[1] = 0
        if j < bound and v_out[1] < 0:
            v_out[0] = 0
            v_out[1] = 0
            normal = vec2(0.0, 1.0)
            lsq = qd.math.dot(normal, normal)
            if lsq > 0.5:
                if qd.static(coeff < 0):
                    v_out[0] = 0
                    v_out[1] = 0
                else:
                    lin = qd.math.dot(v_out, normal)
                    if lin < 0:
                        vit = v_out - lin * normal
                        lit = qd.math.norm(vit) + 1e-10
                        if lit + coeff * lin <= 0:
                            v_out[0] = 0
                            v_out[1] = 0
                        else:
                            v_out = (1 + coeff * lin / lit) * vit
        if j > n_grid - bound and v_out[1] > 0:
            v_out[0] = 0
            v_out[1] = 0

        g.v_out[i, j] = v_out


@qd.kernel(default_float=real)
def g2p(f: qd.int32, ps: Particles, g: Grid):
    for p in range(ps.x.shape[1]):
        base = ivec2(ps.x[f, p] * inv_dx - 0.5)
        fx = ps.x[f, p] * inv_dx - vec2(base)
        w = weights3(0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2)
        new_v = vec2(0.0, 0.0)
        new_C = mat2(0.0, 0.0, 0.0, 0.0)

        for i in qd.static(range(3)):
            for j in qd.static(range(3)):
                dpos = vec2(i, j) - fx
                g_v = g.v_out[base[0] + i, base[1] + j]
                weight = w[i, 0] * w[j, 1]
                new_v += weight * g_v
                new_C += 4 * weight * qd.math.outer(g_v, dpos) * inv_dx

        ps.v[f + 1, p] = new_v
        ps.x[f + 1, p] = ps.x[f, p] + dt * ps.v[f + 1, p]
        ps.C[f + 1, p] = new_C


@qd.kernel(default_float=real)
def compute_actuation(t: qd.int32, weights: qd.Array[real, 2], bias: qd.Array[real, 1],
                      actuation: qd.Array[real, 2]):
    for i in range(n_actuators):
        act = 0.0
        for j in qd.static(range(n_sin_waves)):
            act += weights[i, j] * qd.math.sin(actuation_omega * t * dt
                                               + 2 * math.pi / n_sin_waves * j)
        act += bias[i]
        actuation[t, i] = qd.math.tanh(act)


@qd.kernel(default_float=real)
def compute_x_avg(t: qd.int32, ps: Particles, x_avg: qd.Array[vec2, 1]):
    for i in range(ps.x.shape[1]):
        contrib = 0.0
        if ps.particle_type[i] == 1:
            contrib = 1.0 / n_solid_particles
        x_avg[0] += contrib * ps.x[t, i]


@qd.kernel(default_float=real)
def compute_loss(x_avg: qd.Array[vec2, 1], loss: qd.Array[real, 1]):
    dist = x_avg[0][0]
    loss[0] = -dist


class Scene:
    """The original's scene builder: rectangles of particles, each with an actuator id
    (-1: none) and a type (0: fluid, 1: solid)."""

    def __init__(self) -> None:
        self.x: list[list[float]] = []
        self.actuator_id: list[int] = []
        self.particle_type: list[int] = []
        self.offset_x = 0.0
        self.offset_y = 0.0
        self.n_actuators = 0

    def add_rect(self, x: float, y: float, w: float, h: float, actuation: int,
                 ptype: int = 1) -> None:
        w_count = int(w / dx) * 2
        h_count = int(h / dx) * 2
        real_dx = w / w_count
        real_dy = h / h_count
        for i in range(w_count):
            for j in range(h_count):
                self.x.append([x + (i + 0.5) * real_dx + self.offset_x,
                               y + (j + 0.5) * real_dy + self.offset_y])
                self.actuator_id.append(actuation)
                self.particle_type.append(ptype)

    def set_offset(self, x: float, y: float) -> None:
        self.offset_x = x
        self.offset_y = y


def robot(scene: Scene) -> None:
    scene.set_offset(0.1, 0.03)
    scene.add_rect(0.0, 0.1, 0.3, 0.1, -1)
    scene.add_rect(0.0, 0.0, 0.05, 0.1, 0)
    scene.add_rect(0.05, 0.0, 0.05, 0.1, 1)
    scene.add_rect(0.2, 0.0, 0.05, 0.1, 2)
    scene.add_rect(0.25, 0.0, 0.05, 0.1, 3)
    scene.n_actuators = 4


class DiffMPM:
    """The robot's arrays on one device, its forward and its optimisation loop."""

    def __init__(self, steps: int = 1024, device: str = "cpu") -> None:
        global n_actuators, n_solid_particles
        scene = Scene()
        robot(scene)
        n_actuators = scene.n_actuators
        n_solid_particles = sum(t == 1 for t in scene.particle_type)
        self.n_particles = n = len(scene.x)
        assert steps <= max_steps
        self.steps, self.device = steps, device

        def field(*shape: int) -> qd.Array:
            return qd.zeros(shape, dtype=real, device=device, requires_grad=True)

        def ints(values: list[int]) -> qd.Array:
            return qd.asarray(np.array(values, np.int32), device=device)

        self.ps = Particles(x=field(max_steps, n, 2), v=field(max_steps, n, 2),
                            C=field(max_steps, n, 2, 2), F=field(max_steps, n, 2, 2),
                            actuator_id=ints(scene.actuator_id),
                            particle_type=ints(scene.particle_type))
        self.grid = Grid(v_in=field(n_grid, n_grid, 2), m_in=field(n_grid, n_grid),
                         v_out=field(n_grid, n_grid, 2))
        self.weights = field(n_actuators, n_sin_waves)
        self.bias = field(n_actuators)
        self.actuation = field(max_steps, n_actuators)
        self.x_avg = field(1, 2)
        self.loss = field(1)
        self.ps.x[0] = qd.asarray(np.array(scene.x), dtype=real, device=device)
        self.ps.F[0] = qd.asarray(np.broadcast_to(np.eye(2), (n, 2, 2)), dtype=real,
                                  device=device)

    def init_weights(self, seed: int = 0) -> None:
        rng = np.random.RandomState(seed)
        self.set_params({"weights": rng.randn(n_actuators, n_sin_waves) * 0.01,
                         "bias": np.zeros(n_actuators)})

    def params(self) -> dict[str, np.ndarray]:
        """The actuation's weights and bias, as NumPy float64 arrays (copies)."""
        return {k: np.array(getattr(self, k).to_device("cpu"), np.float64)
                for k in ("weights", "bias")}

    def grads(self) -> dict[str, np.ndarray]:
        return {k: np.array(getattr(self, k).grad.to_device("cpu"), np.float64)
                for k in ("weights", "bias")}

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        for k, value in params.items():
            getattr(self, k)[...] = qd.asarray(value, dtype=real, device=self.device)

    def advance(self, s: int) -> None:
        clear_grid(self.grid)
        compute_actuation(s, self.weights, self.bias, self.actuation)
        p2g(s, self.ps, self.grid, self.actuation)
        grid_op(self.grid)
        g2p(s, self.ps, self.grid)

    def forward(self, total_steps: int | None = None) -> None:
        for s in range((total_steps or self.steps) - 1):
            self.advance(s)
        self.x_avg[...] = 0
        compute_x_avg((total_steps or self.steps) - 1, self.ps, self.x_avg)
        compute_loss(self.x_avg, self.loss)

    def forward_backward(self) -> float:
        """One forward and its reverse on one tape; the gradients are set, not summed."""
        with qd.ad.Tape(loss=self.loss, zero_grads=True):
            self.forward()
        return float(self.loss[0])

    def step(self, learning_rate: float = 0.1) -> float:
        loss = self.forward_backward()
        self.weights -= learning_rate * self.weights.grad
        self.bias -= learning_rate * self.bias.grad
        return loss

    def optimize(self, iters: int) -> list[float]:
        losses = []
        for it in range(iters):
            loss = self.step()
            losses.append(loss)
            print("i=", it, "loss=", loss)
        return losses

    def draw(self, out: str, losses: list[float], s: int) -> list[str]:
        """The particles at step `s` (actuated ones coloured by actuation) and the loss."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        x = np.asarray(self.ps.x.to_device("cpu"))[s]
        aid = np.asarray(self.ps.actuator_id.to_device("cpu"))
        act = np.asarray(self.actuation.to_device("cpu"))[s - 1]
        a = np.where(aid >= 0, act[np.maximum(aid, 0)], 0.0)
        colors = np.stack([0.5 - a, 0.5 - np.abs(a), 0.5 + a], 1).clip(0, 1)
        colors[aid < 0] = 0.07
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.scatter(x[:, 0], x[:, 1], c=colors, s=1)
        ax.plot([0.05, 0.95], [0.02, 0.02], color="k", lw=2)
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", title=f"diffmpm: step {s}")
        fig.savefig(f"{out}_state.png", dpi=80)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(losses)
        ax.set(xlabel="iteration", ylabel="loss (minus the mean x)", title="diffmpm")
        fig.tight_layout()
        fig.savefig(f"{out}_loss.png", dpi=80)
        plt.close(fig)
        return [f"{out}_state.png", f"{out}_loss.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1024)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="diffmpm", help="prefix of the pictures")
    args = parser.parse_args()

    sim = DiffMPM(args.steps, args.device)
    print("n_particles", sim.n_particles)
    print("n_solid", n_solid_particles)
    sim.init_weights()
    start = time.perf_counter()
    losses = sim.optimize(args.iters)
    print(f"{args.iters} iterations in {time.perf_counter() - start:.2f} s on {args.device}")
    sim.forward()
    try:
        print("wrote", ", ".join(sim.draw(args.out, losses, args.steps - 1)))
    except ImportError:
        print("matplotlib is not installed: no pictures (pip install matplotlib)")


if __name__ == "__main__":
    main()
