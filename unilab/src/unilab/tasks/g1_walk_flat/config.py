"""User-facing settings of g1_walk_flat (the ``env.*`` override keys)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CommandsConfig(BaseModel):
    """Velocity command ranges (tasks.md recommendation for g1_walk_flat)."""

    model_config = ConfigDict(extra="forbid")
    lin_vel_x: tuple[float, float] = Field((-1.0, 1.0), description="forward velocity, m/s")
    lin_vel_y: tuple[float, float] = Field((-0.5, 0.5), description="lateral velocity, m/s")
    ang_vel_z: tuple[float, float] = Field((-1.0, 1.0), description="yaw rate, rad/s")
    resampling_time_s: tuple[float, float] = Field((3.0, 8.0), description="s between draws")
    standing_fraction: float = Field(0.1, ge=0.0, le=1.0, description="share of zero commands")


class RewardWeights(BaseModel):
    """Reward weights; each term is multiplied by its weight and the env step dt (0.02 s).

    Values from mjlab ``Mjlab-Velocity-Flat-Unitree-G1`` (tasks.md §2.1).
    """

    model_config = ConfigDict(extra="forbid")
    track_linear_velocity: float = 2.0
    track_angular_velocity: float = 2.0
    upright: float = 1.0
    action_rate_l2: float = -0.1
    joint_pos_limits: float = -1.0


class G1WalkFlatConfig(BaseModel):
    """g1_walk_flat settings."""

    model_config = ConfigDict(extra="forbid")
    episode_length_s: float = Field(20.0, gt=0.0, description="time-out, s (1000 steps at 50 Hz)")
    decimation: int = Field(4, ge=1, description="physics steps (0.005 s) per env step")
    observation_noise: bool = Field(True, description="uniform noise on actor observations")
    reset_xy_m: float = Field(0.5, ge=0.0, description="reset base x, y offset range ±, m")
    reset_yaw_rad: float = Field(3.14159, ge=0.0, description="reset yaw range ±, rad")
    tilt_limit_deg: float = Field(70.0, gt=0.0, le=180.0, description="fell-over tilt, deg")
    commands: CommandsConfig = CommandsConfig()
    rewards: RewardWeights = RewardWeights()
