"""User-facing settings of g1_motion_tracking (the ``env.*`` override keys).

Defaults: BeyondMimic ``tracking_env_cfg.py`` / ``config/g1/flat_env_cfg.py`` (@cd65172) and
mjlab's re-implementation ``Mjlab-Tracking-Flat-Unitree-G1`` (v1.6.0 ``tasks/tracking/
tracking_env_cfg.py``, ``config/g1/env_cfgs.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from unilab.config import MAX_PUSH_ANG_VEL, MAX_PUSH_LIN_VEL, absolute_path

SHIPPED = "shipped"
"""``env.motion.file`` value that names every clip shipped with the task."""

SHIPPED_MOTIONS = Path(__file__).parent / "motions"
"""The shipped motion set: every clip in this folder (``env.motion.file=shipped``)."""


def shipped_clip_names() -> list[str]:
    """Names (file stems) of the clips in :data:`SHIPPED_MOTIONS`, sorted."""
    return sorted(p.stem for p in SHIPPED_MOTIONS.glob("*.npz"))


def shipped_motion(value: str | Path) -> Path | None:
    """What ``env.motion.file`` = ``value`` names among the shipped motions, unless a file or folder
    of that name is in the working directory: :data:`SHIPPED` -> the folder :data:`SHIPPED_MOTIONS`,
    a clip's name (``squat``) -> its ``.npz``; None for anything else."""
    if Path(value).exists():
        return None
    if value == SHIPPED:
        return SHIPPED_MOTIONS
    if value in shipped_clip_names():
        return SHIPPED_MOTIONS / f"{value}.npz"
    return None


def _motion_path(value: str) -> str:
    """:data:`SHIPPED` and a shipped clip's bare name (:func:`shipped_motion`) as given; any other
    value made absolute."""
    if value == SHIPPED or shipped_motion(value) is not None:
        return value
    return absolute_path(value)


MotionPath = Annotated[str, AfterValidator(_motion_path)]
"""``env.motion.file``: stored absolute (a relative path is taken from the working directory of the
command that set it), except the name :data:`SHIPPED` and a shipped clip's name
(:func:`shipped_clip_names`) that names nothing in the working directory."""


class MotionConfig(BaseModel):
    """The reference clips and how starts (clip, time) are drawn."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    file: MotionPath | None = Field(
        None,
        description="motion npz (unilab motion import), a folder of npz, a manifest (.yaml/.json: clips "
        "with optional weights), 'shipped' (every clip shipped with the task) or a shipped clip's name "
        "(e.g. squat); paths stored absolute; default: the task's default clip",
    )
    sampling: Literal["adaptive", "uniform", "start"] = Field(
        "adaptive", description="starts (clip, time): adaptive (failure-weighted bins over all clips), "
        "uniform, or frame 0 (clips in turn)",
    )
    adaptive_alpha: float = Field(0.001, gt=0.0, le=1.0, description="EMA rate of the per-bin failure counts")
    adaptive_uniform_ratio: float = Field(0.1, ge=0.0, description="uniform share added to the failure counts")
    adaptive_kernel_size: int = Field(1, ge=1, description="bins a failure also raises before it")
    adaptive_lambda: float = Field(0.8, gt=0.0, description="kernel decay per bin")


class ResetNoiseConfig(BaseModel):
    """Reference-state initialization noise, ± uniform (BeyondMimic ``pose_range``,
    ``velocity_range``, ``joint_position_range``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="perturb the reference state at reset")
    pos_xy_m: float = Field(0.05, ge=0.0, description="root x, y, m")
    pos_z_m: float = Field(0.01, ge=0.0, description="root z, m")
    roll_pitch_rad: float = Field(0.1, ge=0.0, description="root roll and pitch, rad")
    yaw_rad: float = Field(0.2, ge=0.0, description="root yaw, rad")
    lin_vel_xy: float = Field(0.5, ge=0.0, le=MAX_PUSH_LIN_VEL, description="root vx, vy, m/s")
    lin_vel_z: float = Field(0.2, ge=0.0, le=MAX_PUSH_LIN_VEL, description="root vz, m/s")
    ang_vel_roll_pitch: float = Field(0.52, ge=0.0, le=MAX_PUSH_ANG_VEL, description="root roll/pitch rate, rad/s")
    ang_vel_yaw: float = Field(0.78, ge=0.0, le=MAX_PUSH_ANG_VEL, description="root yaw rate, rad/s")
    joint_pos_rad: float = Field(0.1, ge=0.0, description="joints, rad (then clipped to the soft limits)")


class RewardWeights(BaseModel):
    """Reward weights (× env step dt). A weight of 0 switches the term off."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    motion_global_anchor_pos: float = Field(0.5, description="exp(-|p_anchor - p_ref|^2 / std^2)")
    motion_global_anchor_ori: float = Field(0.5, description="exp(-angle(q_anchor, q_ref)^2 / std^2)")
    motion_body_pos: float = Field(1.0, description="relative body positions, mean over bodies")
    motion_body_ori: float = Field(1.0, description="relative body orientations, mean over bodies")
    motion_body_lin_vel: float = Field(1.0, description="body linear velocities, world frame")
    motion_body_ang_vel: float = Field(1.0, description="body angular velocities, world frame")
    action_rate_l2: float = Field(-0.1, description="|a_t - a_t-1|^2")
    joint_limit: float = Field(-10.0, description="rad outside the soft joint limits")
    self_collisions: float = Field(-10.0, description="self-contact above 10 N (mjlab)")


class RewardStds(BaseModel):
    """Widths std of the exp(-error / std^2) tracking kernels (BeyondMimic)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    motion_global_anchor_pos: float = Field(0.3, gt=0.0, description="m")
    motion_global_anchor_ori: float = Field(0.4, gt=0.0, description="rad")
    motion_body_pos: float = Field(0.3, gt=0.0, description="m")
    motion_body_ori: float = Field(0.4, gt=0.0, description="rad")
    motion_body_lin_vel: float = Field(1.0, gt=0.0, description="m/s")
    motion_body_ang_vel: float = Field(3.14, gt=0.0, description="rad/s")


class TerminationConfig(BaseModel):
    """Tracking-failure thresholds (BeyondMimic)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    anchor_pos_z_m: float = Field(0.25, gt=0.0, description="|z_anchor - z_ref| limit, m")
    anchor_ori: float = Field(0.8, gt=0.0, description="|g_z(anchor) - g_z(ref)| limit (projected gravity)")
    ee_body_pos_z_m: float = Field(0.25, gt=0.0, description="end-effector |z - z_ref| limit, m")


class DomainRandomizationConfig(BaseModel):
    """Per-world physics randomization at startup (mjlab tracking: foot friction, torso CoM,
    encoder bias)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="randomize friction, torso CoM and encoder bias")
    foot_friction: tuple[float, float] = Field((0.3, 1.2), description="sole friction range")
    torso_com_m: tuple[float, float, float] = Field((0.025, 0.05, 0.05), description="torso CoM ± x, y, z, m")
    encoder_bias_rad: float = Field(0.01, ge=0.0, description="joint encoder bias ±, rad")


class PushConfig(BaseModel):
    """Pushes: the base velocity changes by U(±range) every U(interval_s) s (BeyondMimic uses the
    reset velocity ranges); at most ``unilab.config.MAX_PUSH_LIN_VEL`` and ``MAX_PUSH_ANG_VEL``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    enabled: bool = Field(True, description="push the robot")
    interval_s: tuple[float, float] = Field((1.0, 3.0), description="s between pushes")
    lin_vel_xy: float = Field(0.5, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s")
    lin_vel_z: float = Field(0.2, ge=0.0, le=MAX_PUSH_LIN_VEL, description="m/s")
    ang_vel_roll_pitch: float = Field(0.52, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s")
    ang_vel_yaw: float = Field(0.78, ge=0.0, le=MAX_PUSH_ANG_VEL, description="rad/s")


class G1MotionTrackingConfig(BaseModel):
    """g1_motion_tracking settings."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    episode_length_s: float = Field(10.0, gt=0.0, description="time-out, s (500 steps at 50 Hz)")
    decimation: int = Field(4, ge=1, description="physics steps (0.005 s) per env step")
    observation_noise: bool = Field(True, description="uniform noise on actor observations")
    state_estimation: bool = Field(
        True, description="actor sees anchor position and base linear velocity (160); false: 154"
    )
    motion: MotionConfig = MotionConfig()
    reset_noise: ResetNoiseConfig = ResetNoiseConfig()
    rewards: RewardWeights = RewardWeights()
    reward_stds: RewardStds = RewardStds()
    terminations: TerminationConfig = TerminationConfig()
    domain_randomization: DomainRandomizationConfig = DomainRandomizationConfig()
    push: PushConfig = PushConfig()
