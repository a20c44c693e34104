"""A mass-spring robot learns to walk: DiffTaichi's mass_spring.py (Hu et al., ICLR 2020), in
qdarray.

    python examples/mass_spring.py [--robot 2] [--iters 100] [--steps 682] [--device cpu]
                                   [--no-toi] [--out mass_spring]

The same maths, sizes and loss as DiffTaichi's examples/mass_spring.py: point masses joined by
springs, some of them actuated by a small neural controller (sine waves and the robot's state
in, 32 tanh units, one actuation per spring out); semi-implicit Euler steps with ground
contact (time of impact, or friction projection with --no-toi); the loss is minus the head's
x position after `steps` steps. Every quantity is indexed by time (`x[t, i]`), so one tape
over all steps keeps nothing beyond the arrays, and each optimisation iteration is one
forward and one reverse of about 3,400 launches. The gradients are normalised to length 0.2
and subtracted, as in the original.

Written the way a qdarray user writes it: arrays of 2-D vectors (`qd.Array[qd.vec2, 2]`),
the state and the controller as dataclasses passed to kernels, `qd.ad.Tape(loss=...,
zero_grads=True)` (Taichi's Tape clears the gradients too). Pictures of the final state and
of the loss curve are written to `<out>_state.png` and `<out>_loss.png` when matplotlib is
installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np

import qdarray as qd

# The robots of DiffTaichi's mass_spring_robot_config.py: (objects, springs), each spring
# (a, b, rest length, stiffness, actuation).
Robot = tuple[list[tuple[float, float]], list[tuple[int, int, float, float, float]]]


def robot(robot_id: int) -> Robot:
    """Robot A, B, C or D (0 to 3) of the original's mass_spring_robot_config.py, built in the
    same order (so the springs are numbered alike)."""
    objects: list[tuple[float, float]] = []
    springs: list[tuple[int, int, float, float, float]] = []
    points: list[tuple[float, float]] = []
    mesh_springs: list[tuple[int, int]] = []

    def add_spring(a: int, b: int, stiffness: float, actuation: float) -> None:
        length = ((objects[a][0] - objects[b][0]) ** 2
                  + (objects[a][1] - objects[b][1]) ** 2) ** 0.5
        springs.append((a, b, length, stiffness, actuation))

    def point(i: float, j: float) -> int:
        if (i, j) not in points:
            objects.append((i * 0.05 + 0.1, j * 0.05 + 0.1))
            points.append((i, j))
        return points.index((i, j))

    def mesh_spring(a: int, b: int, actuation: float) -> None:
        if (a, b) not in mesh_springs and (b, a) not in mesh_springs:
            mesh_springs.append((a, b))
            add_spring(a, b, 3e4, actuation)

    def square(i: int, j: int, actuation: float = 0.0) -> None:
        a, b, c, d = point(i, j), point(i, j + 1), point(i + 1, j), point(i + 1, j + 1)
        mesh_spring(a, b, actuation)
        mesh_spring(c, d, actuation)
        for p in (a, b, c, d):
            for q in (a, b, c, d):
                if p != q:
                    mesh_spring(p, q, 0.0)

    def triangle(i: int, j: int) -> None:
        a, b, d = point(i + 0.5, j + 0.5), point(i, j + 1), point(i + 1, j + 1)
        for p in (a, b, d):
            for q in (a, b, d):
                if p != q:
                    mesh_spring(p, q, 0.0)

    if robot_id == 0:
        objects += [(0.2, 0.1), (0.3, 0.13), (0.4, 0.1), (0.2, 0.2), (0.3, 0.2), (0.4, 0.2)]
        for a, b in ((0, 1), (1, 2), (3, 4), (4, 5), (0, 3), (2, 5), (0, 4), (1, 4), (2, 4),
                     (3, 1), (5, 1)):
            add_spring(a, b, 14000, 0.1)
        return objects, springs
    cells = [(2, 0, 0.15), (0, 0, 0.15), (0, 1, 0.15), (0, 2, 0.0), (1, 2, 0.0),
             (2, 1, 0.15), (2, 2, 0.0), (2, 3, 0.0), (2, 4, 0.0)]
    if robot_id == 1:
        triangle(2, 0)
        triangle(0, 0)
        cells = cells[2:7]
    elif robot_id == 3:
        cells += [(3, 1, 0.0), (4, 0, 0.15), (4, 1, 0.15)]
    for i, j, actuation in cells:
        square(i, j, actuation)
    return objects, springs


# The constants of the original (compile-time constants in the kernels).
real = qd.float32                       # the original's `real = ti.f32`
vec2 = qd.types.vector(2, real)
max_steps = 4096
elasticity = 0.0
ground_height = 0.1
gravity = -4.8
friction = 2.5
spring_omega = 10
damping = 15
n_sin_waves = 10
n_hidden = 32
dt = 0.004
head_id = 0
# Set by setup() from the robot (the original's globals, read by its kernels as constants).
n_objects = 0
n_springs = 0


def n_input_states() -> int:
    return n_sin_waves + 4 * n_objects + 2


@dataclasses.dataclass(frozen=True)
class State:
    """The time-indexed state and the springs: Taichi's fields, as arrays."""

    x: qd.Array[vec2, 2]              # (max_steps, n_objects, 2)
    v: qd.Array[vec2, 2]
    v_inc: qd.Array[vec2, 2]
    center: qd.Array[vec2, 1]         # (max_steps, 2)
    goal: qd.Array[vec2, 1]           # (1, 2)
    spring_anchor_a: qd.Array[qd.int32, 1]
    spring_anchor_b: qd.Array[qd.int32, 1]
    spring_length: qd.Array[real, 1]
    spring_stiffness: qd.Array[real, 1]
    spring_actuation: qd.Array[real, 1]


@dataclasses.dataclass(frozen=True)
class Controller:
    """The controller's weights and its time-indexed activations."""

    weights1: qd.Array[real, 2]    # (n_hidden, n_input_states)
    bias1: qd.Array[real, 1]
    weights2: qd.Array[real, 2]    # (n_springs, n_hidden)
    bias2: qd.Array[real, 1]
    hidden: qd.Array[real, 2]      # (max_steps, n_hidden)
    act: qd.Array[real, 2]         # (max_steps, n_springs)


@qd.kernel(default_float=real)
def compute_center(t: qd.int32, s: State):
    for _ in range(1):
        c = vec2(0.0, 0.0)
        for i in qd.static(range(n_objects)):
            c += s.x[t, i]
        s.center[t] = (1.0 / n_objects) * c


@qd.kernel(default_float=real)
def nn1(t: qd.int32, s: State, nn: Controller):
    for i in range(n_hidden):
        actuation = 0.0
        for j in qd.static(range(n_sin_waves)):
            actuation += nn.weights1[i, j] * qd.math.sin(spring_omega * t * dt
                                                         + 2 * math.pi / n_sin_waves * j)
        for j in qd.static(range(n_objects)):
            offset = s.x[t, j] - s.center[t]
            # use a smaller weight since there are too many of them
            actuation += nn.weights1[i, j * 4 + n_sin_waves] * offset[0] * 0.05
            actuation += nn.weights1[i, j * 4 + n_sin_waves + 1] * offset[1] * 0.05
            actuation += nn.weights1[i, j * 4 + n_sin_waves + 2] * s.v[t, j][0] * 0.05
            actuation += nn.weights1[i, j * 4 + n_sin_waves + 3] * s.v[t, j][1] * 0.05
        actuation += nn.weights1[i, n_objects * 4 + n_sin_waves] * (s.goal[0][0] - s.center[t][0])
        actuation += nn.weights1[i, n_objects * 4 + n_sin_waves + 1] * (s.goal[0][1]
                                                                        - s.center[t][1])
        actuation += nn.bias1[i]
        actuation = qd.math.tanh(actuation)
        nn.hidden[t, i] = actuation


@qd.kernel(default_float=real)
def nn2(t: qd.int32, nn: Controller):
    for i in range(n_springs):
        actuation = 0.0
        for j in qd.static(range(n_hidden)):
            actuation += nn.weights2[i, j] * nn.hidden[t, j]
        actuation += nn.bias2[i]
        actuation = qd.math.tanh(actuation)
        nn.act[t, i] = actuation


@qd.kernel(default_float=real)
def apply_spring_force(t: qd.int32, s: State, nn: Controller):
    for i in range(n_springs):
        a = s.spring_anchor_a[i]
        b = s.spring_anchor_b[i]
        pos_a = s.x[t, a]
        pos_b = s.x[t, b]
        dist = pos_a - pos_b
        length = qd.math.norm(dist) + 1e-4

        target_length = s.spring_length[i] * (1.0 + s.spring_actuation[i] * nn.act[t, i])
        impulse = dt * (length - target_length) * s.spring_stiffness[i] / length * dist

        s.v_inc[t + 1, a] += -impulse        # atomic in the parallel loop
        s.v_inc[t + 1, b] += impulse


@qd.kernel(default_float=real)
def advance_toi(t: qd.int32, s: State):
    for i in range(n_objects):
        damp = math.exp(-dt * damping)
        old_v = damp * s.v[t - 1, i] + dt * gravity * vec2(0.0, 1.0) + s.v_inc[t, i]
        old_x = s.x[t - 1, i]
        new_x = old_x + dt * old_v
        toi = 0.0
        new_v = old_v
        if new_x[1] < ground_height and old_v[1] < -1e-4:
            toi = -(old_x[1] - ground_height) / old_v[1]
            new_v = vec2(0.0, 0.0)
        new_x = old_x + toi * old_v + (dt - toi) * new_v

        s.v[t, i] = new_v
        s.x[t, i] = new_x


@qd.kernel(default_float=real)
def advance_no_toi(t: qd.int32, s: State):
    for i in range(n_objects):
        damp = math.exp(-dt * damping)
        old_v = damp * s.v[t - 1, i] + dt * gravity * vec2(0.0, 1.0) + s.v_inc[t, i]
        old_x = s.x[t - 1, i]
        new_v = old_v
        depth = old_x[1] - ground_height
        if depth < 0 and new_v[1] < 0:
            # friction projection
            new_v[0] = 0
            new_v[1] = 0
        new_x = old_x + dt * new_v
        s.v[t, i] = new_v
        s.x[t, i] = new_x


@qd.kernel(default_float=real)
def compute_loss(t: qd.int32, s: State, loss: qd.Array[real, 1]):
    loss[0] = -s.x[t, head_id][0]


class MassSpring:
    """One robot's arrays on one device, its forward and its optimisation loop."""

    def __init__(self, robot_id: int = 2, steps: int = 2048 // 3, device: str = "cpu",
                 toi: bool = True) -> None:
        global n_objects, n_springs
        objects, springs = robot(robot_id)
        n_objects, n_springs = len(objects), len(springs)
        assert steps * 2 <= max_steps
        self.steps, self.toi, self.device = steps, toi, device
        self.dtype = dtype = real

        def field(*shape: int, grad: bool = True) -> qd.Array:
            return qd.zeros(shape, dtype=dtype, device=device, requires_grad=grad)

        def column(k: int, kind: qd.DType = dtype) -> qd.Array:
            return qd.asarray(np.array([s[k] for s in springs]), dtype=kind, device=device)

        self.state = State(
            x=field(max_steps, n_objects, 2), v=field(max_steps, n_objects, 2),
            v_inc=field(max_steps, n_objects, 2), center=field(max_steps, 2),
            goal=field(1, 2), spring_anchor_a=column(0, qd.int32),
            spring_anchor_b=column(1, qd.int32), spring_length=column(2),
            spring_stiffness=column(3), spring_actuation=column(4))
        self.nn = Controller(
            weights1=field(n_hidden, n_input_states()), bias1=field(n_hidden),
            weights2=field(n_springs, n_hidden), bias2=field(n_springs),
            hidden=field(max_steps, n_hidden), act=field(max_steps, n_springs))
        self.loss = field(1)
        self.state.x[0] = qd.asarray(np.array(objects), dtype=dtype, device=device)
        self.objects, self.springs = objects, springs

    def init_weights(self, seed: int = 0) -> None:
        """The original's initialisation: np.random.seed(0), then randn per element in order."""
        rng = np.random.RandomState(seed)
        n_in = n_input_states()
        w1 = rng.randn(n_hidden, n_in) * math.sqrt(2 / (n_hidden + n_in)) * 2
        w2 = rng.randn(n_springs, n_hidden) * math.sqrt(2 / (n_hidden + n_springs)) * 3
        self.set_weights({"weights1": w1, "bias1": np.zeros(n_hidden),
                          "weights2": w2, "bias2": np.zeros(n_springs)})

    def weights(self) -> dict[str, np.ndarray]:
        """The controller's parameters, as NumPy float64 arrays (copies)."""
        return {k: np.array(getattr(self.nn, k).to_device("cpu"), np.float64)
                for k in ("weights1", "bias1", "weights2", "bias2")}

    def grads(self) -> dict[str, np.ndarray]:
        """The gradients of the loss by the controller's parameters, float64."""
        return {k: np.array(getattr(self.nn, k).grad.to_device("cpu"), np.float64)
                for k in ("weights1", "bias1", "weights2", "bias2")}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for k, w in weights.items():
            getattr(self.nn, k)[...] = qd.asarray(w, dtype=self.dtype, device=self.device)

    def forward(self) -> None:
        s, nn = self.state, self.nn
        s.goal[0] = qd.asarray([0.9, 0.2], dtype=self.dtype, device=self.device)
        advance = advance_toi if self.toi else advance_no_toi
        for t in range(1, self.steps):
            compute_center(t - 1, s)
            nn1(t - 1, s, nn)
            nn2(t - 1, nn)
            apply_spring_force(t - 1, s, nn)
            advance(t, s)
        self.loss[...] = 0
        compute_loss(self.steps - 1, s, self.loss)

    def clear(self) -> None:
        self.state.v_inc[...] = 0

    def forward_backward(self) -> float:
        """One forward and its reverse on one tape; the gradients are set, not summed."""
        self.clear()
        with qd.ad.Tape(loss=self.loss, zero_grads=True):
            self.forward()
        return float(self.loss[0])

    def step(self) -> tuple[float, float]:
        """One optimisation iteration: forward + backward, then a step of length 0.2."""
        loss = self.forward_backward()
        params = [getattr(self.nn, k) for k in ("weights1", "bias1", "weights2", "bias2")]
        total_norm_sqr = sum(float(qd.sum(p.grad * p.grad)) for p in params)
        gradient_clip = 0.2
        scale = gradient_clip / (total_norm_sqr ** 0.5 + 1e-6)
        for p in params:
            p -= scale * p.grad
        return loss, total_norm_sqr

    def optimize(self, iters: int) -> list[float]:
        losses = []
        for it in range(iters):
            loss, total_norm_sqr = self.step()
            print("Iter=", it, "Loss=", loss)
            print(total_norm_sqr)
            losses.append(loss)
        return losses

    def draw(self, out: str, losses: list[float]) -> list[str]:
        """The final state (springs coloured by actuation) and the loss curve, as PNGs."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = self.steps - 1
        x = np.asarray(self.state.x.to_device("cpu"))[t]
        act = np.asarray(self.nn.act.to_device("cpu"))[t - 1]
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.axhline(ground_height, color="k", lw=2)
        for k, (a, b, _, _, actuation) in enumerate(self.springs):
            if actuation == 0:
                color, width = "#222222", 1.0
            else:
                u = float(act[k]) * 0.5
                color, width = (min(max(0.5 + u, 0), 1), 0.5 - abs(u), min(max(0.5 - u, 0), 1)), 2.5
            ax.plot([x[a, 0], x[b, 0]], [x[a, 1], x[b, 1]], color=color, lw=width)
        colors = ["#cc334d" if i == head_id else "#669999" for i in range(n_objects)]
        ax.scatter(x[:, 0], x[:, 1], c=colors, s=30, zorder=3)
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal",
               title=f"mass_spring: step {t}, loss {losses[-1]:.4f}" if losses else "")
        fig.savefig(f"{out}_state.png", dpi=80)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(losses)
        ax.set(xlabel="iteration", ylabel="loss (minus the head's x)", title="mass_spring")
        fig.tight_layout()
        fig.savefig(f"{out}_loss.png", dpi=80)
        plt.close(fig)
        return [f"{out}_state.png", f"{out}_loss.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--robot", type=int, default=2, choices=range(4),
                        help="robot A, B, C or D of the original (default 2, as its README)")
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--steps", type=int, default=2048 // 3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-toi", action="store_true",
                        help="friction projection instead of time of impact (the 'plot' task's "
                             "other half); `train` in the original uses time of impact")
    parser.add_argument("--out", default="mass_spring", help="prefix of the pictures")
    args = parser.parse_args()

    sim = MassSpring(args.robot, args.steps, args.device, toi=not args.no_toi)
    print("n_objects=", n_objects, "   n_springs=", n_springs)
    sim.init_weights()
    start = time.perf_counter()
    losses = sim.optimize(args.iters)
    print(f"{args.iters} iterations in {time.perf_counter() - start:.2f} s on {args.device}")
    sim.clear()
    sim.forward()
    try:
        print("wrote", ", ".join(sim.draw(args.out, losses)))
    except ImportError:
        print("matplotlib is not installed: no pictures (pip install matplotlib)")


if __name__ == "__main__":
    main()
