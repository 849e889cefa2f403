"""User-facing settings of g1_walk_flat (the ``env.*`` override keys).

The code defaults are the recipe every algorithm trains by default: mjlab's
``Mjlab-Velocity-Flat-Unitree-G1`` (mujocolab/mjlab v1.6.0, ``tasks/velocity``) trimmed for CPU
training, plus from holosoma's G1 locomotion (amazon-far/holosoma@3d1e63e,
``config_values/loco/g1``) the alive bonus, the penalty curriculum, the gait clock with its
``feet_phase`` reward, the quadratic posture penalties and the yaw-only angular-velocity kernel
with its roll/pitch-rate penalty (:class:`TrackingConfig`). With actions bounded by the joint limits,
SAC reaches postures where mjlab's exp posture kernels (``upright``, ``pose``) are flat; the
quadratic penalties keep a gradient there.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from unilab.config import MAX_PUSH_ANG_VEL, MAX_PUSH_LIN_VEL


def _ordered(value: tuple[float, float]) -> tuple[float, float]:
    if value[0] > value[1]:
        raise ValueError(f"expected [min, max] with min <= max, got min {value[0]:g} > max {value[1]:g}")
    return value


class CommandCurriculumConfig(BaseModel):
    """Command ranges that widen as tracking improves (unitree_rl_lab ``lin_vel_cmd_levels`` and
    ``ang_vel_cmd_levels``, unitreerobotics/unitree_rl_lab@aa0a736
    ``tasks/locomotion/mdp/curriculums.py``; the ``ang_vel_z`` curriculum is the fix of
    unitree_rl_lab #94 for a G1 that would not turn). Training starts with every range at
    ``initial_fraction`` of ``env.commands.*``. At most once per ``interval_s`` of env time, the
    linear level (``lin_vel_x``, ``lin_vel_y``) and the angular level (``ang_vel_z``) each widen by
    ``step_fraction`` of the full range when the episodes ended since the last check earned, per
    second of the maximum episode length, more than ``threshold`` x the weight of
    ``track_linear_velocity`` resp. ``track_angular_velocity``; they never narrow again.
    Logged as ``Curriculum/command_lin_level`` and ``Curriculum/command_ang_level``; checkpoints
    record both, and ``training.resume`` and ``unilab play`` start the levels there through
    ``start_lin_level`` and ``start_ang_level``. Evaluation gives its own commands."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(False, description="widen the command ranges as tracking improves")
    initial_fraction: float = Field(
        0.5, gt=0.0, le=1.0, description="fraction of each command range at the start"
    )
    step_fraction: float = Field(
        0.1, gt=0.0, le=1.0,
        description="widening per check, fraction of the full range (unitree_rl_lab: 0.1 m/s, 0.1 rad/s)",
    )
    threshold: float = Field(
        0.8, gt=0.0, le=1.0,
        description="widen when the tracking term earned more than this x its weight per second",
    )
    interval_s: float = Field(
        1.0, gt=0.0,
        description="env time between checks, s; unitree_rl_lab checks once per episode length "
        "(1000 env steps), about 240 checks over its PPO runs of 24-step iterations; here one "
        "iteration is one env step, so 1 s (50 iterations) gives ~120 checks in 6000 iterations",
    )
    start_lin_level: float | None = Field(
        None, gt=0.0, le=1.0,
        description="linear level the envs start at; null: initial_fraction. training.resume sets it to the "
        "checkpoint's last Curriculum/command_lin_level unless given",
    )
    start_ang_level: float | None = Field(
        None, gt=0.0, le=1.0,
        description="angular level the envs start at; null: initial_fraction. training.resume sets it to the "
        "checkpoint's last Curriculum/command_ang_level unless given",
    )


class CommandsConfig(BaseModel):
    """Velocity command ranges: those of MuJoCo Playground's ``G1JoystickFlatTerrain``
    (google-deepmind/mujoco_playground@d5e6b47 ``locomotion/g1/joystick.py``), resampled every
    3-8 s as mjlab's G1 velocity task (v1.6.0); no heading mode."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    lin_vel_x: tuple[float, float] = Field((-1.0, 1.0), description="forward velocity, m/s")
    lin_vel_y: tuple[float, float] = Field((-0.5, 0.5), description="lateral velocity, m/s")
    ang_vel_z: tuple[float, float] = Field((-1.0, 1.0), description="yaw rate, rad/s")
    resampling_time_s: tuple[float, float] = Field((3.0, 8.0), description="s between draws")
    standing_fraction: float = Field(0.1, ge=0.0, le=1.0, description="share of zero commands")
    lin_vel_deadband: float = Field(
        0.2, ge=0.0,
        description="m/s: a drawn (v_x, v_y) with norm below this is set to zero, the yaw rate kept, so "
        "turning in place is trained (legged_gym: 0.2); 0 is off",
    )
    curriculum: CommandCurriculumConfig = CommandCurriculumConfig()

    @field_validator("lin_vel_x", "lin_vel_y", "ang_vel_z")
    @classmethod
    def _range(cls, value: tuple[float, float]) -> tuple[float, float]:
        return _ordered(value)

    @field_validator("resampling_time_s")
    @classmethod
    def _resampling(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] <= 0.0:
            raise ValueError(f"expected positive times, got {value[0]:g}")
        return _ordered(value)

    @model_validator(mode="after")
    def _deadband_leaves_linear_commands(self) -> CommandsConfig:
        """A deadband at or above the largest |(v_x, v_y)| of the ranges would zero every linear
        command: refused rather than trained silently without any."""
        reach = math.hypot(max(abs(v) for v in self.lin_vel_x), max(abs(v) for v in self.lin_vel_y))
        if self.lin_vel_deadband > 0.0 and reach > 0.0 and self.lin_vel_deadband >= reach:
            raise ValueError(
                f"lin_vel_deadband {self.lin_vel_deadband:g} m/s zeroes every linear command of lin_vel_x "
                f"{list(self.lin_vel_x)} and lin_vel_y {list(self.lin_vel_y)} (largest norm {reach:.3g} m/s): "
                "lower it, or 0 to turn it off"
            )
        return self


class TrackingConfig(BaseModel):
    """Widths of the velocity-tracking kernels and the form of the angular one.

    ``ang_vel_kernel``: ``yaw`` (the default) is holosoma's exp(-(w_z - cmd_wz)^2 / yaw_std^2)
    (``tracking_ang_vel``, tracking_sigma 0.25 = yaw_std^2), paired with the separate
    roll/pitch-rate penalty ``env.rewards.ang_vel_xy`` (holosoma ``penalty_ang_vel_xy`` -1.0);
    ``coupled`` is mjlab's exp(-((w_z - cmd_wz)^2 + |w_xy|^2) / ang_vel_std^2), yaw error and
    roll/pitch rate in one exponent, so the yaw reward collapses while the base rocks
    (pal-robotics/pal_mjlab PR #81). With the coupled kernel SAC policies turned at 0.4-0.9 of
    a 1 rad/s command; with the yaw kernel at 0.99-1.04 (docs/benchmarks.md, "Walking on
    command"). ``ang_vel_xy_std`` gives the coupled kernel's roll/pitch rate a width of its own:
    the yaw kernel times a kernel of the base's steadiness, a reward (never scaled by the
    penalty curriculum) for a steady base from the first step; with ang_vel_std 0.5 and
    ang_vel_xy_std 1.0 it walked no sooner than the yaw kernel and passed 11 of 15 cases (seed 1).
    ``lin_vel_std`` keeps mjlab's width, a wide basin from standing still; alone it
    is nearly flat at the walking suite's tolerances (0.1-0.15 m/s: exp(-0.04 / 0.25) = 0.85),
    and a 0.35 m/s width in its place left one of two seeds unable to walk forwards. So the
    same error also enters a narrow kernel (``lin_vel_fine_std``, reward
    ``track_linear_velocity_fine``), weighted like the wide one: the wide kernel pulls from
    afar, the narrow one near the command. ``yaw_fine_std`` is the same idea for the yaw rate
    (reward ``track_angular_velocity_fine``): at the suite's 0.1 rad/s the
    0.5 rad/s yaw kernel pays exp(-0.04) = 0.96, so a walking turn 0.1 short costs almost
    nothing; at 0.25 rad/s it pays exp(-0.16) = 0.85."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    lin_vel_std: float = Field(0.5, gt=0.0, description="track_linear_velocity width, m/s (mjlab 0.5)")
    lin_vel_fine_std: float = Field(
        0.25, gt=0.0, description="track_linear_velocity_fine width, m/s: the narrow kernel added to the wide one"
    )
    ang_vel_kernel: Literal["coupled", "yaw"] = Field(
        "yaw", description="yaw: yaw error only (holosoma); coupled: yaw error + roll/pitch rate (mjlab)"
    )
    ang_vel_std: float = Field(
        math.sqrt(0.5), gt=0.0, description="coupled kernel width, rad/s (mjlab sqrt(0.5))"
    )
    ang_vel_xy_std: float | None = Field(
        None, gt=0.0, description="coupled kernel: a width of its own for the roll/pitch rate, rad/s "
        "(null: ang_vel_std, as mjlab); e.g. ang_vel_std=0.5 with ang_vel_xy_std=1.0 scores the yaw rate as the "
        "yaw kernel does, times a wide kernel of the base's steadiness"
    )
    yaw_std: float = Field(0.5, gt=0.0, description="yaw kernel width, rad/s (holosoma sqrt(0.25))")
    yaw_fine_std: float = Field(
        0.25, gt=0.0, description="track_angular_velocity_fine width, rad/s: a narrow yaw kernel added to "
        "track_angular_velocity (whichever its kernel)"
    )

    @model_validator(mode="after")
    def _xy_width_needs_the_coupled_kernel(self) -> "TrackingConfig":
        if self.ang_vel_xy_std is not None and self.ang_vel_kernel != "coupled":
            raise ValueError(
                f"ang_vel_xy_std={self.ang_vel_xy_std:g} is a width of the coupled kernel; "
                f"ang_vel_kernel is {self.ang_vel_kernel!r} (set ang_vel_kernel=coupled, or leave ang_vel_xy_std null)"
            )
        return self


class RewardWeights(BaseModel):
    """Reward weights; each term is multiplied by its weight and the env step dt (0.02 s).
    A weight of 0 switches the term off (it is then not evaluated).

    Values from mjlab ``Mjlab-Velocity-Flat-Unitree-G1`` (v1.6.0 ``tasks/velocity/
    velocity_env_cfg.py``, ``config/g1/env_cfgs.py``), plus holosoma's G1 ``alive``,
    ``feet_phase``, ``penalty_ang_vel_xy``, ``penalty_orientation`` and ``pose`` (holosoma 0.0.3
    ``config_values/loco/g1/``, ``managers/reward/terms/locomotion.py``), and the linear
    velocity error in a second, narrow kernel (:class:`TrackingConfig`).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    track_linear_velocity: float = Field(
        2.0, description="exp(-(|v_xy - cmd_xy|^2 + v_z^2) / env.tracking.lin_vel_std^2)"
    )
    track_linear_velocity_fine: float = Field(
        2.0,
        description="the same error in a narrow kernel, exp(-(...) / env.tracking.lin_vel_fine_std^2): "
        "added to the wide one, it keeps its pull where the wide kernel is nearly flat (errors of "
        "0.1-0.3 m/s, the walking suite's tolerances)",
    )
    track_angular_velocity: float = Field(
        2.0, description="the env.tracking.ang_vel_kernel kernel of the yaw-rate command"
    )
    track_angular_velocity_fine: float = Field(
        2.0,
        description="exp(-(w_z - cmd_wz)^2 / env.tracking.yaw_fine_std^2), the yaw-rate error in a narrow "
        "kernel added to track_angular_velocity, weighted like it: a pull at the suite's 0.1 rad/s",
    )
    ang_vel_xy: float = Field(
        -1.0,
        description="pelvis |w_xy|^2, roll/pitch rate (holosoma penalty_ang_vel_xy -1.0); a smaller "
        "weight walks sooner with a base that rocks more (-0.25 at full weight from the start: mean episode "
        "length 900 about 0.87 x the env steps, roll/pitch rate about twice; docs/benchmarks.md); "
        "env.penalty_curriculum.late starts it at zero",
    )
    upright: float = Field(1.0, description="torso exp(-|g_xy|^2 / 0.2)")
    pose: float = Field(1.0, description="variable posture, per-joint std by speed regime")
    body_ang_vel: float = Field(-0.05, description="torso |w_xy|^2")
    orientation_l2: float = Field(
        -10.0, description="pelvis |g_xy|^2, sin^2 of the tilt (holosoma penalty_orientation -10)"
    )
    pose_l2: float = Field(
        -0.5,
        description="sum_j w_j (q_j - q0_j)^2 with holosoma's G1 weights (waist and arms 50, hip "
        "pitch and knees 0.01; holosoma pose -0.5)",
    )
    angular_momentum: float = Field(-0.02, description="whole-body |L|^2")
    action_rate_l2: float = Field(-0.1, description="|a_t - a_t-1|^2")
    joint_pos_limits: float = Field(-1.0, description="rad outside the soft joint limits")
    foot_clearance: float = Field(-2.0, description="|z - 0.1 m| x foot speed, when moving")
    foot_slip: float = Field(-0.1, description="foot speed^2 in contact, when moving")
    air_time: float = Field(0.0, description="feet with 0.05-0.5 s flight (off, as in mjlab G1)")
    self_collisions: float = Field(-1.0, description="self-contact above 10 N")
    alive: float = Field(1.0, description="1 per second survived (holosoma's alive bonus 1.0)")
    feet_phase: float = Field(
        5.0,
        description="exp(-sum_f (z_f - h*_f)^2 / env.gait.sigma): feet follow the gait clock "
        "(holosoma G1 5.0; needs env.gait.enabled=true)",
    )


class DomainRandomizationConfig(BaseModel):
    """Per-world physics randomization, drawn once per world at startup (mjlab ``startup``
    events, v1.6.0 ``tasks/velocity/velocity_env_cfg.py``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="randomize friction, torso CoM and encoder bias")
    foot_friction: tuple[float, float] = Field(
        (0.3, 1.2), description="sliding friction of the sole geoms, one value per world"
    )
    torso_com_m: tuple[float, float, float] = Field(
        (0.025, 0.025, 0.03), description="torso CoM offset range ± along x, y, z, m"
    )
    encoder_bias_rad: float = Field(0.015, ge=0.0, description="joint encoder bias range ±, rad")

    @field_validator("foot_friction")
    @classmethod
    def _friction(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] <= 0.0:
            raise ValueError(f"friction must be positive, got {value}")
        return _ordered(value)


class PushVelocityConfig(BaseModel):
    """Push magnitudes ±: half of mjlab's ranges (v1.6.0 velocity task), a milder start; at most
    :data:`MAX_PUSH_LIN_VEL` and :data:`MAX_PUSH_ANG_VEL`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    x: float = Field(0.25, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    y: float = Field(0.25, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    z: float = Field(0.2, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    roll: float = Field(0.26, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")
    pitch: float = Field(0.26, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")
    yaw: float = Field(0.39, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")


class PushConfig(BaseModel):
    """Random pushes: the base velocity changes by U(±velocity) at random intervals per world."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="push the robot")
    interval_s: tuple[float, float] = Field((1.0, 3.0), description="s between pushes, U(range)")
    velocity: PushVelocityConfig = PushVelocityConfig()

    @field_validator("interval_s")
    @classmethod
    def _interval(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] <= 0.0:
            raise ValueError(f"push interval must be positive, got {value}")
        return _ordered(value)


class GaitConfig(BaseModel):
    """A gait clock per env (holosoma 0.0.3 G1 locomotion ``LocomotionGait``): each
    foot's phase is observed as sin/cos by the actor and the critic (4 columns appended to both
    groups) and drives the ``feet_phase`` reward's target foot heights
    (:class:`unilab.envs.mdp.GaitPhaseCommand`, :func:`unilab.envs.mdp.feet_phase`). Turning it
    off (with ``env.rewards.feet_phase=0``) gives mjlab's observation layout (actor 99, critic
    111)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="add the gait clock, its observation and reward target")
    period_s: float = Field(1.0, gt=0.0, description="mean gait period (left + right step), s")
    frequency_width_hz: float = Field(
        0.2, ge=0.0,
        description="per-env gait frequency drawn at reset from U(1/period_s ± width), Hz "
        "(holosoma's gait_period_randomization_width 0.2 applies to the frequency: "
        "periods 0.83-1.25 s)",
    )
    randomize_phase: bool = Field(True, description="random start phase at reset (else 0)")
    swing_height_m: float = Field(0.09, gt=0.0, description="peak target foot height, m")
    sigma: float = Field(0.008, gt=0.0, description="feet_phase kernel width, m^2")

    @model_validator(mode="after")
    def _frequency(self) -> "GaitConfig":
        f0 = 1.0 / self.period_s
        if self.frequency_width_hz >= f0:
            raise ValueError(
                f"frequency_width_hz={self.frequency_width_hz:g} must be below 1/period_s = "
                f"{f0:g} Hz (frequencies would reach 0)"
            )
        return self


class PenaltyCurriculumConfig(BaseModel):
    """Negative-weight reward terms scaled by a factor that follows the episode length
    (holosoma 0.0.3 G1 locomotion, ``config_values/loco/g1/``;
    :class:`unilab.envs.managers.PenaltyCurriculum`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="scale the penalties by episode length")
    initial: float = Field(0.1, ge=0.0, le=1.0, description="penalty scale at the start")
    min_scale: float = Field(0.1, ge=0.0, le=1.0, description="lowest penalty scale")
    up_length_s: float = Field(15.0, gt=0.0, description="raise the scale above this mean length, s")
    down_length_s: float = Field(3.0, ge=0.0, description="lower it below this mean length, s")
    step: float = Field(
        0.0005, gt=0.0, le=1.0,
        description="change per reset past a threshold (holosoma G1 degree: 0.00025 PPO, 0.001 "
        "FastSAC); with many envs rows reset at nearly every env step, so a large step reaches "
        "full scale before a gait has formed",
    )
    exempt: list[str] = Field(
        default_factory=list,
        description="penalties (env.rewards.* names with a negative or zero weight, each once) kept at full weight: "
        "e.g. [ang_vel_xy], the roll/pitch-rate penalty that the yaw-only kernel moves out of "
        "the tracking term, which the curriculum never scales",
    )
    late: list[str] = Field(
        default_factory=lambda: ["ang_vel_xy"],
        description="penalties (env.rewards.* names with a negative or zero weight, each once, none also exempt) "
        "that start at zero and reach full weight with the others, x (scale - initial) / (1 - initial): "
        "ang_vel_xy, whose charge on the stumbling before a gait delays walking (mean episode length 900 "
        "on seeds 1-3 at 2.07-2.77 M env steps with it late, 2.51-2.80 M at full weight; docs/benchmarks.md); "
        "[] for every penalty on the curriculum's scale",
    )
    start: float | None = Field(
        None, ge=0.0, le=1.0,
        description="penalty scale the envs start at, in [min_scale, 1]; null: at initial. training.resume sets "
        "it to the scale the checkpoint recorded (its last Curriculum/penalty_scale) unless given, and unilab "
        "play likewise; the late penalties' factor still counts from initial",
    )

    @model_validator(mode="after")
    def _start_in_range(self) -> "PenaltyCurriculumConfig":
        if self.start is not None and self.start < self.min_scale:
            raise ValueError(
                f"env.penalty_curriculum.start={self.start:g} is below env.penalty_curriculum.min_scale="
                f"{self.min_scale:g}; expected a scale in [min_scale, 1] = [{self.min_scale:g}, 1]"
            )
        return self


class G1WalkFlatConfig(BaseModel):
    """g1_walk_flat settings."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    episode_length_s: float = Field(20.0, gt=0.0, description="time-out, s (1000 steps at 50 Hz)")
    decimation: int = Field(4, ge=1, description="physics steps (0.005 s) per env step")
    observation_noise: bool = Field(True, description="uniform noise on actor observations")
    base_lin_vel_noise: float = Field(
        0.5, ge=0.0,
        description="uniform noise ± on the actor's base_lin_vel, m/s (mjlab 0.5; IsaacLab and "
        "MuJoCo Playground's G1 joystick 0.1; holosoma leaves the velocity out of the actor)",
    )
    reset_xy_m: float = Field(0.5, ge=0.0, description="reset base x, y offset range ±, m")
    reset_yaw_rad: float = Field(3.14159, ge=0.0, description="reset yaw range ±, rad")
    reset_z_m: tuple[float, float] = Field(
        (0.01, 0.05), description="reset base height offset range, m (mjlab: drop from 1-5 cm)"
    )
    tilt_limit_deg: float = Field(70.0, gt=0.0, le=180.0, description="fell-over tilt, deg")
    commands: CommandsConfig = CommandsConfig()
    tracking: TrackingConfig = TrackingConfig()
    rewards: RewardWeights = RewardWeights()
    domain_randomization: DomainRandomizationConfig = DomainRandomizationConfig()
    push: PushConfig = PushConfig()
    penalty_curriculum: PenaltyCurriculumConfig = PenaltyCurriculumConfig()
    gait: GaitConfig = GaitConfig()

    @model_validator(mode="after")
    def _feet_phase_needs_gait(self) -> "G1WalkFlatConfig":
        if self.rewards.feet_phase != 0.0 and not self.gait.enabled:
            raise ValueError(
                f"env.rewards.feet_phase={self.rewards.feet_phase:g} needs env.gait.enabled=true "
                "(the reward follows the gait clock); without the clock set env.rewards.feet_phase=0"
            )
        return self

    @model_validator(mode="after")
    def _curriculum_needs_tracking_rewards(self) -> "G1WalkFlatConfig":
        w = self.rewards
        if self.commands.curriculum.enabled and min(w.track_linear_velocity, w.track_angular_velocity) <= 0.0:
            raise ValueError(
                "env.commands.curriculum.enabled=true needs positive env.rewards.track_linear_velocity "
                f"and track_angular_velocity (got {w.track_linear_velocity:g}, "
                f"{w.track_angular_velocity:g}): the curriculum widens the ranges by their episode sums"
            )
        return self

    @model_validator(mode="after")
    def _exempt_names_penalties(self) -> "G1WalkFlatConfig":
        weights = self.rewards.model_dump()
        # A penalty switched off (weight 0) may stay listed: scaling a term that is not evaluated
        # changes nothing, and `env.rewards.ang_vel_xy=0` then needs no second key.
        penalties = [k for k, v in weights.items() if v <= 0.0]
        for key in ("exempt", "late"):
            names = getattr(self.penalty_curriculum, key)
            twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
            if twice is not None:
                raise ValueError(
                    f"env.penalty_curriculum.{key}: {twice!r} is listed {names.count(twice)} times in {names}; "
                    f"expected each penalty once"
                )
            for name in names:
                if name not in penalties:
                    got = "no such reward" if name not in weights else f"weight {weights[name]:g}"
                    raise ValueError(
                        f"env.penalty_curriculum.{key}: {name!r} ({got}) is not a penalty; "
                        f"expected names of env.rewards with a negative (or zero) weight: {penalties}"
                    )
        both = [name for name in self.penalty_curriculum.late if name in self.penalty_curriculum.exempt]
        if both:
            raise ValueError(
                f"env.penalty_curriculum.late: {both[0]!r} is also in env.penalty_curriculum.exempt; "
                f"expected a penalty either at full weight from the start (exempt) or from zero (late; "
                f"its default is ['ang_vel_xy']: to exempt that one, also set env.penalty_curriculum.late=[])"
            )
        return self
