"""Reward terms: ``f(env, **params) -> (num_envs,)`` float32, before weight and step_dt.

Kernels follow mjlab's velocity task (``mjlab/tasks/velocity/mdp/rewards.py`` and
``config/g1/env_cfgs.py``, v1.6.0): tracking terms are
exp(-error / std^2); penalties are non-negative costs that take a negative weight.

Foot terms read the foot sites through the G1 sensors ``<foot>_pos`` (framepos, world, m) and
``<foot>_lin_vel`` (framelinvel, world, m/s), and the feet's ground contacts through a
:class:`~unilab.envs.contact.ContactSensor`.
"""

from __future__ import annotations

import math

import torch

from unilab.utils.math import projected_gravity


def step_cached(env, key, compute):
    """``compute()``, computed once per env step when several terms ask for the same ``key``.

    For values that depend on the physics state only (joint errors, foot sensors): the env's
    ``step_cache`` is cleared whenever the state changes, so a cached value is exactly what
    ``compute()`` would return now; values that depend on a command go through
    :func:`command_cached`. Envs without a ``step_cache`` (test doubles) compute every time.
    Callers must not modify the returned tensor in place.
    """
    cache = getattr(env, "step_cache", None)
    if cache is None:
        return compute()
    value = cache.get(key)
    if value is None:
        value = cache[key] = compute()
    return value


COMMAND_CACHE = "commands"
"""Key of the env's ``step_cache`` entry that holds the command-derived values of
:func:`command_cached`: the env drops it when the commands change (the step's command update),
and the state-derived values stay for the observations."""


def command_cached(env, key, compute):
    """:func:`step_cached` for a value that depends on the commands (and possibly the state):
    kept in ``env.step_cache[COMMAND_CACHE]``, which the env drops after each command update.
    Callers must not modify the returned tensor in place."""
    cache = getattr(env, "step_cache", None)
    if cache is None:
        return compute()
    cache = cache.get(COMMAND_CACHE) or cache.setdefault(COMMAND_CACHE, {})
    value = cache.get(key)
    if value is None:
        value = cache[key] = compute()
    return value


def _exp_kernel(error: torch.Tensor, std2: float) -> torch.Tensor:
    """exp(-error / std2), computed in place in ``error`` (a fresh tensor of the caller's):
    error / (-std2) equals -error / std2 exactly, one op and one allocation fewer."""
    return error.div_(-std2).exp_()


def _gravity_xy_sq(quat: torch.Tensor) -> torch.Tensor:
    """(N,) |g_xy|^2 of the gravity direction in the frame of (N, 4) wxyz quaternions: the x and
    y components of :func:`unilab.utils.math.projected_gravity` in its own float operations
    (bit for bit), without the z component."""
    w, x, y, z = quat.unbind(-1)
    x2, y2 = 2.0 * x, 2.0 * y
    # g_y = -(w x2) - z y2 = -(w x2 + z y2) exactly (IEEE rounding is sign-symmetric): same square
    g_x, minus_g_y = w * y2 - z * x2, (w * x2).add_(z * y2)
    return g_x.square_().add_(minus_g_y.square_())


def _constant(env, name: str, params: tuple, compute):
    """A value that depends only on the term parameters ``params`` (tensors, compared by
    identity, or hashable values) and the device: computed once per env and kept."""
    store = env.__dict__.setdefault("_reward_constants", {})
    key = (name, *(("id", id(p)) if isinstance(p, torch.Tensor) else p for p in params))
    hit = store.get(key)
    if hit is None:
        hit = store[key] = (compute(), params)  # params kept alive: their ids stay unique
    return hit[0]


def _command_speed(env, command_name: str) -> torch.Tensor:
    """(N,) |cmd_xy| + |cmd_wz| of command ``command_name`` (mjlab's "total command")."""

    def compute() -> torch.Tensor:
        cmd = env.commands[command_name].command
        return torch.linalg.vector_norm(cmd[:, :2], dim=1).add_(cmd[:, 2].abs())

    return command_cached(env, ("command_speed", command_name), compute)


def _command_moving(env, command_name: str, threshold: float) -> torch.Tensor:
    """(N,) float32 1.0 where :func:`_command_speed` exceeds ``threshold``, else 0.0 (the feet
    terms' "commanded to move" gate, shared within a step; read-only)."""
    return command_cached(
        env, ("command_moving", command_name, threshold),
        lambda: (_command_speed(env, command_name) > threshold).float(),
    )  # fmt: skip


def joint_pos_error(env) -> torch.Tensor:
    """(N, J) joint positions minus the default pose, rad (shared within a step; read-only)."""
    return step_cached(env, "joint_pos_error", lambda: env.robot.joint_pos - env.robot.default_joint_pos)


def _joint_pos_error_sq(env) -> torch.Tensor:
    """(N, J) squared :func:`joint_pos_error`, rad^2 (shared within a step; read-only)."""
    return step_cached(env, "joint_pos_error_sq", lambda: joint_pos_error(env).square())


def stack_sensors(env, names: tuple[str, ...]) -> torch.Tensor:
    """(N, len(names), dim) readings of same-sized sensors (shared within a step; read-only).

    When the sensors lie at equal distances in the backend's rows (two sensors always do), this
    is a strided view of them (no copy), kept across steps in the env's ``sensor_stack_views``
    while the backend hands out views of the same buffer (the view keeps that buffer alive, so an
    equal address means the same buffer); else a stacked copy. Envs without
    ``sensor_stack_views`` (test doubles) build the view anew each step.
    """

    def compute() -> torch.Tensor:
        first = env.backend.sensor(names[0])
        views = getattr(env, "sensor_stack_views", None)
        if views is None:
            views = {}
        kept = views.get(names)
        if kept is not None and kept.data_ptr() == first.data_ptr():
            return kept
        sensors = [first, *(env.backend.sensor(n) for n in names[1:])]
        step = (sensors[1].data_ptr() - first.data_ptr()) // first.element_size() if len(sensors) > 1 else 0
        base = first.untyped_storage().data_ptr()
        if step > 0 and all(
            v.untyped_storage().data_ptr() == base
            and v.shape == first.shape and v.stride() == first.stride()
            and v.data_ptr() == first.data_ptr() + i * step * first.element_size()
            for i, v in enumerate(sensors)
        ):  # fmt: skip
            n, d = first.shape
            views[names] = first.as_strided((n, len(sensors), d), (first.stride(0), step, first.stride(1)))
            return views[names]
        return torch.stack(sensors, dim=1)

    return step_cached(env, ("stack_sensors", tuple(names)), compute)


# ---------------------------------------------------------------- task
def is_alive(env) -> torch.Tensor:
    """1 for every row whose episode goes on, 0 for rows that terminated this step (time-outs
    count as alive). A constant survival bonus, as holosoma's G1 locomotion ``alive`` term
    (holosoma 0.0.3 ``config_values/loco/g1/``). (N,) float32"""
    return (~env.termination_manager.terminated).float()


def track_linear_velocity(env, std: float, command_name: str = "twist") -> torch.Tensor:
    """exp(-(|v_xy - cmd_xy|^2 + v_z^2) / std^2), base-frame velocity, m/s. (N,)"""
    v = env.robot.base_lin_vel_b
    cmd = env.commands[command_name].command
    error = torch.sum((cmd[:, :2] - v[:, :2]).square_(), dim=1).add_(v[:, 2].square())
    return _exp_kernel(error, std**2)


def track_angular_velocity(env, std: float, command_name: str = "twist", xy_std: float | None = None) -> torch.Tensor:
    """exp(-((w_z - cmd_wz)^2 + |w_xy|^2) / std^2), base-frame angular velocity, rad/s (mjlab's
    ``track_angular_velocity``); with ``xy_std`` the roll/pitch rate has its own width,
    exp(-(w_z - cmd_wz)^2 / std^2 - |w_xy|^2 / xy_std^2), i.e. the yaw kernel times a kernel of
    the base's steadiness. (N,)"""
    w = env.robot.base_ang_vel_b
    cmd = env.commands[command_name].command
    xy = torch.sum(w[:, :2].square(), dim=1)
    if xy_std is not None:
        xy.mul_((std / xy_std) ** 2)  # both terms over std^2 below
    error = (cmd[:, 2] - w[:, 2]).square_().add_(xy)
    return _exp_kernel(error, std**2)


def track_yaw_rate(env, std: float, command_name: str = "twist") -> torch.Tensor:
    """exp(-(w_z - cmd_wz)^2 / std^2), base-frame yaw rate, rad/s: the yaw error alone, so the
    reward for turning does not collapse while the base rocks (holosoma ``tracking_ang_vel``,
    amazon-far/holosoma@3d1e63e ``managers/reward/terms/locomotion.py``, tracking_sigma 0.25 =
    std^2; pal-robotics/pal_mjlab PR #81). Pair it with :func:`ang_vel_xy_l2`. (N,)"""
    w_z = env.robot.base_ang_vel_b[:, 2]
    cmd = env.commands[command_name].command
    return _exp_kernel((cmd[:, 2] - w_z).square_(), std**2)


def ang_vel_xy_l2(env) -> torch.Tensor:
    """|w_xy|^2 of the base-frame angular velocity, the base's roll and pitch rate, (rad/s)^2
    (holosoma ``penalty_ang_vel_xy``, weight -1.0; IsaacLab ``ang_vel_xy_l2``). (N,)"""
    return torch.sum(env.robot.base_ang_vel_b[:, :2] ** 2, dim=1)


# ---------------------------------------------------------------- posture
def upright(env, std: float, body: str | None = None) -> torch.Tensor:
    """exp(-|g_xy|^2 / std^2) of the projected gravity of tracked ``body`` (default: the base);
    1 when upright. (N,)"""
    if body is None:
        g_xy_sq = torch.sum(env.robot.projected_gravity_b[:, :2] ** 2, dim=1)
    else:
        g_xy_sq = _gravity_xy_sq(env.robot.body_quat_w[:, env.robot.body_index(body)])
    return _exp_kernel(g_xy_sq, std**2)


def variable_posture(
    env,
    std_standing: torch.Tensor,
    std_walking: torch.Tensor,
    std_running: torch.Tensor,
    command_name: str = "twist",
    walking_threshold: float = 0.05,
    running_threshold: float = 1.5,
) -> torch.Tensor:
    """exp(-mean_j((q_j - q0_j)^2 / std_j^2)) with the per-joint std of the commanded regime. (N,)

    The regime comes from s = |cmd_xy| + |cmd_wz|: standing (s < walking_threshold), walking,
    running (s >= running_threshold) (mjlab ``variable_posture``).

    Args:
        std_standing, std_walking, std_running: (J,) float32 tolerances, rad, in action order.
    """
    speed = _command_speed(env, command_name)
    bounds = _constant(
        env, "posture_bounds", (walking_threshold, running_threshold),
        lambda: torch.tensor([walking_threshold, running_threshold], device=env.device),
    )
    regime = torch.bucketize(speed, bounds, right=True)  # 0, 1, 2: thresholds at or below speed
    inv_var = _constant(  # (3, J)
        env, "posture_inv_var", (std_standing, std_walking, std_running),
        lambda: torch.stack((std_standing, std_walking, std_running)).to(env.device).pow(-2),
    )
    return (_joint_pos_error_sq(env) * inv_var.index_select(0, regime)).mean(dim=1).neg_().exp_()


def orientation_l2(env, body: str | None = None) -> torch.Tensor:
    """|g_xy|^2 of the projected gravity (unit vector) of tracked ``body`` (default: the base),
    0 when upright, sin^2(tilt) otherwise (holosoma 0.0.3's ``penalty_orientation``).

    Unlike :func:`upright`'s kernel it does not saturate: a torso tilted by 50 deg still has a
    gradient back to upright. (N,)"""
    if body is None:
        return torch.sum(env.robot.projected_gravity_b[:, :2] ** 2, dim=1)
    return _gravity_xy_sq(env.robot.body_quat_w[:, env.robot.body_index(body)])


def joint_deviation_l2(env, weights: torch.Tensor) -> torch.Tensor:
    """sum_j w_j (q_j - q0_j)^2, rad^2, from the default joint positions q0 (holosoma 0.0.3's
    ``pose`` penalty: there 50 on the waist and arms, 0.01 on hip pitch and knees).

    Unlike :func:`variable_posture`'s kernel it grows without bound, so arms swung to their
    limits are always pulled back. (N,)

    Args:
        weights: (J,) float32 per-joint weights, in action order.
    """
    w = _constant(env, "joint_deviation_weights", (weights,), lambda: weights.to(env.device))
    return torch.sum(_joint_pos_error_sq(env) * w, dim=1)


def body_ang_vel_l2(env, body: str) -> torch.Tensor:
    """|w_xy|^2 of tracked ``body``'s world-frame angular velocity, (rad/s)^2 (mjlab
    ``body_angular_velocity_penalty``). (N,)"""
    w = env.robot.body_ang_vel_w[:, env.robot.body_index(body), :2]
    return torch.sum(w**2, dim=1)


def angular_momentum_l2(env, sensor_name: str = "root_angmom") -> torch.Tensor:
    """|L|^2 of the whole-body angular momentum about the centre of mass from a
    ``subtreeangmom`` sensor, (kg m^2/s)^2 (mjlab ``angular_momentum_penalty``). (N,)"""
    return torch.sum(env.backend.sensor(sensor_name) ** 2, dim=1)


# ---------------------------------------------------------------- regularization
def action_rate_l2(env) -> torch.Tensor:
    """sum((a_t - a_{t-1})^2) over action dims. (N,)"""
    am = env.action_manager
    return torch.sum((am.action - am.prev_action) ** 2, dim=1)


def joint_pos_limits(env, soft_factor: float = 0.9) -> torch.Tensor:
    """Sum over joints of how far (rad) each is outside its soft limits. (N,)

    Soft limits shrink the hard range about its middle by ``soft_factor`` (mjlab
    ``soft_joint_pos_limit_factor`` 0.9).
    """
    def soft_limits() -> tuple[torch.Tensor, torch.Tensor]:
        limits = env.robot.meta.joint_limits.to(env.device)
        mid = limits.mean(dim=1)
        half = 0.5 * (limits[:, 1] - limits[:, 0]) * soft_factor
        return mid - half, mid, half

    lower, mid, half = _constant(
        env, "soft_limits", (env.robot.meta.joint_limits, soft_factor), soft_limits
    )
    q = env.robot.joint_pos
    below = (lower - q).clamp_(min=0.0)
    above = (q - mid).sub_(half).clamp_(min=0.0)
    return torch.sum(below.add_(above), dim=1)


# ---------------------------------------------------------------- feet
def foot_clearance(
    env,
    target_height: float,
    pos_sensors: tuple[str, ...],
    vel_sensors: tuple[str, ...],
    command_name: str = "twist",
    command_threshold: float = 0.05,
) -> torch.Tensor:
    """sum_f |z_f - target_height| * |v_xy,f| while commanded to move, m·m/s. (N,)

    A moving foot should be at the target height (0.1 m): the cost is the height error weighted
    by the foot's horizontal speed; zero for rows whose command speed is at most
    ``command_threshold`` (mjlab ``feet_clearance``; site z is the height on flat ground).
    """
    z = stack_sensors(env, pos_sensors)[..., 2]  # (N, F)
    speed = torch.linalg.vector_norm(stack_sensors(env, vel_sensors)[..., :2], dim=2)  # (N, F)
    cost = torch.sum((z - target_height).abs_().mul_(speed), dim=1)
    return cost.mul_(_command_moving(env, command_name, command_threshold))


def expected_foot_height(foot_phase: torch.Tensor, swing_height: float) -> torch.Tensor:
    """Target foot height (m) of holosoma's gait profile at phase angle ``foot_phase`` (rad).

    With x = (phi + pi) / (2 pi) in [0, 1] and the cubic Bezier ease b(t) = t^3 + 3 t^2 (1 - t)
    (= 3t^2 - 2t^3): h = swing_height * b(2x) while x <= 0.5 (lift-off to the peak at phi = 0),
    h = swing_height * (1 - b(2x - 1)) after (the peak back to touch-down at phi = +-pi). So the
    foot is on the ground (h = 0) at phi = +-pi, the standing phase. Source: holosoma
    ``managers/reward/terms/locomotion.py`` ``_expected_foot_height`` (it credits MuJoCo
    Playground's G1 joystick ``get_rz``).

    Args:
        foot_phase: (...) float32 phase angles, rad in [-pi, pi].
        swing_height: peak height, m.

    Returns:
        (...) float32 target heights, m, in [0, swing_height].
    """
    # x2 = 2x = (phi + pi) / pi: the same float32 value as 2 * ((phi + pi) / (2 pi)) (scaling
    # by 2 is exact, and float32(2 pi) = 2 float32(pi)); x <= 0.5 is x2 <= 1
    x2 = (foot_phase + math.pi) / math.pi
    rising = x2 <= 1.0
    t = torch.where(rising, x2, x2 - 1.0)
    ease = t * t * (3.0 - 2.0 * t)
    return swing_height * torch.where(rising, ease, 1.0 - ease)


def feet_phase(
    env,
    swing_height: float,
    sigma: float,
    pos_sensors: tuple[str, ...],
    gait_command_name: str = "gait",
) -> torch.Tensor:
    """exp(-sum_f (z_f - h*_f)^2 / sigma): the feet's heights follow the gait clock. (N,) float32

    z_f is foot site f's height above the flat floor (m; the G1 foot sites sit at the sole's
    bottom, 3.5 mm up in the default pose, as holosoma's ``foot_contact_point`` links), h*_f the
    target :func:`expected_foot_height` of the foot's phase angle from the
    :class:`~unilab.envs.mdp.commands.GaitPhaseCommand` ``gait_command_name`` (0 for both feet
    on stand commands). ``sigma`` is in m^2 (holosoma G1: swing 0.09 m, sigma 0.008, weight 5;
    ``feet_phase`` in holosoma ``managers/reward/terms/locomotion.py``). In [0, 1], 1 when both
    feet are exactly on schedule.

    Args:
        swing_height: peak target height, m.
        sigma: width of the kernel, m^2.
        pos_sensors: ``framepos`` sensors of the feet (world, m), in the order of the gait's feet
            (left, right).
        gait_command_name: the gait clock in ``env.commands``.
    """
    z = stack_sensors(env, pos_sensors)[..., 2]  # (N, F)
    target = expected_foot_height(env.commands[gait_command_name].foot_phase, swing_height)
    return _exp_kernel(torch.sum((z - target).square_(), dim=1), sigma)


def foot_slip_l2(
    env,
    sensor_name: str,
    vel_sensors: tuple[str, ...],
    command_name: str = "twist",
    command_threshold: float = 0.05,
) -> torch.Tensor:
    """sum_f |v_xy,f|^2 over feet in ground contact while commanded to move, (m/s)^2. (N,)

    (mjlab ``feet_slip``; contact from the contact sensor ``sensor_name``.)
    """
    v_xy = stack_sensors(env, vel_sensors)[..., :2]  # (N, F, 2)
    contact = env.contact_sensors[sensor_name].in_contact  # (N, F)
    cost = torch.sum(v_xy.square().sum(dim=2).mul_(contact), dim=1)
    return cost.mul_(_command_moving(env, command_name, command_threshold))


def foot_air_time_window(
    env,
    sensor_name: str,
    threshold_min: float = 0.05,
    threshold_max: float = 0.5,
    command_name: str = "twist",
    command_threshold: float = 0.5,
) -> torch.Tensor:
    """Number of feet whose current flight lasts between threshold_min and threshold_max s,
    while commanded to move faster than ``command_threshold`` (mjlab ``feet_air_time``). (N,)"""
    t = env.contact_sensors[sensor_name].current_air_time
    count = ((t > threshold_min) & (t < threshold_max)).sum(dim=1).float()
    return count.mul_(_command_moving(env, command_name, command_threshold))


def self_collision_count(env, sensor_name: str, force_threshold: float = 10.0) -> torch.Tensor:
    """Slots of contact sensor ``sensor_name`` whose strongest contact pushes harder than
    ``force_threshold`` N (0 or 1 for one self-collision slot). (N,)

    mjlab ``self_collision_cost`` counts the physics substeps (of the last 4) with such a contact;
    the backend exposes the last substep only, so this is that substep's indicator.
    """
    sensor = env.contact_sensors[sensor_name]
    hit = sensor.in_contact & (torch.linalg.vector_norm(sensor.force, dim=2) > force_threshold)
    return hit.sum(dim=1).float()
