"""A soft robot of MPM particles learns to walk: DiffTaichi's diffmpm.py (Hu et al., ICLR 2020)
in qdarray.

    python examples/diffmpm.py [--iters 100] [--steps 1024] [--device cpu] [--out diffmpm]
                               [--checkpoint-steps K] [--memory-limit BYTES]

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

`--checkpoint-steps K` trades time for memory: the particles' arrays hold K + 1 steps instead
of all of them, the forward keeps only each segment of K steps' starting state, and the
reverse recomputes the segments, last first, each on a tape seeded with the gradient
arriving from the segment after it (`DiffMPM.forward_backward`), so a tape holds one segment
of steps. (K = 1 keeps what the originals keep, diffmpm.py and diffmpm_checkpointing.py:
every step's particles, and no grid, which their reverses recompute step by step.)
`--memory-limit BYTES` sets `qd.ad.set_memory_limit(BYTES)` and takes K from what a tape
copies per step. The gradients are those of one tape over all steps, bit for bit.
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
class State:
    """The particles' state at one step (the gradient arriving at a segment's end)."""
    x: qd.Array[vec2, 1]                # (n_particles, 2)
    v: qd.Array[vec2, 1]
    C: qd.Array[mat2, 1]                # (n_particles, 2, 2)
    F: qd.Array[mat2, 1]


STATE = ("x", "v", "C", "F")            # what a step hands to the next


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
    for i, j in qd.ndrange(n_grid, n_grid):  # the original's `for i, j in grid_m_in`
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
def compute_actuation(t: qd.int32, f: qd.int32, weights: qd.Array[real, 2],
                      bias: qd.Array[real, 1], actuation: qd.Array[real, 2]):
    # t: the step (the sine waves' time); f: its slot in `actuation`, t itself on one tape
    # over all steps, the step within its segment when checkpointing (the original has t only)
    for i in range(n_actuators):
        act = 0.0
        for j in qd.static(range(n_sin_waves)):
            act += weights[i, j] * qd.math.sin(actuation_omega * t * dt
                                               + 2 * math.pi / n_sin_waves * j)
        act += bias[i]
        actuation[f, i] = qd.math.tanh(act)


@qd.kernel(default_float=real)
def compute_x_avg(t: qd.int32, ps: Particles, x_avg: qd.Array[vec2, 1]):
    for i in range(ps.x.shape[1]):
        contrib = 0.0
        if ps.particle_type[i] == 1:
            contrib = 1.0 / n_solid_particles
        x_avg[0] += contrib * ps.x[t, i]


@qd.func(default_float=real)
def inner(a: mat2, b: mat2):
    return a[0, 0] * b[0, 0] + a[0, 1] * b[0, 1] + a[1, 0] * b[1, 0] + a[1, 1] * b[1, 1]


@qd.kernel(default_float=real)
def seed_loss(f: qd.int32, ps: Particles, g: State, out: qd.Array[real, 1]):
    # The sum over the particles of <state at f, g>: its gradient by the state at f is g, so
    # a segment's tape with this loss takes the gradient arriving from the next segment
    # (g) back through the segment's steps, as if the steps after it were on the same tape.
    for p in range(ps.x.shape[1]):
        out[0] += (qd.math.dot(ps.x[f, p], g.x[p]) + qd.math.dot(ps.v[f, p], g.v[p])
                   + inner(ps.C[f, p], g.C[p]) + inner(ps.F[f, p], g.F[p]))


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
    """The robot's arrays on one device, its forward and its optimisation loop.

    With `checkpoint_steps=K` the particles' arrays hold K + 1 steps, not all of them: the
    forward runs the steps in segments of K, keeping each segment's starting state, and the
    reverse recomputes the segments, last first, each on its own tape (`forward_backward`
    says how). K = 1 is the memory layout of DiffTaichi's diffmpm.py and
    diffmpm_checkpointing.py, which keep every step's particles and recompute each step's
    grid in the reverse by hand (`ti.ad.grad_replaced`)."""

    def __init__(self, steps: int = 1024, device: str = "cpu",
                 checkpoint_steps: int | None = None) -> None:
        global n_actuators, n_solid_particles
        scene = Scene()
        robot(scene)
        n_actuators = scene.n_actuators
        n_solid_particles = sum(t == 1 for t in scene.particle_type)
        self.n_particles = n = len(scene.x)
        assert steps <= max_steps
        self.steps, self.device = steps, device
        if checkpoint_steps is not None and checkpoint_steps < 1:
            raise ValueError(f"checkpoint_steps must be at least 1; got {checkpoint_steps}.")
        self.segment = checkpoint_steps
        # (start, length) of each segment of the steps that advance the state: one segment
        # of all of them without checkpointing
        k = checkpoint_steps or steps - 1
        self.segments = [(a, min(k, steps - 1 - a)) for a in range(0, steps - 1, k)]
        frames = max_steps if checkpoint_steps is None else checkpoint_steps + 1

        def field(*shape: int) -> qd.Array:
            return qd.zeros(shape, dtype=real, device=device, requires_grad=True)

        def ints(values: list[int]) -> qd.Array:
            return qd.asarray(np.array(values, np.int32), device=device)

        self.ps = Particles(x=field(frames, n, 2), v=field(frames, n, 2),
                            C=field(frames, n, 2, 2), F=field(frames, n, 2, 2),
                            actuator_id=ints(scene.actuator_id),
                            particle_type=ints(scene.particle_type))
        self.grid = Grid(v_in=field(n_grid, n_grid, 2), m_in=field(n_grid, n_grid),
                         v_out=field(n_grid, n_grid, 2))
        self.weights = field(n_actuators, n_sin_waves)
        self.bias = field(n_actuators)
        self.actuation = field(frames, n_actuators)
        self.x_avg = field(1, 2)
        self.loss = field(1)
        self.ps.x[0] = qd.asarray(np.array(scene.x), dtype=real, device=device)
        self.ps.F[0] = qd.asarray(np.broadcast_to(np.eye(2), (n, 2, 2)), dtype=real,
                                  device=device)
        if checkpoint_steps is not None:
            # Each segment's starting state (no gradients: they are copies), the first the
            # initial state; and the gradient arriving at a segment's end, with its loss.
            self.saved = {a: qd.zeros((len(self.segments),) + getattr(self.ps, a).shape[1:],
                                      dtype=real, device=device) for a in STATE}
            for a in STATE:
                self.saved[a][0] = getattr(self.ps, a)[0]
            self.arriving = State(**{a: qd.zeros(getattr(self.ps, a).shape[1:], dtype=real,
                                                 device=device) for a in STATE})
            self.seed = field(1)

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

    def advance(self, s: int, f: int | None = None) -> None:
        """Step s, from the state in slot f (s itself without checkpointing) to slot f + 1."""
        f = s if f is None else f
        clear_grid(self.grid)
        compute_actuation(s, f, self.weights, self.bias, self.actuation)
        p2g(f, self.ps, self.grid, self.actuation)
        grid_op(self.grid)
        g2p(f, self.ps, self.grid)

    def load(self, j: int) -> None:
        """Segment j's starting state into slot 0, when checkpointing. (Outside the tape that
        recomputes the segment: recorded, this write would clear the gradient that the
        segment's reverse leaves at slot 0 for the segment before.)"""
        if self.segment is not None:
            for a in STATE:
                getattr(self.ps, a)[0] = self.saved[a][j]

    def run_segment(self, j: int) -> None:
        """Segment j's steps, from its starting state, and the loss after the last one."""
        start, length = self.segments[j]
        offset = 0 if self.segment is None else start
        for s in range(start, start + length):
            self.advance(s, s - offset)
        if j == len(self.segments) - 1:
            self.x_avg[...] = 0
            compute_x_avg(self.steps - 1 - offset, self.ps, self.x_avg)
            compute_loss(self.x_avg, self.loss)

    def forward(self) -> None:
        """All steps and the loss; when checkpointing, keeping each segment's start."""
        for j, (_, length) in enumerate(self.segments):
            self.load(j)
            self.run_segment(j)
            if self.segment is not None and j + 1 < len(self.segments):
                for a in STATE:
                    self.saved[a][j + 1] = getattr(self.ps, a)[length]

    def forward_backward(self, stats: list[dict[str, int]] | None = None) -> float:
        """A forward and its reverse; the gradients are set, not summed. `stats` (a list)
        receives what each tape held when its recording ended (`Tape.stats()`).

        Without checkpointing: one tape over all steps. With it: the forward without a tape,
        keeping each segment's starting state, then for each segment, last first, its steps
        recomputed from that state on a tape whose loss is the sum over the particles of
        <state at the segment's end, gradient arriving there> (`seed_loss`; the last
        segment's loss is the program's). The reverses add into the weights' and bias'
        gradients in the order one tape over all steps would, and the gradient left at the
        segment's starting state is what arrives at the end of the one before."""
        if self.segment is None:
            with qd.ad.Tape(loss=self.loss, zero_grads=True) as tape:
                self.forward()
                if stats is not None:
                    stats.append(tape.stats())
            return float(self.loss[0])
        self.forward()
        loss = float(self.loss[0])
        qd.ad.zero_grad(self.weights, self.bias)
        stepped = [getattr(self.ps, a) for a in STATE]
        for j in reversed(range(len(self.segments))):
            _, length = self.segments[j]
            last = j == len(self.segments) - 1
            # not the weights' and bias' gradients, which add up over the segments
            qd.ad.zero_grad(*stepped, self.grid.v_in, self.grid.m_in, self.grid.v_out,
                            self.actuation, self.x_avg, self.seed)
            self.seed[...] = 0
            self.load(j)
            with qd.ad.Tape(loss=self.loss if last else self.seed) as tape:
                self.run_segment(j)
                if not last:
                    seed_loss(length, self.ps, self.arriving, self.seed)
                if stats is not None:
                    stats.append(tape.stats())
            for a in STATE:
                getattr(self.arriving, a)[...] = getattr(self.ps, a).grad[0]
        return loss

    def step(self, learning_rate: float = 0.1, stats: list[dict[str, int]] | None = None
             ) -> float:
        loss = self.forward_backward(stats)
        self.weights -= learning_rate * self.weights.grad
        self.bias -= learning_rate * self.bias.grad
        return loss

    def optimize(self, iters: int, stats: list[dict[str, int]] | None = None) -> list[float]:
        """`iters` gradient steps; `stats` receives the last one's tapes' `stats()`."""
        losses = []
        for it in range(iters):
            loss = self.step(stats=stats if it == iters - 1 else None)
            losses.append(loss)
            print("i=", it, "loss=", loss)
        return losses

    def step_snapshot_bytes(self) -> int:
        """What a tape copies per step: the grid that the step's `clear_grid`, `p2g` and
        `grid_op` overwrite while the step before still needs it (measured: two steps
        recorded)."""
        with qd.ad.Tape() as tape:
            self.advance(0, 0)
            first = tape.stats()["snapshot_bytes"]
            self.advance(1, 1)
            second = tape.stats()["snapshot_bytes"]
        return second - first

    @staticmethod
    def segment_within(limit: int, device: str = "cpu") -> int:
        """The segment length whose tape keeps at most `limit` bytes of copies: `limit`
        over what a tape copies per step (measured on a robot of three steps)."""
        return max(1, limit // DiffMPM(3, device, checkpoint_steps=2).step_snapshot_bytes())

    def draw(self, out: str, losses: list[float], s: int, step: int | None = None
             ) -> list[str]:
        """The particles in slot `s` (actuated ones coloured by actuation) and the loss;
        `step`: the step it holds (`s` itself without checkpointing)."""
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
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal",
               title=f"diffmpm: step {s if step is None else step}")
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
    parser.add_argument("--checkpoint-steps", type=int, metavar="K",
                        help="keep K + 1 steps, not all: recompute segments of K steps in the "
                             "reverse, each on its own tape")
    parser.add_argument("--memory-limit", type=int, metavar="BYTES",
                        help="qd.ad.set_memory_limit(BYTES), and segments whose tape copies fit "
                             "it (unless --checkpoint-steps is given)")
    parser.add_argument("--out", default="diffmpm", help="prefix of the pictures")
    args = parser.parse_args()

    segment = args.checkpoint_steps
    if args.memory_limit is not None:
        qd.ad.set_memory_limit(args.memory_limit)
        if segment is None:
            segment = DiffMPM.segment_within(args.memory_limit, args.device)
    sim = DiffMPM(args.steps, args.device, segment)
    print("n_particles", sim.n_particles)
    print("n_solid", n_solid_particles)
    if segment is not None:
        print(f"checkpointing: {len(sim.segments)} segments of {segment} steps")
    sim.init_weights()
    start = time.perf_counter()
    stats: list[dict[str, int]] = []
    losses = sim.optimize(args.iters, stats)
    print(f"{args.iters} iterations in {time.perf_counter() - start:.2f} s on {args.device}")
    if stats:
        held = max(s["bytes_held"] for s in stats)
        copies = max(s["snapshot_bytes"] for s in stats)
        print(f"the tape held at most {held / 2**20:.1f} MiB ({copies / 2**20:.1f} MiB of "
              f"copies of the grid; {len(stats)} tape(s) an iteration)")
    sim.forward()
    last = args.steps - 1 - sim.segments[-1][0] if segment is not None else args.steps - 1
    try:
        print("wrote", ", ".join(sim.draw(args.out, losses, last, args.steps - 1)))
    except ImportError:
        print("matplotlib is not installed: no pictures (pip install matplotlib)")


if __name__ == "__main__":
    main()
