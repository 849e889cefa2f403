"""User-facing settings of g1_walk_flat (the ``env.*`` override keys).

Defaults: tasks.md §2.1 (mjlab ``Mjlab-Velocity-Flat-Unitree-G1``) as trimmed by its
recommendation for CPU training.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from unilab.config import MAX_PUSH_ANG_VEL, MAX_PUSH_LIN_VEL


def _ordered(value: tuple[float, float]) -> tuple[float, float]:
    if value[0] > value[1]:
        raise ValueError(f"expected [min, max] with min <= max, got min {value[0]:g} > max {value[1]:g}")
    return value


class CommandsConfig(BaseModel):
    """Velocity command ranges (tasks.md recommendation for g1_walk_flat)."""

    model_config = ConfigDict(extra="forbid")
    lin_vel_x: tuple[float, float] = Field((-1.0, 1.0), description="forward velocity, m/s")
    lin_vel_y: tuple[float, float] = Field((-0.5, 0.5), description="lateral velocity, m/s")
    ang_vel_z: tuple[float, float] = Field((-1.0, 1.0), description="yaw rate, rad/s")
    resampling_time_s: tuple[float, float] = Field((3.0, 8.0), description="s between draws")
    standing_fraction: float = Field(0.1, ge=0.0, le=1.0, description="share of zero commands")

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


class RewardWeights(BaseModel):
    """Reward weights; each term is multiplied by its weight and the env step dt (0.02 s).
    A weight of 0 switches the term off (it is then not evaluated).

    Values from mjlab ``Mjlab-Velocity-Flat-Unitree-G1`` (tasks.md §2.1).
    """

    model_config = ConfigDict(extra="forbid")
    track_linear_velocity: float = Field(2.0, description="exp(-|v - cmd|^2 / 0.25)")
    track_angular_velocity: float = Field(2.0, description="exp(-|w - cmd|^2 / 0.5)")
    upright: float = Field(1.0, description="torso exp(-|g_xy|^2 / 0.2)")
    pose: float = Field(1.0, description="variable posture, per-joint std by speed regime")
    body_ang_vel: float = Field(-0.05, description="torso |w_xy|^2")
    orientation_l2: float = Field(
        0.0, description="pelvis |g_xy|^2, sin^2 of the tilt (holosoma penalty_orientation: -10; off, as in mjlab)"
    )
    pose_l2: float = Field(
        0.0,
        description="sum_j w_j (q_j - q0_j)^2 with holosoma's G1 weights (waist and arms 50, hip "
        "pitch and knees 0.01; holosoma pose: -0.5; off, as in mjlab)",
    )
    angular_momentum: float = Field(-0.02, description="whole-body |L|^2")
    action_rate_l2: float = Field(-0.1, description="|a_t - a_t-1|^2")
    joint_pos_limits: float = Field(-1.0, description="rad outside the soft joint limits")
    foot_clearance: float = Field(-2.0, description="|z - 0.1 m| x foot speed, when moving")
    foot_slip: float = Field(-0.1, description="foot speed^2 in contact, when moving")
    air_time: float = Field(0.0, description="feet with 0.05-0.5 s flight (off, as in mjlab G1)")
    self_collisions: float = Field(-1.0, description="self-contact above 10 N")
    alive: float = Field(
        0.0, description="1 per second survived (holosoma's alive bonus; off, as in mjlab)"
    )
    feet_phase: float = Field(
        0.0,
        description="exp(-sum_f (z_f - h*_f)^2 / env.gait.sigma): feet follow the gait clock "
        "(holosoma G1: 5.0; needs env.gait.enabled=true; off by default)",
    )


class DomainRandomizationConfig(BaseModel):
    """Per-world physics randomization, drawn once per world at startup (mjlab ``startup``
    events; tasks.md §2.1)."""

    model_config = ConfigDict(extra="forbid")
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
    """Push magnitudes ±: half of mjlab's ranges to start (tasks.md recommendation); at most
    :data:`MAX_PUSH_LIN_VEL` and :data:`MAX_PUSH_ANG_VEL`."""

    model_config = ConfigDict(extra="forbid")
    x: float = Field(0.25, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    y: float = Field(0.25, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    z: float = Field(0.2, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s, world frame")
    roll: float = Field(0.26, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")
    pitch: float = Field(0.26, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")
    yaw: float = Field(0.39, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s, base frame")


class PushConfig(BaseModel):
    """Random pushes: the base velocity changes by U(±velocity) at random intervals per world."""

    model_config = ConfigDict(extra="forbid")
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
    """A gait clock per env (holosoma's G1 locomotion ``LocomotionGait``, tasks.md §2.4): each
    foot's phase is observed as sin/cos by the actor and the critic (4 columns appended to both
    groups) and drives the ``feet_phase`` reward's target foot heights
    (:class:`unilab.envs.mdp.GaitPhaseCommand`, :func:`unilab.envs.mdp.feet_phase`). Off by
    default: the observation sizes are then unchanged."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(False, description="add the gait clock, its observation and reward target")
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
    (holosoma's G1 locomotion scheme, tasks.md §2.4; :class:`unilab.envs.managers.PenaltyCurriculum`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(False, description="scale the penalties by episode length")
    initial: float = Field(0.1, ge=0.0, le=1.0, description="penalty scale at the start")
    min_scale: float = Field(0.1, ge=0.0, le=1.0, description="lowest penalty scale")
    up_length_s: float = Field(15.0, gt=0.0, description="raise the scale above this mean length, s")
    down_length_s: float = Field(3.0, ge=0.0, description="lower it below this mean length, s")
    step: float = Field(
        0.0005, gt=0.0, le=1.0,
        description="change per reset past a threshold (0.01 rose from 0.1 to 1 in ~1 min on the GPU machine and collapsed the gait)",
    )


class G1WalkFlatConfig(BaseModel):
    """g1_walk_flat settings."""

    model_config = ConfigDict(extra="forbid")
    episode_length_s: float = Field(20.0, gt=0.0, description="time-out, s (1000 steps at 50 Hz)")
    decimation: int = Field(4, ge=1, description="physics steps (0.005 s) per env step")
    observation_noise: bool = Field(True, description="uniform noise on actor observations")
    base_lin_vel_noise: float = Field(
        0.5, ge=0.0,
        description="uniform noise ± on the actor's base_lin_vel, m/s (mjlab 0.5; IsaacLab and "
        "Playground 0.1; holosoma leaves the velocity out of the actor)",
    )
    reset_xy_m: float = Field(0.5, ge=0.0, description="reset base x, y offset range ±, m")
    reset_yaw_rad: float = Field(3.14159, ge=0.0, description="reset yaw range ±, rad")
    reset_z_m: tuple[float, float] = Field(
        (0.01, 0.05), description="reset base height offset range, m (mjlab: drop from 1-5 cm)"
    )
    tilt_limit_deg: float = Field(70.0, gt=0.0, le=180.0, description="fell-over tilt, deg")
    commands: CommandsConfig = CommandsConfig()
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
                "(the reward follows the gait clock)"
            )
        return self
