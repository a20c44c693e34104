"""A charged particle steered by eight electrodes follows a moving goal: DiffTaichi's electric.py
(Hu et al., ICLR 2020), in qdarray.

    python examples/electric.py [--iters 200] [--steps 512] [--seed 0] [--device cpu]
                                [--out electric]

The same maths, sizes, controller and loss as DiffTaichi's examples/electric.py: eight
electrodes on the border of the unit square pull a particle with a force 1e-3 * g_i / |r|^3 * r
(|r| at least 0.1); their charges g_i come from a controller (the particle's position and
velocity and the goal's position and velocity in, 64 tanh units, eight tanh charges out) at
every one of the 512 steps (dt 0.03, damping 0.2). The goal moves along two straight segments
between three random points; the loss is dt times the sum over the steps of the squared
distance between the particle and the goal. Each optimisation iteration draws a new task
(a new goal path, the particle starting at its first point), runs one forward and its reverse
on one tape (about 2,000 launches) and takes a gradient step of learning rate 2e-2.

As in the original, `nn1(t)` reads `x[t]` and `v[t]` before `advance(t)` computes them, so the
controller sees the previous iteration's trajectory (zeros in the first one). The tape keeps
what `nn1(t)` read, so the gradient is that of the forward as it runs; Taichi's reverse of
`nn1(t)` reads the overwritten `x[t]` instead (docs/examples.md, "Gradients").

Written the way a qdarray user ports it: arrays of 2-D vectors indexed by time
(`qd.Array[vec2, 1]`: `x[t]` is a vec2), the state and the controller as dataclasses passed to
kernels, `qd.ad.Tape(loss=..., zero_grads=True)` (Taichi's Tape clears the gradients too).
The random numbers are drawn in the original's order from `random.Random(seed)`, so a run
equals the original's after `random.seed(seed)`. Pictures of the last trajectory and of the
loss curve are written to `<out>_state.png` and `<out>_loss.png` when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import time

import numpy as np

import qdarray as qd

# The constants of the original (compile-time constants in the kernels).
real = qd.float32                       # the original's `real = ti.f32`
vec2 = qd.types.vector(2, real)
max_steps = 2048
seg_size = 256
damping = 0.2
n_gravitation = 8
n_hidden = 64
dt = 0.03
learning_rate = 2e-2
K = 1e-3
pad = 0.1
# A tuple where the original has a list: kernels index tuples of constants, not lists (whose
# items could change in place after the kernel compiled).
gravitation_position = ((pad, pad), (pad, 1 - pad), (1 - pad, 1 - pad), (1 - pad, pad),
                        (0.5, 1 - pad), (0.5, pad), (pad, 0.5), (1 - pad, 0.5))


@dataclasses.dataclass(frozen=True)
class State:
    """The particle and the goal, indexed by time: Taichi's fields, as arrays."""

    x: qd.Array[vec2, 1]               # (max_steps, 2)
    v: qd.Array[vec2, 1]
    goal: qd.Array[vec2, 1]
    goal_v: qd.Array[vec2, 1]


@dataclasses.dataclass(frozen=True)
class Controller:
    """The controller's weights and its activations, indexed time first as the original lays
    them out (`dense(ti.l, max_steps).dense(ti.i, n)`; it writes `hidden[i, t]`)."""

    weight1: qd.Array[real, 2]         # (8, n_hidden)
    bias1: qd.Array[real, 1]
    weight2: qd.Array[real, 2]         # (n_hidden, n_gravitation)
    bias2: qd.Array[real, 1]
    hidden: qd.Array[real, 2]          # (max_steps, n_hidden)
    gravitation: qd.Array[real, 2]     # (max_steps, n_gravitation)


@qd.kernel(default_float=real)
def nn1(t: qd.int32, s: State, nn: Controller):
    for i in range(n_hidden):
        act = 0.0
        act += (s.x[t][0] - 0.5) * nn.weight1[0, i]
        act += (s.x[t][1] - 0.5) * nn.weight1[1, i]
        act += s.v[t][0] * nn.weight1[2, i]
        act += s.v[t][1] * nn.weight1[3, i]
        act += (s.goal[t][0] - 0.5) * nn.weight1[4, i]
        act += (s.goal[t][1] - 0.5) * nn.weight1[5, i]
        act += (s.goal_v[t][0] - 0.5) * nn.weight1[6, i]
        act += (s.goal_v[t][1] - 0.5) * nn.weight1[7, i]
        act += nn.bias1[i]
        nn.hidden[t, i] = qd.math.tanh(act)


@qd.kernel(default_float=real)
def nn2(t: qd.int32, nn: Controller):
    for i in range(n_gravitation):
        act = 0.0
        for j in qd.static(range(n_hidden)):
            act += nn.hidden[t, j] * nn.weight2[j, i]
        act += nn.bias2[i]
        nn.gravitation[t, i] = qd.math.tanh(act)


@qd.kernel(default_float=real)
def advance(t: qd.int32, s: State, nn: Controller):
    for _ in range(1):  # parallelize this loop
        gravitational_force = vec2(0.0, 0.0)
        for i in qd.static(range(n_gravitation)):  # instead of this one
            r = s.x[t - 1] - vec2(gravitation_position[i][0], gravitation_position[i][1])
            len_r = max(qd.math.norm(r), 1e-1)
            gravitational_force += K * nn.gravitation[t, i] / (len_r * len_r * len_r) * r
        s.v[t] = s.v[t - 1] * math.exp(-dt * damping) + dt * gravitational_force
        s.x[t] = s.x[t - 1] + dt * s.v[t]


@qd.kernel(default_float=real)
def compute_loss(t: qd.int32, s: State, loss: qd.Array[real, 1]):
    d = s.x[t] - s.goal[t]
    qd.atomic_add(loss[0], dt * qd.math.dot(d, d))


def lerp(x: float, a: float, b: float) -> float:
    return (1 - x) * a + x * b


class Electric:
    """The particle's and the controller's arrays on one device, the forward and the
    optimisation loop."""

    def __init__(self, steps: int = 512, device: str = "cpu") -> None:
        assert steps <= max_steps
        self.steps, self.device = steps, device
        self.dtype = dtype = real

        def field(*shape: int) -> qd.Array:
            return qd.zeros(shape, dtype=dtype, device=device, requires_grad=True)

        self.state = State(x=field(max_steps, 2), v=field(max_steps, 2),
                           goal=field(max_steps, 2), goal_v=field(max_steps, 2))
        self.nn = Controller(
            weight1=field(8, n_hidden), bias1=field(n_hidden),
            weight2=field(n_hidden, n_gravitation), bias2=field(n_gravitation),
            hidden=field(max_steps, n_hidden), gravitation=field(max_steps, n_gravitation))
        self.loss = field(1)

    def init_weights(self, rng: random.Random) -> None:
        """The original's initialisation: uniform in (-0.15, 0.15), weight1 then weight2, row
        by row; the biases are zero."""
        w1 = np.array([[(rng.random() - 0.5) * 0.3 for _ in range(n_hidden)] for _ in range(8)])
        w2 = np.array([[(rng.random() - 0.5) * 0.3 for _ in range(n_gravitation)]
                       for _ in range(n_hidden)])
        self.set_weights({"weight1": w1, "bias1": np.zeros(n_hidden),
                          "weight2": w2, "bias2": np.zeros(n_gravitation)})

    def initialize(self, rng: random.Random) -> None:
        """A new task, as the original's initialize(): three random points in (0.2, 0.8)^2,
        the goal moving from one to the next in `seg_size` steps, the particle at the first."""
        segments = self.steps // seg_size
        points = [[0.2 + rng.random() * 0.6, 0.2 + rng.random() * 0.6]
                  for _ in range(segments + 1)]
        goal = np.zeros((max_steps, 2))
        goal_v = np.zeros((max_steps, 2))
        for i in range(segments):
            for j in range(self.steps // segments):
                k = self.steps // segments * i + j
                goal[k] = [lerp(j / seg_size, points[i][0], points[i + 1][0]),
                           lerp(j / seg_size, points[i][1], points[i + 1][1])]
                goal_v[k] = [points[i + 1][0] - points[i][0], points[i + 1][1] - points[i][1]]
        s = self.state
        s.goal[...] = qd.asarray(goal, dtype=self.dtype, device=self.device)
        s.goal_v[...] = qd.asarray(goal_v, dtype=self.dtype, device=self.device)
        s.x[0] = qd.asarray(points[0], dtype=self.dtype, device=self.device)

    def weights(self) -> dict[str, np.ndarray]:
        """The controller's parameters, as NumPy float64 arrays (copies)."""
        return {k: np.array(getattr(self.nn, k).to_device("cpu"), np.float64)
                for k in ("weight1", "bias1", "weight2", "bias2")}

    def grads(self) -> dict[str, np.ndarray]:
        """The gradients of the loss by the controller's parameters, float64."""
        return {k: np.array(getattr(self.nn, k).grad.to_device("cpu"), np.float64)
                for k in ("weight1", "bias1", "weight2", "bias2")}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for k, w in weights.items():
            getattr(self.nn, k)[...] = qd.asarray(w, dtype=self.dtype, device=self.device)

    def trajectory(self) -> dict[str, np.ndarray]:
        """x and v (the controller's input at the next forward: see the module's docstring)."""
        return {k: np.array(getattr(self.state, k).to_device("cpu"), np.float64)
                for k in ("x", "v")}

    def set_trajectory(self, arrays: dict[str, np.ndarray]) -> None:
        for k, a in arrays.items():
            getattr(self.state, k)[...] = qd.asarray(a, dtype=self.dtype, device=self.device)

    def forward(self) -> None:
        s, nn = self.state, self.nn
        self.loss[...] = 0   # ti.ad.Tape sets the loss to 0 on entry; qdarray's leaves it
        for t in range(1, self.steps):
            nn1(t, s, nn)
            nn2(t, nn)
            advance(t, s, nn)
            compute_loss(t, s, self.loss)

    def clear(self) -> None:
        """Nothing to clear between iterations (the original has no clear()); for the
        benchmark's common interface."""

    def forward_backward(self) -> float:
        """One forward and its reverse on one tape; the gradients are set, not summed."""
        with qd.ad.Tape(loss=self.loss, zero_grads=True):
            self.forward()
        return float(self.loss[0])

    def step(self) -> float:
        """One optimisation iteration on the current task: forward + backward, then plain
        gradient descent."""
        loss = self.forward_backward()
        for k in ("weight1", "bias1", "weight2", "bias2"):
            p = getattr(self.nn, k)
            p -= learning_rate * p.grad
        return loss

    def optimize(self, iters: int, rng: random.Random) -> list[float]:
        """The original's loop: a new task, then a step, per iteration."""
        losses = []
        for it in range(iters):
            self.initialize(rng)
            loss = self.step()
            print("Iter=", it, "Loss=", loss)
            losses.append(loss)
        return losses

    def draw(self, out: str, losses: list[float]) -> list[str]:
        """The last trajectory against the goal's path, the electrodes sized by their last
        charge as the original's GUI draws them, and the loss curve, as PNGs."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = self.steps - 1
        x = np.asarray(self.state.x.to_device("cpu"))[:self.steps]
        goal = np.asarray(self.state.goal.to_device("cpu"))[:self.steps]
        charge = np.asarray(self.nn.gravitation.to_device("cpu"))[t]
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.set_facecolor("#3c733f")
        pos = np.array(gravitation_position)
        ax.scatter(pos[:, 0], pos[:, 1], s=((charge + 1) * 12) ** 2, c="#ccaa44", zorder=2)
        ax.plot(goal[:, 0], goal[:, 1], color="#3344cc", lw=2, label="goal")
        ax.plot(x[:, 0], x[:, 1], color="#f20530", lw=1.5, label="particle")
        ax.scatter([x[-1, 0]], [x[-1, 1]], c="#f20530", s=60, zorder=3)
        ax.scatter([goal[-1, 0]], [goal[-1, 1]], c="#3344cc", s=30, zorder=3)
        ax.legend(loc="upper right", fontsize=8)
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal",
               title=f"electric: {self.steps} steps, loss {losses[-1]:.4f}" if losses else "")
        fig.savefig(f"{out}_state.png", dpi=80)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(losses, lw=0.8)
        ax.set(xlabel="iteration (a new task each)", ylabel="loss", title="electric")
        fig.tight_layout()
        fig.savefig(f"{out}_loss.png", dpi=80)
        plt.close(fig)
        return [f"{out}_state.png", f"{out}_loss.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=200,
                        help="optimisation iterations (the original prints every 200)")
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0, help="of the original's random draws")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="electric", help="prefix of the pictures")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    for _ in range(40):                 # the original's (unused) `tasks`, drawn at import
        rng.random()
    sim = Electric(args.steps, args.device)
    sim.init_weights(rng)
    sim.initialize(rng)                 # the original's `forward(visualize=True, ...)` first
    sim.forward()
    start = time.perf_counter()
    losses = sim.optimize(args.iters, rng)
    print(f"{args.iters} iterations in {time.perf_counter() - start:.2f} s on {args.device}")
    try:
        print("wrote", ", ".join(sim.draw(args.out, losses)))
    except ImportError:
        print("matplotlib is not installed: no pictures (pip install matplotlib)")


if __name__ == "__main__":
    main()
