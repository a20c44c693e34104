"""Rigid bodies joined by springs learn to walk: DiffTaichi's rigid_body.py (Hu et al., ICLR
2020), in qdarray.

    python examples/rigid_body.py [--robot 2] [--iters 20] [--steps 2048] [--device cpu]
                                  [--no-toi] [--out rigid_body]

The same maths, sizes and loss as DiffTaichi's examples/rigid_body.py (with the robots of its
robot_config.py): 2-D boxes with a position, a rotation and their velocities, joined by
springs (actuated ones, whose rest length a small neural controller changes, and joints,
`spring_length == -1`, which also project the relative velocity at the anchors); each box's
four corners collide with the ground through impulses with friction and a time of impact;
the loss is the distance of the head's centre from the goal (0.9, 0.15) after `steps`
steps. Every quantity is indexed by time (`x[t, i]`), so one tape over all steps keeps
nothing beyond the arrays; each optimisation iteration is one forward and one reverse of
about 10,000 launches. The update is the original's: learning rate 1 and gradients clipped
to length 0.2.

Written the way a qdarray user writes it: arrays of 2-D vectors (`qd.Array[qd.vec2, 2]`),
the bodies, the springs and the controller as dataclasses passed to kernels, the original's
`@ti.func`s (`to_world`, `apply_impulse`) as `@qd.func`s, `qd.ad.Tape(loss=...,
zero_grads=True)` (Taichi's Tape clears the gradients too). The initial weights are the
original's randn scaling, from seed 0 (the original sets none). Pictures of the final state
and of the loss curve are written to `<out>_state.png` and `<out>_loss.png` when matplotlib
is installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np

import qdarray as qd

# A robot of DiffTaichi's robot_config.py: objects (centre, half size, rotation), springs
# (a, b, offset_a, offset_b, length (-1: a joint), stiffness, actuation (0: the default)) and
# the head's index.
Object = tuple[list[float], list[float], float]
Spring = tuple[int, int, list[float], list[float], float, float, float]


def robot(robot_id: int) -> tuple[list[Object], list[Spring], int]:
    """robotA, robotB or robotLeg (0 to 2: the original's `robots` list), built in the same
    order (so objects and springs are numbered alike)."""
    objects: list[Object] = []
    springs: list[Spring] = []

    def add_object(x: list[float], halfsize: list[float], rotation: float = 0.0) -> int:
        objects.append((x, halfsize, rotation))
        return len(objects) - 1

    def add_spring(a: int, b: int, offset_a: list[float], offset_b: list[float], length: float,
                   stiffness: float, actuation: float = 0.0) -> None:
        springs.append((a, b, offset_a, offset_b, length, stiffness, actuation))

    if robot_id == 0:
        add_object(x=[0.3, 0.25], halfsize=[0.15, 0.03])
        add_object(x=[0.2, 0.15], halfsize=[0.03, 0.02])
        add_object(x=[0.3, 0.15], halfsize=[0.03, 0.02])
        add_object(x=[0.4, 0.15], halfsize=[0.03, 0.02])
        add_object(x=[0.4, 0.3], halfsize=[0.005, 0.03])
        length, stiffness = 0.12, 15
        for b, offset in ((1, -0.03), (1, -0.1), (2, -0.03), (2, 0.03), (3, 0.03), (3, 0.1)):
            add_spring(0, b, [offset, 0.00], [0.0, 0.0], length, stiffness)
        add_spring(0, 4, [0.1, 0], [0, -0.05], -1, stiffness)
        return objects, springs, 0
    if robot_id == 1:
        body = add_object([0.15, 0.25], [0.1, 0.03])
        back = add_object([0.08, 0.22], [0.03, 0.10])
        front = add_object([0.22, 0.22], [0.03, 0.10])
        rest_length, stiffness, act = 0.22, 50, 0.03
        add_spring(body, back, [0.08, 0.02], [0.0, -0.08], rest_length, stiffness, act)
        add_spring(body, front, [-0.08, 0.02], [0.0, -0.08], rest_length, stiffness, act)
        add_spring(body, back, [-0.08, 0.0], [0.0, 0.03], -1, stiffness)
        add_spring(body, front, [0.08, 0.0], [0.0, 0.03], -1, stiffness)
        return objects, springs, body

    # robotLeg: a hip and two legs of thigh, calf and foot
    def rot_along(half_length: float, deg: float, center: list[float]) -> list[float]:
        ang = math.radians(deg)
        return [half_length * math.sin(ang) + center[0],
                -half_length * math.cos(ang) + center[1]]

    thigh_ang, calf_ang = 10, -10
    hip_pos = [0.3, 0.5 + 0.15]
    thigh_half, calf_half, foot_half, hip_half = 0.11, 0.11, 0.08, 0.08
    add_object(hip_pos, halfsize=[0.06, hip_half])
    hip_end = [hip_pos[0], hip_pos[1] - (hip_half - 0.01)]
    for _side in ("left", "right"):  # the original builds both legs alike
        add_object(rot_along(thigh_half, thigh_ang, hip_end), halfsize=[0.02, thigh_half],
                   rotation=math.radians(thigh_ang))
        thigh_end = rot_along(thigh_half * 2.0, thigh_ang, hip_end)
        add_object(rot_along(calf_half, calf_ang, thigh_end), halfsize=[0.02, calf_half],
                   rotation=math.radians(calf_ang))
        calf_end = rot_along(2.0 * calf_half, calf_ang, thigh_end)
        add_object([calf_end[0] + foot_half, calf_end[1]], halfsize=[foot_half, 0.02])
    s = 200
    thigh_relax, leg_relax, foot_relax = 0.9, 0.9, 0.7
    thigh_stiff, leg_stiff, foot_stiff = 5, 20, 40
    for hip, thigh, calf, foot in ((0, 1, 2, 3), (0, 4, 5, 6)):
        add_spring(hip, thigh, [0, (hip_half - 0.01) * 0.4], [0, -thigh_half],
                   thigh_relax * (2.0 * thigh_half + 0.22), thigh_stiff)
        add_spring(thigh, calf, [0, thigh_half], [0, -thigh_half],
                   leg_relax * 4.0 * thigh_half, leg_stiff, 0.08)
        add_spring(calf, foot, [0, 0], [foot_half, 0],
                   foot_relax * math.sqrt(pow(thigh_half, 2) + pow(2.0 * foot_half, 2)),
                   foot_stiff)
        add_spring(hip, thigh, [0, -(hip_half - 0.01)], [0.0, thigh_half], -1, s)
        add_spring(thigh, calf, [0, -thigh_half], [0.0, thigh_half], -1, s)
        add_spring(calf, foot, [0, -thigh_half], [-foot_half, 0], -1, s)
    return objects, springs, 3


# The constants of the original (compile-time constants in the kernels).
real = qd.float32                       # the original's `real = ti.f32`
vec2 = qd.types.vector(2, real)
mat2 = qd.types.matrix(2, 2, real)
max_steps = 4096
elasticity = 0.0
ground_height = 0.1
gravity = -9.8
friction = 1.0
penalty = 1e4      # unused as in the original: collide's local `penalty = 0.0` shadows it
damping = 10
spring_omega = 30
default_actuation = 0.05
n_sin_waves = 10
n_hidden = 32
dt = 0.001
learning_rate = 1.0
# Set by the robot (the original's globals, read by its kernels as constants).
n_objects = 0
n_springs = 0
head_id = 3


def n_input_states() -> int:
    return n_sin_waves + 6 * n_objects + 2


@dataclasses.dataclass(frozen=True)
class Bodies:
    """The boxes: time-indexed state and increments, per-box constants, the goal."""

    x: qd.Array[vec2, 2]                # (max_steps, n_objects, 2)
    v: qd.Array[vec2, 2]
    rotation: qd.Array[real, 2]         # (max_steps, n_objects)
    omega: qd.Array[real, 2]            # angular velocity
    v_inc: qd.Array[vec2, 2]
    x_inc: qd.Array[vec2, 2]
    rotation_inc: qd.Array[real, 2]
    omega_inc: qd.Array[real, 2]
    halfsize: qd.Array[vec2, 1]         # (n_objects, 2)
    inverse_mass: qd.Array[real, 1]
    inverse_inertia: qd.Array[real, 1]
    goal: qd.Array[vec2, 1]             # (1, 2)


@dataclasses.dataclass(frozen=True)
class Springs:
    """The springs (the original's spring_* fields; its spring_phase is never used)."""

    anchor_a: qd.Array[qd.int32, 1]
    anchor_b: qd.Array[qd.int32, 1]
    length: qd.Array[real, 1]           # -1: a joint
    offset_a: qd.Array[vec2, 1]
    offset_b: qd.Array[vec2, 1]
    actuation: qd.Array[real, 1]
    stiffness: qd.Array[real, 1]


@dataclasses.dataclass(frozen=True)
class Controller:
    """The controller's weights and its time-indexed activations."""

    weights1: qd.Array[real, 2]         # (n_hidden, n_input_states)
    bias1: qd.Array[real, 1]
    weights2: qd.Array[real, 2]         # (n_springs, n_hidden)
    bias2: qd.Array[real, 1]
    hidden: qd.Array[real, 2]           # (max_steps, n_hidden)
    actuation: qd.Array[real, 2]        # (max_steps, n_springs)


@qd.kernel(default_float=real)
def nn1(t: qd.int32, b: Bodies, nn: Controller):
    for i in range(n_hidden):
        actuation = 0.0
        for j in qd.static(range(n_sin_waves)):
            actuation += nn.weights1[i, j] * qd.math.sin(spring_omega * t * dt
                                                         + 2 * math.pi / n_sin_waves * j)
        for j in qd.static(range(n_objects)):
            offset = b.x[t, j] - b.x[t, head_id]
            # use a smaller weight since there are too many of them
            actuation += nn.weights1[i, j * 6 + n_sin_waves] * offset[0] * 0.05
            actuation += nn.weights1[i, j * 6 + n_sin_waves + 1] * offset[1] * 0.05
            actuation += nn.weights1[i, j * 6 + n_sin_waves + 2] * b.v[t, j][0] * 0.05
            actuation += nn.weights1[i, j * 6 + n_sin_waves + 3] * b.v[t, j][1] * 0.05
            actuation += nn.weights1[i, j * 6 + n_sin_waves + 4] * b.rotation[t, j] * 0.05
            actuation += nn.weights1[i, j * 6 + n_sin_waves + 5] * b.omega[t, j] * 0.05

        actuation += nn.weights1[i, n_objects * 6 + n_sin_waves] * b.goal[0][0]
        actuation += nn.weights1[i, n_objects * 6 + n_sin_waves + 1] * b.goal[0][1]
        actuation += nn.bias1[i]
        actuation = qd.math.tanh(actuation)
        nn.hidden[t, i] = actuation


@qd.kernel(default_float=real)
def nn2(t: qd.int32, nn: Controller):
    for i in range(n_springs):
        act = 0.0
        for j in qd.static(range(n_hidden)):
            act += nn.weights2[i, j] * nn.hidden[t, j]
        act += nn.bias2[i]
        act = qd.math.tanh(act)
        nn.actuation[t, i] = act


@qd.func(default_float=real)
def rotation_matrix(r):
    return mat2(qd.math.cos(r), -qd.math.sin(r), qd.math.sin(r), qd.math.cos(r))


@qd.kernel(default_float=real)
def initialize_properties(b: Bodies):
    for i in range(n_objects):
        b.inverse_mass[i] = 1.0 / (4 * b.halfsize[i][0] * b.halfsize[i][1])
        b.inverse_inertia[i] = 1.0 / (4 / 3 * b.halfsize[i][0] * b.halfsize[i][1]
                                      * (b.halfsize[i][0] * b.halfsize[i][0]
                                         + b.halfsize[i][1] * b.halfsize[i][1]))


@qd.func(default_float=real)
def to_world(b: Bodies, t, i, rela_x):
    rot = b.rotation[t, i]
    rot_matrix = rotation_matrix(rot)

    rela_pos = rot_matrix @ rela_x
    rela_v = b.omega[t, i] * vec2(-rela_pos[1], rela_pos[0])

    world_x = b.x[t, i] + rela_pos
    world_v = b.v[t, i] + rela_v

    return world_x, world_v, rela_pos


@qd.func(default_float=real)
def apply_impulse(b: Bodies, t, i, impulse, location, toi_input):
    delta_v = impulse * b.inverse_mass[i]
    delta_omega = qd.math.cross(location - b.x[t, i], impulse) * b.inverse_inertia[i]

    toi = min(max(0.0, toi_input), dt)

    qd.atomic_add(b.x_inc[t + 1, i], toi * (-delta_v))
    qd.atomic_add(b.rotation_inc[t + 1, i], toi * (-delta_omega))

    qd.atomic_add(b.v_inc[t + 1, i], delta_v)
    qd.atomic_add(b.omega_inc[t + 1, i], delta_omega)


@qd.kernel(default_float=real)
def collide(t: qd.int32, b: Bodies):
    for i in range(n_objects):
        hs = b.halfsize[i]
        for k in qd.static(range(4)):
            # the corner for collision detection
            offset_scale = vec2(k % 2 * 2 - 1, k // 2 % 2 * 2 - 1)

            corner_x, corner_v, rela_pos = to_world(b, t, i, offset_scale * hs)
            corner_v = corner_v + dt * gravity * vec2(0.0, 1.0)

            # Apply impulse so that there's no sinking
            normal = vec2(0.0, 1.0)
            tao = vec2(1.0, 0.0)

            rn = qd.math.cross(rela_pos, normal)
            rt = qd.math.cross(rela_pos, tao)
            impulse_contribution = b.inverse_mass[i] + (rn) ** 2 * b.inverse_inertia[i]
            timpulse_contribution = b.inverse_mass[i] + (rt) ** 2 * b.inverse_inertia[i]

            rela_v_ground = qd.math.dot(normal, corner_v)

            impulse = 0.0
            timpulse = 0.0
            new_corner_x = corner_x + dt * corner_v
            toi = 0.0
            if rela_v_ground < 0 and new_corner_x[1] < ground_height:
                impulse = -(1 + elasticity) * rela_v_ground / impulse_contribution
                if impulse > 0:
                    # friction
                    timpulse = -qd.math.dot(corner_v, tao) / timpulse_contribution
                    timpulse = min(friction * impulse, max(-friction * impulse, timpulse))
                    if corner_x[1] > ground_height:
                        toi = -(corner_x[1] - ground_height) / min(corner_v[1], -1e-3)

            apply_impulse(b, t, i, impulse * normal + timpulse * tao, new_corner_x, toi)

            # As in the original: this local shadows the global `penalty`, so the penalty
            # impulse below is always zero (it is applied all the same).
            penalty = 0.0
            if new_corner_x[1] < ground_height:
                # apply penalty
                penalty = -dt * penalty * (new_corner_x[1] - ground_height) / impulse_contribution

            apply_impulse(b, t, i, penalty * normal, new_corner_x, 0)


@qd.kernel(default_float=real)
def apply_spring_force(t: qd.int32, b: Bodies, sp: Springs, nn: Controller):
    for i in range(n_springs):
        a = sp.anchor_a[i]
        c = sp.anchor_b[i]  # the original's `b`, here the bodies
        pos_a, vel_a, rela_a = to_world(b, t, a, sp.offset_a[i])
        pos_b, vel_b, rela_b = to_world(b, t, c, sp.offset_b[i])
        dist = pos_a - pos_b
        length = qd.math.norm(dist) + 1e-4

        act = nn.actuation[t, i]

        is_joint = sp.length[i] == -1

        target_length = sp.length[i] * (1.0 + sp.actuation[i] * act)
        if is_joint:
            target_length = 0.0
        impulse = dt * (length - target_length) * sp.stiffness[i] / length * dist

        if is_joint:
            rela_vel = vel_a - vel_b
            rela_vel_norm = qd.math.norm(rela_vel) + 1e-1
            impulse_dir = rela_vel / rela_vel_norm
            impulse_contribution = (b.inverse_mass[a]
                                    + qd.math.cross(impulse_dir, rela_a) ** 2
                                    * b.inverse_inertia[a]
                                    + b.inverse_mass[c]
                                    + qd.math.cross(impulse_dir, rela_b) ** 2
                                    * b.inverse_inertia[c])
            # project relative velocity
            impulse += rela_vel_norm / impulse_contribution * impulse_dir

        apply_impulse(b, t, a, -impulse, pos_a, 0.0)
        apply_impulse(b, t, c, impulse, pos_b, 0.0)


@qd.kernel(default_float=real)
def advance_toi(t: qd.int32, b: Bodies):
    for i in range(n_objects):
        s = math.exp(-dt * damping)
        b.v[t, i] = s * b.v[t - 1, i] + b.v_inc[t, i] + dt * gravity * vec2(0.0, 1.0)
        b.x[t, i] = b.x[t - 1, i] + dt * b.v[t, i] + b.x_inc[t, i]
        b.omega[t, i] = s * b.omega[t - 1, i] + b.omega_inc[t, i]
        b.rotation[t, i] = b.rotation[t - 1, i] + dt * b.omega[t, i] + b.rotation_inc[t, i]


@qd.kernel(default_float=real)
def advance_no_toi(t: qd.int32, b: Bodies):
    for i in range(n_objects):
        s = math.exp(-dt * damping)
        b.v[t, i] = s * b.v[t - 1, i] + b.v_inc[t, i] + dt * gravity * vec2(0.0, 1.0)
        b.x[t, i] = b.x[t - 1, i] + dt * b.v[t, i]
        b.omega[t, i] = s * b.omega[t - 1, i] + b.omega_inc[t, i]
        b.rotation[t, i] = b.rotation[t - 1, i] + dt * b.omega[t, i]


@qd.kernel(default_float=real)
def compute_loss(t: qd.int32, b: Bodies, loss: qd.Array[real, 1]):
    loss[0] = qd.math.norm(b.x[t, head_id] - b.goal[0])


@qd.kernel(default_float=real)
def clear_states(b: Bodies):
    for t in range(0, max_steps):
        for i in range(0, n_objects):
            b.v_inc[t, i] = vec2(0.0, 0.0)
            b.x_inc[t, i] = vec2(0.0, 0.0)
            b.rotation_inc[t, i] = 0.0
            b.omega_inc[t, i] = 0.0


PARAMS = ("weights1", "bias1", "weights2", "bias2")


class RigidBody:
    """One robot's arrays on one device, its forward and its optimisation loop."""

    def __init__(self, robot_id: int = 2, steps: int = 2048, device: str = "cpu",
                 toi: bool = True) -> None:
        global n_objects, n_springs, head_id
        objects, springs, head_id = robot(robot_id)
        n_objects, n_springs = len(objects), len(springs)
        assert steps * 2 <= max_steps
        self.steps, self.toi, self.device = steps, toi, device
        self.dtype = dtype = real

        def field(*shape: int, grad: bool = True) -> qd.Array:
            return qd.zeros(shape, dtype=dtype, device=device, requires_grad=grad)

        def column(values: list, kind: qd.DType = dtype) -> qd.Array:
            return qd.asarray(np.array(values), dtype=kind, device=device)

        self.bodies = Bodies(
            x=field(max_steps, n_objects, 2), v=field(max_steps, n_objects, 2),
            rotation=field(max_steps, n_objects), omega=field(max_steps, n_objects),
            v_inc=field(max_steps, n_objects, 2), x_inc=field(max_steps, n_objects, 2),
            rotation_inc=field(max_steps, n_objects), omega_inc=field(max_steps, n_objects),
            halfsize=column([o[1] for o in objects]),
            inverse_mass=field(n_objects, grad=False),
            inverse_inertia=field(n_objects, grad=False),
            goal=field(1, 2, grad=False))
        self.springs = Springs(
            anchor_a=column([s[0] for s in springs], qd.int32),
            anchor_b=column([s[1] for s in springs], qd.int32),
            offset_a=column([s[2] for s in springs]), offset_b=column([s[3] for s in springs]),
            length=column([s[4] for s in springs]), stiffness=column([s[5] for s in springs]),
            actuation=column([s[6] or default_actuation for s in springs]))
        self.nn = Controller(
            weights1=field(n_hidden, n_input_states()), bias1=field(n_hidden),
            weights2=field(n_springs, n_hidden), bias2=field(n_springs),
            hidden=field(max_steps, n_hidden), actuation=field(max_steps, n_springs))
        self.loss = field(1)
        self.bodies.x[0] = column([o[0] for o in objects])
        self.bodies.rotation[0] = column([o[2] for o in objects])
        self.objects, self.spring_list = objects, springs

    def init_weights(self, seed: int = 0) -> None:
        """The original's initialisation (randn per element in order, biases zero), from
        `seed`."""
        rng = np.random.RandomState(seed)
        n_in = n_input_states()
        w1 = rng.randn(n_hidden, n_in) * math.sqrt(2 / (n_hidden + n_in)) * 0.5
        w2 = rng.randn(n_springs, n_hidden) * math.sqrt(2 / (n_hidden + n_springs)) * 1
        self.set_weights({"weights1": w1, "bias1": np.zeros(n_hidden),
                          "weights2": w2, "bias2": np.zeros(n_springs)})

    def weights(self) -> dict[str, np.ndarray]:
        """The controller's parameters, as NumPy float64 arrays (copies)."""
        return {k: np.array(getattr(self.nn, k).to_device("cpu"), np.float64) for k in PARAMS}

    def grads(self) -> dict[str, np.ndarray]:
        """The gradients of the loss by the controller's parameters, float64."""
        return {k: np.array(getattr(self.nn, k).grad.to_device("cpu"), np.float64)
                for k in PARAMS}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for k, w in weights.items():
            getattr(self.nn, k)[...] = qd.asarray(w, dtype=self.dtype, device=self.device)

    def forward(self) -> None:
        b, sp, nn = self.bodies, self.springs, self.nn
        initialize_properties(b)
        b.goal[0] = qd.asarray([0.9, 0.15], dtype=self.dtype, device=self.device)
        advance = advance_toi if self.toi else advance_no_toi
        for t in range(1, self.steps):
            nn1(t - 1, b, nn)
            nn2(t - 1, nn)
            collide(t - 1, b)
            apply_spring_force(t - 1, b, sp, nn)
            advance(t, b)
        self.loss[...] = 0
        compute_loss(self.steps - 1, b, self.loss)

    def clear(self) -> None:
        clear_states(self.bodies)

    def forward_backward(self) -> float:
        """One forward and its reverse on one tape; the gradients are set, not summed."""
        self.clear()
        with qd.ad.Tape(loss=self.loss, zero_grads=True):
            self.forward()
        return float(self.loss[0])

    def step(self) -> tuple[float, float]:
        """One optimisation iteration: forward + backward, then the original's update
        (learning rate 1, the gradient clipped to length 0.2)."""
        loss = self.forward_backward()
        params = [getattr(self.nn, k) for k in PARAMS]
        total_norm_sqr = sum(float(qd.sum(p.grad * p.grad)) for p in params)
        gradient_clip = 0.2
        scale = learning_rate * min(1.0, gradient_clip / (total_norm_sqr ** 0.5 + 1e-4))
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
        """The final state (boxes, springs coloured by actuation, joints thick), titled with
        its loss (of the last forward), and the loss curve, as PNGs."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = self.steps - 1
        x = np.asarray(self.bodies.x.to_device("cpu"))[t]
        rotation = np.asarray(self.bodies.rotation.to_device("cpu"))[t]
        act = np.asarray(self.nn.actuation.to_device("cpu"))[t - 1]

        def world(i: int, offset: list[float]) -> np.ndarray:
            c, s = math.cos(rotation[i]), math.sin(rotation[i])
            return x[i] + np.array([[c, -s], [s, c]]) @ np.asarray(offset)

        fig, ax = plt.subplots(figsize=(5, 5))
        ax.plot([0.05, 0.95], [ground_height, ground_height], color="k", lw=2)
        for i, (_, halfsize, _) in enumerate(self.objects):
            corners = [world(i, [sx * halfsize[0], sy * halfsize[1]])
                       for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1), (-1, -1))]
            ax.plot(*np.array(corners).T, color="k", lw=1.5)
        for k, (a, b, offset_a, offset_b, length, _, _) in enumerate(self.spring_list):
            p, q = world(a, offset_a), world(b, offset_b)
            if length == -1:  # a joint
                color, width = "#ff2233", 4.0
            else:             # every spring is actuated (default_actuation where 0 is given)
                u = float(act[k]) * 0.5
                color, width = (min(max(0.5 + u, 0), 1), 0.5 - abs(u), min(max(0.5 - u, 0), 1)), 2.5
            ax.plot([p[0], q[0]], [p[1], q[1]], color=color, lw=width)
        ax.scatter([0.9], [0.15], marker="x", color="g", zorder=3)
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal",
               title=f"rigid_body: step {t}, loss {float(self.loss[0]):.4f}")
        fig.savefig(f"{out}_state.png", dpi=80)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(losses)
        ax.set(xlabel="iteration", ylabel="loss (head's distance to the goal)",
               title="rigid_body")
        fig.tight_layout()
        fig.savefig(f"{out}_loss.png", dpi=80)
        plt.close(fig)
        return [f"{out}_state.png", f"{out}_loss.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--robot", type=int, default=2, choices=range(3),
                        help="robotA, robotB or robotLeg of the original (default 2, as in "
                             "its README's `rigid_body.py [1/2] train`)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-toi", action="store_true",
                        help="advance without the collisions' time of impact (the 'plot' "
                             "task's other half); `train` in the original uses it")
    parser.add_argument("--out", default="rigid_body", help="prefix of the pictures")
    args = parser.parse_args()

    sim = RigidBody(args.robot, args.steps, args.device, toi=not args.no_toi)
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
